// Remote participants in configuration files (the host's `remote:` section, a
// participant's `participant:` document) and the start across processes
// (start_together). Expected values come from remote_scenario.hpp.

#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "dds_testing.hpp"

#include <simsync/dds/bridge.hpp>
#include <simsync/dds/remote_accessor.hpp>
#include <simsync/dds/remote_scenario.hpp>
#include <simsync/dds/scenario.hpp>
#include <simsync/simsync.hpp>

#include <chrono>
#include <fstream>
#include <future>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
namespace sd = simsync::dds;

namespace {

// The ConfigError's text for `yaml`'s `key` section parsed by `parse`.
template <class Parse>
std::string error_of(const std::string& yaml, const char* key, Parse parse)
{
    try {
        const simsync::ConfigNode root = simsync::ConfigNode::parse(yaml, "remote.yaml");
        parse(root.at(key));
    } catch (const simsync::ConfigError& e) {
        return e.what();
    }
    return "no error";
}

std::string host_error(const std::string& yaml)
{
    return error_of(yaml, "remote", [](const simsync::ConfigNode& n) { sd::parse_remote_host(n); });
}

std::string participant_error(const std::string& yaml)
{
    return error_of(yaml, "participant", [](const simsync::ConfigNode& n) { sd::parse_remote_participant(n); });
}

} // namespace

TEST_CASE("RemoteScenario.Host.EveryKeyRead")
{
    const auto root = simsync::ConfigNode::parse("remote:\n"
                                                 "  domain: 7\n"
                                                 "  network: loopback\n"
                                                 "  peers: [10.0.0.2]\n"
                                                 "  tag: lab-a\n"
                                                 "  partition: lab\n"
                                                 "  expect: [controller, camera]\n"
                                                 "  join_timeout: 2.5s\n"
                                                 "  lease: 300ms\n"
                                                 "  on_lost: pause\n",
                                                 "remote.yaml");
    const sd::RemoteHostSettings s = sd::parse_remote_host(root.at("remote"));
    CHECK(s.domain.id == 7);
    CHECK(s.domain.network == sd::Network::loopback);
    CHECK(s.domain.peers == std::vector<std::string>{"10.0.0.2"});
    CHECK(s.domain.tag == "lab-a");
    CHECK(s.partition == "lab");
    CHECK(s.expect == std::vector<std::string>{"controller", "camera"});
    CHECK(s.join_timeout == 2500ms);
    CHECK(s.lease == 300ms);
    CHECK(s.on_lost == sd::LostParticipantPolicy::pause);
    const sd::BridgeConfig bc = s.bridge_config();
    CHECK(bc.partition == "lab");
    CHECK(bc.lease == 300ms);
    CHECK(bc.on_lost == sd::LostParticipantPolicy::pause);
    // Every key is optional.
    const sd::RemoteHostSettings d = sd::parse_remote_host(simsync::ConfigNode::parse("remote: {}\n", "r.yaml").at("remote"));
    CHECK(d.partition == "simsync");
    CHECK(d.expect.empty());
    CHECK(d.join_timeout == 60s);
    CHECK(d.lease == 1s);
    CHECK(d.on_lost == sd::LostParticipantPolicy::revoke);
}

TEST_CASE("RemoteScenario.Host.ErrorsNameTheFileLineColumnAndKey")
{
    CHECK(host_error("remote:\n  domain: 233\n") ==
          "remote.yaml:2:11: remote.domain: expected a DDS domain id 0..232 (ROS_DOMAIN_ID), got 233");
    CHECK(host_error("remote:\n  expect: [a, b, a]\n").rfind("remote.yaml:2:18: remote.expect[2]: the participant 'a' "
                                                             "is expected twice",
                                                             0) == 0);
    CHECK(host_error("remote:\n  partition: ''\n").rfind("remote.yaml:2:14: remote.partition: expected a DDS partition",
                                                         0) == 0);
    CHECK(host_error("remote:\n  join_timeout: 0s\n").rfind("remote.yaml:2:17: remote.join_timeout: expected a "
                                                            "duration above 0",
                                                            0) == 0);
    CHECK(host_error("remote:\n  leases: 1s\n").find("remote.yaml:2:3") == 0);
    CHECK(host_error("remote:\n  on_lost: ignore\n").find("remote.yaml:2:12: remote.on_lost") == 0);
    CHECK(host_error("remote:\n  lease: 0ms\n").find("remote.yaml:2:10: remote.lease: expected a duration above 0") == 0);
    CHECK(host_error("remote:\n  expect: ['']\n").find("remote.yaml:2:12: remote.expect[0]: expected a participant name") == 0);
}

