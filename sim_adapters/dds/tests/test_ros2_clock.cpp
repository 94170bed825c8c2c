// ROS 2 /clock: the bytes on the wire, the clock sink under a ClockPublisher
// (running, paused, out of range, never waiting on a reader), and the follower
// (tracking, backward jumps, invalid samples).

#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "dds_testing.hpp"

#include <simsync/dds/dds.hpp>
#include <simsync/simsync.hpp>

#include <dds/dds.h>
#include <dds/ddsi/ddsi_serdata.h>
#include <simsync_dds_idl/ros2_clock.h>

#include <array>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
namespace sd = simsync::dds;
using simsync::SourceTime;

namespace {

constexpr std::int64_t kS = 1'000'000'000;

std::int64_t ns(SourceTime t) { return t.time_since_epoch().count(); }
std::int64_t ns(simsync::RosTime t) { return ns(simsync::from_ros_time(t)); }

// A reader QoS that loses nothing, for tests that compare every sample.
constexpr sd::Qos kEverything{sd::Reliability::reliable, sd::Durability::volatile_, 0, {}};

// Every message a ClockPublisher delivers, for the test thread to wait on.
class MessageLog {
public:
    simsync::CallbackClockSink::Callback callback()
    {
        return [this](const simsync::ClockMessage& m) {
            {
                std::lock_guard<std::mutex> guard(mutex_);
                messages_.push_back(m);
            }
            changed_.notify_all();
        };
    }
    bool wait_count(std::size_t n, simsync::WallClock::duration timeout)
    {
        std::unique_lock<std::mutex> lock(mutex_);
        return changed_.wait_for(lock, timeout, [&] { return messages_.size() >= n; });
    }
    std::vector<simsync::ClockMessage> messages()
    {
        std::lock_guard<std::mutex> guard(mutex_);
        return messages_;
    }

private:
    std::mutex mutex_;
    std::condition_variable changed_;
    std::vector<simsync::ClockMessage> messages_;
};

// Every sample a follower took, in order.
class SampleLog {
public:
    std::function<void(const simsync::dds::ClockSample&)> callback()
    {
        return [this](const simsync::dds::ClockSample& s) {
            std::lock_guard<std::mutex> guard(mutex_);
            times_.push_back(ns(s.time));
        };
    }
    std::vector<std::int64_t> times()
    {
        std::lock_guard<std::mutex> guard(mutex_);
        return times_;
    }

private:
    std::mutex mutex_;
    std::vector<std::int64_t> times_;
};

// Waits until `reader` holds data (bounded), through a read condition.
bool wait_for_data(dds_entity_t participant, dds_entity_t reader, simsync::WallClock::duration timeout)
{
    const dds_entity_t cond = dds_create_readcondition(reader, DDS_ANY_STATE);
    const dds_entity_t ws = dds_create_waitset(participant);
    dds_waitset_attach(ws, cond, 0);
    const auto t = std::chrono::duration_cast<std::chrono::nanoseconds>(timeout).count();
    const dds_return_t n = dds_waitset_wait(ws, nullptr, 0, t);
    dds_delete(ws);
    dds_delete(cond);
    return n > 0;
}

dds_entity_t raw_endpoint(dds_entity_t participant, dds_entity_t topic, bool writer)
{
    dds_qos_t* q = dds_create_qos();
    dds_qset_reliability(q, DDS_RELIABILITY_RELIABLE, DDS_SECS(1));
    dds_qset_history(q, DDS_HISTORY_KEEP_ALL, 0);
    const dds_entity_t e = writer ? dds_create_writer(participant, topic, q, nullptr)
                                  : dds_create_reader(participant, topic, q, nullptr);
    dds_delete_qos(q);
    return e;
}

} // namespace

TEST_CASE("Ros2Clock.Type.RosNamesKeylessFinal")
{
    const dds_topic_descriptor_t& d = rosgraph_msgs_msg_dds__Clock__desc;
    CHECK(std::string(d.m_typename) == sd::kClockTypeName);
    CHECK(std::string(builtin_interfaces_msg_dds__Time__desc.m_typename) == "builtin_interfaces::msg::dds_::Time_");
    CHECK(d.m_nkeys == 0u);
    CHECK((d.m_flagset & DDS_TOPIC_FIXED_SIZE) != 0u);
    // Appendable or mutable types start with a delimiter (DLC) or parameter list
    // (PLC) opcode; a final one does not.
    CHECK(DDS_OP(d.m_ops[0]) != DDS_OP_DLC);
    CHECK(DDS_OP(d.m_ops[0]) != DDS_OP_PLC);
    CHECK(sizeof(rosgraph_msgs_msg_dds__Clock_) == 8u);
    CHECK(sd::kClockTopic == "rt/clock");
}

