// The `ros2` clock sink in a scenario file: every key, the defaults, errors
// naming file:line:column and the key, and a sink built from the file that a
// ROS 2 reader receives.

#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "dds_testing.hpp"

#include <simsync/dds/dds.hpp>
#include <simsync/simsync.hpp>

#include <chrono>
#include <string>
#include <variant>

using namespace std::chrono_literals;
namespace sd = simsync::dds;

namespace {

simsync::ConfigNode ros2_node(const std::string& yaml)
{
    return simsync::ConfigNode::parse(yaml, "s.yaml").at("clock").at("sinks").elements().at(0).at("ros2");
}

} // namespace

TEST_CASE("DdsScenario.Ros2Sink.DefaultsAndEveryKey")
{
    const sd::Ros2SinkSettings d = sd::parse_ros2_sink(ros2_node("clock:\n  sinks:\n    - ros2: {}\n"));
    CHECK(d.domain == sd::DomainConfig{});
    CHECK(d.sink.topic == "rt/clock");
    CHECK(d.sink.qos == sd::kClockWriterQos);
    CHECK(d.sink.repeat_while_paused);

    const sd::Ros2SinkSettings s = sd::parse_ros2_sink(ros2_node(R"(clock:
  sinks:
    - ros2:
        domain: 5
        network: loopback
        interface: veth0
        peers: [10.0.0.2, "host:7410"]
        tag: sim-a
        topic: rt/sim_a/clock
        reliability: best_effort
        durability: volatile
        depth: 3
        repeat_while_paused: false
)"));
    CHECK(s.domain.id == 5u);
    CHECK(s.domain.network == sd::Network::loopback);
    CHECK(s.domain.interface == "veth0");
    CHECK(s.domain.peers == std::vector<std::string>{"10.0.0.2", "host:7410"});
    CHECK(s.domain.tag == "sim-a");
    CHECK(s.sink.topic == "rt/sim_a/clock");
    CHECK(s.sink.qos == sd::Qos{sd::Reliability::best_effort, sd::Durability::volatile_, 3, {}});
    CHECK_FALSE(s.sink.repeat_while_paused);
}

TEST_CASE("DdsScenario.Ros2Sink.RosTopicNamesMapToDds")
{
    // Before: `topic: /clock` wrote the DDS topic "/clock", which no ROS 2 node reads.
    const struct {
        const char* topic;
        const char* dds;
    } rows[] = {{"/clock", "rt/clock"}, {"/sim_a/clock", "rt/sim_a/clock"}, {"rt/clock", "rt/clock"}};
    for (const auto& row : rows) {
        CAPTURE(row.topic);
        const sd::Ros2SinkSettings s = sd::parse_ros2_sink(
            ros2_node(std::string("clock:\n  sinks:\n    - ros2: {topic: ") + row.topic + "}\n"));
        CHECK(s.sink.topic == row.dds);
        CHECK(sd::dds_topic_name(row.topic) == row.dds);
    }
    CHECK_THROWS_AS(sd::dds_topic_name("/"), simsync::Error);
    CHECK_THROWS_AS(sd::dds_topic_name(""), simsync::Error);
}

TEST_CASE("DdsScenario.Domain.DescribedForPrinting")
{
    CHECK(sd::describe(sd::DomainConfig{}) == "domain 0, system network");
    sd::DomainConfig c = sd::DomainConfig::loopback(7);
    c.interface = "lo";
    c.peers = {"10.0.0.2", "10.0.0.3"};
    c.tag = "sim-a";
    CHECK(sd::describe(c) == "domain 7, loopback network, interface lo, peers 10.0.0.2, 10.0.0.3, tag 'sim-a'");
}

TEST_CASE("DdsScenario.Ros2Sink.ErrorsNameFileLineColumnAndKey")
{
    struct Bad {
        const char* yaml;
        const char* where; // file:line:column: key
        const char* says;
    };
    const Bad cases[] = {
        {"clock:\n  sinks:\n    - ros2: {domain: 233}\n", "s.yaml:3:22: clock.sinks[0].ros2.domain", "233"},
        {"clock:\n  sinks:\n    - ros2: {domain: -1}\n", "s.yaml:3:22: clock.sinks[0].ros2.domain", "-1"},
        {"clock:\n  sinks:\n    - ros2: {network: lan}\n", "s.yaml:3:23: clock.sinks[0].ros2.network", "lan"},
        {"clock:\n  sinks:\n    - ros2: {reliability: sometimes}\n", "s.yaml:3:27: clock.sinks[0].ros2.reliability",
         "sometimes"},
        {"clock:\n  sinks:\n    - ros2: {durability: persistent}\n", "s.yaml:3:26: clock.sinks[0].ros2.durability",
         "persistent"},
        {"clock:\n  sinks:\n    - ros2: {depth: -2}\n", "s.yaml:3:21: clock.sinks[0].ros2.depth", "-2"},
        {"clock:\n  sinks:\n    - ros2: {topic: \"\"}\n", "s.yaml:3:21: clock.sinks[0].ros2.topic", "empty"},
        {"clock:\n  sinks:\n    - ros2: {domian: 3}\n", "clock.sinks[0].ros2", "domian"},
        {"clock:\n  sinks:\n    - ros2: {repeat_while_paused: maybe}\n",
         "s.yaml:3:35: clock.sinks[0].ros2.repeat_while_paused", "maybe"},
    };
    for (const Bad& bad : cases) {
        CAPTURE(bad.yaml);
        try {
            sd::parse_ros2_sink(ros2_node(bad.yaml));
            FAIL("accepted");
        } catch (const simsync::ConfigError& e) {
            const std::string what = e.what();
            CAPTURE(what);
            CHECK(what.find(bad.where) != std::string::npos);
            CHECK(what.find(bad.says) != std::string::npos);
        }
    }
}

TEST_CASE("DdsScenario.Ros2Sink.BuiltFromTheFileAndReceived" * doctest::timeout(60))
{
    sd::testing::DomainLease lease;
    const std::string yaml = "clock:\n  sinks:\n    - ros2:\n        domain: " + std::to_string(lease.id()) +
                             "\n        network: loopback\n        tag: " + lease.tag() + "\n";
    const std::unique_ptr<sd::Ros2ClockSink> sink = sd::make_ros2_clock_sink(ros2_node(yaml));
    simsync::ExternalTimeSource source;
    sd::Ros2ClockFollower follower(sd::Participant::create(lease.config(true)), source);
    REQUIRE(sink->wait_for_readers(1, 30s));
    REQUIRE(follower.wait_for_writers(1, 30s));
    // Whatever the first sample finds the reader doing, a repeated time arrives.
    const simsync::WallTime deadline = simsync::WallClock::now() + 30s;
    while (follower.received() == 0 && simsync::WallClock::now() < deadline) {
        sink->write(simsync::source_time(42s));
        follower.wait_for_samples(1, 10ms);
    }
    REQUIRE(follower.received() > 0);
    CHECK(follower.last_sample()->time == simsync::RosTime{42, 0});
}

TEST_CASE("DdsScenario.Registered.LoadScenarioReadsRos2SinksAndNamesThePlace")
{
    simsync::ScenarioExtensions extensions;
    sd::register_clock_sink(extensions);
    CHECK_THROWS_AS(sd::register_clock_sink(extensions), simsync::Error); // registered once

    const simsync::ScenarioConfig c = simsync::load_scenario_string(
        "clock:\n  rate: 50\n  sinks:\n    - udp: 127.0.0.1:9999\n    - ros2: {domain: 7, topic: rt/a/clock}\n"
        "    - ros2:\n",
        "s.yaml", extensions);
    REQUIRE(c.clock.sinks.size() == 3);
    REQUIRE(std::holds_alternative<simsync::ExtensionSinkConfig>(c.clock.sinks[1]));
    const auto& first = std::get<simsync::ExtensionSinkConfig>(c.clock.sinks[1]);
    CHECK(first.kind == sd::kRos2SinkKind);
    const sd::Ros2SinkSettings s = sd::parse_ros2_sink(first.config);
    CHECK(s.domain.id == 7u);
    CHECK(s.sink.topic == "rt/a/clock");
    REQUIRE(std::holds_alternative<simsync::ExtensionSinkConfig>(c.clock.sinks[2]));
    CHECK(sd::parse_ros2_sink(std::get<simsync::ExtensionSinkConfig>(c.clock.sinks[2]).config).domain ==
          sd::DomainConfig{}); // `- ros2:` alone: all defaults

    // A bad value is reported by load_scenario itself, at its place in the file.
    try {
        simsync::load_scenario_string("clock:\n  sinks:\n    - udp: 127.0.0.1:9999\n    - ros2: {domain: 300}\n",
                                      "s.yaml", extensions);
        FAIL("accepted");
    } catch (const simsync::ConfigError& e) {
        const std::string what = e.what();
        CAPTURE(what);
        CHECK(what.find("s.yaml:4:22: clock.sinks[1].ros2.domain") != std::string::npos);
        CHECK(what.find("300") != std::string::npos);
    }
    // Without the registration the kind is unknown to the loader.
    CHECK_THROWS_AS(simsync::load_scenario_string("clock:\n  sinks:\n    - ros2: {}\n", "s.yaml"),
                    simsync::ConfigError);
}

TEST_CASE("DdsScenario.Security.Ros2SinkTakesASecurityKey")
{
    const sd::testing::TestCertificates certs({"clock-writer:sim"});
    const sd::Ros2SinkSettings s = sd::parse_ros2_sink(
        ros2_node("clock:\n  sinks:\n    - ros2: {domain: 5, security: " + certs.security_file("sim") + "}\n"));
    REQUIRE(s.domain.security.has_value());
    CHECK(*s.domain.security == certs.files("sim"));
    try {
        (void)sd::parse_ros2_sink(ros2_node("clock:\n  sinks:\n    - ros2: {domain: 5, security: {certificate: x}}\n"));
        FAIL("expected a ConfigError");
    } catch (const simsync::ConfigError& e) {
        CHECK(std::string(e.what()) == "s.yaml:3:35: clock.sinks[0].ros2.security.identity_ca: required key is missing");
    }
}