TEST_CASE("RemoteScenario.Host.SectionRegisteredWithTheScenarioLoader")
{
    simsync::ScenarioExtensions extensions;
    sd::register_remote_section(extensions);
    const std::string scenario = "handler:\n  step: 1ms\nremote:\n  domain: 3\n  expect: [controller]\n";
    const simsync::ScenarioConfig config = simsync::load_scenario(simsync::ConfigNode::parse(scenario, "s.yaml"), extensions);
    REQUIRE(config.sections.count("remote") == 1);
    CHECK(sd::parse_remote_host(config.sections.at("remote")).expect == std::vector<std::string>{"controller"});
    // A bad value is an error of the scenario, at its place.
    try {
        (void)simsync::load_scenario(
            simsync::ConfigNode::parse("handler:\n  step: 1ms\nremote:\n  network: wifi\n", "s.yaml"), extensions);
        FAIL("expected a ConfigError");
    } catch (const simsync::ConfigError& e) {
        CHECK(e.line() == 4);
        CHECK(e.key() == "remote.network");
    }
}

TEST_CASE("RemoteScenario.Participant.EveryKeyReadAndNameRequired")
{
    const auto root = simsync::ConfigNode::parse("participant:\n"
                                                 "  name: controller\n"
                                                 "  domain: 9\n"
                                                 "  partition: lab\n"
                                                 "  kind: free\n"
                                                 "  mode: shared\n"
                                                 "  priority: -2\n"
                                                 "  first_request: 20ms\n"
                                                 "  lookahead: 5ms\n"
                                                 "  join_timeout: 3s\n"
                                                 "  lease: 2s\n",
                                                 "p.yaml");
    const sd::RemoteParticipantSettings s = sd::parse_remote_participant(root.at("participant"));
    CHECK(s.name == "controller");
    CHECK(s.domain.id == 9);
    CHECK(s.config.partition == "lab");
    CHECK(s.options.kind == simsync::AccessorKind::free);
    CHECK(s.options.mode == simsync::AccessMode::shared);
    CHECK(s.options.priority == -2);
    CHECK(s.options.first_request == simsync::sim_time(20ms));
    CHECK(s.options.lookahead == 5ms);
    CHECK(s.config.join_timeout == 3s);
    CHECK(s.config.lease == 2s);
    CHECK(participant_error("participant:\n  domain: 1\n").rfind("remote.yaml:2:3: participant.name", 0) == 0);
    CHECK(participant_error("participant:\n  name: c\n  kind: sometimes\n").rfind("remote.yaml:3:9: participant.kind", 0) ==
          0);
    CHECK(participant_error("participant:\n  name: c\n  lookahead: 5\n").rfind("remote.yaml:3:14: participant.lookahead",
                                                                             0) == 0);
}

