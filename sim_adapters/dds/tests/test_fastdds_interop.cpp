// The proof against ROS 2's default middleware: eProsima Fast DDS 2.9 in another
// process (simsync-fastdds-clock-peer, types from fastddsgen) reads simsync's
// /clock, running, paused and after a change of time scale; simsync follows a
// Fast DDS /clock publisher; simsync-clock-echo reads one. Loopback only, no
// multicast, a leased domain id (no tags: Fast DDS knows none).

#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "dds_testing.hpp"

#include <simsync/dds/dds.hpp>
#include <simsync/simsync.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

using namespace std::chrono_literals;
namespace sd = simsync::dds;

namespace {

constexpr std::int64_t kS = 1'000'000'000;
constexpr sd::Qos kEverything{sd::Reliability::reliable, sd::Durability::volatile_, 0, {}};

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// "clock SEC NANOSEC" -> nanoseconds
std::int64_t parse_clock_line(const std::string& line)
{
    std::istringstream in(line.substr(6));
    std::int64_t sec = 0;
    std::int64_t nanosec = 0;
    in >> sec >> nanosec;
    return sec * kS + nanosec;
}

class MessageLog {
public:
    simsync::CallbackClockSink::Callback callback()
    {
        return [this](const simsync::ClockMessage& m) {
            {
                std::lock_guard<std::mutex> guard(mutex_);
                times_.push_back(m.time.time_since_epoch().count());
            }
            changed_.notify_all();
        };
    }
    bool wait_count(std::size_t n, simsync::WallClock::duration timeout)
    {
        std::unique_lock<std::mutex> lock(mutex_);
        return changed_.wait_for(lock, timeout, [&] { return times_.size() >= n; });
    }
    std::size_t size()
    {
        std::lock_guard<std::mutex> guard(mutex_);
        return times_.size();
    }
    std::vector<std::int64_t> times()
    {
        std::lock_guard<std::mutex> guard(mutex_);
        return times_;
    }

private:
    std::mutex mutex_;
    std::condition_variable changed_;
    std::vector<std::int64_t> times_;
};

std::vector<std::int64_t> distinct_in_order(const std::vector<std::int64_t>& v)
{
    std::vector<std::int64_t> out;
    for (std::int64_t x : v) {
        if (out.empty() || out.back() != x) out.push_back(x);
    }
    return out;
}

// simsync publishing through a paced ClockPublisher with a Ros2ClockSink.
struct Publisher {
    explicit Publisher(std::shared_ptr<sd::Participant> participant)
    {
        auto s = std::make_unique<sd::Ros2ClockSink>(std::move(participant));
        sink = s.get();
        clock.add_sink(std::move(s));
        clock.add_callback(published.callback()); // after the DDS sink: what it was given
    }
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler{world, {.step = 1ms, .start_paused = true}};
    simsync::TimeScale scale{1.0};
    simsync::RealTimePacer pacer{handler, scale, {.period = 10ms}};
    simsync::SimTimeSource source{handler};
    simsync::ClockPublisher clock{handler, source, {.schedule = simsync::PeriodicSchedule::from_period(10ms), .paused_period = 10ms}};
    sd::Ros2ClockSink* sink = nullptr;
    MessageLog published;

