// ClockPublisher: every tick once and in order, rate independent of the step,
// exact rates (30 Hz), the paused flag and frozen time, paused messages driven
// by a manual wall clock, sinks on the stepping thread (no thread of its own),
// UDP datagrams as documented, late sinks, stop (also from a sink, while paused).

#include <simsync/simsync.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using simsync::ClockMessage;
using simsync::SimTime;

namespace {

constexpr auto kPatience = 20s; // a deadline for conditions, never a sleep

SimTime ms(std::int64_t n) { return simsync::sim_time(std::chrono::milliseconds(n)); }
simsync::PeriodicSchedule every(simsync::SimDuration period) { return simsync::PeriodicSchedule::from_period(period); }
std::int64_t ns(simsync::SourceTime t) { return t.time_since_epoch().count(); }
std::int64_t ns(SimTime t) { return t.time_since_epoch().count(); }

// Collects what a sink receives and lets the test wait for a condition on it.
class Collector {
public:
    void operator()(const ClockMessage& m)
    {
        {
            std::lock_guard<std::mutex> guard(mutex_);
            messages_.push_back(m);
        }
        cv_.notify_all();
    }
    bool wait(const std::function<bool(const std::vector<ClockMessage>&)>& condition,
              std::chrono::seconds patience = kPatience)
    {
        std::unique_lock<std::mutex> lock(mutex_);
        return cv_.wait_for(lock, patience, [&] { return condition(messages_); });
    }
    std::vector<ClockMessage> messages() const
    {
        std::lock_guard<std::mutex> guard(mutex_);
        return messages_;
    }
    std::size_t size() const
    {
        std::lock_guard<std::mutex> guard(mutex_);
        return messages_.size();
    }

private:
    mutable std::mutex mutex_;
    std::condition_variable cv_;
    std::vector<ClockMessage> messages_;
};

auto at_least(std::size_t n)
{
    return [n](const std::vector<ClockMessage>& m) { return m.size() >= n; };
}

// Waits (sleeping, never spinning) until the clock's request is pending.
bool clock_waiting(const simsync::SimSyncHandler& handler)
{
    auto waiting = [&] {
        const simsync::Snapshot snap = handler.snapshot();
        for (const auto& a : snap.accessors) {
            if (a.name == "clock") return a.activity == simsync::AccessorStatus::Activity::waiting;
        }
        return false;
    };
    const auto deadline = std::chrono::steady_clock::now() + kPatience;
    while (!waiting() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(100us);
    return waiting();
}

bool has_accessor(const simsync::SimSyncHandler& handler, const std::string& name)
{
    const simsync::Snapshot snap = handler.snapshot();
    for (const auto& a : snap.accessors) {
        if (a.name == name) return true;
    }
    return false;
}

// Runs, on the test thread, until every job the loop had (the timers a clock
// advance made due) has run.
void settle(const simsync::EventLoop& loop)
{
    loop.executor().sync([] {});
}

// A lockstep controller that writes the world at every physics step, so the
// publisher shares time with an exclusive writer as in a real run.
class Controller {
public:
    Controller(simsync::SimSyncHandler& handler, simsync::SimDuration period)
        : handler_(handler),
          accessor_(handler.register_accessor("controller", {.first_request = SimTime{}})),
          thread_([this, period] {
              for (std::int64_t k = 0;; ++k) {
                  simsync::Access a = accessor_.request_access(SimTime{period * k});
                  if (!a) return;
                  ++a.world_as<simsync::CountingWorld>().value;
                  a.release(SimTime{period * (k + 1)});
              }
          })
    {
    }
    ~Controller()
    {
        handler_.stop(); // also when a failed REQUIRE leaves early
        thread_.join();
    }

private:
    simsync::SimSyncHandler& handler_;
    simsync::Accessor accessor_;
    std::thread thread_;
};

} // namespace

TEST_CASE("ClockPublisher.Lockstep.EveryTickOnceInOrder" * doctest::timeout(30))
{
    struct Row {
        std::chrono::nanoseconds step;
        std::chrono::nanoseconds period;
        SimTime pause_at; // run_until: rounded down to the step grid
        std::size_t ticks;
    };
    // The same 100 Hz over 1 s gives 101 ticks (0 and 1 s included) whatever the
    // step; the granted times are the ticks rounded to each step's grid.
    const Row rows[] = {
        {1ms, 10ms, ms(1000), 101},
        {3ms, 10ms, ms(1000), 101}, // 0, 9, 21, 30, 39, 51, ... 999 ms
        {1ms, 3'333'333ns, ms(1000), 301},
        {1ms, 1ms, ms(200), 201},
        {5ms, 2ms, ms(100), 51}, // period below the step: ticks share grid instants
    };
    for (const Row& row : rows) {
        CAPTURE(row.step.count());
        CAPTURE(row.period.count());
        simsync::CountingWorld world;
        simsync::SimSyncHandler handler(world, {.step = row.step});
        // A gate holds time at 0 (and, registered first, the instant 0 itself)
        // until run_until is in place: the run is the same whatever the timing.
        simsync::Accessor gate = handler.register_accessor("gate");
        simsync::SimTimeSource source(handler);
        Collector collected;
        Controller controller(handler, row.step);
        simsync::ClockPublisher clock(handler, source, {.schedule = every(row.period), .paused_period = 1ms});
        clock.add_callback(std::ref(collected));
        clock.start();
        handler.run_until(row.pause_at);
        gate.deregister();
        const SimTime paused_at = simsync::round_to_grid(row.pause_at, row.step, simsync::Rounding::down);

        // Every tick, then at least two paused messages.
        REQUIRE(collected.wait(at_least(row.ticks + 2)));
        clock.stop();
        handler.stop();
        const std::vector<ClockMessage> m = collected.messages();
        for (std::size_t i = 0; i < m.size(); ++i) {
            CAPTURE(i);
            REQUIRE(m[i].sequence == i);
            if (i < row.ticks) {
                const SimTime tick = simsync::round_to_grid(SimTime{row.period * static_cast<std::int64_t>(i)}, row.step);
                CHECK(m[i].sim_time == tick);
                CHECK(ns(m[i].time) == ns(tick)); // the sim source read during the access
                CHECK(m[i].paused == (tick == paused_at));
            } else {
                CHECK(m[i].paused);
                CHECK(m[i].sim_time == paused_at);
                CHECK(ns(m[i].time) == ns(paused_at));
            }
        }
        CHECK(world.value == ns(paused_at) / row.step.count() + 1); // the controller ran at every step
    }
}

TEST_CASE("ClockPublisher.Paused.FrozenTimeAndFlag" * doctest::timeout(30))
{
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms, .start_paused = true});
    simsync::SimTimeSource source(handler);
    Collector collected;
    simsync::ClockPublisher clock(handler, source, {.schedule = every(10ms), .paused_period = 2ms});
    clock.add_callback(std::ref(collected));
    clock.start();

    auto paused_at = [](SimTime t, std::size_t count) {
        return [t, count](const std::vector<ClockMessage>& m) {
            std::size_t n = 0;
            for (const auto& x : m) n += (x.paused && x.sim_time == t) ? 1 : 0;
            return n >= count;
        };
    };
    // Started paused at 0: the tick at 0 is served (it is the current instant),
    // then the frozen time repeats.
    REQUIRE(collected.wait(paused_at(ms(0), 3)));
    handler.run_until(ms(250));
    REQUIRE(collected.wait(paused_at(ms(250), 3)));
    handler.step(5); // single steps while paused: the frozen time follows
    REQUIRE(collected.wait(paused_at(ms(255), 3)));
    // The clock is the only participant, and an inline system has no thread:
    // whoever resumes steps the simulation for it, until the clock stops.
    std::thread resumer([&] { handler.resume(); });
    struct Join {
        simsync::SimSyncHandler& handler;
        std::thread& thread;
        ~Join()
        {
            handler.stop(); // also when a failed REQUIRE leaves early
            thread.join();
        }
    } join{handler, resumer};
    REQUIRE(collected.wait([](const auto& m) { return !m.empty() && m.back().sim_time >= ms(400); }));
    clock.stop();

    const std::vector<ClockMessage> m = collected.messages();
    SimTime last_sim{};
    SimTime next_tick{};
    for (std::size_t i = 0; i < m.size(); ++i) {
        CAPTURE(i);
        REQUIRE(m[i].sequence == i);
        CHECK(ns(m[i].time) == ns(m[i].sim_time)); // sim source: frozen together
        CHECK(m[i].sim_time >= last_sim);
        last_sim = m[i].sim_time;
        if (m[i].sim_time == next_tick) {
            next_tick += 10ms; // each tick exactly once: the next one is 10 ms on
            continue;
        }
        // Not a tick: a paused repeat of a frozen instant.
        CHECK(m[i].paused);
        const bool frozen_instant = m[i].sim_time == ms(0) || m[i].sim_time == ms(250) || m[i].sim_time == ms(255);
        CHECK(frozen_instant);
    }
    CHECK(next_tick > ms(400)); // no tick was skipped up to 400 ms
    // After the resume, ticks carry no paused flag.
    for (const auto& x : m) {
        if (x.sim_time > ms(255)) CHECK_FALSE(x.paused);
    }
}