// The start across processes, with the participants as threads of this process
// (the messages are the same): nobody's grant passes the start instant before
// the last expected participant has joined, and then all begin together.
TEST_CASE("RemoteScenario.Start.TogetherOnceAllExpectedHaveJoined" * doctest::timeout(120))
{
    sd::testing::DomainLease lease;
    auto participant = sd::Participant::create(lease.config(true));
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms, .start_paused = true});
    sd::Bridge bridge(handler, participant);
    const std::vector<std::string> expect{"a", "b", "c"};

    // Not all there: the start times out, names who is missing, stays paused.
    auto first = std::make_unique<sd::RemoteAccessor>(participant, "a");
    try {
        sd::start_together(handler, bridge, expect, 200ms);
        FAIL("expected timed_out");
    } catch (const simsync::Error& e) {
        CHECK(e.code() == simsync::errc::timed_out);
        CHECK(std::string(e.what()).find("'b', 'c' had not joined") != std::string::npos);
    }
    CHECK(handler.state() == simsync::HandlerState::paused);

    // Each participant waits for the start, then asks for 5 steps.
    std::vector<std::vector<simsync::SimTime>> granted(3);
    std::vector<int> started(3, 0); // not vector<bool>: its bits share words across threads
    std::vector<std::thread> threads;
    auto run = [&](std::size_t i, std::unique_ptr<sd::RemoteAccessor> me) {
        started[i] = me->wait_for_state(simsync::HandlerState::running, 60s) ? 1 : 0;
        for (int k = 1; k <= 5 && started[i]; ++k) {
            sd::RemoteAccess a = me->request_access(simsync::sim_time(k * 1ms));
            if (!a) break;
            granted[i].push_back(a.granted_time());
            a.release(simsync::sim_time((k + 1) * 1ms));
        }
    };
    threads.emplace_back(run, 0, std::move(first));
    threads.emplace_back(run, 1, std::make_unique<sd::RemoteAccessor>(participant, "b"));
    const simsync::SimTime before_last = handler.now();
    threads.emplace_back(run, 2, std::make_unique<sd::RemoteAccessor>(participant, "c"));
    sd::start_together(handler, bridge, expect, 60s);
    for (auto& t : threads) t.join();
    CHECK(before_last == simsync::kSimStart); // nothing moved before all had joined
    for (std::size_t i = 0; i < 3; ++i) {
        CAPTURE(i);
        CHECK(started[i]);
        REQUIRE(granted[i].size() == 5);
        for (int k = 1; k <= 5; ++k) CHECK(granted[i][static_cast<std::size_t>(k - 1)] == simsync::sim_time(k * 1ms));
    }
}

// A stop before everyone has joined ends the start at once (not at its
// timeout) with `stopped`, told apart from a timeout; so does a handler that
// is stopped already.
TEST_CASE("RemoteScenario.Start.AStopBeforeEveryoneJoinedEndsItStopped" * doctest::timeout(120))
{
    sd::testing::DomainLease lease;
    auto participant = sd::Participant::create(lease.config(true));
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms, .start_paused = true});
    sd::Bridge bridge(handler, participant);
    sd::RemoteAccessor a(participant, "a");
    constexpr auto kLongTimeout = 60s;

    auto start = [&]() -> std::optional<simsync::Error> {
        try {
            sd::start_together(handler, bridge, {"a", "b"}, kLongTimeout);
        } catch (const simsync::Error& e) {
            return e;
        }
        return std::nullopt;
    };
    std::promise<void> go;
    std::thread stopper([&handler, started = go.get_future()] {
        started.wait();
        handler.stop();
    });
    go.set_value();
    const auto begun = std::chrono::steady_clock::now();
    const std::optional<simsync::Error> error = start();
    const auto took = std::chrono::steady_clock::now() - begun;
    stopper.join();
    CHECK(took < kLongTimeout);
    REQUIRE(error);
    CHECK(error->code() == simsync::errc::stopped);
    const std::string what = error->what();
    INFO(what);
    CHECK(what.find("the handler stopped before everyone had joined") != std::string::npos);
    CHECK(what.find("'b'") != std::string::npos);
    CHECK(what.find("'a'") == std::string::npos);

    // Stopped already: the same, at once.
    const std::optional<simsync::Error> again = start();
    REQUIRE(again);
    CHECK(again->code() == simsync::errc::stopped);
}

namespace {

// The @code examples of remote_scenario.hpp, without their `/// ` prefixes.
std::vector<std::string> header_examples()
{
    std::ifstream in(SIMSYNC_DDS_INCLUDE_DIR "/simsync/dds/remote_scenario.hpp");
    REQUIRE(in);
    std::vector<std::string> blocks;
    std::optional<std::string> block;
    for (std::string line; std::getline(in, line);) {
        if (line == "/// @code") {
            block.emplace();
        } else if (line == "/// @endcode") {
            REQUIRE(block);
            blocks.push_back(*block);
            block.reset();
        } else if (block) {
            REQUIRE(line.rfind("///", 0) == 0);
            *block += line.substr(line.size() > 3 && line[3] == ' ' ? 4 : 3) + "\n";
        }
    }
    return blocks;
}

// Which of two exclusive accessors waiting for the same instant the handler
// grants first: "higher first" or "lower first" (by priority).
std::string measured_priority_order()
{
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms, .start_paused = true});
    simsync::Accessor low = handler.register_accessor("low", {.kind = simsync::AccessorKind::free, .priority = 0});
    simsync::Accessor high = handler.register_accessor("high", {.kind = simsync::AccessorKind::free, .priority = 1});
    std::optional<std::uint64_t> low_sequence;
    std::optional<std::uint64_t> high_sequence;
    std::thread low_thread([&] {
        simsync::Access a = low.request_access_for(simsync::sim_time(1ms), 60s);
        if (a) low_sequence = a.sequence();
    });
    std::thread high_thread([&] {
        simsync::Access a = high.request_access_for(simsync::sim_time(1ms), 60s);
        if (a) high_sequence = a.sequence();
    });
    // Both wait for 1 ms (paused at 0) before time may run.
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    auto both_waiting = [&] {
        int waiting = 0;
        for (const auto& a : handler.snapshot().accessors) {
            if (a.activity == simsync::AccessorStatus::Activity::waiting) ++waiting;
        }
        return waiting == 2;
    };
    while (!both_waiting() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
    handler.resume();
    low_thread.join();
    high_thread.join();
    REQUIRE(low_sequence);
    REQUIRE(high_sequence);
    return *high_sequence < *low_sequence ? "higher first" : "lower first";
}

} // namespace

