// Remote participants over DDS: a Bridge in the host, RemoteAccessors in this
// process and in child processes (simsync_remote_participant), on a loopback
// domain leased per test (with a discovery tag). Samples forged with raw
// Cyclone writers check that bad input is counted and ignored.

#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "dds_testing.hpp"
#include "grant_model.hpp" // tests/model: the reference model of the grant rule

#include <simsync/dds/bridge.hpp>
#include <simsync/dds/remote_accessor.hpp>
#include <simsync/dds/remote_asio.hpp>
#include <simsync/simsync.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/asio/executor_work_guard.hpp>

#include <dds/dds.h>
#include <simsync_dds_idl/remote.h>
#include <unbounded_remote.h> // tests/unbounded_remote.idl

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <future>
#include <limits>
#include <random>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

using namespace std::chrono_literals;
namespace sd = simsync::dds;
namespace r = simsync::dds::remote;

namespace {

constexpr auto kWait = 20s;

std::vector<std::uint8_t> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }
std::string string_of(std::span<const std::uint8_t> b) { return {b.begin(), b.end()}; }

// A raw Cyclone writer of one of the remote topics, in `partition`, for
// forging samples. The host believes a message for participant N only from N's
// own partition, "simsync/N".
class RawWriter {
public:
    RawWriter(const sd::Participant& p, const dds_topic_descriptor_t* desc, const char* topic,
              const std::string& partition = "simsync")
    {
        topic_ = dds_create_topic(p.native_handle(), desc, topic, nullptr, nullptr);
        REQUIRE(topic_ > 0);
        dds_qos_t* q = dds_create_qos();
        dds_qset_reliability(q, DDS_RELIABILITY_RELIABLE, DDS_SECS(5));
        dds_qset_history(q, DDS_HISTORY_KEEP_ALL, 0);
        dds_qset_partition1(q, partition.c_str());
        writer_ = dds_create_writer(p.native_handle(), topic_, q, nullptr);
        dds_delete_qos(q);
        REQUIRE(writer_ > 0);
        dds_set_status_mask(writer_, DDS_PUBLICATION_MATCHED_STATUS);
    }
    ~RawWriter()
    {
        dds_delete(writer_);
        dds_delete(topic_);
    }
    // Waits until `n` readers are matched, woken by the matched status (in
    // slices, so a wake-up that reading the status consumed costs one slice).
    bool wait_for_readers(std::uint32_t n)
    {
        const dds_entity_t waitset = dds_create_waitset(dds_get_participant(writer_));
        REQUIRE(waitset > 0);
        REQUIRE(dds_waitset_attach(waitset, writer_, 0) == DDS_RETCODE_OK);
        const auto deadline = std::chrono::steady_clock::now() + kWait;
        bool matched = false;
        while (!matched && std::chrono::steady_clock::now() < deadline) {
            dds_publication_matched_status_t st{};
            dds_get_publication_matched_status(writer_, &st);
            matched = st.current_count >= n;
            if (!matched) dds_waitset_wait(waitset, nullptr, 0, DDS_MSECS(50));
        }
        dds_delete(waitset);
        return matched;
    }
    void write(const void* sample) { REQUIRE(dds_write(writer_, sample) == DDS_RETCODE_OK); }

private:
    dds_entity_t topic_ = 0;
    dds_entity_t writer_ = 0;
};

// What every test starts from: a leased loopback domain (with its discovery
// tag), the DDS participant the Bridge and the in-process RemoteAccessors
// share, and a handler over a CountingWorld stepped by 1 ms. Each test makes
// its own Bridge (its config and lifetime vary), after these and so destroyed
// before them.
struct Host {
    explicit Host(simsync::HandlerConfig config = {.step = 1ms}) : handler(world, config) {}
    sd::testing::DomainLease lease;
    std::shared_ptr<sd::Participant> participant = sd::Participant::create(lease.config(true));
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler;
};

// The same, started paused at 0.
struct PausedHost : Host {
    PausedHost() : Host({.step = 1ms, .start_paused = true}) {}
};

// A host whose grant payloads take 0-300 us to gather (busy, on the bridge's
// loop; drawn from a generator seeded with `Seed`), so that replies take about
// as long as the stress tests' timeouts and cancellations, and one lockstep
// participant, "racer".
template <std::mt19937::result_type Seed>
struct RacingHost : Host {
    static sd::BridgeConfig busy_config()
    {
        sd::BridgeConfig c;
        c.grant_payload = [work = std::mt19937(Seed)](const sd::RemoteParticipantInfo&, simsync::Access&) mutable {
            const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(work() % 300);
            while (std::chrono::steady_clock::now() < until) {
            }
            return std::vector<std::uint8_t>{};
        };
        return c;
    }
    sd::Bridge bridge{handler, participant, busy_config()};
    sd::RemoteAccessor remote{participant, "racer", {.kind = simsync::AccessorKind::lockstep}};
};

// Rounds of a stress test: more when SIMSYNC_STRESS_GRANTS is set (the tsan test preset sets it).
int stress_rounds() { return std::getenv("SIMSYNC_STRESS_GRANTS") ? 1000 : 300; }

// A host with its Bridge and one joined participant, "controller" (of
// incarnation `inc`), between which forged samples are slipped.
struct ForgeryTarget : Host {
    sd::Bridge bridge{handler, participant};
    sd::RemoteAccessor remote{participant, "controller"};
    const std::uint64_t inc = remote.incarnation();
};

simsync_remote_ToHost to_host(const std::string& name, std::uint64_t incarnation, std::uint64_t seq, r::ToHostKind kind)
{
    simsync_remote_ToHost s{};
    std::strncpy(s.participant, name.c_str(), sizeof s.participant - 1);
    s.incarnation = incarnation;
    s.seq = seq;
    s.kind = static_cast<std::uint8_t>(kind);
    return s;
}

} // namespace

// What the host writes to one participant reaches that participant's reader
// only (a writer per participant, in a partition of its own): one beside it,
// whose name holds partition pattern characters, drops nothing as another
// participant's. Both then see the pause, each through its own writer. (With
// one host writer for all, the second dropped each of the first one's grants
// before its pause, in that writer's order.)
TEST_CASE_FIXTURE(Host, "Remote.Routing.WhatTheHostWritesToOneParticipantReachesItOnly" * doctest::timeout(120))
{
    sd::Bridge bridge(handler, participant);
    sd::RemoteAccessor busy(participant, "busy", {.kind = simsync::AccessorKind::free});
    sd::RemoteAccessor bystander(participant, "by*stander?", {.kind = simsync::AccessorKind::free});
    constexpr int kGrants = 50;
    int granted = 0;
    for (int k = 1; k <= kGrants; ++k) {
        sd::RemoteAccess a = busy.request_access(simsync::sim_time(std::chrono::milliseconds(k)));
        if (!a) break;
        ++granted;
        a.release();
    }
    CHECK(granted == kGrants);
    handler.pause();
    REQUIRE(busy.wait_for_state(simsync::HandlerState::paused, kWait));
    REQUIRE(bystander.wait_for_state(simsync::HandlerState::paused, kWait));
    CHECK(bystander.rejections()[r::Rejection::other_participant] == 0);
    CHECK(bystander.rejections().total() == 0);
    CHECK(busy.rejections().total() == 0);
    CHECK(bridge.stats().grants == static_cast<std::uint64_t>(kGrants));
}

TEST_CASE_FIXTURE(Host, "Remote.Loopback.GrantsCarryPayloadsAndReleasesApplyInsideTheAccess" * doctest::timeout(120))
{

    struct Applied {
        std::string name;
        simsync::SimTime at;
        std::string commands;
    };
    std::mutex mutex;
    std::vector<Applied> applied; // filled on the bridge's loop thread
    sd::BridgeConfig config;
    config.grant_payload = [](const sd::RemoteParticipantInfo&, simsync::Access& a) {
        return bytes_of("t=" + std::to_string(a.granted_time().time_since_epoch().count()));
    };
    config.apply_release = [&](const sd::RemoteParticipantInfo& who, simsync::Access& a, std::span<const std::uint8_t> b) {
        a.world_as<simsync::CountingWorld>().value += 1;
        std::lock_guard<std::mutex> guard(mutex);
        applied.push_back({who.name, a.granted_time(), string_of(b)});
    };
    sd::Bridge bridge(handler, participant, config);

    sd::RemoteAccessor remote(participant, "controller", {.kind = simsync::AccessorKind::lockstep});
    CHECK(remote.step_size() == 1ms);
    CHECK(remote.rounding() == simsync::Rounding::nearest);
    CHECK(remote.state() == simsync::HandlerState::running);
    CHECK(remote.now() == simsync::kSimStart);
    CHECK(bridge.participants() == std::vector<std::string>{"controller"});

    constexpr int kGrants = 10;
    std::vector<std::tuple<simsync::SimTime, std::string>> grants;
    for (int k = 0; k < kGrants; ++k) {
        const simsync::SimTime t = simsync::sim_time(k * 2ms + 300us);
        sd::RemoteAccess a = remote.request_access(t);
        REQUIRE(a);
        CHECK(a.requested_time() == t);
        grants.emplace_back(a.granted_time(), string_of(a.payload()));
        const auto cmd = bytes_of("cmd " + std::to_string(k));
        a.release(simsync::sim_time((k + 1) * 2ms + 300us), cmd);
    }
    REQUIRE(bridge.wait_until([](const sd::BridgeStats& s) { return s.releases == kGrants; }, kWait));

    for (int k = 0; k < kGrants; ++k) {
        const simsync::SimTime at = simsync::sim_time(k * 2ms);
        CHECK(std::get<0>(grants[k]) == at);
        CHECK(std::get<1>(grants[k]) == "t=" + std::to_string(at.time_since_epoch().count()));
    }
    {
        std::lock_guard<std::mutex> guard(mutex);
        REQUIRE(applied.size() == kGrants);
        for (int k = 0; k < kGrants; ++k) {
            CHECK(applied[k].name == "controller");
            CHECK(applied[k].at == simsync::sim_time(k * 2ms));
            CHECK(applied[k].commands == "cmd " + std::to_string(k));
        }
    }
    CHECK(world.value == kGrants);
    // Lockstep: time waits at the bound the last release declared.
    CHECK(handler.now() <= simsync::sim_time(kGrants * 2ms + 300us));
    const sd::BridgeStats s = bridge.stats();
    CHECK(s.announces == 1);
    CHECK(s.grants == kGrants);
    CHECK(s.protocol_errors == 0);
    CHECK(s.payload_failures == 0);
    CHECK(s.rejected.total() == 0);
    CHECK(remote.rejections().total() == 0);
}