TEST_CASE("ClockPublisher.Paused.WallSourceFrozen" * doctest::timeout(30))
{
    // A wall-driven source keeps running underneath; the paused messages repeat
    // the time read when the pause was noticed.
    simsync::ManualWallClock wall;
    simsync::TimeScale scale(1.0, wall);
    simsync::ScaledWallTimeSource source(scale, simsync::ScaledWallTimeSource::Origin::zero);
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms, .start_paused = true});
    Collector collected;
    simsync::ClockPublisher clock(handler, source, {.schedule = every(10ms), .paused_period = 1ms});
    clock.add_callback(std::ref(collected));
    clock.start();
    REQUIRE(collected.wait(at_least(2)));
    const ClockMessage first_paused = collected.messages()[1];
    REQUIRE(first_paused.paused);
    wall.advance(5s);
    const std::size_t seen = collected.size();
    REQUIRE(collected.wait(at_least(seen + 3)));
    for (const auto& x : collected.messages()) {
        CHECK(x.paused);
        CHECK(x.time == first_paused.time);
    }
    handler.run_until(ms(10)); // a new operator action: the frozen time is re-read
    REQUIRE(collected.wait([](const auto& m) { return m.back().sim_time == ms(10) && m.back().paused; }));
    const std::size_t after = collected.size();
    REQUIRE(collected.wait(at_least(after + 1)));
    CHECK(ns(collected.messages().back().time) >= 5'000'000'000);
}