// ------------------------------------------------------------ DDS Security

namespace {

void write_file(const std::string& path, const std::string& text)
{
    std::ofstream out(path);
    REQUIRE(out);
    out << text;
}

} // namespace

// The header's examples load, and what the participant's says of priority is
// what the handler does: the header cannot drift from the code.
TEST_CASE("RemoteScenario.Docs.TheHeadersExamplesLoadAndTheirPriorityOrderIsTheHandlers" * doctest::timeout(120))
{
    const std::vector<std::string> blocks = header_examples();
    REQUIRE(blocks.size() == 2);
    // The example's security files, made where its relative paths point
    // (checked at load: they must exist).
    const sd::testing::TestCertificates certs({"host:host", "participant:controller"});
    std::optional<std::string> priority_comment;
    for (std::string yaml : blocks) {
        for (std::size_t at = yaml.find("certs/"); at != std::string::npos; at = yaml.find("certs/", at + 1)) {
            yaml.replace(at, 6, certs.dir() + "/");
        }
        CAPTURE(yaml);
        const simsync::ConfigNode root = simsync::ConfigNode::parse(yaml, "remote_scenario.hpp");
        if (root.find("remote")) {
            CHECK_NOTHROW(sd::parse_remote_host(root.at("remote")));
        } else {
            CHECK_NOTHROW(sd::parse_remote_participant(root.at("participant")));
            std::istringstream lines(yaml);
            for (std::string line; std::getline(lines, line);) {
                if (line.find("priority:") != std::string::npos) priority_comment = line.substr(line.find('#'));
            }
        }
    }
    REQUIRE(priority_comment);
    const std::string order = measured_priority_order();
    INFO("the handler grants " << order << "; the example says: " << *priority_comment);
    CHECK(priority_comment->find(order) != std::string::npos);
}

TEST_CASE("RemoteScenario.Security.BlockOrFileWithPathsRelativeToTheirFile")
{
    const sd::testing::TestCertificates certs({"host:host", "participant:controller"});
    // The path of a file make-dds-certs wrote, relative to the scenario's directory.
    const std::string scenario = certs.dir() + "/scenario.yaml";
    write_file(scenario, "remote:\n"
                         "  domain: 7\n"
                         "  security: host/security.yaml\n"
                         "  allow: [controller]\n"
                         "  max_participants: 1\n"
                         "participant:\n"
                         "  name: controller\n"
                         "  security:\n"
                         "    identity_ca: identity_ca.pem\n"
                         "    certificate: controller/cert.pem\n"
                         "    private_key: controller/key.pem\n"
                         "    permissions_ca: permissions_ca.pem\n"
                         "    governance: governance.p7s\n"
                         "    permissions: controller/permissions.p7s\n");
    const simsync::ConfigNode root = simsync::ConfigNode::load_file(scenario);
    const sd::RemoteHostSettings host = sd::parse_remote_host(root.at("remote"));
    REQUIRE(host.domain.security.has_value());
    CHECK(*host.domain.security == certs.files("host"));
    CHECK(host.allow == std::vector<std::string>{"controller"});
    CHECK(host.max_participants == 1u);
    const sd::BridgeConfig bc = host.bridge_config();
    CHECK(bc.allowed_names == std::vector<std::string>{"controller"});
    CHECK(bc.max_participants == 1u);
    const sd::RemoteParticipantSettings participant = sd::parse_remote_participant(root.at("participant"));
    REQUIRE(participant.domain.security.has_value());
    CHECK(*participant.domain.security == certs.files("controller"));
    // What a program's --security option reads.
    CHECK(sd::load_security_file(certs.security_file("controller")) == certs.files("controller"));
    // Without the key: no security, any name, no limit.
    const sd::RemoteHostSettings open = sd::parse_remote_host(simsync::ConfigNode::parse("remote:\n  allow: any\n", "r.yaml").at("remote"));
    CHECK_FALSE(open.domain.security.has_value());
    CHECK_FALSE(open.allow.has_value());
    CHECK(open.max_participants == std::numeric_limits<std::size_t>::max());
}

