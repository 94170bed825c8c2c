// The adapter's plumbing: which network a domain uses (the Cyclone XML), one
// configuration per domain id and process, QoS names and the matching rule
// checked against Cyclone itself.

#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "dds_testing.hpp"

#include <simsync/dds/dds.hpp>
#include <simsync/simsync.hpp>

#include <dds/dds.h>
#include <simsync_dds_idl/ros2_clock.h>

#include <chrono>
#include <string>
#include <vector>

using namespace std::chrono_literals;
namespace sd = simsync::dds;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

} // namespace

TEST_CASE("DdsDomain.CycloneConfig.LoopbackIsLocalUnicastOnly")
{
    const std::string x = sd::cyclone_config(sd::DomainConfig::loopback(7));
    CHECK(contains(x, "<Domain Id=\"any\">"));
    CHECK(contains(x, "<NetworkInterface name=\"lo\"/>"));
    CHECK(contains(x, "<AllowMulticast>false</AllowMulticast>"));
    CHECK(contains(x, "<ParticipantIndex>auto</ParticipantIndex>"));
    CHECK(contains(x, "<Peer Address=\"127.0.0.1\"/>"));
    CHECK_FALSE(contains(x, "<Tag>"));

    // The system network leaves Cyclone's defaults (its interface, multicast).
    const std::string s = sd::cyclone_config(sd::DomainConfig{});
    CHECK_FALSE(contains(s, "NetworkInterface"));
    CHECK_FALSE(contains(s, "AllowMulticast"));
    CHECK_FALSE(contains(s, "Peer"));

    // Peers, interface, tag and lease; text is escaped.
    sd::DomainConfig c;
    c.interface = "veth0";
    c.peers = {"10.0.0.2", "host:7410"};
    c.tag = "a<b&\"c\"";
    c.lease_duration = 1500ms;
    const std::string p = sd::cyclone_config(c);
    CHECK(contains(p, "<NetworkInterface name=\"veth0\"/>"));
    CHECK(contains(p, "<Peer Address=\"10.0.0.2\"/><Peer Address=\"host:7410\"/>"));
    CHECK(contains(p, "<ParticipantIndex>auto</ParticipantIndex>"));
    CHECK(contains(p, "<Tag>a&lt;b&amp;&quot;c&quot;</Tag>"));
    CHECK(contains(p, "<LeaseDuration>1500000000 ns</LeaseDuration>"));
    // An interface given by its address: Cyclone matches names only in `name`.
    c.interface = "10.0.0.1";
    CHECK(contains(sd::cyclone_config(c), "<NetworkInterface address=\"10.0.0.1\"/>"));
    c.interface = "fe80::1";
    CHECK(contains(sd::cyclone_config(c), "<NetworkInterface address=\"fe80::1\"/>"));
}

TEST_CASE("DdsDomain.CycloneConfig.RefusesBadValuesNamingThem")
{
    sd::DomainConfig c;
    c.id = 233;
    try {
        sd::cyclone_config(c);
        FAIL("domain id 233 accepted");
    } catch (const simsync::Error& e) {
        CHECK(e.code() == simsync::errc::invalid_argument);
        CHECK(contains(e.what(), "233"));
    }
    c.id = 232;
    CHECK_NOTHROW(sd::cyclone_config(c));
    c.lease_duration = -1s;
    CHECK_THROWS_WITH_AS(sd::cyclone_config(c), doctest::Contains("-1.000000000"), simsync::Error);
    CHECK_THROWS_WITH_AS(sd::parse_network("lan"), doctest::Contains("'lan'"), simsync::Error);
    CHECK(sd::parse_network("loopback") == sd::Network::loopback);
}

TEST_CASE("DdsDomain.Participant.OneConfigurationPerDomainIdAndProcess" * doctest::timeout(60))
{
    sd::testing::DomainLease lease;
    const sd::DomainConfig config = lease.config(true);
    {
        sd::Participant a(config);
        sd::Participant b(config); // the same configuration shares the domain
        CHECK(a.native_handle() > 0);
        CHECK(b.native_handle() > 0);
        CHECK(a.native_handle() != b.native_handle());
        sd::DomainConfig other = config;
        other.tag += "-other";
        try {
            sd::Participant c(other);
            FAIL("a second configuration of one domain id was accepted");
        } catch (const simsync::Error& e) {
            CHECK(e.code() == simsync::errc::invalid_state);
            CHECK(contains(e.what(), "domain " + std::to_string(config.id)));
            CHECK(contains(e.what(), other.tag));
        }
    }
    // Once the last participant is gone, the id may be configured anew.
    sd::DomainConfig other = config;
    other.tag += "-later";
    CHECK_NOTHROW(sd::Participant{other});
}