namespace {

// A user-defined source far from zero, so seconds and nanoseconds both move.
class OffsetSimSource final : public simsync::TimeSource {
public:
    OffsetSimSource(const simsync::SimSyncHandler& h, std::int64_t offset_ns) : handler_(h), offset_ns_(offset_ns) {}

protected:
    simsync::SourceTime read() const noexcept override
    {
        return simsync::SourceTime{simsync::SourceTime::duration{offset_ns_ + ns(handler_.now())}};
    }

private:
    const simsync::SimSyncHandler& handler_;
    std::int64_t offset_ns_;
};

// Reads little-endian fields by byte offset, as the documentation describes them,
// independently of the library's decoder.
template <class T>
T le(const unsigned char* p)
{
    std::uint64_t u = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) u |= static_cast<std::uint64_t>(p[i]) << (8 * i);
    return static_cast<T>(u);
}

} // namespace

TEST_CASE("ClockPublisher.Udp.DatagramLayout" * doctest::timeout(30))
{
    namespace ip = boost::asio::ip;
    boost::asio::io_context io;
    ip::udp::socket receiver(io, ip::udp::endpoint(ip::make_address("127.0.0.1"), 0));
    const std::uint16_t port = receiver.local_endpoint().port();

    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms});
    simsync::Accessor gate = handler.register_accessor("gate"); // holds time at 0 until run_until is set
    constexpr std::int64_t kOffset = 1'700'000'000'995'000'000; // 5 ms before a whole second
    OffsetSimSource source(handler, kOffset);
    simsync::ClockPublisher clock(handler, source, {.schedule = every(10ms), .paused_period = 5ms});
    auto sink = std::make_unique<simsync::UdpClockSink>("127.0.0.1", port);
    const simsync::UdpClockSink& udp = *sink;
    clock.add_sink(std::move(sink));
    clock.start();
    handler.run_until(ms(50));
    gate.deregister();

    constexpr std::size_t kTicks = 6; // 0, 10, ... 50 ms
    std::vector<std::vector<unsigned char>> datagrams;
    const auto deadline = std::chrono::steady_clock::now() + kPatience;
    while (datagrams.size() < kTicks + 2 && std::chrono::steady_clock::now() < deadline) {
        std::vector<unsigned char> buffer(64);
        std::size_t got = 0;
        bool done = false;
        ip::udp::endpoint from;
        receiver.async_receive_from(boost::asio::buffer(buffer), from, [&](boost::system::error_code ec, std::size_t n) {
            done = !ec;
            got = n;
        });
        io.restart();
        io.run_for(std::chrono::milliseconds(500));
        if (!done) {
            receiver.cancel();
            io.restart();
            io.run();
            continue;
        }
        buffer.resize(got);
        datagrams.push_back(buffer);
    }
    clock.stop();
    REQUIRE(datagrams.size() >= kTicks + 2);
    CHECK(udp.send_errors() == 0);

    for (std::size_t i = 0; i < datagrams.size(); ++i) {
        CAPTURE(i);
        const auto& d = datagrams[i];
        REQUIRE(d.size() == 32);
        CHECK(std::memcmp(d.data(), "SSCK", 4) == 0);
        CHECK(le<std::uint16_t>(&d[4]) == 1);
        const std::uint16_t flags = le<std::uint16_t>(&d[6]);
        CHECK(le<std::uint64_t>(&d[8]) == i);
        const std::int32_t sec = le<std::int32_t>(&d[16]);
        const std::uint32_t nsec = le<std::uint32_t>(&d[20]);
        const std::int64_t sim_ns = le<std::int64_t>(&d[24]);
        const std::int64_t expected_sim = i < kTicks ? static_cast<std::int64_t>(i) * 10'000'000 : 50'000'000;
        CHECK(sim_ns == expected_sim);
        const std::int64_t expected_time = kOffset + expected_sim;
        CHECK(sec == expected_time / 1'000'000'000);
        CHECK(nsec == expected_time % 1'000'000'000);
        CHECK(nsec < 1'000'000'000u);
        CHECK(flags == (i + 1 >= kTicks ? 1 : 0)); // the 50 ms tick is the pause instant
        // The library's decoder agrees with the documented layout.
        const ClockMessage decoded = simsync::decode_clock_datagram(std::as_bytes(std::span(d.data(), d.size())));
        CHECK(decoded.sequence == i);
        CHECK(ns(decoded.time) == expected_time);
        CHECK(ns(decoded.sim_time) == expected_sim);
        CHECK(decoded.paused == (flags == 1));
    }
    // Crossing the whole second: tick 1 (10 ms) is 1700000001.005 s.
    CHECK(le<std::int32_t>(&datagrams[0][16]) == 1'700'000'000);
    CHECK(le<std::int32_t>(&datagrams[1][16]) == 1'700'000'001);
    CHECK(le<std::uint32_t>(&datagrams[1][20]) == 5'000'000);
}

TEST_CASE("ClockPublisher.Datagram.EncodeDecode")
{
    struct Row {
        ClockMessage message;
        std::int32_t sec;
        std::uint32_t nsec;
    };
    const Row rows[] = {
        {{0, simsync::SourceTime{}, SimTime{}, false}, 0, 0},
        {{7, simsync::source_time(1500ms), ms(1500), true}, 1, 500'000'000},
        {{~std::uint64_t{0}, simsync::source_time(-1500ms), ms(3), false}, -2, 500'000'000},
        {{1, simsync::source_time(-1ns), SimTime{}, true}, -1, 999'999'999},
    };
    for (const Row& row : rows) {
        CAPTURE(row.message.sequence);
        const simsync::ClockDatagram d = simsync::encode_clock_datagram(row.message);
        const auto* p = reinterpret_cast<const unsigned char*>(d.data());
        CHECK(le<std::int32_t>(p + 16) == row.sec);
        CHECK(le<std::uint32_t>(p + 20) == row.nsec);
        CHECK(le<std::uint64_t>(p + 8) == row.message.sequence);
        CHECK(le<std::uint16_t>(p + 6) == (row.message.paused ? 1 : 0));
        CHECK(simsync::decode_clock_datagram(d) == row.message);
    }

    simsync::ClockDatagram good = simsync::encode_clock_datagram({});
    CHECK_THROWS_WITH_AS(simsync::decode_clock_datagram(std::span(good).first(31)), doctest::Contains("got 31"),
                         simsync::Error);
    auto bad_magic = good;
    bad_magic[0] = std::byte{'X'};
    CHECK_THROWS_WITH_AS(simsync::decode_clock_datagram(bad_magic), doctest::Contains("88 83 67 75"),
                         simsync::Error);
    auto bad_version = good;
    bad_version[4] = std::byte{2};
    CHECK_THROWS_WITH_AS(simsync::decode_clock_datagram(bad_version), doctest::Contains("got 2"), simsync::Error);
    auto bad_nsec = good;
    bad_nsec[23] = std::byte{0xFF};
    CHECK_THROWS_WITH_AS(simsync::decode_clock_datagram(bad_nsec), doctest::Contains("below 1000000000"),
                         simsync::Error);
}

TEST_CASE("ClockPublisher.LateSink.GetsLastMessageAtOnce" * doctest::timeout(30))
{
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms, .start_paused = true});
    simsync::SimTimeSource source(handler);
    Collector early;
    Collector late;
    simsync::ClockPublisher clock(handler, source, {.schedule = every(10ms), .paused_period = 2ms});
    clock.add_callback(std::ref(early));
    clock.start();
    handler.run_until(ms(30));
    REQUIRE(early.wait([](const auto& m) { return !m.empty() && m.back().sim_time == ms(30); }));

    clock.add_callback(std::ref(late));
    REQUIRE(late.size() == 1); // delivered on this thread, before add_callback returned
    REQUIRE(late.wait(at_least(4)));
    clock.stop();

    const auto e = early.messages();
    const auto l = late.messages();
    for (std::size_t i = 0; i < l.size(); ++i) {
        CAPTURE(i);
        CHECK(l[i].sequence == l[0].sequence + i); // then every message, no gap, no repeat
        REQUIRE(l[i].sequence < e.size());
        CHECK(l[i] == e[l[i].sequence]); // the same messages as everybody else
    }
    CHECK(l[0].sim_time == ms(30));
}

TEST_CASE("ClockPublisher.Sink.ExceptionCountedOthersServed" * doctest::timeout(30))
{
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms, .start_paused = true});
    simsync::SimTimeSource source(handler);
    Collector collected;
    simsync::ClockPublisher clock(handler, source, {.schedule = every(10ms)});
    clock.add_callback([](const ClockMessage&) { throw std::runtime_error("subscriber bug"); });
    clock.add_callback(std::ref(collected));
    clock.start();
    handler.run_until(ms(20));
    REQUIRE(collected.wait(at_least(3)));
    clock.stop();
    CHECK(clock.sink_failures() == collected.size());
    CHECK(clock.published() == collected.size());
}