TEST_CASE_FIXTURE(Host, "Remote.Loopback.ReleaseAndRequestAppliesTheCommandsThenGrantsTheNextInOneOperation" *
                            doctest::timeout(120))
{
    std::mutex mutex;
    std::vector<std::pair<simsync::SimTime, std::string>> applied; // on the bridge's loop thread
    sd::BridgeConfig config;
    config.grant_payload = [](const sd::RemoteParticipantInfo&, simsync::Access& a) {
        return bytes_of("t=" + std::to_string(a.granted_time().time_since_epoch().count()));
    };
    config.apply_release = [&](const sd::RemoteParticipantInfo&, simsync::Access& a, std::span<const std::uint8_t> b) {
        a.world_as<simsync::CountingWorld>().value += 1;
        std::lock_guard<std::mutex> guard(mutex);
        applied.emplace_back(a.granted_time(), string_of(b));
    };
    sd::Bridge bridge(handler, participant, config);
    sd::RemoteAccessor remote(participant, "controller", {.kind = simsync::AccessorKind::lockstep});

    // Empty: a plain request.
    sd::RemoteAccess a = remote.release_and_request(sd::RemoteAccess{}, simsync::sim_time(300us));
    REQUIRE(a);
    CHECK(a.granted_time() == simsync::kSimStart);
    // A next request before the granted time, or commands above the limit:
    // refused, and the access still held.
    CHECK_THROWS_AS(remote.release_and_request(std::move(a), simsync::SimTime{-1ms}), simsync::Error);
    REQUIRE(a);
    const std::vector<std::uint8_t> too_large(sd::remote::kMaxPayload + 1);
    CHECK_THROWS_AS(remote.release_and_request(std::move(a), simsync::sim_time(2ms), too_large), simsync::Error);
    REQUIRE(a);

    constexpr int kGrants = 10;
    for (int k = 1; k <= kGrants; ++k) {
        const simsync::SimTime t = simsync::sim_time(k * 2ms + 300us);
        a = remote.release_and_request(std::move(a), t, bytes_of("cmd " + std::to_string(k - 1)));
        REQUIRE(a);
        CHECK(a.requested_time() == t);
        CHECK(a.granted_time() == simsync::sim_time(k * 2ms));
        CHECK(string_of(a.payload()) == "t=" + std::to_string(simsync::sim_time(k * 2ms).time_since_epoch().count()));
        // Lockstep: while it holds k * 2 ms, time is there.
        CHECK(handler.now() == simsync::sim_time(k * 2ms));
    }
    a.release(bytes_of("last"));
    REQUIRE(bridge.wait_until([](const sd::BridgeStats& s) { return s.releases == kGrants + 1; }, kWait));
    {
        std::lock_guard<std::mutex> guard(mutex);
        REQUIRE(applied.size() == kGrants + 1);
        for (int k = 0; k < kGrants; ++k) {
            CHECK(applied[k].first == simsync::sim_time(k * 2ms)); // inside the access released
            CHECK(applied[k].second == "cmd " + std::to_string(k));
        }
        CHECK(applied[kGrants].second == "last");
    }
    CHECK(world.value == kGrants + 1);
    const sd::BridgeStats s = bridge.stats();
    CHECK(s.requests == kGrants + 1);
    CHECK(s.grants == kGrants + 1);
    CHECK(s.protocol_errors == 0);
    CHECK(s.payload_failures == 0);
    CHECK(s.rejected.total() == 0);
    CHECK(remote.rejections().total() == 0);
}

TEST_CASE_FIXTURE(Host, "Remote.Async.ReleaseAndRequestChainsOneCompletionPerGrant" * doctest::timeout(120))
{
    std::mutex mutex;
    std::vector<std::pair<simsync::SimTime, std::string>> applied; // on the bridge's loop thread
    sd::BridgeConfig config;
    config.apply_release = [&](const sd::RemoteParticipantInfo&, simsync::Access& a, std::span<const std::uint8_t> b) {
        std::lock_guard<std::mutex> guard(mutex);
        applied.emplace_back(a.granted_time(), string_of(b));
    };
    sd::Bridge bridge(handler, participant, config);
    sd::RemoteAccessor remote(participant, "planner", {.kind = simsync::AccessorKind::lockstep});

    // Each completion releases its access and asks for the next step in one
    // message, from the io_context's thread (this one).
    constexpr int kGrants = 8;
    boost::asio::io_context io;
    std::vector<simsync::SimTime> granted;
    std::error_code error;
    std::function<void(std::error_code, sd::RemoteAccess)> next = [&](std::error_code e, sd::RemoteAccess a) {
        if (e) {
            error = e;
            return;
        }
        granted.push_back(a.granted_time());
        const int k = static_cast<int>(granted.size());
        if (k == kGrants) {
            a.release(bytes_of("last"));
            return;
        }
        remote.async_release_and_request(std::move(a), simsync::sim_time(k * 3ms), bytes_of("cmd " + std::to_string(k)),
                                         boost::asio::bind_executor(io, next));
    };
    remote.async_release_and_request(sd::RemoteAccess{}, simsync::kSimStart, {}, boost::asio::bind_executor(io, next));
    io.run_for(kWait); // returns once no completion is pending any more
    CHECK_FALSE(error);
    REQUIRE(granted.size() == kGrants);
    for (int k = 0; k < kGrants; ++k) CHECK(granted[k] == simsync::sim_time(k * 3ms));
    REQUIRE(bridge.wait_until([](const sd::BridgeStats& s) { return s.releases == kGrants; }, kWait));
    std::lock_guard<std::mutex> guard(mutex);
    REQUIRE(applied.size() == kGrants);
    for (int k = 1; k < kGrants; ++k) {
        CHECK(applied[k - 1].first == simsync::sim_time((k - 1) * 3ms));
        CHECK(applied[k - 1].second == "cmd " + std::to_string(k));
    }
    CHECK(applied.back().second == "last");
    CHECK(bridge.stats().protocol_errors == 0);
}

// remote_accessor.hpp: an async_release_and_request that throws leaves `held`
// still held (a throwing start must not release it without its commands).
TEST_CASE_FIXTURE(Host, "Remote.Async.ARefusedReleaseAndRequestLeavesTheAccessHeld" * doctest::timeout(120))
{
    std::atomic<int> releases{0};
    sd::BridgeConfig config;
    config.apply_release = [&](const sd::RemoteParticipantInfo&, simsync::Access&, std::span<const std::uint8_t>) {
        ++releases;
    };
    sd::Bridge bridge(handler, participant, config);
    sd::RemoteAccessor remote(participant, "planner", {.kind = simsync::AccessorKind::lockstep});
    sd::RemoteAccess a = remote.request_access(simsync::sim_time(2ms));
    REQUIRE(a);
    boost::asio::io_context io;
    bool completed = false;
    auto on_grant = boost::asio::bind_executor(io, [&](std::error_code, sd::RemoteAccess) { completed = true; });
    bool before_granted_time = false;
    try {
        remote.async_release_and_request(std::move(a), simsync::sim_time(1ms), bytes_of("early"), on_grant);
    } catch (const simsync::Error& e) {
        before_granted_time = e.code() == simsync::errc::invalid_argument;
    }
    const bool held_after_early = static_cast<bool>(a); // NOLINT(bugprone-use-after-move): the contract under test
    bool oversized = false;
    try {
        remote.async_release_and_request(std::move(a), simsync::sim_time(3ms),
                                         std::vector<std::uint8_t>(sd::remote::kMaxPayload + 1), on_grant);
    } catch (const simsync::Error& e) {
        oversized = e.code() == simsync::errc::invalid_argument;
    }
    const bool held_after_oversized = static_cast<bool>(a); // NOLINT(bugprone-use-after-move)
    const simsync::SimTime granted = a.granted_time();
    a.release(bytes_of("done"));
    io.poll();
    CHECK(before_granted_time);
    CHECK(held_after_early);
    CHECK(oversized);
    CHECK(held_after_oversized);
    CHECK(granted == simsync::sim_time(2ms));
    CHECK_FALSE(completed);
    CHECK(bridge.wait_until([](const sd::BridgeStats& s) { return s.releases == 1; }, kWait));
    CHECK(releases.load() == 1);
}

TEST_CASE_FIXTURE(Host, "Remote.Loopback.ABridgeOnAGivenLoopRunsItsCallbacksThere" * doctest::timeout(120))
{
    simsync::EventLoop loop;
    std::atomic<int> on_loop{0};
    std::atomic<int> elsewhere{0};
    sd::BridgeConfig config;
    config.grant_payload = [&](const sd::RemoteParticipantInfo&, simsync::Access&) {
        (loop.executor().running_in_this_thread() ? on_loop : elsewhere)++;
        return std::vector<std::uint8_t>{};
    };
    config.apply_release = [&](const sd::RemoteParticipantInfo&, simsync::Access&, std::span<const std::uint8_t>) {
        (loop.executor().running_in_this_thread() ? on_loop : elsewhere)++;
    };
    {
        sd::Bridge bridge(handler, participant, config, loop.executor());
        sd::RemoteAccessor a(participant, "a", {.kind = simsync::AccessorKind::free});
        sd::RemoteAccessor b(participant, "b", {.kind = simsync::AccessorKind::free, .mode = simsync::AccessMode::shared});
        for (int k = 0; k < 5; ++k) {
            sd::RemoteAccess x = a.request_access(simsync::sim_time(k * 1ms));
            REQUIRE(x);
            x.release();
            sd::RemoteAccess y = b.request_access(simsync::sim_time(k * 1ms));
            REQUIRE(y);
            y.release();
        }
        REQUIRE(bridge.wait_until([](const sd::BridgeStats& s) { return s.releases == 10; }, kWait));
    }
    CHECK(on_loop == 20);
    CHECK(elsewhere == 0);
}

TEST_CASE_FIXTURE(Host, "Remote.Join.ASecondParticipantOfTheSameNameIsRefused" * doctest::timeout(120))
{
    sd::Bridge bridge(handler, participant);
    // Free: a lockstep one registered first could still ask for 0 ahead of lidar.
    simsync::Accessor local = handler.register_accessor("camera", {.kind = simsync::AccessorKind::free});

    sd::RemoteAccessor lidar(participant, "lidar");
    try {
        sd::RemoteAccessor again(participant, "lidar");
        FAIL("a second 'lidar' joined");
    } catch (const simsync::Error& e) {
        CHECK(e.code() == simsync::errc::duplicate_name);
        CHECK(std::string(e.what()).find("'lidar'") != std::string::npos);
    }
    try {
        sd::RemoteAccessor camera(participant, "camera"); // a local accessor's name
        FAIL("a remote 'camera' joined beside the local one");
    } catch (const simsync::Error& e) {
        CHECK(e.code() == simsync::errc::duplicate_name);
    }
    CHECK(bridge.stats().refused_announces == 2);
    CHECK(bridge.participants() == std::vector<std::string>{"lidar"});
    // The first one is unaffected.
    sd::RemoteAccess a = lidar.request_access(simsync::kSimStart);
    CHECK(a);
}

