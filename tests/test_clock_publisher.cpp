// ClockPublisher: every tick once and in order, rate independent of the step,
// the paused flag and frozen time, UDP datagrams as documented, late sinks, stop.

#include <simsync/simsync.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>

#include <doctest/doctest.h>

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
    bool wait(const std::function<bool(const std::vector<ClockMessage>&)>& condition)
    {
        std::unique_lock<std::mutex> lock(mutex_);
        return cv_.wait_for(lock, kPatience, [&] { return condition(messages_); });
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
        simsync::ClockPublisher clock(handler, source, {.period = row.period, .paused_period = 1ms});
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
    simsync::ClockPublisher clock(handler, source, {.period = 10ms, .paused_period = 2ms});
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
    handler.resume();
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
    simsync::ClockPublisher clock(handler, source, {.period = 10ms, .paused_period = 1ms});
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
    simsync::ClockPublisher clock(handler, source, {.period = 10ms, .paused_period = 5ms});
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
    simsync::ClockPublisher clock(handler, source, {.period = 10ms, .paused_period = 2ms});
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
    simsync::ClockPublisher clock(handler, source, {.period = 10ms});
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
    simsync::ClockPublisher clock(handler, source, {.period = 10ms, .paused_period = 1h});
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
    simsync::ClockPublisher clock(handler, source, {.period = 10ms, .paused_period = 1h});
    clock.add_callback(std::ref(collected));
    clock.start();
    REQUIRE(collected.wait(at_least(10))); // running free: ticks as fast as they come
    handler.stop();
    const auto deadline = std::chrono::steady_clock::now() + kPatience;
    while (clock.running() && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(100us); // a sleeping poll: never compete with the clock thread
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
    CHECK_THROWS_WITH_AS(simsync::ClockPublisher(handler, source, {.period = 0ms}), doctest::Contains("got 0 ns"),
                         simsync::Error);
    CHECK_THROWS_WITH_AS(simsync::ClockPublisher(handler, source, {.period = 10ms, .paused_period = -1ms}),
                         doctest::Contains("got -1000000 ns"), simsync::Error);
    simsync::ClockPublisher clock(handler, source);
    CHECK(clock.config().name == "clock");
    CHECK(clock.config().period == 10ms);
    CHECK_THROWS_AS(clock.add_sink(nullptr), simsync::Error);
    CHECK_THROWS_AS(clock.add_callback({}), simsync::Error);
    CHECK_FALSE(clock.last_message().has_value());
    clock.start();
    CHECK_THROWS_WITH_AS(clock.start(), doctest::Contains("started"), simsync::Error);
    simsync::ClockPublisher twin(handler, source);
    CHECK_THROWS_AS(twin.start(), simsync::Error); // "clock" is taken
    CHECK_THROWS_AS(simsync::UdpClockSink("no-such-host.invalid", 9), simsync::Error);
}