TEST_CASE("ClockPublisher.Stop.Prompt" * doctest::timeout(30))
{
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms, .start_paused = true});
    simsync::SimTimeSource source(handler);
    Collector collected;
    // Paused with an hour between paused messages: the thread sits in a request.
    simsync::ClockPublisher clock(handler, source, {.schedule = every(10ms), .paused_period = 1h});
    clock.add_callback(std::ref(collected));
    clock.start();
    REQUIRE(collected.wait(at_least(1)));
    REQUIRE(clock.running());
    // Its thread sits in a request (paused: the next tick never comes): stop()
    // must end that request, not find the publisher before it.
    auto in_request = [&] {
        const simsync::Snapshot snap = handler.snapshot();
        for (const auto& a : snap.accessors) {
            if (a.name == "clock") return a.activity == simsync::AccessorStatus::Activity::waiting;
        }
        return false;
    };
    const auto wait_deadline = std::chrono::steady_clock::now() + kPatience;
    while (!in_request() && std::chrono::steady_clock::now() < wait_deadline) std::this_thread::sleep_for(100us);
    REQUIRE(in_request());
    const auto before = std::chrono::steady_clock::now();
    clock.stop();
    const auto took = std::chrono::steady_clock::now() - before;
    CHECK_FALSE(clock.running());
    CHECK(took < 5s); // in practice microseconds; generous for a loaded machine
    clock.stop();     // idempotent
    // The accessor is gone: it no longer holds simulated time.
    const simsync::Snapshot snap = handler.snapshot();
    for (const auto& a : snap.accessors) CHECK(a.name != "clock");
    CHECK_THROWS_AS(clock.start(), simsync::Error); // starts once
}