TEST_CASE_FIXTURE(PausedHost, "Remote.Request.TimeoutAndStopWithdrawTheRequest" * doctest::timeout(120))
{
    sd::Bridge bridge(handler, participant);
    sd::RemoteAccessor remote(participant, "controller");
    CHECK(remote.state() == simsync::HandlerState::paused);

    // Paused at 0: 5 ms cannot be reached.
    sd::RemoteAccess a = remote.request_access_for(simsync::sim_time(5ms), 200ms);
    CHECK_FALSE(a);
    CHECK(a.error() == simsync::errc::timed_out);
    // The host withdrew it and answered `cancelled` (dropped by the participant).
    REQUIRE(bridge.wait_until([](const sd::BridgeStats& s) { return s.refusals == 1; }, kWait));

    std::stop_source stop;
    stop.request_stop();
    sd::RemoteAccess b = remote.request_access(simsync::sim_time(5ms), stop.get_token());
    CHECK(b.error() == simsync::errc::cancelled);
    REQUIRE(bridge.wait_until([](const sd::BridgeStats& s) { return s.refusals == 2; }, kWait));

    handler.resume();
    sd::RemoteAccess c = remote.request_access(simsync::sim_time(5ms));
    REQUIRE(c);
    CHECK(c.granted_time() == simsync::sim_time(5ms));
    CHECK_THROWS_AS(remote.request_access(simsync::sim_time(6ms)), simsync::Error); // busy: c is held
    c.release();
    // A request for a time that has passed.
    REQUIRE(bridge.wait_until([](const sd::BridgeStats& s) { return s.releases == 1; }, kWait));
    sd::RemoteAccess d = remote.request_access(simsync::sim_time(1ms));
    CHECK(d.error() == simsync::errc::time_passed);
    CHECK(remote.rejections().total() == 0);
}

TEST_CASE_FIXTURE(Host, "Remote.Isolation.AnotherPartitionNeverInterferes" * doctest::timeout(120))
{
    sd::Bridge bridge(handler, participant);
    sd::RemoteAccessorConfig other;
    other.partition = "another-simulation";
    other.join_timeout = 1s;
    try {
        sd::RemoteAccessor stranger(participant, "stranger", {}, other);
        FAIL("joined a host of another partition");
    } catch (const simsync::Error& e) {
        CHECK(e.code() == simsync::errc::timed_out);
    }
    CHECK(bridge.participants().empty());
    CHECK(bridge.stats().rejected.total() == 0);
    CHECK(bridge.stats().announces == 0);
}

TEST_CASE_FIXTURE(ForgeryTarget, "Remote.BadInput.ForgedSamplesToTheHostAreCountedAndIgnored" * doctest::timeout(120))
{
    RawWriter forger(*participant, &simsync_remote_ToHost_desc, "simsync/remote/to_host", "simsync/controller");
    REQUIRE(forger.wait_for_readers(1));
    RawWriter ghost_writer(*participant, &simsync_remote_ToHost_desc, "simsync/remote/to_host", "simsync/ghost");
    REQUIRE(ghost_writer.wait_for_readers(1));
    auto unknown_kind = to_host("controller", inc, 2, static_cast<r::ToHostKind>(9));
    forger.write(&unknown_kind);
    auto ghost = to_host("ghost", 5, 2, r::ToHostKind::request);
    ghost_writer.write(&ghost);
    auto duplicate = to_host("controller", inc, 1, r::ToHostKind::request);
    forger.write(&duplicate);
    auto ahead = to_host("controller", inc, 1000, r::ToHostKind::request);
    forger.write(&ahead);
    auto impostor = to_host("controller", inc + 1, 2, r::ToHostKind::request);
    forger.write(&impostor);
    auto nameless = to_host("", inc, 2, r::ToHostKind::request);
    forger.write(&nameless);
    auto laden = to_host("controller", inc, 2, r::ToHostKind::request);
    std::uint8_t junk[3] = {1, 2, 3};
    laden.payload._buffer = junk;
    laden.payload._length = laden.payload._maximum = 3;
    forger.write(&laden);
    REQUIRE(bridge.wait_until([](const sd::BridgeStats& s) { return s.rejected.total() >= 7; }, kWait));

    const sd::BridgeStats s = bridge.stats();
    CHECK(s.rejected[r::Rejection::unknown_kind] == 1);
    CHECK(s.rejected[r::Rejection::unknown_participant] == 1);
    CHECK(s.rejected[r::Rejection::duplicate] == 1);
    CHECK(s.rejected[r::Rejection::out_of_order] == 1);
    CHECK(s.rejected[r::Rejection::wrong_incarnation] == 1);
    CHECK(s.rejected[r::Rejection::bad_name] == 1);
    CHECK(s.rejected[r::Rejection::unexpected_payload] == 1);
    CHECK(s.requests == 0);
    // Nothing was applied: the participant's own sequence goes on.
    sd::RemoteAccess a = remote.request_access(simsync::sim_time(3ms));
    REQUIRE(a);
    CHECK(a.granted_time() == simsync::sim_time(3ms));
    CHECK(bridge.stats().requests == 1);
}

TEST_CASE_FIXTURE(ForgeryTarget, "Remote.BadInput.ForgedSamplesToAParticipantAreCountedAndIgnored" * doctest::timeout(120))
{
    // In the participant's own partition, the only one it reads.
    RawWriter forger(*participant, &simsync_remote_ToParticipant_desc, "simsync/remote/to_participant",
                     r::participant_partition("simsync", "controller", inc));
    REQUIRE(forger.wait_for_readers(1));
    auto forged = [&](const std::string& name, std::uint64_t target, std::uint64_t host, std::uint64_t seq) {
        simsync_remote_ToParticipant s{};
        std::strncpy(s.participant, name.c_str(), sizeof s.participant - 1);
        s.target_incarnation = target;
        s.host_incarnation = host;
        s.seq = seq;
        s.kind = static_cast<std::uint8_t>(r::ToParticipantKind::grant);
        s.ref = 2;
        s.granted = 1'000'000'000;
        forger.write(&s);
    };
    forged("controller", inc, bridge.incarnation() + 1, 2); // another host
    forged("controller", inc + 1, bridge.incarnation(), 2); // a previous incarnation
    forged("controller", inc, bridge.incarnation(), 1);     // a duplicate of the welcome's number
    forged("controller", inc, bridge.incarnation(), 50);    // far ahead
    forged("someone-else", 3, bridge.incarnation(), 2);     // another participant's
    REQUIRE(remote.wait_for_rejections(5, kWait));
    const r::RejectionCounts c = remote.rejections();
    CHECK(c[r::Rejection::wrong_host] == 1);
    CHECK(c[r::Rejection::wrong_incarnation] == 1);
    CHECK(c[r::Rejection::duplicate] == 1);
    CHECK(c[r::Rejection::out_of_order] == 1);
    CHECK(c[r::Rejection::other_participant] == 1);
    // None of the forged grants was taken for a reply.
    sd::RemoteAccess a = remote.request_access(simsync::sim_time(2ms));
    REQUIRE(a);
    CHECK(a.granted_time() == simsync::sim_time(2ms));
}

namespace {

// `desc` (a type of unbounded_remote.idl) registered as the real type `name`,
// without type information: Cyclone matches it by name with the remote
// participants' readers, as it would a program built from an IDL without the bound.
dds_topic_descriptor_t as_real_type(const dds_topic_descriptor_t& desc, const char* name)
{
    return dds_topic_descriptor_t{desc.m_size,
                                  desc.m_align,
                                  desc.m_flagset & ~static_cast<std::uint32_t>(DDS_TOPIC_XTYPES_METADATA),
                                  desc.m_nkeys,
                                  name,
                                  desc.m_keys,
                                  desc.m_nops,
                                  desc.m_ops,
                                  desc.m_meta,
                                  {nullptr, 0},
                                  {nullptr, 0},
                                  desc.restrict_data_representation};
}

} // namespace

// A writer whose type has no bound on the payload sends one above 64 KiB each
// way: the reader drops it and counts it (payload_too_large), and nothing is
// applied. (With the bound in the readers' type, Cyclone's deserializer dropped
// the sample before the decoder saw it: nothing was counted, and only a Cyclone
// warning on stderr told.)
TEST_CASE_FIXTURE(ForgeryTarget, "Remote.BadInput.AnOversizedPayloadFromAWriterWithoutTheBoundIsCounted" *
                                     doctest::timeout(120))
{
    // Its own DDS participant: its topics have the real names, with other types.
    auto other = sd::Participant::create(lease.config(true));
    std::vector<std::uint8_t> big(r::kMaxPayload + 1, 0xAB);

    const dds_topic_descriptor_t to_host = as_real_type(simsync_remote_unbounded_ToHost_desc, "simsync_remote::ToHost");
    RawWriter host_forger(*other, &to_host, "simsync/remote/to_host", r::participant_partition("simsync", "controller"));
    REQUIRE(host_forger.wait_for_readers(1));
    simsync_remote_unbounded_ToHost release{};
    std::strncpy(release.participant, "controller", sizeof release.participant - 1);
    release.incarnation = inc;
    release.seq = 2;
    release.kind = static_cast<std::uint8_t>(r::ToHostKind::release);
    release.payload._buffer = big.data();
    release.payload._length = release.payload._maximum = static_cast<std::uint32_t>(big.size());
    host_forger.write(&release);
    CHECK(bridge.wait_until([](const sd::BridgeStats& s) { return s.rejected.total() >= 1; }, kWait));
    CHECK(bridge.stats().rejected[r::Rejection::payload_too_large] == 1);
    CHECK(bridge.stats().releases == 0);

    const dds_topic_descriptor_t to_participant =
        as_real_type(simsync_remote_unbounded_ToParticipant_desc, "simsync_remote::ToParticipant");
    RawWriter participant_forger(*other, &to_participant, "simsync/remote/to_participant",
                                 r::participant_partition("simsync", "controller", inc));
    REQUIRE(participant_forger.wait_for_readers(1));
    simsync_remote_unbounded_ToParticipant grant{};
    std::strncpy(grant.participant, "controller", sizeof grant.participant - 1);
    grant.target_incarnation = inc;
    grant.host_incarnation = bridge.incarnation();
    grant.seq = 2;
    grant.kind = static_cast<std::uint8_t>(r::ToParticipantKind::grant);
    grant.ref = 2;
    grant.payload._buffer = big.data();
    grant.payload._length = grant.payload._maximum = static_cast<std::uint32_t>(big.size());
    participant_forger.write(&grant);
    CHECK(remote.wait_for_rejections(1, kWait));
    CHECK(remote.rejections()[r::Rejection::payload_too_large] == 1);
}