TEST_CASE("DdsDomain.Participant.CycloneRefusalIsNamed" * doctest::timeout(60))
{
    sd::testing::DomainLease lease;
    sd::DomainConfig config = lease.config(true);
    config.extra_xml = "<NoSuchSetting>1</NoSuchSetting>";
    try {
        sd::Participant p(config);
        FAIL("Cyclone accepted an unknown setting");
    } catch (const simsync::Error& e) {
        CHECK(contains(e.what(), "domain " + std::to_string(config.id)));
        CHECK(contains(e.what(), "Cyclone DDS"));
    }
    // The failed attempt left nothing behind.
    config.extra_xml.clear();
    CHECK_NOTHROW(sd::Participant{config});
}

TEST_CASE("DdsQos.Names.ParseAndDescribe")
{
    CHECK(sd::parse_reliability("best_effort") == sd::Reliability::best_effort);
    CHECK(sd::parse_durability("transient_local") == sd::Durability::transient_local);
    CHECK(sd::parse_durability("volatile") == sd::Durability::volatile_);
    CHECK_THROWS_WITH_AS(sd::parse_reliability("sometimes"), doctest::Contains("'sometimes'"), simsync::Error);
    CHECK_THROWS_WITH_AS(sd::parse_durability("persistent"), doctest::Contains("'persistent'"), simsync::Error);
    CHECK(sd::describe(sd::kClockWriterQos) == "reliable, transient_local, keep last 1");
    CHECK(sd::describe(sd::kClockReaderQos) == "best_effort, volatile, keep last 1");
    CHECK(sd::describe({sd::Reliability::reliable, sd::Durability::volatile_, 0, {}}) == "reliable, volatile, keep all");
}

// The rule in qos.hpp, checked against Cyclone for every pairing: a writer with
// each QoS (through Ros2ClockSink) and a raw Cyclone reader with each QoS. A
// match shows on the writer; a mismatch shows positively as the reader's
// "requested incompatible QoS" status, so nothing waits for an absence.
TEST_CASE("DdsQos.Matches.CycloneAgreesWithTheRule" * doctest::timeout(60))
{
    sd::testing::DomainLease lease;
    auto participant = sd::Participant::create(lease.config(true));
    const std::vector<sd::Qos> all{
        {sd::Reliability::best_effort, sd::Durability::volatile_, 1, {}},
        {sd::Reliability::best_effort, sd::Durability::transient_local, 1, {}},
        {sd::Reliability::reliable, sd::Durability::volatile_, 1, {}},
        {sd::Reliability::reliable, sd::Durability::transient_local, 1, {}},
    };
    int topic_index = 0;
    for (const sd::Qos& w : all) {
        for (const sd::Qos& r : all) {
            CAPTURE(sd::describe(w));
            CAPTURE(sd::describe(r));
            const std::string topic = "rt/qos_" + std::to_string(topic_index++);
            sd::Ros2ClockSink sink(participant, {.topic = topic, .qos = w});
            const dds_entity_t t =
                dds_create_topic(participant->native_handle(), &rosgraph_msgs_msg_dds__Clock__desc, topic.c_str(), nullptr, nullptr);
            REQUIRE(t > 0);
            dds_qos_t* q = dds_create_qos();
            dds_qset_reliability(q, r.reliability == sd::Reliability::reliable ? DDS_RELIABILITY_RELIABLE
                                                                               : DDS_RELIABILITY_BEST_EFFORT,
                                 0);
            dds_qset_durability(q, r.durability == sd::Durability::transient_local ? DDS_DURABILITY_TRANSIENT_LOCAL
                                                                                   : DDS_DURABILITY_VOLATILE);
            const dds_entity_t reader = dds_create_reader(participant->native_handle(), t, q, nullptr);
            dds_delete_qos(q);
            REQUIRE(reader > 0);
            if (sd::matches(w, r)) {
                CHECK(sink.wait_for_readers(1, 10s));
            } else {
                // Woken by the status itself, bounded by a deadline.
                REQUIRE(dds_set_status_mask(reader, DDS_REQUESTED_INCOMPATIBLE_QOS_STATUS) == DDS_RETCODE_OK);
                const dds_entity_t ws = dds_create_waitset(participant->native_handle());
                REQUIRE(dds_waitset_attach(ws, reader, 0) == DDS_RETCODE_OK);
                bool incompatible = false;
                const simsync::WallTime deadline = simsync::WallClock::now() + 10s;
                while (!incompatible && simsync::WallClock::now() < deadline) {
                    dds_requested_incompatible_qos_status_t st{};
                    REQUIRE(dds_get_requested_incompatible_qos_status(reader, &st) == DDS_RETCODE_OK);
                    incompatible = st.total_count > 0;
                    if (!incompatible) dds_waitset_wait(ws, nullptr, 0, DDS_MSECS(100));
                }
                dds_delete(ws);
                CHECK(incompatible);
                CHECK(sink.matched_readers() == 0);
            }
            dds_delete(reader);
            dds_delete(t);
        }
    }
    // The sink's default is the one writer QoS every reader matches.
    for (const sd::Qos& r : all) CHECK(sd::matches(sd::kClockWriterQos, r));
    // The follower's default is the one reader QoS every writer matches.
    for (const sd::Qos& w : all) CHECK(sd::matches(w, sd::kClockReaderQos));
}