TEST_CASE("ClockPublisher.Stop.HandlerStopEndsThread" * doctest::timeout(30))
{
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms});
    simsync::SimTimeSource source(handler);
    Collector collected;
    simsync::ClockPublisher clock(handler, source, {.schedule = every(10ms), .paused_period = 1h});
    clock.add_callback(std::ref(collected));
    clock.start();
    REQUIRE(collected.wait(at_least(10))); // running free: ticks as fast as they come
    handler.stop();
    const auto deadline = std::chrono::steady_clock::now() + kPatience;
    while (clock.running() && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(100us); // a sleeping poll: never compete with the stepping thread
    }
    CHECK_FALSE(clock.running());
    const std::uint64_t published = clock.published();
    CHECK(published == collected.size());
}

TEST_CASE("ClockPublisher.Config.Validation")
{
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms, .start_paused = true});
    simsync::SimTimeSource source(handler);
    // A zero period is refused by the schedule, before a publisher sees it.
    CHECK_THROWS_WITH_AS(every(0ms), doctest::Contains("period must be > 0"), simsync::Error);
    CHECK_THROWS_WITH_AS(simsync::ClockPublisher(handler, source, {.schedule = every(10ms), .paused_period = -1ms}),
                         doctest::Contains("got -1000000 ns"), simsync::Error);
    simsync::ClockPublisher clock(handler, source);
    CHECK(clock.config().name == "clock");
    CHECK(clock.config().schedule == every(10ms));
    // With an executor, the paused messages follow the loop's clock: another is an error.
    simsync::ManualWallClock manual;
    simsync::EventLoop loop;
    CHECK_THROWS_WITH_AS(simsync::ClockPublisher(handler, source, {.wall_clock = &manual}, loop.executor()),
                         doctest::Contains("ClockPublisherConfig.wall_clock"), simsync::Error);
    simsync::ClockPublisher shared(handler, source, {.name = "shared", .wall_clock = &loop.clock()}, loop.executor());
    CHECK_THROWS_AS(clock.add_sink(nullptr), simsync::Error);
    CHECK_THROWS_AS(clock.add_callback({}), simsync::Error);
    CHECK_FALSE(clock.last_message().has_value());
    clock.start();
    CHECK_THROWS_WITH_AS(clock.start(), doctest::Contains("started"), simsync::Error);
    simsync::ClockPublisher twin(handler, source);
    CHECK_THROWS_AS(twin.start(), simsync::Error); // "clock" is taken
    CHECK_THROWS_AS(simsync::UdpClockSink("no-such-host.invalid", 9), simsync::Error);
}

TEST_CASE("ClockPublisher.Rate.FinerThanTheStepLetsTimeMove" * doctest::timeout(60))
{
    // A 1 kHz clock on a 25 ms step (issue 23 point 1): ticks that round to one
    // instant are published there, and time moves on to the end.
    simsync::ManualWallClock wall;
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 25ms, .start_paused = true});
    simsync::SimTimeSource source(handler);
    Collector collected;
    simsync::ClockPublisher clock(handler, source,
                                  {.schedule = simsync::PeriodicSchedule::from_rate(1000), .wall_clock = &wall});
    clock.add_callback(std::ref(collected));
    clock.start();
    handler.run_until(simsync::sim_time(250ms));
    REQUIRE(collected.wait(at_least(251), 30s));
    REQUIRE(handler.wait_until_paused(simsync::WallClock::now() + kPatience));
    clock.stop();
    const std::vector<ClockMessage> m = collected.messages();
    CHECK(handler.now() == ms(250));
    REQUIRE(m.size() >= 251);
    CHECK(m[250].sim_time == ms(250));
    CHECK(m[12].sim_time == ms(0));
    CHECK(m[13].sim_time == ms(25));
}