TEST_CASE_FIXTURE(Host, "Remote.State.FollowsPauseResumeAndStop" * doctest::timeout(120))
{
    sd::Bridge bridge(handler, participant);
    sd::RemoteAccessor remote(participant, "sensor", {.kind = simsync::AccessorKind::free});
    CHECK(remote.state() == simsync::HandlerState::running);
    handler.pause();
    CHECK(remote.wait_for_state(simsync::HandlerState::paused, kWait));
    handler.resume();
    CHECK(remote.wait_for_state(simsync::HandlerState::running, kWait));

    // A request waiting when the handler stops ends `stopped`; later ones at once.
    handler.pause();
    REQUIRE(remote.wait_for_state(simsync::HandlerState::paused, kWait));
    std::error_code waited;
    std::thread waiter([&] { waited = remote.request_access(simsync::sim_time(5ms)).error(); });
    REQUIRE(bridge.wait_until([](const sd::BridgeStats& s) { return s.requests == 1; }, kWait));
    handler.stop();
    waiter.join();
    CHECK(waited == simsync::errc::stopped);
    CHECK(remote.wait_for_state(simsync::HandlerState::stopped, kWait));
    CHECK(remote.request_access(simsync::sim_time(5ms)).error() == simsync::errc::stopped);
}

TEST_CASE_FIXTURE(PausedHost, "Remote.Stop.DestroyingTheBridgeEndsWaitingRequests" * doctest::timeout(120))
{
    auto bridge = std::make_unique<sd::Bridge>(handler, participant);
    sd::RemoteAccessor remote(participant, "controller");
    std::error_code waited;
    std::thread waiter([&] { waited = remote.request_access(simsync::sim_time(5ms)).error(); });
    REQUIRE(bridge->wait_until([](const sd::BridgeStats& s) { return s.requests == 1; }, kWait));
    bridge.reset();
    waiter.join();
    CHECK(waited == simsync::errc::stopped);
    CHECK(handler.snapshot().accessors.empty()); // deregistered
}

TEST_CASE_FIXTURE(Host, "Remote.Payload.At64KiBBothWaysAndRefusedAbove" * doctest::timeout(120))
{
    std::mutex mutex;
    std::vector<std::size_t> applied_sizes;
    std::size_t grant_size = r::kMaxPayload;
    sd::BridgeConfig config;
    config.grant_payload = [&](const sd::RemoteParticipantInfo&, simsync::Access&) {
        std::lock_guard<std::mutex> guard(mutex);
        return std::vector<std::uint8_t>(grant_size, 0x5A);
    };
    config.apply_release = [&](const sd::RemoteParticipantInfo&, simsync::Access&, std::span<const std::uint8_t> b) {
        std::lock_guard<std::mutex> guard(mutex);
        applied_sizes.push_back(b.size());
    };
    sd::Bridge bridge(handler, participant, config);
    sd::RemoteAccessor remote(participant, "camera");

    sd::RemoteAccess a = remote.request_access(simsync::kSimStart);
    REQUIRE(a);
    CHECK(a.payload().size() == r::kMaxPayload);
    const std::vector<std::uint8_t> too_big(r::kMaxPayload + 1, 1);
    CHECK_THROWS_AS(a.release(too_big), simsync::Error);
    CHECK(a); // still held
    const std::vector<std::uint8_t> largest(r::kMaxPayload, 2);
    a.release(simsync::sim_time(1ms), largest);

    {
        std::lock_guard<std::mutex> guard(mutex);
        grant_size = r::kMaxPayload + 1; // the host's callback returns too much
    }
    sd::RemoteAccess b = remote.request_access(simsync::sim_time(1ms));
    REQUIRE(b);
    CHECK(b.payload().empty());
    b.release();
    REQUIRE(bridge.wait_until([](const sd::BridgeStats& s) { return s.releases == 2; }, kWait));
    CHECK(bridge.stats().payload_failures == 1);
    std::lock_guard<std::mutex> guard(mutex);
    CHECK(applied_sizes == std::vector<std::size_t>{r::kMaxPayload, 0});
}

TEST_CASE_FIXTURE(PausedHost, "Remote.Async.CompletesOnItsExecutorAndCancels" * doctest::timeout(120))
{
    sd::BridgeConfig config;
    config.grant_payload = [](const sd::RemoteParticipantInfo&, simsync::Access&) { return bytes_of("obs"); };
    sd::Bridge bridge(handler, participant, config);
    sd::RemoteAccessor remote(participant, "planner");

    // Paused at 0: granted at once, completed on the io_context's thread (this one).
    boost::asio::io_context io;
    std::error_code error{simsync::errc::invalid_state};
    sd::RemoteAccess got;
    bool on_this_thread = false;
    const auto me = std::this_thread::get_id();
    remote.async_request_access(simsync::kSimStart, boost::asio::bind_executor(io, [&](std::error_code e, sd::RemoteAccess a) {
                                    error = e;
                                    got = std::move(a);
                                    on_this_thread = std::this_thread::get_id() == me;
                                }));
    CHECK_THROWS_AS(remote.request_access(simsync::kSimStart), simsync::Error); // busy while pending
    io.run_for(kWait); // returns once the completion has run (its work count is held until then)
    CHECK_FALSE(error);
    REQUIRE(got);
    CHECK(on_this_thread);
    CHECK(got.granted_time() == simsync::kSimStart);
    CHECK(string_of(got.payload()) == "obs");
    got.release(simsync::sim_time(5ms));

    // 5 ms cannot be reached while paused: cancelled through its slot.
    boost::asio::cancellation_signal cancel;
    io.restart();
    error = {};
    remote.async_request_access(simsync::sim_time(5ms),
                                boost::asio::bind_cancellation_slot(
                                    cancel.slot(), boost::asio::bind_executor(io, [&](std::error_code e, sd::RemoteAccess a) {
                                        error = e;
                                        got = std::move(a);
                                    })));
    REQUIRE(bridge.wait_until([](const sd::BridgeStats& s) { return s.requests == 2; }, kWait));
    cancel.emit(boost::asio::cancellation_type::terminal);
    io.run_for(kWait);
    CHECK(error == simsync::errc::cancelled);
    CHECK_FALSE(got);
    REQUIRE(bridge.wait_until([](const sd::BridgeStats& s) { return s.refusals == 1; }, kWait));

    // A future, once time may run.
    handler.resume();
    auto future = remote.async_request_access(simsync::sim_time(5ms), boost::asio::use_future);
    REQUIRE(future.wait_for(kWait) == std::future_status::ready);
    auto [future_error, f] = future.get();
    CHECK_FALSE(future_error);
    REQUIRE(f);
    CHECK(f.granted_time() == simsync::sim_time(5ms));
    f.release();
    CHECK(remote.rejections().total() == 0);
}

// Requests that time out while their grant is on its way: the host must
// withdraw or release every one of them, answer each exactly once, and never
// see two requests of one participant at once.
TEST_CASE_FIXTURE(RacingHost<99>, "Remote.Stress.TimeoutsRacingGrants" * doctest::timeout(120))
{
    const int rounds = stress_rounds();
    std::mt19937 random(12345);
    std::uniform_int_distribution<int> timeout_us(0, 400);
    int granted = 0;
    int timed_out = 0;
    int other = 0;
    for (int k = 0; k < rounds; ++k) {
        const simsync::SimTime t = simsync::sim_time(k * 1ms);
        sd::RemoteAccess a = remote.request_access_for(t, std::chrono::microseconds(timeout_us(random)));
        if (a) {
            ++granted;
            CHECK(a.granted_time() == t);
            a.release(t + 1ms);
        } else if (a.error() == simsync::errc::timed_out) {
            ++timed_out;
        } else {
            ++other;
        }
    }
    // Whatever raced, the participant can still be served.
    sd::RemoteAccess last = remote.request_access(simsync::sim_time(rounds * 1ms));
    REQUIRE(last);
    last.release();
    const auto requests = static_cast<std::uint64_t>(rounds + 1);
    const bool settled = bridge.wait_until(
        [&](const sd::BridgeStats& s) { return s.requests == requests && s.grants + s.refusals == requests; }, kWait);
    {
        const sd::BridgeStats s = bridge.stats();
        INFO("requests " << s.requests << ", grants " << s.grants << ", refusals " << s.refusals << ", releases "
                         << s.releases << ", withdrawn " << s.withdrawn_grants << ", protocol errors "
                         << s.protocol_errors);
        CHECK(settled);
    }
    REQUIRE(bridge.wait_until(
        [&](const sd::BridgeStats& s) { return s.requests == requests && s.grants + s.refusals == requests; }, kWait));
    const sd::BridgeStats s = bridge.stats();
    MESSAGE("granted " << granted << ", timed out " << timed_out << ", grants withdrawn at the host "
                       << s.withdrawn_grants);
    CHECK(other == 0);
    CHECK(s.protocol_errors == 0);
    CHECK(s.rejected.total() == 0);
    CHECK(remote.rejections().total() == 0);
    // Every grant the participant kept was sent as one; the host may have sent
    // more (a grant that reached it after its timeout, released by the host).
    CHECK(s.grants >= static_cast<std::uint64_t>(granted + 1));
    CHECK(s.grants + s.refusals == requests);
}