// 1700000000.123456789 s: sec 0x6553F100, nanosec 0x075BCD15, little-endian
// after the XCDR1 little-endian encapsulation header {0x00, 0x01} and two
// option bytes.
TEST_CASE("Ros2Clock.Wire.KnownTimeIsTwelveBytesOfPlainCdr" * doctest::timeout(60))
{
    const std::array<unsigned char, 12> expected{0x00, 0x01, 0x00, 0x00, 0x00, 0xF1, 0x53, 0x65, 0x15, 0xCD, 0x5B, 0x07};
    sd::testing::DomainLease lease;
    auto participant = sd::Participant::create(lease.config(true));
    const dds_entity_t pp = participant->native_handle();
    sd::Ros2ClockSink sink(participant);
    const dds_entity_t topic = dds_create_topic(pp, &rosgraph_msgs_msg_dds__Clock__desc, "rt/clock", nullptr, nullptr);
    REQUIRE(topic > 0);
    const dds_entity_t raw_reader = raw_endpoint(pp, topic, false);
    REQUIRE(raw_reader > 0);
    REQUIRE(sink.wait_for_readers(1, 10s));

    sink.write(simsync::source_time(1'700'000'000s + 123'456'789ns));
    REQUIRE(wait_for_data(pp, raw_reader, 10s));
    ddsi_serdata* serdata = nullptr;
    dds_sample_info_t info{};
    REQUIRE(dds_takecdr(raw_reader, &serdata, 1, &info, DDS_ANY_STATE) == 1);
    REQUIRE(info.valid_data);
    REQUIRE(ddsi_serdata_size(serdata) == 12u);
    std::array<unsigned char, 12> bytes{};
    ddsi_serdata_to_ser(serdata, 0, bytes.size(), bytes.data());
    CHECK(bytes == expected);

    // The other way: the same twelve bytes, written raw, are that time to a follower.
    simsync::ExternalTimeSource source;
    sd::Ros2ClockFollower follower(participant, source, {.qos = kEverything});
    const dds_entity_t raw_writer = raw_endpoint(pp, topic, true);
    REQUIRE(raw_writer > 0);
    REQUIRE(follower.wait_for_writers(2, 10s)); // the sink's writer and the raw one
    ddsrt_iovec_t iov;
    iov.iov_base = const_cast<unsigned char*>(expected.data());
    iov.iov_len = expected.size();
    ddsi_serdata* handmade = ddsi_serdata_from_ser_iov(serdata->type, SDK_DATA, 1, &iov, expected.size());
    REQUIRE(handmade != nullptr);
    REQUIRE(dds_writecdr(raw_writer, handmade) == DDS_RETCODE_OK); // takes the reference
    ddsi_serdata_unref(serdata);
    REQUIRE(follower.wait_for_samples(1, 10s));
    CHECK(follower.last_sample()->time == simsync::RosTime{1'700'000'000, 123'456'789});
    CHECK(ns(source.now()) == 1'700'000'000 * kS + 123'456'789);
    follower.stop();
    dds_delete(raw_writer);
    dds_delete(raw_reader);
    dds_delete(topic);
}

TEST_CASE("Ros2ClockSink.Publish.EveryTickInOrder" * doctest::timeout(60))
{
    sd::testing::DomainLease lease;
    auto participant = sd::Participant::create(lease.config(true));
    simsync::ExternalTimeSource followed;
    SampleLog received;
    sd::Ros2ClockFollower follower(participant, followed, {.qos = kEverything, .on_sample = received.callback()});

    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms, .start_paused = true});
    simsync::SimTimeSource source(handler);
    simsync::ClockPublisher clock(handler, source, {.schedule = simsync::PeriodicSchedule::from_period(10ms)});
    auto sink = std::make_unique<sd::Ros2ClockSink>(participant);
    sd::Ros2ClockSink& dds_sink = *sink;
    clock.add_sink(std::move(sink));
    MessageLog published;
    clock.add_callback(published.callback());
    REQUIRE(dds_sink.wait_for_readers(1, 10s));
    clock.start();
    handler.run_until(simsync::sim_time(1s));
    REQUIRE(handler.wait_until_paused(simsync::WallClock::now() + 30s));
    REQUIRE(published.wait_count(101, 30s));
    REQUIRE(follower.wait_for_time(simsync::source_time(1s), 30s));
    clock.stop();
    handler.stop();

    std::vector<std::int64_t> expected;
    for (std::int64_t k = 0; k <= 100; ++k) expected.push_back(k * 10'000'000);
    std::vector<std::int64_t> got = received.times();
    REQUIRE(got.size() >= expected.size());
    // The ticks, in order, each once; then (paused at 1 s) repeats of 1 s only.
    CHECK(std::vector<std::int64_t>(got.begin(), got.begin() + 101) == expected);
    for (std::size_t i = 101; i < got.size(); ++i) CHECK(got[i] == kS);
    CHECK(dds_sink.written() == published.messages().size());
    CHECK(dds_sink.dropped() == 0);
    CHECK(clock.sink_failures() == 0);
}

TEST_CASE("Ros2ClockSink.Paused.RepeatsTheFrozenTime" * doctest::timeout(60))
{
    sd::testing::DomainLease lease;
    auto participant = sd::Participant::create(lease.config(true));
    simsync::ExternalTimeSource followed;
    SampleLog received;
    sd::Ros2ClockFollower follower(participant, followed, {.qos = kEverything, .on_sample = received.callback()});

    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms, .start_paused = true});
    simsync::SimTimeSource source(handler);
    simsync::ClockPublisher clock(handler, source, {.schedule = simsync::PeriodicSchedule::from_period(10ms), .paused_period = 2ms});
    auto sink = std::make_unique<sd::Ros2ClockSink>(participant);
    sd::Ros2ClockSink& dds_sink = *sink;
    clock.add_sink(std::move(sink));
    REQUIRE(dds_sink.wait_for_readers(1, 10s));
    clock.start();
    handler.run_until(simsync::sim_time(100ms));
    REQUIRE(handler.wait_until_paused(simsync::WallClock::now() + 30s));
    // 11 ticks (0 to 100 ms), then at least 10 paused repeats.
    REQUIRE(follower.wait_for_samples(21, 30s));
    const std::vector<std::int64_t> got = received.times();
    for (std::size_t i = 0; i < 11; ++i) CHECK(got[i] == static_cast<std::int64_t>(i) * 10'000'000);
    for (std::size_t i = 11; i < got.size(); ++i) CHECK(got[i] == 100'000'000);
    CHECK(ns(followed.now()) == 100'000'000);

    // Resumed, the time goes on from the frozen value, no tick skipped.
    const std::size_t before = follower.received();
    handler.run_until(simsync::sim_time(150ms));
    REQUIRE(follower.wait_for_time(simsync::source_time(150ms), 30s));
    clock.stop();
    const std::vector<std::int64_t> after = received.times();
    std::vector<std::int64_t> ticks;
    for (std::size_t i = before; i < after.size(); ++i) {
        if (after[i] != 100'000'000 && (ticks.empty() || ticks.back() != after[i])) ticks.push_back(after[i]);
    }
    CHECK(ticks == std::vector<std::int64_t>{110'000'000, 120'000'000, 130'000'000, 140'000'000, 150'000'000});
}

TEST_CASE("Ros2ClockSink.Paused.SkipsRepeatsWhenConfigured" * doctest::timeout(60))
{
    sd::testing::DomainLease lease;
    auto participant = sd::Participant::create(lease.config(true));
    simsync::ExternalTimeSource followed;
    SampleLog received;
    sd::Ros2ClockFollower follower(participant, followed, {.qos = kEverything, .on_sample = received.callback()});

    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms, .start_paused = true});
    simsync::SimTimeSource source(handler);
    simsync::ClockPublisher clock(handler, source, {.schedule = simsync::PeriodicSchedule::from_period(10ms), .paused_period = 2ms});
    auto sink = std::make_unique<sd::Ros2ClockSink>(participant, sd::Ros2ClockSinkConfig{.repeat_while_paused = false});
    sd::Ros2ClockSink& dds_sink = *sink;
    clock.add_sink(std::move(sink));
    MessageLog published;
    clock.add_callback(published.callback());
    REQUIRE(dds_sink.wait_for_readers(1, 10s));
    clock.start();
    handler.run_until(simsync::sim_time(100ms));
    REQUIRE(handler.wait_until_paused(simsync::WallClock::now() + 30s));
    REQUIRE(published.wait_count(11 + 10, 30s)); // the ticks and ten paused messages
    clock.stop();
    // Every distinct time was written once; the repeats were not.
    CHECK(dds_sink.written() == 11);
    CHECK(dds_sink.repeats_skipped() == published.messages().size() - 11);
    REQUIRE(follower.wait_for_time(simsync::source_time(100ms), 10s));
    // Writes are ordered and the reader is reliable: a repeat would have
    // arrived before this marker.
    dds_sink.write(simsync::source_time(5s));
    REQUIRE(follower.wait_for_time(simsync::source_time(5s), 10s));
    std::vector<std::int64_t> expected;
    for (std::int64_t k = 0; k <= 10; ++k) expected.push_back(k * 10'000'000);
    expected.push_back(5 * kS);
    CHECK(received.times() == expected);
}