TEST_CASE("ClockPublisher.Rate.ThirtyHertzExactForAnHour" * doctest::timeout(240))
{
    // Rounded down to a 10 ms grid, tick 3k (exactly k * 100 ms) lands on k * 100 ms
    // only if it is computed exactly: a period truncated to 33333333 ns would put
    // it k ns early, a whole grid step (10 ms) down once rounded.
    constexpr auto kStep = 10ms;
    simsync::ManualWallClock wall; // never advanced: no paused messages
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = kStep, .rounding = simsync::Rounding::down, .start_paused = true});
    simsync::SimTimeSource source(handler);
    Collector collected;
    simsync::ClockPublisher clock(handler, source,
                                  {.schedule = simsync::PeriodicSchedule::from_rate(30), .wall_clock = &wall});
    clock.add_callback(std::ref(collected));
    clock.start();
    handler.run_until(simsync::sim_time(3600s));
    constexpr std::size_t kTicks = 30 * 3600 + 1; // 0 and 3600 s included
    REQUIRE(collected.wait(at_least(kTicks), 200s));
    REQUIRE(handler.wait_until_paused(simsync::WallClock::now() + kPatience));
    clock.stop();

    const std::vector<ClockMessage> m = collected.messages();
    REQUIRE(m.size() == kTicks);
    std::size_t wrong = 0;
    for (std::size_t n = 0; n < m.size(); ++n) {
        const auto i = static_cast<std::int64_t>(n);
        const SimTime exact{simsync::SimDuration{i * 1'000'000'000 / 30}}; // floor(n * 1e9 / 30) ns
        const SimTime granted = simsync::round_to_grid(exact, kStep, simsync::Rounding::down);
        if (m[n].sequence != n || m[n].sim_time != granted || ns(m[n].time) != ns(granted)) {
            if (wrong++ < 5) {
                CAPTURE(n);
                CHECK(m[n].sequence == n);
                CHECK(ns(m[n].sim_time) == ns(granted));
            }
        }
    }
    CHECK(wrong == 0);
    CHECK(m[3].sim_time == ms(100));
    CHECK(m.back().sim_time == simsync::sim_time(3600s)); // no drift after an hour
    CHECK(m.back().paused);
}

TEST_CASE("ClockPublisher.Paused.ManualClockDrivesThePausedMessages" * doctest::timeout(60))
{
    simsync::ManualWallClock wall;
    simsync::EventLoop loop(wall);
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms, .start_paused = true});
    simsync::SimTimeSource source(handler);
    // Registered first, a lockstep gate holds time at 50 ms: running, not paused.
    simsync::Accessor gate = handler.register_accessor("gate", {.first_request = ms(50)});
    Collector collected;
    simsync::ClockPublisher clock(handler, source, {.schedule = every(10ms), .paused_period = 100ms}, loop.executor());
    clock.add_callback(std::ref(collected));
    clock.start();
    // Paused at 0: tick 0 is the current instant, served at once.
    REQUIRE(collected.wait(at_least(1)));
    settle(loop);
    CHECK(collected.size() == 1);
    wall.advance(99ms);
    settle(loop);
    CHECK(collected.size() == 1); // not yet: no message before its wall period
    wall.advance(1ms);
    settle(loop);
    CHECK(collected.size() == 2);
    for (std::size_t i = 0; i < 5; ++i) { // one message per paused period, no more
        wall.advance(100ms);
        settle(loop);
        CHECK(collected.size() == 3 + i);
    }
    const std::size_t paused_at_zero = collected.size(); // tick 0 and 6 repeats

    // Running (held at 50 ms by the gate, not paused): no paused message
    // however much wall time passes. resume() steps for the clock on this thread.
    handler.resume();
    REQUIRE(collected.wait([](const auto& m) { return m.back().sim_time == ms(40); }));
    REQUIRE(clock_waiting(handler)); // for tick 50, behind the gate
    const std::size_t running = collected.size();
    for (int i = 0; i < 20; ++i) {
        wall.advance(100ms);
        settle(loop);
    }
    CHECK(collected.size() == running);

    // Paused at 50 ms (the clock's tick 50 still waits for the gate): one
    // paused message per period, with the time frozen at the pause.
    handler.pause();
    for (std::size_t i = 1; i <= 3; ++i) {
        wall.advance(100ms);
        settle(loop);
        CHECK(collected.size() == running + i);
    }
    // The gate lets tick 50 through; a step to 60 ms re-reads the frozen time.
    simsync::Access g = gate.request_access(ms(50));
    REQUIRE(g);
    g.release(ms(1000));
    REQUIRE(collected.wait([](const auto& m) { return m.back().sim_time == ms(50) && m.back().paused; }));
    handler.step(10);
    REQUIRE(handler.wait_until_paused(simsync::WallClock::now() + kPatience));
    REQUIRE(collected.wait([](const auto& m) { return m.back().sim_time == ms(60); }));
    const std::size_t stepped = collected.size();
    wall.advance(100ms);
    settle(loop);
    REQUIRE(collected.size() == stepped + 1);

    // Stopped while paused: prompt, the accessor is gone, nothing more comes.
    clock.stop();
    CHECK_FALSE(clock.running());
    CHECK_FALSE(has_accessor(handler, "clock"));
    for (int i = 0; i < 10; ++i) {
        wall.advance(100ms);
        settle(loop);
    }
    CHECK(collected.size() == stepped + 1);

    const std::vector<ClockMessage> m = collected.messages();
    for (std::size_t i = 0; i < m.size(); ++i) {
        CAPTURE(i);
        CHECK(m[i].sequence == i);
        CHECK(ns(m[i].time) == ns(m[i].sim_time)); // the sim source: frozen together
        if (i < paused_at_zero) {
            CHECK(m[i].sim_time == ms(0));
            CHECK(m[i].paused);
        } else if (i < running) {
            CHECK(m[i].sim_time == ms(10 * static_cast<std::int64_t>(i - paused_at_zero + 1)));
            CHECK_FALSE(m[i].paused);
        } else if (i < running + 3) {
            CHECK(m[i].sim_time == ms(50)); // frozen at the pause
            CHECK(m[i].paused);
        }
    }
    CHECK(m[running + 3].sim_time == ms(50)); // tick 50, once
    CHECK(m[stepped - 1].sim_time == ms(60)); // tick 60
    CHECK(m[stepped].sim_time == ms(60));     // the re-read frozen time
    CHECK(m[stepped].paused);
}