// Asynchronous requests cancelled through their slot while the grant is on
// its way: each completes exactly once, granted or cancelled, and the host
// answers every request once.
TEST_CASE_FIXTURE(RacingHost<7>, "Remote.Stress.AsyncCancellationsRacingGrants" * doctest::timeout(120))
{
    const int rounds = stress_rounds();
    std::mt19937 random(54321);
    std::uniform_int_distribution<int> delay_us(0, 400);
    boost::asio::io_context io;
    int granted = 0;
    int cancelled = 0;
    int completions = 0;
    int other = 0;
    for (int k = 0; k < rounds; ++k) {
        const simsync::SimTime t = simsync::sim_time(k * 1ms);
        boost::asio::cancellation_signal cancel;
        sd::RemoteAccess got;
        std::error_code error;
        remote.async_request_access(t, boost::asio::bind_cancellation_slot(
                                           cancel.slot(), boost::asio::bind_executor(io, [&](std::error_code e, sd::RemoteAccess a) {
                                               ++completions;
                                               error = e;
                                               got = std::move(a);
                                           })));
        const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(delay_us(random));
        while (std::chrono::steady_clock::now() < until) {
        }
        cancel.emit(boost::asio::cancellation_type::terminal); // harmless once completed
        io.restart();
        io.run_for(kWait);
        if (got) {
            ++granted;
            got.release(t + 1ms);
        } else if (error == simsync::errc::cancelled) {
            ++cancelled;
        } else {
            ++other;
        }
    }
    const auto requests = static_cast<std::uint64_t>(rounds);
    REQUIRE(bridge.wait_until(
        [&](const sd::BridgeStats& s) { return s.requests == requests && s.grants + s.refusals == requests; }, kWait));
    MESSAGE("granted " << granted << ", cancelled " << cancelled << ", grants withdrawn at the host "
                       << bridge.stats().withdrawn_grants);
    CHECK(completions == rounds);
    CHECK(other == 0);
    CHECK(bridge.stats().protocol_errors == 0);
    CHECK(remote.rejections().total() == 0);
    sd::RemoteAccess last = remote.request_access(simsync::sim_time(rounds * 1ms));
    CHECK(last);
}

namespace {

// The requests a participant has written, as a raw reader of the participant
// topic in this process sees them: Cyclone delivers to a local reader inside
// dds_write, so a request is counted here before its write returns.
class RequestCounter {
public:
    explicit RequestCounter(const sd::Participant& p)
    {
        topic_ = dds_create_topic(p.native_handle(), &simsync_remote_ToHost_desc, "simsync/remote/to_host", nullptr,
                                  nullptr);
        REQUIRE(topic_ > 0);
        dds_qos_t* q = dds_create_qos();
        dds_qset_reliability(q, DDS_RELIABILITY_RELIABLE, DDS_SECS(5));
        dds_qset_history(q, DDS_HISTORY_KEEP_ALL, 0);
        dds_qset_partition1(q, "simsync");
        reader_ = dds_create_reader(p.native_handle(), topic_, q, nullptr);
        dds_delete_qos(q);
        REQUIRE(reader_ > 0);
    }
    ~RequestCounter()
    {
        dds_delete(reader_);
        dds_delete(topic_);
    }
    // Any thread (one at a time).
    std::uint64_t requests()
    {
        for (;;) {
            void* samples[8] = {};
            dds_sample_info_t infos[8];
            const dds_return_t n = dds_take(reader_, samples, infos, 8, 8);
            if (n <= 0) break;
            for (dds_return_t i = 0; i < n; ++i) {
                const auto* s = static_cast<const simsync_remote_ToHost*>(samples[i]);
                if (infos[i].valid_data && s->kind == static_cast<std::uint8_t>(r::ToHostKind::request)) ++requests_;
            }
            dds_return_loan(reader_, samples, n);
        }
        return requests_;
    }

private:
    dds_entity_t topic_ = 0;
    dds_entity_t reader_ = 0;
    std::uint64_t requests_ = 0;
};

// A cancellation slot over a cancellation_signal's that makes the race of a
// reply re-arming through the slot certain instead of rare: its first
// installation waits, if the request has already been written (the slot's
// handler installed after the request started), until the completion has
// re-armed through it on another thread. Installed before the request starts,
// it goes through at once.
class ReArmProbe {
public:
    struct State {
        boost::asio::cancellation_signal signal;
        RequestCounter* requests = nullptr;
        std::mutex mutex;
        std::condition_variable changed;
        int installs = 0;
        bool installed_after_start = false;
        bool rearmed = false;
    };
    explicit ReArmProbe(State& state) : state_(&state) {}
    bool is_connected() const noexcept { return true; }
    template <class CancellationHandler, class... Args>
    CancellationHandler& emplace(Args&&... args)
    {
        std::unique_lock<std::mutex> lock(state_->mutex);
        if (state_->installs++ == 0 && state_->requests->requests() > 0) {
            state_->installed_after_start = true;
            state_->changed.wait_for(lock, kWait, [&] { return state_->rearmed; });
        }
        lock.unlock();
        return state_->signal.slot().template emplace<CancellationHandler>(std::forward<Args>(args)...);
    }

private:
    State* state_;
};

} // namespace

// A reply completes on another thread of a multi-threaded io_context while
// the initiating call has not returned, and its handler re-arms through the
// same slot: cancelling through the slot must withdraw the live request. (With
// the slot's handler installed after the request started, the initiating call
// replaced the live request's handler with the finished one's, racing its
// installation, and the emission withdrew nothing.)
TEST_CASE_FIXTURE(PausedHost, "Remote.Async.ASlotReArmedByAReplyOnAnotherThreadWithdrawsTheLiveRequest" *
                                  doctest::timeout(120))
{
    sd::Bridge bridge(handler, participant);
    RequestCounter counter(*participant);
    sd::RemoteAccessor remote(participant, "planner");
    ReArmProbe::State probe;
    probe.requests = &counter;

    // What the completions tell, declared first: they outlive the runners.
    std::mutex mutex;
    std::condition_variable done;
    std::error_code first_error{simsync::errc::invalid_state};
    std::optional<std::error_code> second_error;
    boost::asio::io_context io;
    auto work = boost::asio::make_work_guard(io);
    std::vector<std::thread> runners;
    for (int k = 0; k < 2; ++k) runners.emplace_back([&io] { io.run(); });
    struct Stopper {
        boost::asio::executor_work_guard<boost::asio::io_context::executor_type>& work;
        std::vector<std::thread>& runners;
        simsync::SimSyncHandler& handler;
        ~Stopper()
        {
            handler.stop(); // ends a request still pending (`stopped`)
            work.reset();
            for (auto& t : runners) t.join();
        }
    } stopper{work, runners, handler};

    auto second = [&](std::error_code e, sd::RemoteAccess) {
        {
            std::lock_guard<std::mutex> guard(mutex);
            second_error = e;
        }
        done.notify_all();
    };
    // Paused at 0: 0 is granted at once; the re-armed request for 5 ms waits.
    auto first = [&](std::error_code e, sd::RemoteAccess a) {
        {
            std::lock_guard<std::mutex> guard(mutex);
            first_error = e;
        }
        a.release();
        remote.async_request_access(simsync::sim_time(5ms),
                                    boost::asio::bind_cancellation_slot(ReArmProbe(probe), boost::asio::bind_executor(io, second)));
        {
            std::lock_guard<std::mutex> guard(probe.mutex);
            probe.rearmed = true;
        }
        probe.changed.notify_all();
    };
    remote.async_request_access(simsync::kSimStart,
                                boost::asio::bind_cancellation_slot(ReArmProbe(probe), boost::asio::bind_executor(io, first)));
    {
        std::unique_lock<std::mutex> lock(probe.mutex);
        REQUIRE(probe.changed.wait_for(lock, kWait, [&] { return probe.rearmed; }));
        CHECK(probe.installs == 2);
        INFO("the first request's slot handler was installed after it started: " << probe.installed_after_start);
    }
    REQUIRE(bridge.wait_until([](const sd::BridgeStats& s) { return s.requests == 2; }, kWait));
    probe.signal.emit(boost::asio::cancellation_type::terminal);
    {
        std::unique_lock<std::mutex> lock(mutex);
        const bool ended = done.wait_for(lock, kWait, [&] { return second_error.has_value(); });
        CHECK_FALSE(first_error);
        REQUIRE_MESSAGE(ended, "the emission did not withdraw the re-armed request");
        CHECK(*second_error == simsync::errc::cancelled);
    }
    // The host withdrew it too, and answered it `cancelled`.
    CHECK(bridge.wait_until([](const sd::BridgeStats& s) { return s.refusals == 1; }, kWait));
    CHECK_FALSE(probe.installed_after_start);
}

// Requests given up on (a zero timeout: withdrawn before any reply can come)
// get their replies later, granted and withdrawn at the host or refused
// `cancelled`: each is dropped, and the next request gets its own reply.
TEST_CASE_FIXTURE(PausedHost, "Remote.Request.TheReplyToARequestGivenUpOnIsDropped" * doctest::timeout(120))
{
    sd::Bridge bridge(handler, participant);
    sd::RemoteAccessor remote(participant, "controller");
    constexpr int kRounds = 50;
    int given_up = 0;
    for (int k = 0; k < kRounds; ++k) {
        // Paused at 0: the host can grant 0, and cannot grant 5 ms.
        const simsync::SimTime asked = k % 2 == 0 ? simsync::kSimStart : simsync::sim_time(5ms);
        sd::RemoteAccess stale = remote.request_access_for(asked, 0ns);
        if (stale) {
            stale.release();
            continue;
        }
        CHECK(stale.error() == simsync::errc::timed_out);
        ++given_up;
        sd::RemoteAccess next = remote.request_access_for(simsync::kSimStart, kWait);
        INFO("round " << k);
        REQUIRE(next);
        CHECK(next.requested_time() == simsync::kSimStart);
        CHECK(next.granted_time() == simsync::kSimStart);
        next.release();
    }
    CHECK(given_up > 0);
    const auto requests = static_cast<std::uint64_t>(kRounds + given_up);
    REQUIRE(bridge.wait_until([&](const sd::BridgeStats& s) { return s.grants + s.refusals == requests; }, kWait));
    const sd::BridgeStats s = bridge.stats();
    MESSAGE(given_up << " requests given up on: " << s.withdrawn_grants << " granted and withdrawn at the host, "
                     << s.refusals << " refused");
    CHECK(s.protocol_errors == 0);
    CHECK(remote.rejections().total() == 0);
}