    // Runs to `t`, then lets at least `repeats` paused messages go out.
    void run_until_and_rest(std::chrono::milliseconds t, std::size_t repeats)
    {
        handler.run_until(simsync::sim_time(t));
        REQUIRE(handler.wait_until_paused(simsync::WallClock::now() + 60s));
        REQUIRE(published.wait_count(published.size() + repeats, 30s));
    }
};

// Waits until the follower's last sample is `t` (bounded).
bool wait_for_last_sample(const sd::Ros2ClockFollower& follower, simsync::RosTime t, simsync::WallClock::duration timeout)
{
    const simsync::WallTime deadline = simsync::WallClock::now() + timeout;
    for (;;) {
        const std::uint64_t seen = follower.received();
        const auto last = follower.last_sample();
        if (last && last->time == t) return true;
        const auto left = deadline - simsync::WallClock::now();
        if (left <= simsync::WallClock::duration::zero()) return false;
        follower.wait_for_samples(seen + 1, std::min<simsync::WallClock::duration>(left, 100ms));
    }
}

// A volatile reader gets nothing written before it is in step with the writer
// (a DDS rule). Writes a warm-up time (outside the run's range) every 10 ms until
// the peer prints that it took one; the run starts after that. Returns how many
// were written.
constexpr std::int64_t kWarmUp = 1000 * kS;
std::uint64_t warm_up(sd::Ros2ClockSink& sink, sd::testing::ChildProcess& peer)
{
    std::uint64_t written = 0;
    const simsync::WallTime deadline = simsync::WallClock::now() + 30s;
    while (simsync::WallClock::now() < deadline) {
        sink.write(simsync::SourceTime{std::chrono::nanoseconds(kWarmUp)});
        ++written;
        if (peer.read_until([](const std::string& l) { return starts_with(l, "clock "); }, 10ms)) return written;
    }
    FAIL("the Fast DDS reader never took a sample");
    return written;
}

// The times the peer printed from now on, warm-up repeats left out, until
// `wanted` of them (or 30 s).
std::vector<std::int64_t> clock_lines(sd::testing::ChildProcess& peer, std::size_t wanted)
{
    std::vector<std::int64_t> got;
    const simsync::WallTime deadline = simsync::WallClock::now() + 30s;
    while (got.size() < wanted) {
        const auto line = peer.read_line(deadline - simsync::WallClock::now());
        if (!line) break;
        if (starts_with(*line, "clock ") && parse_clock_line(*line) != kWarmUp) got.push_back(parse_clock_line(*line));
    }
    return got;
}

} // namespace

// simsync's clock through `participant`, read by the peer started with
// `peer_args`: everything, in order, running, paused and after a change of scale.
void reader_receives_everything(std::shared_ptr<sd::Participant> participant, const std::vector<std::string>& peer_args)
{
    sd::testing::ChildProcess peer(peer_args);
    Publisher p(std::move(participant));
    REQUIRE(peer.read_until([](const std::string& l) { return l == "matched"; }, 30s));
    REQUIRE(p.sink->wait_for_readers(1, 30s));
    const std::uint64_t warm = warm_up(*p.sink, peer);
    p.clock.start();
    p.run_until_and_rest(300ms, 5); // running at 1x, then paused
    p.scale.set(3.0);
    p.run_until_and_rest(600ms, 5); // running at 3x, then paused
    p.clock.stop();

    const std::vector<std::int64_t> published = p.published.times();
    CHECK(p.sink->written() == published.size() + warm);
    const std::vector<std::int64_t> received = clock_lines(peer, published.size());
    peer.close_stdin();
    CHECK(peer.wait(30s) == std::optional<int>(0));
    // Everything simsync wrote, exactly, in order: the ticks, the frozen time
    // repeated while paused, the ticks after the change of scale.
    CHECK(received == published);
    std::vector<std::int64_t> ticks;
    for (std::int64_t k = 0; k <= 60; ++k) ticks.push_back(k * 10'000'000);
    CHECK(distinct_in_order(received) == ticks);
    // The tick and the paused repeats (at least five messages after the pause).
    CHECK(std::count(received.begin(), received.end(), 300'000'000) >= 5);
    CHECK(std::count(received.begin(), received.end(), 600'000'000) >= 5);
}

TEST_CASE("FastDds.Reader.ReceivesSimsyncClock.RunningPausedScaleChange" * doctest::timeout(120))
{
    sd::testing::DomainLease lease;
    reader_receives_everything(sd::Participant::create(lease.config(false)),
                               {SIMSYNC_FASTDDS_PEER, "read", "--domain", std::to_string(lease.id()), "--reliable",
                                "--timeout", "100"});
}