TEST_CASE("ClockPublisher.Threads.SinksRunOnTheSteppingThread" * doctest::timeout(60))
{
    // No thread of its own: in an unpaced run each tick is published by the
    // thread that steps the world to it, here a controller's.
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms});
    simsync::SimTimeSource source(handler);
    // Registered first: ahead of the clock at every instant, also at 0.
    simsync::Accessor controller = handler.register_accessor("controller", {.first_request = SimTime{}});
    std::mutex mutex;
    std::vector<std::pair<SimTime, std::thread::id>> published; // written on the stepping thread
    simsync::ClockPublisher clock(handler, source, {.schedule = every(10ms)});
    clock.add_callback([&](const ClockMessage& m) {
        std::lock_guard<std::mutex> guard(mutex);
        published.emplace_back(m.sim_time, std::this_thread::get_id());
    });
    clock.start();
    REQUIRE(clock_waiting(handler)); // its first request (at 0) waits behind the controller

    std::thread::id driver_id;
    std::thread driver([&] {
        driver_id = std::this_thread::get_id();
        for (std::int64_t k = 0; k <= 100; ++k) {
            simsync::Access a = controller.request_access(ms(k));
            if (!a) return;
            ++a.world_as<simsync::CountingWorld>().value;
            a.release(ms(k + 1)); // holds time at k + 1 ms: after the loop, at 101 ms
        }
    });
    driver.join();
    clock.stop();
    controller.deregister();

    std::lock_guard<std::mutex> guard(mutex);
    REQUIRE(published.size() == 11); // 0, 10, ... 100 ms
    for (std::size_t i = 0; i < published.size(); ++i) {
        CAPTURE(i);
        CHECK(published[i].first == ms(10 * static_cast<std::int64_t>(i)));
        CHECK(published[i].second == driver_id);
    }
    CHECK(world.value == 101);
}

TEST_CASE("ClockPublisher.Stop.FromASinkOnlyAsks" * doctest::timeout(60))
{
    simsync::ManualWallClock wall;
    simsync::EventLoop loop(wall);
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms, .start_paused = true});
    simsync::SimTimeSource source(handler);
    Collector collected;
    simsync::ClockPublisher clock(handler, source, {.schedule = every(10ms), .paused_period = 100ms}, loop.executor());
    bool stop_returned = false; // written on the thread of the fifth message only
    clock.add_callback([&](const ClockMessage& m) {
        collected(m);
        if (m.sequence == 4) {
            clock.stop(); // on the stepping thread: asks, returns at once
            stop_returned = true;
        }
    });
    clock.start();
    handler.run_until(ms(100));
    // The fifth tick (40 ms) stopped it; time then runs on to 100 ms unheld.
    REQUIRE(collected.wait(at_least(5)));
    REQUIRE(handler.wait_until_paused(simsync::WallClock::now() + kPatience));
    CHECK(handler.now() == ms(100));
    CHECK_FALSE(clock.running());
    CHECK_FALSE(has_accessor(handler, "clock"));
    for (int i = 0; i < 5; ++i) {
        wall.advance(100ms); // the paused messages were stopped too
        settle(loop);
    }
    CHECK(collected.size() == 5);
    CHECK(clock.published() == 5);
    CHECK(collected.messages().back().sim_time == ms(40));
    CHECK(stop_returned);
}