namespace {

// A participant made of raw Cyclone entities in its own DDS participant: a
// reader in its incarnation's partition, and a writer in its name's
// (remote::participant_partition) that announces it (free, exclusive). Dropping the writer is a
// loss for the host (the writer's liveliness goes), while the reader stays
// matched: what a participant killed before Cyclone dropped its process from
// discovery looks like.
class ForgedParticipant {
public:
    ForgedParticipant(const sd::DomainConfig& domain, const std::string& name)
        : participant_(sd::Participant::create(domain))
    {
        const dds_entity_t pp = participant_->native_handle();
        to_host_ = dds_create_topic(pp, &simsync_remote_ToHost_desc, "simsync/remote/to_host", nullptr, nullptr);
        to_participant_ = dds_create_topic(pp, &simsync_remote_ToParticipant_desc, "simsync/remote/to_participant",
                                           nullptr, nullptr);
        REQUIRE(to_host_ > 0);
        REQUIRE(to_participant_ > 0);
        dds_qos_t* q = dds_create_qos();
        dds_qset_reliability(q, DDS_RELIABILITY_RELIABLE, DDS_SECS(5));
        dds_qset_history(q, DDS_HISTORY_KEEP_ALL, 0);
        const std::uint64_t incarnation = 1000 + name.size();
        const std::string own = r::participant_partition("simsync", name, incarnation);
        dds_qset_partition1(q, own.c_str());
        reader_ = dds_create_reader(pp, to_participant_, q, nullptr);
        dds_qset_partition1(q, r::participant_partition("simsync", name).c_str());
        writer_ = dds_create_writer(pp, to_host_, q, nullptr);
        dds_delete_qos(q);
        REQUIRE(reader_ > 0);
        REQUIRE(writer_ > 0);
        dds_guid_t guid{};
        REQUIRE(dds_get_guid(reader_, &guid) == DDS_RETCODE_OK);
        simsync_remote_ToHost a = to_host(name, incarnation, 1, r::ToHostKind::announce);
        a.accessor_kind = 1;
        a.time = std::numeric_limits<std::int64_t>::min();
        std::memcpy(a.reply_reader, guid.v, 16);
        REQUIRE(dds_set_status_mask(writer_, DDS_PUBLICATION_MATCHED_STATUS) == DDS_RETCODE_OK);
        const auto deadline = std::chrono::steady_clock::now() + kWait;
        dds_publication_matched_status_t st{};
        while (dds_get_publication_matched_status(writer_, &st) == DDS_RETCODE_OK && st.current_count == 0 &&
               std::chrono::steady_clock::now() < deadline) {
            std::this_thread::sleep_for(1ms);
        }
        REQUIRE(st.current_count > 0);
        REQUIRE(dds_write(writer_, &a) == DDS_RETCODE_OK);
    }
    ~ForgedParticipant()
    {
        dds_delete(reader_);
        if (writer_ > 0) dds_delete(writer_);
        dds_delete(to_participant_);
        dds_delete(to_host_);
    }
    ForgedParticipant(const ForgedParticipant&) = delete;
    ForgedParticipant& operator=(const ForgedParticipant&) = delete;

    // Its writer goes: the host takes it for lost.
    void lose_writer()
    {
        REQUIRE(dds_delete(writer_) == DDS_RETCODE_OK);
        writer_ = 0;
    }

private:
    std::shared_ptr<sd::Participant> participant_;
    dds_entity_t to_host_ = 0;
    dds_entity_t to_participant_ = 0;
    dds_entity_t reader_ = 0;
    dds_entity_t writer_ = 0;
};

} // namespace

// Many distinct names join and are lost (revoked): the writers the host keeps
// for names no longer registered stay within BridgeConfig::kept_writers, and
// go once no reader matches them. (Without a bound, one writer per name was
// kept for the life of the Bridge.)
TEST_CASE_FIXTURE(Host, "Remote.Churn.TheWritersKeptForLostNamesAreBounded" * doctest::timeout(120))
{
    sd::BridgeConfig config;
    config.kept_writers = 4;
    // Revoked is told once the revocation is done (`lost` is counted before).
    std::mutex mutex;
    std::condition_variable changed;
    std::uint64_t revoked = 0;
    config.on_left = [&](const sd::RemoteParticipantInfo&, sd::LeaveReason why) {
        {
            std::lock_guard<std::mutex> guard(mutex);
            if (why == sd::LeaveReason::lost) ++revoked;
        }
        changed.notify_all();
    };
    auto wait_revoked = [&](std::uint64_t n) {
        std::unique_lock<std::mutex> lock(mutex);
        return changed.wait_for(lock, kWait, [&] { return revoked >= n; });
    };
    sd::Bridge bridge(handler, participant, config);
    constexpr std::uint64_t kNames = 40;
    std::vector<std::unique_ptr<ForgedParticipant>> forged;
    std::uint64_t most = 0;
    for (std::uint64_t k = 0; k < kNames; ++k) {
        forged.push_back(std::make_unique<ForgedParticipant>(lease.config(true), "churn-" + std::to_string(k)));
        REQUIRE(bridge.wait_until([&](const sd::BridgeStats& s) { return s.announces == k + 1; }, kWait));
        most = std::max(most, bridge.stats().writers);
        forged.back()->lose_writer();
        REQUIRE(wait_revoked(k + 1));
        most = std::max(most, bridge.stats().writers);
    }
    const sd::BridgeStats s = bridge.stats();
    MESSAGE(kNames << " names joined and were lost; at most " << most << " writers held, " << s.writers << " at the end");
    CHECK(s.leaves == 0);
    CHECK(handler.snapshot().accessors.empty()); // every one revoked
    CHECK(most <= config.kept_writers + 1);      // + the one of the name joining
    CHECK(s.writers <= config.kept_writers);
    // Their readers go too: nothing matches the kept writers any more.
    forged.clear();
    CHECK(bridge.wait_until([](const sd::BridgeStats& st) { return st.writers == 0; }, kWait));
}

// A welcome is written only once the host's writer has matched the reader the
// announce named: here a raw reader in another partition, which the host never
// matches. (Cyclone 0.10 cannot move a subscriber into another partition, so
// the release of a held welcome on a later match is not provoked here.)
TEST_CASE_FIXTURE(Host, "Remote.Join.TheWelcomeWaitsForTheParticipantsReader" * doctest::timeout(120))
{
    sd::Bridge bridge(handler, participant);

    const dds_entity_t pp = participant->native_handle();
    dds_qos_t* sq = dds_create_qos();
    dds_qset_partition1(sq, "not-yet");
    const dds_entity_t subscriber = dds_create_subscriber(pp, sq, nullptr);
    dds_delete_qos(sq);
    REQUIRE(subscriber > 0);
    const dds_entity_t topic =
        dds_create_topic(pp, &simsync_remote_ToParticipant_desc, "simsync/remote/to_participant", nullptr, nullptr);
    REQUIRE(topic > 0);
    dds_qos_t* rq = dds_create_qos();
    dds_qset_reliability(rq, DDS_RELIABILITY_RELIABLE, DDS_SECS(1));
    dds_qset_history(rq, DDS_HISTORY_KEEP_ALL, 0);
    const dds_entity_t reader = dds_create_reader(subscriber, topic, rq, nullptr);
    dds_delete_qos(rq);
    REQUIRE(reader > 0);
    dds_guid_t guid{};
    REQUIRE(dds_get_guid(reader, &guid) == DDS_RETCODE_OK);

    RawWriter announcer(*participant, &simsync_remote_ToHost_desc, "simsync/remote/to_host", "simsync/late-reader");
    REQUIRE(announcer.wait_for_readers(1));
    auto announce = to_host("late-reader", 42, 1, r::ToHostKind::announce);
    std::memcpy(announce.reply_reader, guid.v, 16);
    announcer.write(&announce);
    REQUIRE(bridge.wait_until([](const sd::BridgeStats& s) { return s.held_for_discovery == 1; }, kWait));
    CHECK(bridge.participants() == std::vector<std::string>{"late-reader"});
    CHECK(bridge.stats().write_failures == 0);

    dds_delete(reader);
    dds_delete(topic);
    dds_delete(subscriber);
}

// A participant announces once its writer has matched a reader of the host's
// topic; if that reader is not the host's (or the host's own reader has not
// matched it yet: with DDS Security the two sides' matches can be far apart),
// the announce, volatile, never reaches the host. The participant repeats it
// until it is welcomed; the host ignores the repeats of one it admitted. Here a
// raw reader in the participant's partition takes the first announce before
// any host exists; the Bridge made afterwards still welcomes it.
TEST_CASE_FIXTURE(Host, "Remote.Join.AnAnnounceTheHostMissedIsRepeated" * doctest::timeout(120))
{
    const dds_entity_t pp = participant->native_handle();
    const dds_entity_t topic = dds_create_topic(pp, &simsync_remote_ToHost_desc, "simsync/remote/to_host", nullptr, nullptr);
    REQUIRE(topic > 0);
    dds_qos_t* rq = dds_create_qos();
    dds_qset_reliability(rq, DDS_RELIABILITY_RELIABLE, DDS_SECS(1));
    dds_qset_history(rq, DDS_HISTORY_KEEP_ALL, 0);
    dds_qset_partition1(rq, "simsync/late");
    const dds_entity_t early = dds_create_reader(pp, topic, rq, nullptr);
    dds_delete_qos(rq);
    REQUIRE(early > 0);

    std::optional<sd::RemoteAccessor> late;
    std::string failure;
    std::thread joiner([&] {
        try {
            late.emplace(participant, "late", simsync::AccessorOptions{}, sd::RemoteAccessorConfig{.join_timeout = kWait});
        } catch (const std::exception& e) {
            failure = e.what();
        }
    });
    // The first announce reached the early reader, with no host to hear it.
    const dds_entity_t waitset = dds_create_waitset(pp);
    REQUIRE(dds_set_status_mask(early, DDS_DATA_AVAILABLE_STATUS) == DDS_RETCODE_OK);
    REQUIRE(dds_waitset_attach(waitset, early, 0) == DDS_RETCODE_OK);
    bool announced = false;
    const auto deadline = std::chrono::steady_clock::now() + kWait;
    while (!announced && std::chrono::steady_clock::now() < deadline) {
        dds_waitset_wait(waitset, nullptr, 0, DDS_MSECS(50));
        void* samples[4] = {};
        dds_sample_info_t infos[4];
        const dds_return_t n = dds_take(early, samples, infos, 4, 4);
        for (dds_return_t i = 0; i < n; ++i) {
            announced = announced || (infos[i].valid_data &&
                                      static_cast<const simsync_remote_ToHost*>(samples[i])->kind == simsync_remote_ANNOUNCE);
        }
        if (n > 0) dds_return_loan(early, samples, n);
    }
    dds_delete(waitset);
    REQUIRE(announced);
    std::optional<sd::Bridge> bridge;
    bridge.emplace(handler, participant);
    joiner.join();
    CHECK(failure.empty());
    REQUIRE(late.has_value());
    CHECK(bridge->participants() == std::vector<std::string>{"late"});
    REQUIRE(bridge->wait_until([](const sd::BridgeStats& s) { return s.announces == 1; }, kWait));
    // Repeats of the admitted announce are ignored, not counted as refused.
    CHECK(bridge->stats().rejected.total() == 0);
    CHECK(late->request_access(simsync::kSimStart));
    late.reset();
    bridge.reset();
    dds_delete(early);
    dds_delete(topic);
}