TEST_CASE("Ros2ClockSink.Range.OutOfRangeIsAnErrorNeverWrapped" * doctest::timeout(60))
{
    sd::testing::DomainLease lease;
    auto participant = sd::Participant::create(lease.config(true));
    simsync::ExternalTimeSource followed;
    SampleLog received;
    sd::Ros2ClockFollower follower(participant, followed, {.qos = kEverything, .on_sample = received.callback()});

    // Through a ClockPublisher: a source beyond int32 seconds.
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms, .start_paused = true});
    simsync::ExternalTimeSource beyond(simsync::source_time(2'147'483'648s));
    simsync::ClockPublisher clock(handler, beyond, {.schedule = simsync::PeriodicSchedule::from_period(10ms)});
    auto sink = std::make_unique<sd::Ros2ClockSink>(participant);
    sd::Ros2ClockSink& dds_sink = *sink;
    clock.add_sink(std::move(sink));
    MessageLog published;
    clock.add_callback(published.callback()); // a later sink still gets every message
    REQUIRE(dds_sink.wait_for_readers(1, 10s));
    clock.start();
    REQUIRE(published.wait_count(3, 30s)); // the paused start repeats tick 0
    clock.stop();
    CHECK(clock.sink_failures() == published.messages().size());
    CHECK(dds_sink.out_of_range() == published.messages().size());
    CHECK(dds_sink.written() == 0);
    CHECK(dds_sink.last_error().find("2147483648.000000000") != std::string::npos);

    // Directly: before 0.
    try {
        dds_sink.write(SourceTime{SourceTime::duration{-1}});
        FAIL("a negative time was written");
    } catch (const simsync::Error& e) {
        CHECK(e.code() == simsync::errc::invalid_argument);
        CHECK(std::string(e.what()).find("-0.000000001") != std::string::npos);
    }
    // The largest representable time goes through, exactly.
    dds_sink.write(SourceTime{SourceTime::duration{2'147'483'647 * kS + 999'999'999}});
    REQUIRE(follower.wait_for_samples(1, 10s));
    // Nothing was written before it (writes are ordered, the reader reliable).
    CHECK(received.times() == std::vector<std::int64_t>{2'147'483'647 * kS + 999'999'999});
    CHECK(follower.last_sample()->time == simsync::RosTime{2'147'483'647, 999'999'999});
}

TEST_CASE("Ros2ClockSink.LateJoiner.TransientLocalGetsTheLastTime" * doctest::timeout(60))
{
    sd::testing::DomainLease lease;
    auto participant = sd::Participant::create(lease.config(true));
    sd::Ros2ClockSink sink(participant);
    sink.write(simsync::source_time(4s));
    sink.write(simsync::source_time(5s));
    simsync::ExternalTimeSource followed;
    sd::Ros2ClockFollower follower(participant, followed,
                                   {.qos = {sd::Reliability::reliable, sd::Durability::transient_local, 1, {}}});
    REQUIRE(follower.wait_for_samples(1, 10s));
    CHECK(follower.last_sample()->time == simsync::RosTime{5, 0});
    CHECK(ns(followed.now()) == 5 * kS);
}

#ifdef SIMSYNC_CLOCK_ECHO
// A matched reliable reader in another process is stopped (SIGSTOP: it can no
// longer acknowledge anything); the sink writes on, every write returns.
TEST_CASE("Ros2ClockSink.Publish.NeverWaitsForAStoppedReader" * doctest::timeout(120))
{
    struct Variant {
        const char* name;
        sd::Qos qos;
    };
    for (const Variant& v : {Variant{"default, keep last 1", sd::kClockWriterQos},
                             Variant{"keep all", {sd::Reliability::reliable, sd::Durability::volatile_, 0, {}}}}) {
        CAPTURE(v.name);
        sd::testing::DomainLease lease;
        sd::DomainConfig config = lease.config(true);
        // A small cache of unacknowledged data, so that keep-all fills it soon.
        config.extra_xml = "<Internal><Watermarks><WhcLow>256B</WhcLow><WhcHigh>1kB</WhcHigh>"
                           "<WhcHighInit>1kB</WhcHighInit><WhcAdaptive>false</WhcAdaptive></Watermarks></Internal>";
        auto participant = sd::Participant::create(config);
        sd::Ros2ClockSink sink(participant, {.qos = v.qos});
        sd::testing::ChildProcess reader({SIMSYNC_CLOCK_ECHO, "--network", "loopback", "--domain",
                                          std::to_string(lease.id()), "--tag", lease.tag(), "--reliability", "reliable",
                                          "--quiet", "--timeout", "100", "--duration", "100"});
        REQUIRE(sink.wait_for_readers(1, 30s));
        reader.signal(SIGSTOP);
        constexpr std::uint64_t kWrites = 5000;
        for (std::uint64_t i = 0; i < kWrites; ++i) sink.write(SourceTime{std::chrono::milliseconds(i)});
        CHECK(sink.written() + sink.dropped() == kWrites);
        if (v.qos.depth == 1) {
            CHECK(sink.dropped() == 0); // the one-sample cache is replaced, never full
        } else {
            CHECK(sink.dropped() > 0); // the full cache drops instead of blocking
            CHECK(sink.last_error().find("Cyclone DDS") != std::string::npos);
        }
        reader.signal(SIGKILL);
    }
}
#endif

TEST_CASE("Ros2ClockFollower.Follow.SourceTracksTheOutsideClock" * doctest::timeout(60))
{
    sd::testing::DomainLease lease;
    auto participant = sd::Participant::create(lease.config(true));
    sd::Ros2ClockSink outside(participant);
    simsync::ExternalTimeSource source;
    sd::Ros2ClockFollower follower(participant, source); // rclcpp's ClockQoS
    REQUIRE(follower.wait_for_writers(1, 10s));
    REQUIRE(outside.wait_for_readers(1, 10s));
    for (std::int64_t ms : {10'000, 10'500, 11'000}) outside.write(SourceTime{std::chrono::milliseconds(ms)});
    REQUIRE(follower.wait_for_time(simsync::source_time(11s), 10s));
    CHECK(ns(source.now()) == 11 * kS);
    CHECK(source.backward_jumps() == 0);
    CHECK(follower.invalid() == 0);

    // A simsync host reading that source publishes the outside time.
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms, .start_paused = true});
    simsync::ClockPublisher clock(handler, source, {.schedule = simsync::PeriodicSchedule::from_period(10ms)});
    MessageLog published;
    clock.add_callback(published.callback());
    clock.start();
    REQUIRE(published.wait_count(1, 10s));
    clock.stop();
    CHECK(ns(published.messages().front().time) == 11 * kS);
}

TEST_CASE("Ros2ClockFollower.BackwardJump.HoldsCountsAndReports" * doctest::timeout(60))
{
    sd::testing::DomainLease lease;
    auto participant = sd::Participant::create(lease.config(true));
    sd::Ros2ClockSink outside(participant);
    simsync::ExternalTimeSource source;
    std::mutex mutex;
    std::vector<simsync::TimeJump> jumps; // from the follower's thread
    source.on_backward_jump([&](const simsync::TimeJump& j) {
        std::lock_guard<std::mutex> guard(mutex);
        jumps.push_back(j);
    });
    SampleLog received;
    sd::Ros2ClockFollower follower(participant, source, {.qos = kEverything, .on_sample = received.callback()});
    REQUIRE(outside.wait_for_readers(1, 10s));
    for (std::int64_t s : {20, 21, 5, 6, 22}) outside.write(SourceTime{std::chrono::seconds(s)});
    REQUIRE(follower.wait_for_samples(5, 10s));
    CHECK(received.times() == std::vector<std::int64_t>{20 * kS, 21 * kS, 5 * kS, 6 * kS, 22 * kS});
    CHECK(ns(source.now()) == 22 * kS);
    CHECK(source.backward_jumps() == 1);
    std::lock_guard<std::mutex> guard(mutex);
    REQUIRE(jumps.size() == 1);
    CHECK(jumps[0] == simsync::TimeJump{simsync::source_time(21s), simsync::source_time(5s), simsync::source_time(21s)});
}

TEST_CASE("Ros2ClockFollower.Invalid.IgnoredAndCounted" * doctest::timeout(60))
{
    sd::testing::DomainLease lease;
    auto participant = sd::Participant::create(lease.config(true));
    const dds_entity_t pp = participant->native_handle();
    simsync::ExternalTimeSource source;
    SampleLog received;
    sd::Ros2ClockFollower follower(participant, source, {.qos = kEverything, .on_sample = received.callback()});
    const dds_entity_t topic = dds_create_topic(pp, &rosgraph_msgs_msg_dds__Clock__desc, "rt/clock", nullptr, nullptr);
    const dds_entity_t writer = raw_endpoint(pp, topic, true);
    REQUIRE(writer > 0);
    REQUIRE(follower.wait_for_writers(1, 10s));
    for (const auto& t : {rosgraph_msgs_msg_dds__Clock_{{-1, 0}}, rosgraph_msgs_msg_dds__Clock_{{3, 1'000'000'000u}},
                          rosgraph_msgs_msg_dds__Clock_{{7, 5}}}) {
        REQUIRE(dds_write(writer, &t) == DDS_RETCODE_OK);
    }
    REQUIRE(follower.wait_for_samples(1, 10s));
    CHECK(received.times() == std::vector<std::int64_t>{7 * kS + 5});
    CHECK(follower.invalid() == 2);
    CHECK(ns(source.now()) == 7 * kS + 5);
    dds_delete(writer);
    dds_delete(topic);
}

TEST_CASE("Ros2ClockFollower.Stop.EndsWaitsAndFeeding" * doctest::timeout(60))
{
    sd::testing::DomainLease lease;
    auto participant = sd::Participant::create(lease.config(true));
    sd::Ros2ClockSink outside(participant);
    simsync::ExternalTimeSource source;
    sd::Ros2ClockFollower follower(participant, source, {.qos = kEverything});
    REQUIRE(outside.wait_for_readers(1, 10s));
    outside.write(simsync::source_time(1s));
    REQUIRE(follower.wait_for_samples(1, 10s));
    std::thread waiter([&] { follower.wait_for_samples(1000, 60s); });
    follower.stop(); // wakes the waiter long before its 60 s
    waiter.join();
    follower.stop(); // idempotent
    outside.write(simsync::source_time(2s));
    // Stopped: nothing is taken any more. The write was delivered to the reader
    // synchronously (same process); the source must not have moved.
    CHECK(ns(source.now()) == 1 * kS);
    CHECK(follower.received() == 1);
    CHECK_FALSE(follower.wait_for_samples(2, 0s));
}

TEST_CASE("Ros2ClockSink.Errors.NullParticipantEmptyTopicBadQos" * doctest::timeout(60))
{
    CHECK_THROWS_WITH_AS(sd::Ros2ClockSink(nullptr), doctest::Contains("participant is null"), simsync::Error);
    simsync::ExternalTimeSource source;
    CHECK_THROWS_WITH_AS(sd::Ros2ClockFollower(nullptr, source), doctest::Contains("participant is null"),
                         simsync::Error);
    sd::testing::DomainLease lease;
    auto participant = sd::Participant::create(lease.config(true));
    CHECK_THROWS_WITH_AS(sd::Ros2ClockSink(participant, {.topic = ""}), doctest::Contains("topic name must not be empty"),
                         simsync::Error);
    CHECK_THROWS_WITH_AS(sd::Ros2ClockFollower(participant, source, {.topic = ""}),
                         doctest::Contains("topic name must not be empty"), simsync::Error);
    sd::Ros2ClockSinkConfig negative;
    negative.qos.depth = -1;
    CHECK_THROWS_WITH_AS(sd::Ros2ClockSink(participant, negative), doctest::Contains("-1"), simsync::Error);
    negative.qos.depth = 1;
    negative.qos.max_blocking_time = std::chrono::nanoseconds(-5);
    CHECK_THROWS_WITH_AS(sd::Ros2ClockSink(participant, negative), doctest::Contains("-5 ns"), simsync::Error);
}