TEST_CASE("ClockPublisher.Stop.FromAPausedMessageSink" * doctest::timeout(60))
{
    simsync::ManualWallClock wall;
    simsync::EventLoop loop(wall);
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms, .start_paused = true});
    simsync::SimTimeSource source(handler);
    Collector collected;
    simsync::ClockPublisher clock(handler, source, {.schedule = every(10ms), .paused_period = 100ms}, loop.executor());
    std::thread::id stopped_on;
    clock.add_callback([&](const ClockMessage& m) {
        collected(m);
        if (m.sequence == 2) { // the second paused message, on the loop's thread
            stopped_on = std::this_thread::get_id();
            clock.stop();
        }
    });
    clock.start();
    REQUIRE(collected.wait(at_least(1))); // tick 0
    for (int i = 0; i < 6; ++i) {
        wall.advance(100ms);
        settle(loop);
    }
    CHECK(collected.size() == 3);
    CHECK_FALSE(clock.running());
    CHECK_FALSE(has_accessor(handler, "clock"));
    bool on_loop = false;
    loop.executor().sync([&] { on_loop = std::this_thread::get_id() == stopped_on; });
    CHECK(on_loop);
    // A run afterwards publishes nothing: the request was withdrawn.
    handler.run_until(ms(50));
    REQUIRE(handler.wait_until_paused(simsync::WallClock::now() + kPatience));
    CHECK(collected.size() == 3);
}

TEST_CASE("ClockPublisher.Sink.StepFromAPausedMessageSink" * doctest::timeout(60))
{
    // A paused message's sink steps the simulation: its thread (the loop's)
    // then steps for the clock and is granted the next tick inside that sink.
    // The tick goes out right after the paused message, never nested in it.
    simsync::ManualWallClock wall;
    simsync::EventLoop loop(wall);
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms, .start_paused = true});
    simsync::SimTimeSource source(handler);
    Collector collected;
    simsync::ClockPublisher clock(handler, source, {.schedule = every(10ms), .paused_period = 100ms}, loop.executor());
    int depth = 0;     // on the sink's threads, one at a time
    int max_depth = 0;
    clock.add_callback([&](const ClockMessage& m) {
        max_depth = std::max(max_depth, ++depth);
        collected(m);
        if (m.sequence == 1) handler.step(10); // the first paused message
        --depth;
    });
    clock.start();
    REQUIRE(collected.wait(at_least(1))); // tick 0
    wall.advance(100ms);
    settle(loop);
    REQUIRE(collected.size() == 3); // the paused message, then tick 10
    wall.advance(100ms);
    settle(loop);
    clock.stop();
    const std::vector<ClockMessage> m = collected.messages();
    REQUIRE(m.size() == 4);
    CHECK(m[1].paused);
    CHECK(m[1].sim_time == ms(0));
    CHECK(m[2].sim_time == ms(10)); // the tick
    CHECK(m[3].paused);
    CHECK(m[3].sim_time == ms(10)); // frozen again where the step ended
    for (std::size_t i = 0; i < m.size(); ++i) CHECK(m[i].sequence == i);
    CHECK(max_depth == 1);
}

// The publisher alone in an unpaced simulation: its loop's thread steps the
// world from tick to tick (each re-arm inside the previous completion), and
// stop() from the test thread must withdraw whichever request is live, at any
// point of that chain: before, during or after a request is put in place.
// Checked after stop(): it returned, nothing more is published, the accessor
// is gone and time is no longer held.
TEST_CASE("ClockPublisher.Stress.StopRacesALoneUnpacedChain" * doctest::timeout(120))
{
    std::vector<std::uint64_t> published_at_stop;
    std::vector<std::uint64_t> published_later;
    std::vector<bool> accessor_left;
    std::vector<bool> time_free;
    for (int round = 0; round < 40; ++round) {
        simsync::EventLoop loop;
        simsync::CountingWorld world;
        simsync::SimSyncHandler handler(world, {.step = 1ms});
        simsync::SimTimeSource source(handler);
        std::atomic<std::uint64_t> seen{0};
        simsync::ClockPublisher clock(handler, source, {.schedule = every(1ms), .paused_period = 1h}, loop.executor());
        clock.add_callback([&](const ClockMessage&) { seen.fetch_add(1, std::memory_order_relaxed); });
        clock.start();
        // Stop after a varying amount of the chain (0 to a few hundred ticks).
        const std::uint64_t after = static_cast<std::uint64_t>(round % 8) * 37;
        const auto deadline = std::chrono::steady_clock::now() + kPatience;
        while (seen.load() < after && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
        clock.stop();
        published_at_stop.push_back(clock.published());
        accessor_left.push_back(!has_accessor(handler, "clock"));
        loop.executor().sync([] {}); // whatever the loop still had queued has run
        published_later.push_back(clock.published());
        handler.pause();
        handler.run_until(handler.now() + 50ms); // nobody holds time: it gets there
        time_free.push_back(handler.wait_until_paused(simsync::WallClock::now() + kPatience));
    }
    for (std::size_t i = 0; i < published_at_stop.size(); ++i) {
        CAPTURE(i);
        CHECK(published_later[i] == published_at_stop[i]);
        CHECK(accessor_left[i]);
        CHECK(time_free[i]);
    }
}