// ------------------------------------------------------ across processes

namespace {

struct Spec {
    std::string name;
    int priority = 0;
    std::int64_t first_ns = 0;
    std::int64_t period_ns = 0;
    int count = 0;
};

using GrantRecord = std::tuple<std::uint64_t, std::string, std::int64_t>; // sequence, name, granted ns

// A local lockstep accessor on its own thread: `count` grants at first + k *
// period, releasing each with the next request's time.
void run_local(simsync::Accessor& accessor, const Spec& spec, std::mutex& mutex, std::vector<GrantRecord>& out,
               std::vector<std::string>& errors)
{
    for (int k = 0; k < spec.count; ++k) {
        const simsync::SimTime t{simsync::SimDuration{spec.first_ns + k * spec.period_ns}};
        simsync::Access a = accessor.request_access_for(t, kWait);
        if (!a) {
            std::lock_guard<std::mutex> guard(mutex);
            errors.push_back(spec.name + ": " + a.error().message());
            return;
        }
        {
            std::lock_guard<std::mutex> guard(mutex);
            out.emplace_back(a.sequence(), spec.name, a.granted_time().time_since_epoch().count());
        }
        if (k + 1 < spec.count) {
            a.release(t + simsync::SimDuration{spec.period_ns});
        } else {
            a.release();
        }
    }
    accessor.deregister();
}

simsync::AccessorOptions options_of(const Spec& s)
{
    return {.kind = simsync::AccessorKind::lockstep,
            .priority = s.priority,
            .first_request = simsync::SimTime{simsync::SimDuration{s.first_ns}}};
}

const std::vector<Spec> kSpecs = {
    {"a", 0, 0, 2'000'000, 15},
    {"b", 1, 1'000'000, 3'000'000, 10},
    {"c", 0, 0, 5'000'000, 6},
};

// The grant sequence the contract fixes for kSpecs, from the independent
// reference model of the grant rule (tests/model/grant_model.hpp, written from
// the headers, not from the engine): every accessor asks for its next instant
// as soon as it released the last, and each grant is the one the model allows.
std::vector<GrantRecord> reference_run()
{
    namespace m = simsync::model;
    m::GrantModel model(1ms, simsync::Rounding::nearest);
    for (const Spec& s : kSpecs) {
        model.add({.kind = simsync::AccessorKind::lockstep, .priority = s.priority,
                   .first_request = simsync::SimTime{simsync::SimDuration{s.first_ns}}},
                  s.name);
    }
    auto at = [](const Spec& s, int k) { return simsync::SimTime{simsync::SimDuration{s.first_ns + k * s.period_ns}}; };
    std::vector<int> done(kSpecs.size(), 0);
    std::vector<GrantRecord> grants;
    for (int guard = 0; guard < 100'000; ++guard) {
        for (std::size_t i = 0; i < kSpecs.size(); ++i) {
            if (model.registered(i) && model.idle(i) && done[i] < kSpecs[i].count) {
                REQUIRE(model.request(i, at(kSpecs[i], done[i])));
            }
        }
        const std::vector<std::size_t> now = model.grantable();
        if (now.empty()) {
            if (!model.advance()) break;
            continue;
        }
        // Exclusive accessors: the contract leaves no choice at an instant.
        REQUIRE(now.size() == 1);
        const std::size_t i = now.front();
        const m::ModelGrant g = model.grant(i);
        grants.emplace_back(g.sequence, kSpecs[i].name, g.time.time_since_epoch().count());
        ++done[i];
        if (done[i] < kSpecs[i].count) {
            model.release(i, at(kSpecs[i], done[i]));
        } else {
            model.release(i);
            model.deregister(i);
        }
    }
    return grants;
}

std::vector<std::string> child_args(const sd::testing::DomainLease& lease, const Spec& s)
{
    return {SIMSYNC_REMOTE_PARTICIPANT, "--domain", std::to_string(lease.id()), "--tag", lease.tag(), "--name", s.name,
            "--priority", std::to_string(s.priority), "--first-ns", std::to_string(s.first_ns), "--period-ns",
            std::to_string(s.period_ns), "--count", std::to_string(s.count)};
}

} // namespace

TEST_CASE_FIXTURE(PausedHost, "Remote.CrossProcess.MixedLocalAndRemoteGiveTheReferenceModelsGrantSequence" * doctest::timeout(120))
{
    const std::vector<GrantRecord> reference = reference_run();
    REQUIRE(reference.size() == 31);

    std::mutex mutex;
    std::vector<GrantRecord> grants;
    std::vector<std::string> applied_commands;
    sd::BridgeConfig config;
    config.grant_payload = [&](const sd::RemoteParticipantInfo& who, simsync::Access& a) {
        std::lock_guard<std::mutex> guard(mutex);
        grants.emplace_back(a.sequence(), who.name, a.granted_time().time_since_epoch().count());
        return std::vector<std::uint8_t>{};
    };
    config.apply_release = [&](const sd::RemoteParticipantInfo& who, simsync::Access&, std::span<const std::uint8_t> b) {
        std::lock_guard<std::mutex> guard(mutex);
        if (string_of(b) != who.name) applied_commands.push_back(who.name + " sent '" + string_of(b) + "'");
    };
    sd::Bridge bridge(handler, participant, config);

    // Registration order as in the reference: a (local), then b, then c (remote).
    simsync::Accessor a = handler.register_accessor(kSpecs[0].name, options_of(kSpecs[0]));
    // b goes from one access to the next with release_and_request (one
    // RELEASE_AND_REQUEST message), c with release(next) then request_access:
    // both must give the model's sequence.
    sd::testing::ChildProcess b([&] {
        auto args = child_args(lease, kSpecs[1]);
        args.push_back("--fused");
        return args;
    }());
    REQUIRE(bridge.wait_for_participants(1, kWait));
    sd::testing::ChildProcess c(child_args(lease, kSpecs[2]));
    REQUIRE(bridge.wait_for_participants(2, kWait));
    const auto joined_b = b.read_until([](const std::string& l) { return l.rfind("joined", 0) == 0; }, kWait);
    const auto joined_c = c.read_until([](const std::string& l) { return l.rfind("joined", 0) == 0; }, kWait);
    REQUIRE(joined_b);
    REQUIRE(joined_c);
    CHECK(joined_b->find("step_ns=1000000") != std::string::npos);
    CHECK(joined_c->find("state=paused") != std::string::npos);

    std::vector<std::string> errors;
    std::thread local([&] { run_local(a, kSpecs[0], mutex, grants, errors); });
    handler.resume();
    local.join();
    CHECK(b.read_until([](const std::string& l) { return l == "done"; }, kWait));
    CHECK(c.read_until([](const std::string& l) { return l == "done"; }, kWait));
    CHECK(b.wait(kWait) == 0);
    CHECK(c.wait(kWait) == 0);
    CHECK(errors.empty());

    std::lock_guard<std::mutex> guard(mutex);
    std::sort(grants.begin(), grants.end());
    CHECK(grants == reference);
    CHECK(applied_commands.empty());
    // The children saw the grants the host recorded for them.
    std::size_t child_grants = 0;
    for (const auto* child : {&b, &c}) {
        for (const std::string& line : child->lines()) child_grants += line.rfind("grant ", 0) == 0 ? 1 : 0;
    }
    CHECK(child_grants == 16);
    CHECK(bridge.stats().rejected.total() == 0);
    MESSAGE("welcomes held for discovery: " << bridge.stats().held_for_discovery);
}

TEST_CASE_FIXTURE(Host, "Remote.CrossProcess.AnotherDomainTagOrPartitionNeverJoinsNorDisturbs" * doctest::timeout(120))
{
    sd::Bridge bridge(handler, participant);
    const sd::testing::DomainLease another_domain; // another id, leased like ours
    REQUIRE(another_domain.id() != lease.id());

    const Spec spec{"worker", 0, 0, 1'000'000, 5};
    std::vector<std::string> other_tag = child_args(lease, {"intruder-tag", 0, 0, 1'000'000, 5});
    other_tag[4] = lease.tag() + "-another-simulation"; // --tag's value
    other_tag.insert(other_tag.end(), {"--join-timeout", "1"});
    std::vector<std::string> other_partition = child_args(lease, {"intruder-partition", 0, 0, 1'000'000, 5});
    other_partition.insert(other_partition.end(), {"--partition", "another-simulation", "--join-timeout", "1"});
    // Same tag and partition as ours, another domain id.
    std::vector<std::string> other_domain = child_args(lease, {"intruder-domain", 0, 0, 1'000'000, 5});
    other_domain[2] = std::to_string(another_domain.id()); // --domain's value
    other_domain.insert(other_domain.end(), {"--join-timeout", "1"});

    sd::testing::ChildProcess intruder_tag(other_tag);
    sd::testing::ChildProcess intruder_partition(other_partition);
    sd::testing::ChildProcess intruder_domain(other_domain);
    sd::testing::ChildProcess worker(child_args(lease, spec));
    CHECK(worker.read_until([](const std::string& l) { return l == "done"; }, kWait));
    CHECK(worker.wait(kWait) == 0);
    // The strangers find no host: no match, so no announce is ever written.
    CHECK(intruder_tag.wait(kWait) == 1);
    CHECK(intruder_partition.wait(kWait) == 1);
    CHECK(intruder_domain.wait(kWait) == 1);
    intruder_tag.read_to_end(kWait);
    intruder_partition.read_to_end(kWait);
    intruder_domain.read_to_end(kWait);
    REQUIRE_FALSE(intruder_domain.lines().empty());
    CHECK(intruder_domain.lines().back().rfind("join-failed", 0) == 0);
    REQUIRE_FALSE(intruder_tag.lines().empty());
    CHECK(intruder_tag.lines().back().rfind("join-failed", 0) == 0);
    REQUIRE_FALSE(intruder_partition.lines().empty());
    CHECK(intruder_partition.lines().back().rfind("join-failed", 0) == 0);

    REQUIRE(bridge.wait_until([](const sd::BridgeStats& st) { return st.grants == 5 && st.leaves == 1; }, kWait));
    const sd::BridgeStats s = bridge.stats();
    CHECK(s.announces == 1); // the worker only
    CHECK(s.rejected.total() == 0);
}