TEST_CASE("FastDds.Reader.BestEffortLikeRclcpp" * doctest::timeout(120))
{
    sd::testing::DomainLease lease;
    auto participant = sd::Participant::create(lease.config(false));
    sd::testing::ChildProcess peer({SIMSYNC_FASTDDS_PEER, "read", "--domain", std::to_string(lease.id()), "--timeout", "100"});
    Publisher p(participant);
    REQUIRE(peer.read_until([](const std::string& l) { return l == "matched"; }, 30s));
    REQUIRE(p.sink->wait_for_readers(1, 30s));
    warm_up(*p.sink, peer);
    p.clock.start();
    p.run_until_and_rest(200ms, 5);
    // Best effort may lose a sample; the paused repeats bring the final time.
    std::vector<std::int64_t> received;
    const simsync::WallTime deadline = simsync::WallClock::now() + 30s;
    while ((received.empty() || received.back() != 200'000'000) && simsync::WallClock::now() < deadline) {
        const auto line = peer.read_line(deadline - simsync::WallClock::now());
        if (!line) break;
        if (starts_with(*line, "clock ") && parse_clock_line(*line) != kWarmUp) received.push_back(parse_clock_line(*line));
    }
    p.clock.stop();
    peer.close_stdin();
    CHECK(peer.wait(30s) == std::optional<int>(0));
    REQUIRE_FALSE(received.empty());
    CHECK(received.back() == 200'000'000);
    // In order, and only times simsync published.
    const std::vector<std::int64_t> published = p.published.times();
    std::size_t at = 0;
    for (std::int64_t t : received) {
        while (at < published.size() && published[at] != t) ++at;
        CHECK(at < published.size());
    }
}

// A follower on `participant` follows the peer writing with `peer_args` (plus
// what this function adds): every time, exactly, and a backward jump held.
void simsync_follows(std::shared_ptr<sd::Participant> participant, std::vector<std::string> peer_args)
{
    simsync::ExternalTimeSource source;
    std::vector<std::int64_t> received; // on the follower's thread until stop()
    sd::Ros2ClockFollower follower(participant, source,
                                   {.qos = kEverything, .on_sample = [&](const simsync::dds::ClockSample& s) {
                                        received.push_back(simsync::from_ros_time(s.time).time_since_epoch().count());
                                    }});
    // 100.00 .. 100.09 s, then the outside simulation is reset to 50 s.
    std::string times;
    std::vector<std::int64_t> expected;
    for (int k = 0; k < 10; ++k) {
        times += "100:" + std::to_string(k * 10'000'000) + ",";
        expected.push_back(100 * kS + k * 10'000'000);
    }
    times += "50:0,50:10000000";
    expected.push_back(50 * kS);
    expected.push_back(50 * kS + 10'000'000);
    peer_args.insert(peer_args.end(), {"write", "--reliable", "--times", times, "--interval-ms", "5", "--wait-go",
                                       "--warm-up", "99:0", "--depth", "0", "--timeout", "100"});
    sd::testing::ChildProcess peer(peer_args);
    // A volatile reader gets nothing written before it is in step with the
    // writer (a DDS rule, whatever the vendors): the peer repeats a warm-up time
    // (99 s) until the follower has taken one, then writes the times. It keeps
    // all it wrote, so a sample lost on the way is repaired: the comparison below
    // is exact.
    REQUIRE(peer.read_until([](const std::string& l) { return l == "matched"; }, 30s));
    REQUIRE(follower.wait_for_samples(1, 30s));
    peer.write_line("go");
    REQUIRE(peer.read_until([](const std::string& l) { return l == "done"; }, 60s));
    const bool all = wait_for_last_sample(follower, {50, 10'000'000}, 30s);
    peer.close_stdin();
    CHECK(peer.wait(30s) == std::optional<int>(0));
    follower.stop();
    while (!received.empty() && received.front() == 99 * kS) received.erase(received.begin()); // the warm-up
    std::string got;
    for (std::int64_t t : received) got += std::to_string(t) + " ";
    INFO("received: ", got);
    CHECK(all);
    CHECK(received == expected);
    // Monotonic: the source holds 100.09 s and tells about the jump.
    CHECK(source.now().time_since_epoch().count() == 100 * kS + 90'000'000);
    CHECK(source.backward_jumps() == 1);
    REQUIRE(source.last_backward_jump().has_value());
    CHECK(source.last_backward_jump()->to.time_since_epoch().count() == 50 * kS);
}

TEST_CASE("FastDds.Writer.SimsyncFollows" * doctest::timeout(120))
{
    sd::testing::DomainLease lease;
    simsync_follows(sd::Participant::create(lease.config(false)),
                    {SIMSYNC_FASTDDS_PEER, "--domain", std::to_string(lease.id())});
}