TEST_CASE("RemoteScenario.Security.ErrorsNameTheFileLineColumnAndKey")
{
    const sd::testing::TestCertificates certs({"host:host"});
    const std::string d = certs.dir();
    const std::string block = "    identity_ca: " + d + "/identity_ca.pem\n"
                              "    certificate: " + d + "/host/cert.pem\n"
                              "    private_key: " + d + "/host/key.pem\n"
                              "    permissions_ca: " + d + "/permissions_ca.pem\n"
                              "    governance: " + d + "/governance.p7s\n";
    // A file that is not there is named at load, at its key.
    CHECK(host_error("remote:\n  security:\n" + block + "    permissions: " + d + "/host/nothing.p7s\n") ==
          "remote.yaml:8:18: remote.security.permissions: '" + d + "/host/nothing.p7s' cannot be read: no such file");
    CHECK(host_error("remote:\n  security:\n" + block) ==
          "remote.yaml:3:5: remote.security.permissions: required key is missing");
    CHECK(host_error("remote:\n  security:\n" + block + "    permissions: " + d + "/host/permissions.p7s\n" +
                     "    password: x\n")
              .rfind("remote.yaml:9:5: remote.security.password: unknown key", 0) == 0);
    CHECK(host_error("remote:\n  security: " + d + "/host/none.yaml\n") ==
          "remote.yaml:2:13: remote.security: the DDS security file '" + d + "/host/none.yaml' cannot be read: no such file");
    CHECK(host_error("remote:\n  security: " + d + "\n") ==
          "remote.yaml:2:13: remote.security: the DDS security file '" + d + "' is not a regular file");
    // An error inside the security file names that file.
    write_file(d + "/bad.yaml", "identity_ca: identity_ca.pem\ncertificate: [cert.pem]\n");
    CHECK(host_error("remote:\n  security: " + d + "/bad.yaml\n").rfind(d + "/bad.yaml:2:14: certificate: ", 0) == 0);
    CHECK(host_error("remote:\n  domain: 231\n  security: " + d + "/host/security.yaml\n") ==
          "remote.yaml:2:3: remote.domain: expected a DDS domain id 0..230 with `security` (governance and "
          "permissions take no id above it), got 231");
    // Allowed names and the limit.
    CHECK(host_error("remote:\n  allow: everyone\n") ==
          "remote.yaml:2:10: remote.allow: expected 'any' or a list of participant names, got 'everyone'");
    CHECK(host_error("remote:\n  allow: [a, a]\n") == "remote.yaml:2:14: remote.allow[1]: the participant 'a' is "
                                                      "allowed twice");
    CHECK(host_error("remote:\n  expect: [a, b]\n  allow: [a]\n") ==
          "remote.yaml:2:11: remote.expect: the participant 'b' is expected but not in `allow`");
    CHECK(host_error("remote:\n  max_participants: 0\n") ==
          "remote.yaml:2:21: remote.max_participants: expected a number of participants >= 1, got 0");
    CHECK(host_error("remote:\n  expect: [a, b]\n  max_participants: 1\n").rfind("remote.yaml:3:3: "
                                                                                "remote.max_participants: expected at "
                                                                                "least the 2 participants",
                                                                                0) == 0);
    CHECK(host_error("remote:\n  partition: 'sim*'\n").rfind("remote.yaml:2:14: remote.partition: expected a DDS "
                                                             "partition name without a wildcard",
                                                             0) == 0);
    CHECK(participant_error("participant:\n  name: a\n  security: {}\n") ==
          "remote.yaml:3:13: participant.security.identity_ca: required key is missing");
}