// ------------------------------------------------- joins and leaves, as told

namespace {

// What BridgeConfig::on_joined / on_left were told, as seen on the loop.
struct Told {
    std::string what; // "joined", or the LeaveReason
    std::string name;
    std::uint64_t incarnation = 0;
    bool on_loop = false;
    bool listed = false; // participants() named it during the call
};

class TellingLog {
public:
    // Callbacks for `config`; `loop` is the Bridge's; `bridge` is read in the calls.
    void attach(sd::BridgeConfig& config, const simsync::EventLoop& loop, const std::atomic<sd::Bridge*>& bridge)
    {
        auto record = [this, &loop, &bridge](std::string what, const sd::RemoteParticipantInfo& who) {
            Told t{std::move(what), who.name, who.incarnation, loop.executor().running_in_this_thread(), false};
            if (const sd::Bridge* b = bridge.load()) {
                const auto names = b->participants();
                t.listed = std::find(names.begin(), names.end(), who.name) != names.end();
            }
            {
                std::lock_guard<std::mutex> guard(mutex_);
                told_.push_back(std::move(t));
            }
            changed_.notify_all();
        };
        config.on_joined = [record](const sd::RemoteParticipantInfo& who) { record("joined", who); };
        config.on_left = [record](const sd::RemoteParticipantInfo& who, sd::LeaveReason why) {
            record(sd::to_string(why), who);
        };
    }
    // Everything told once there are `n` (or after kWait).
    std::vector<Told> wait_for(std::size_t n)
    {
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait_for(lock, kWait, [&] { return told_.size() >= n; });
        return told_;
    }

private:
    std::mutex mutex_;
    std::condition_variable changed_;
    std::vector<Told> told_;
};

} // namespace

TEST_CASE("Remote.Join.JoinedAndLeftAreToldOncePerParticipantOnTheLoop" * doctest::timeout(120))
{
    sd::testing::DomainLease lease;
    auto participant = sd::Participant::create(lease.config(true));
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms});
    simsync::EventLoop loop;
    std::atomic<sd::Bridge*> self{nullptr};
    TellingLog log;
    sd::BridgeConfig config;
    log.attach(config, loop, self);
    auto bridge = std::make_unique<sd::Bridge>(handler, participant, config, loop.executor());
    self = bridge.get();

    // A participant in another process: joins, is granted 3 times, leaves.
    sd::testing::ChildProcess worker(child_args(lease, {"worker", 0, 0, 1'000'000, 3}));
    CHECK(worker.read_until([](const std::string& l) { return l == "done"; }, kWait));
    CHECK(worker.wait(kWait) == 0);
    std::vector<Told> told = log.wait_for(2);
    REQUIRE(told.size() == 2);
    CHECK(told[0].what == "joined");
    CHECK(told[0].name == "worker");
    CHECK(told[0].listed);
    CHECK(told[1].what == "left");
    CHECK(told[1].name == "worker");
    CHECK(told[1].incarnation == told[0].incarnation);
    CHECK_FALSE(told[1].listed);
    CHECK(bridge->stats().leaves == 1);

    // A refused announce (a duplicate name) is no join; a participant still
    // registered when the Bridge goes is told `closing`.
    auto stays = std::make_unique<sd::RemoteAccessor>(participant, "stays");
    CHECK_THROWS_AS(sd::RemoteAccessor(participant, "stays"), simsync::Error);
    CHECK(bridge->stats().refused_announces == 1);
    self = nullptr;
    bridge.reset();
    told = log.wait_for(4);
    REQUIRE(told.size() == 4);
    CHECK(told[2].what == "joined");
    CHECK(told[2].name == "stays");
    CHECK(told[2].incarnation == stays->incarnation());
    CHECK(told[3].what == "closing");
    CHECK(told[3].name == "stays");
    CHECK(told[3].incarnation == stays->incarnation());
    for (const Told& t : told) CHECK(t.on_loop);
}

// ------------------------------------------------- the waits and the handler's stop

namespace {

constexpr auto kLongTimeout = 60s; // a wait that lasts this long has missed the stop

enum class BridgeWait { count, names, until };
const char* name_of(BridgeWait w)
{
    switch (w) {
    case BridgeWait::count: return "wait_for_participants(count)";
    case BridgeWait::names: return "wait_for_participants(names)";
    case BridgeWait::until: return "wait_until";
    }
    return "?";
}

struct WaitOutcome {
    bool held = false;                  // what it waited for holds
    std::vector<std::string> missing;   // names: what it returned
    std::chrono::steady_clock::duration took{};
};

// Waits with kLongTimeout for what cannot happen (no participant joins).
WaitOutcome wait_for_nobody(const sd::Bridge& bridge, BridgeWait w)
{
    WaitOutcome o;
    const auto start = std::chrono::steady_clock::now();
    switch (w) {
    case BridgeWait::count: o.held = bridge.wait_for_participants(1, kLongTimeout); break;
    case BridgeWait::names:
        o.missing = bridge.wait_for_participants(std::vector<std::string>{"a", "b"}, kLongTimeout);
        o.held = o.missing.empty();
        break;
    case BridgeWait::until:
        o.held = bridge.wait_until([](const sd::BridgeStats& s) { return s.announces > 0; }, kLongTimeout);
        break;
    }
    o.took = std::chrono::steady_clock::now() - start;
    return o;
}

// A thread that stops `handler` once `told` is ready, after `yields` yields.
std::thread stop_when_told(simsync::SimSyncHandler& handler, std::future<void> told, int yields = 0)
{
    return std::thread([&handler, yields, told = std::move(told)] {
        told.wait();
        for (int i = 0; i < yields; ++i) std::this_thread::yield();
        handler.stop();
    });
}

void check_ended_by_the_stop(const WaitOutcome& o, BridgeWait w, const simsync::SimSyncHandler& handler)
{
    INFO(name_of(w));
    CHECK_FALSE(o.held);
    CHECK(o.took < kLongTimeout);
    if (w == BridgeWait::names) CHECK(o.missing == std::vector<std::string>{"a", "b"});
    CHECK(handler.state() == simsync::HandlerState::stopped); // how the caller tells it from a timeout
}

} // namespace

// A stop from another thread ends each wait long before its timeout.
TEST_CASE("Remote.Wait.AStopFromAnotherThreadEndsEachWait" * doctest::timeout(120))
{
    sd::testing::DomainLease lease;
    auto participant = sd::Participant::create(lease.config(true));
    for (BridgeWait w : {BridgeWait::count, BridgeWait::names, BridgeWait::until}) {
        simsync::CountingWorld world;
        simsync::SimSyncHandler handler(world, {.step = 1ms, .start_paused = true});
        sd::Bridge bridge(handler, participant);
        std::promise<void> go;
        std::thread stopper = stop_when_told(handler, go.get_future());
        go.set_value();
        const WaitOutcome o = wait_for_nobody(bridge, w);
        stopper.join();
        check_ended_by_the_stop(o, w, handler);
    }
}

// The stop lands while wait_until is blocked: its predicate's first call (with
// the Bridge's lock held) lets the stopper go, and the Bridge can only take
// the stop under that lock once the wait has released it to block.
TEST_CASE_FIXTURE(PausedHost, "Remote.Wait.AStopWhileBlockedEndsTheWait" * doctest::timeout(120))
{
    sd::Bridge bridge(handler, participant);
    std::promise<void> go;
    std::thread stopper = stop_when_told(handler, go.get_future());
    bool first = true;
    const auto start = std::chrono::steady_clock::now();
    const bool held = bridge.wait_until(
        [&](const sd::BridgeStats& s) {
            if (std::exchange(first, false)) go.set_value();
            return s.announces > 0;
        },
        kLongTimeout);
    const auto took = std::chrono::steady_clock::now() - start;
    stopper.join();
    CHECK_FALSE(held);
    CHECK(took < kLongTimeout);
    CHECK(handler.state() == simsync::HandlerState::stopped);
}

// A handler stopped before the wait (before the Bridge was made, or after)
// ends each wait at once; what holds already is still reported as holding.
TEST_CASE("Remote.Wait.AnAlreadyStoppedHandlerEndsEachWaitAtOnce" * doctest::timeout(120))
{
    sd::testing::DomainLease lease;
    auto participant = sd::Participant::create(lease.config(true));
    for (const bool before_the_bridge : {true, false}) {
        CAPTURE(before_the_bridge);
        simsync::CountingWorld world;
        simsync::SimSyncHandler handler(world, {.step = 1ms, .start_paused = true});
        if (before_the_bridge) handler.stop();
        sd::Bridge bridge(handler, participant);
        if (!before_the_bridge) handler.stop();
        for (BridgeWait w : {BridgeWait::count, BridgeWait::names, BridgeWait::until}) {
            check_ended_by_the_stop(wait_for_nobody(bridge, w), w, handler);
        }
        CHECK(bridge.wait_for_participants(0, kLongTimeout));
        CHECK(bridge.wait_for_participants(std::vector<std::string>{}, kLongTimeout).empty());
        CHECK(bridge.wait_until([](const sd::BridgeStats& s) { return s.announces == 0; }, kLongTimeout));
    }
}

// The stop racing the wait's start, over many rounds and every wait: each
// wait ends, none lasts until its timeout.
TEST_CASE("Remote.Stress.StopRacingTheWaits" * doctest::timeout(300))
{
    sd::testing::DomainLease lease;
    auto participant = sd::Participant::create(lease.config(true));
    constexpr int kRounds = 300;
    std::mt19937 random(20261126);
    std::vector<std::string> failures; // checked after the rounds
    for (int round = 0; round < kRounds; ++round) {
        const auto w = static_cast<BridgeWait>(round % 3);
        const int yields = static_cast<int>(random() % 64);
        simsync::CountingWorld world;
        simsync::SimSyncHandler handler(world, {.step = 1ms, .start_paused = true});
        sd::Bridge bridge(handler, participant);
        std::promise<void> go;
        std::thread stopper = stop_when_told(handler, go.get_future(), yields);
        go.set_value();
        const WaitOutcome o = wait_for_nobody(bridge, w);
        stopper.join();
        if (o.held || o.took >= kLongTimeout || handler.state() != simsync::HandlerState::stopped) {
            failures.push_back("round " + std::to_string(round) + " " + name_of(w) + ": held=" +
                               std::to_string(o.held) + " took " +
                               std::to_string(std::chrono::duration<double>(o.took).count()) + " s");
        }
    }
    CHECK(failures.empty());
    for (const std::string& f : failures) MESSAGE(f);
}