TEST_CASE("FastDds.ClockEcho.ReadsAFastDdsClock" * doctest::timeout(120))
{
    sd::testing::DomainLease lease;
    sd::testing::ChildProcess peer({SIMSYNC_FASTDDS_PEER, "write", "--domain", std::to_string(lease.id()), "--times",
                                    "100:0,100:10000000,100:20000000", "--interval-ms", "10", "--hold", "--timeout",
                                    "100"});
    sd::testing::ChildProcess echo({SIMSYNC_CLOCK_ECHO, "--network", "loopback", "--domain",
                                    std::to_string(lease.id()), "--count", "10", "--timeout", "30"});
    REQUIRE(echo.read_to_end(60s));
    const auto status = echo.wait(30s);
    peer.close_stdin();
    CHECK(peer.wait(30s) == std::optional<int>(0));
    REQUIRE(status.has_value());
    CHECK(*status == 0);
    std::vector<std::string> times;
    for (const std::string& line : echo.lines()) {
        if (starts_with(line, "clock ")) times.push_back(line.substr(6));
    }
    REQUIRE(times.size() >= 10);
    // Whatever it joined in time for, it ends on the held last time.
    CHECK(times.back() == "100.020000000");
    for (const std::string& t : times) {
        CHECK((t == "100.000000000" || t == "100.010000000" || t == "100.020000000"));
    }
}

// ------------------------------------------------------------ DDS Security

// The same exchanges over DDS Security: simsync's participant and the Fast DDS
// one each with a certificate of its own from the same identity CA and
// permissions from the same permissions CA (made now by scripts/make-dds-certs),
// under a governance that encrypts discovery, liveliness and the payloads.
namespace {

// "sim" writes /clock, "reader" reads it (Cyclone DDS, simsync); "fastdds-peer"
// does both (Fast DDS). Fast DDS 2.9 starts a handshake with DH+MODP-2048,
// whose public key Cyclone DDS 0.10 cannot read: the participant with the
// lower handshake key starts it, so Cyclone's identities need the lower keys
// (docs/security.md). These names have them.
struct SecuredClock {
    sd::testing::TestCertificates certs{
        {"clock-writer:sim", "clock-reader:reader", "clock-reader:fastdds-peer", "clock-writer:fastdds-peer"}};
    sd::testing::DomainLease lease{sd::testing::kFirstTestDomain, sd::testing::kLastSecuredTestDomain};
    SecuredClock()
    {
        REQUIRE(certs.handshake_key("sim") < certs.handshake_key("fastdds-peer"));
        REQUIRE(certs.handshake_key("reader") < certs.handshake_key("fastdds-peer"));
    }
    std::vector<std::string> peer(const std::vector<std::string>& more) const
    {
        std::vector<std::string> a = {SIMSYNC_FASTDDS_PEER, "--domain", std::to_string(lease.id()), "--identity",
                                      certs.identity_dir("fastdds-peer")};
        a.insert(a.end(), more.begin(), more.end());
        return a;
    }
};

} // namespace

TEST_CASE_FIXTURE(SecuredClock, "FastDds.Security.AReaderWithItsOwnCertificateReceivesTheSecuredClock" *
                                    doctest::timeout(180))
{
    // A Fast DDS reader without a certificate is never matched: it reads nothing.
    sd::testing::ChildProcess stranger({SIMSYNC_FASTDDS_PEER, "read", "--domain", std::to_string(lease.id()),
                                        "--reliable", "--timeout", "100", "--participant-id", "8"});
    reader_receives_everything(sd::Participant::create(certs.secured(lease, "sim")),
                               peer({"read", "--reliable", "--timeout", "100"}));
    stranger.close_stdin();
    CHECK(stranger.wait(30s) == std::optional<int>(1)); // nothing arrived
    stranger.read_to_end(30s);
    CHECK(stranger.lines().empty()); // not even "matched"
}

TEST_CASE_FIXTURE(SecuredClock, "FastDds.Security.SimsyncFollowsASecuredFastDdsClock" * doctest::timeout(180))
{
    simsync_follows(sd::Participant::create(certs.secured(lease, "reader")), peer({}));
}
