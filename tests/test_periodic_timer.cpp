// PeriodicTimer and StartStopSignal on an injected ManualWallClock and on a
// handler's simulated time: no test here sleeps or depends on wall time (the
// one wall-clock test is in test_periodic_timer_wallclock.cpp). Timers given
// no executor wait on a private loop that drives their manual clock itself;
// the cases with a shared EventLoop leave the clock to the test, which advances
// it and drains the loop (Executor::sync) before it looks.
#include <doctest/doctest.h>

#include <simsync/accessors/periodic_timer.hpp>
#include <simsync/accessors/start_signal.hpp>
#include <simsync/clock/event_loop.hpp>
#include <simsync/clock/wall_clock.hpp>
#include <simsync/core/error.hpp>
#include <simsync/core/handler.hpp>
#include <simsync/core/world.hpp>

#include "support.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using std::chrono::nanoseconds;
using simsync::EventLoop;
using simsync::Executor;
using simsync::ManualWallClock;
using simsync::PeriodicTimer;
using simsync::PeriodicTimerConfig;
using simsync::SimTime;
using simsync::SystemTime;
using simsync::TimerClock;
using simsync::TimerContext;
using simsync::TimerTick;

namespace {

SystemTime unix_time(nanoseconds since_epoch)
{
    return SystemTime{std::chrono::duration_cast<simsync::SystemClock::duration>(since_epoch)};
}

nanoseconds since_epoch(SystemTime t) { return std::chrono::duration_cast<nanoseconds>(t.time_since_epoch()); }

// A one-shot flag that one thread raises and another waits for, so threaded tests
// wait for an event instead of sleeping.
class Latch {
public:
    void raise()
    {
        {
            std::lock_guard<std::mutex> guard(mutex_);
            raised_ = true;
        }
        cv_.notify_all();
    }
    void wait()
    {
        std::unique_lock<std::mutex> lock(mutex_);
        cv_.wait(lock, [this] { return raised_; });
    }

private:
    std::mutex mutex_;
    std::condition_variable cv_;
    bool raised_ = false;
};

// Raises a flag when the thread that first touched it ends: a thread_local one
// in a callback tells the test whether the timer's thread is gone.
struct ThreadExitFlag {
    std::atomic<bool>* flag = nullptr;
    ~ThreadExitFlag()
    {
        if (flag != nullptr) flag->store(true);
    }
};

PeriodicTimerConfig real_config(nanoseconds period, nanoseconds offset)
{
    PeriodicTimerConfig config;
    config.period = period;
    config.offset = offset;
    config.clock = TimerClock::real;
    return config;
}

PeriodicTimerConfig sim_config(nanoseconds period, nanoseconds offset, std::string name = "timer")
{
    PeriodicTimerConfig config;
    config.name = std::move(name);
    config.period = period;
    config.offset = offset;
    config.clock = TimerClock::simulated;
    return config;
}

} // namespace

// ----------------------------------------------------------- schedule maths

TEST_CASE("Timer.Schedule.FirstGridInstantTable")
{
    struct Row {
        nanoseconds t, period, offset, expected;
    };
    const std::vector<Row> rows{
        {10'000'000'000ns, 200ms, 5ms, 10'005'000'000ns}, // the example
        {10'005'000'000ns, 200ms, 5ms, 10'005'000'000ns}, // on the grid: that instant
        {10'005'000'001ns, 200ms, 5ms, 10'205'000'000ns}, // 1 ns late: the next one
        {10'204'999'999ns, 200ms, 5ms, 10'205'000'000ns},
        {0ns, 200ms, 5ms, 5ms},                           // before the offset: n = 0
        {7ms, 20ms, 3ms, 23ms},
        {0ns, 21ms, 25ms, 25ms},                          // offset beyond the period
        {26ms, 21ms, 25ms, 46ms},
        {1ns, 1ns, 0ns, 1ns},
    };
    for (const Row& row : rows) {
        CAPTURE(row.t.count());
        CAPTURE(row.period.count());
        CAPTURE(row.offset.count());
        CHECK(simsync::first_grid_instant(row.t, row.period, row.offset) == row.expected);
    }
    CHECK_THROWS_AS(simsync::first_grid_instant(0ns, 0ns, 0ns), simsync::Error);
    CHECK_THROWS_AS(simsync::first_grid_instant(0ns, 1ms, -1ns), simsync::Error);
}

// ---------------------------------------------------------------- real clock

TEST_CASE("Timer.RealTime.FirstCallThenEveryPeriodTable")
{
    struct Row {
        const char* what;
        nanoseconds start, period, offset, first;
    };
    const std::vector<Row> rows{
        {"issue example", 10'000'000'000ns, 200ms, 5ms, 10'005'000'000ns},
        {"start exactly on the grid", 10'005'000'000ns, 200ms, 5ms, 10'005'000'000ns},
        {"start 1 ns after the grid", 10'005'000'001ns, 200ms, 5ms, 10'205'000'000ns},
        {"20 ms period, 3 ms offset", 10'300'000'000ns, 20ms, 3ms, 10'303'000'000ns},
        {"no offset, on the grid", 10'300'000'000ns, 20ms, 0ns, 10'300'000'000ns},
    };
    constexpr int kCalls = 5;
    for (const Row& row : rows) {
        CAPTURE(row.what);
        ManualWallClock clock(simsync::WallTime{}, unix_time(row.start));
        PeriodicTimer timer(real_config(row.period, row.offset), {.wall_clock = &clock});
        std::vector<nanoseconds> nominal, woke;
        std::vector<std::uint64_t> skipped;
        std::vector<std::int64_t> index;
        timer.start([&](const TimerTick& tick) {
            nominal.push_back(since_epoch(tick.real_time));
            woke.push_back(since_epoch(clock.system_now()));
            skipped.push_back(tick.skipped);
            index.push_back(tick.index);
            if (nominal.size() == kCalls) timer.stop();
        });
        REQUIRE(nominal.size() == kCalls);
        for (int k = 0; k < kCalls; ++k) {
            CAPTURE(k);
            CHECK(nominal[k] == row.first + k * row.period);
            CHECK(woke[k] == nominal[k]); // the manual clock wakes exactly on time
            CHECK(skipped[k] == 0);
            CHECK(index[k] * row.period + row.offset == nominal[k]);
        }
        CHECK(timer.calls() == kCalls);
        CHECK(timer.skipped() == 0);
        CHECK_FALSE(timer.running());
    }
}

TEST_CASE("Timer.RealTime.StartOnGridCallsWithoutWaiting")
{
    ManualWallClock clock(simsync::WallTime{}, unix_time(10'005'000'000ns));
    PeriodicTimer timer(real_config(200ms, 5ms), {.wall_clock = &clock});
    nanoseconds first{-1};
    timer.start([&](const TimerTick& tick) {
        first = since_epoch(tick.real_time);
        CHECK(clock.system_now() == unix_time(10'005'000'000ns)); // no time passed
        timer.stop();
    });
    CHECK(first == 10'005'000'000ns);
}

TEST_CASE("Timer.RealTime.OverrunSkipsAndCountsTable")
{
    // Each call runs for the given number of thousandths of a period (the callback
    // advances the manual clock); the gaps between calls and the skips follow.
    struct Row {
        const char* what;
        std::vector<std::int64_t> run_milli;
        std::vector<std::int64_t> gaps;
        std::vector<std::uint64_t> skipped; // of calls 1..n
    };
    const std::vector<Row> rows{
        {"issue example", {1330, 2330, 330}, {2, 3, 1}, {1, 2, 0}},
        {"exactly one period: late by nothing, no skip", {1000, 1000}, {1, 1}, {0, 0}},
        {"exactly two periods: one skip", {2000}, {2}, {1}},
        {"short calls never skip", {0, 999}, {1, 1}, {0, 0}},
    };
    const nanoseconds period = 200ms;
    for (const Row& row : rows) {
        CAPTURE(row.what);
        ManualWallClock clock(simsync::WallTime{}, unix_time(10'000'000'000ns));
        PeriodicTimer timer(real_config(period, 5ms), {.wall_clock = &clock});
        std::vector<nanoseconds> nominal;
        std::vector<std::uint64_t> skipped;
        timer.start([&](const TimerTick& tick) {
            nominal.push_back(since_epoch(tick.real_time));
            skipped.push_back(tick.skipped);
            const std::size_t k = nominal.size() - 1;
            if (k == row.run_milli.size()) {
                timer.stop();
                return;
            }
            clock.advance(period * row.run_milli[k] / 1000);
        });
        REQUIRE(nominal.size() == row.run_milli.size() + 1);
        CHECK(nominal[0] == 10'005'000'000ns);
        CHECK(skipped[0] == 0);
        std::uint64_t total = 0;
        for (std::size_t k = 0; k < row.gaps.size(); ++k) {
            CAPTURE(k);
            CHECK((nominal[k + 1] - nominal[k]) == row.gaps[k] * period);
            CHECK(skipped[k + 1] == row.skipped[k]);
            total += row.skipped[k];
        }
        CHECK(timer.skipped() == total);
    }
}

// ------------------------------------------------------------------- config

TEST_CASE("Timer.Config.OffsetVersusPeriodTable")
{
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms});
    struct Row {
        TimerClock clock;
        nanoseconds period, offset;
        bool accepted;
    };
    const std::vector<Row> rows{
        {TimerClock::real, 200ms, 199'999'999ns, true},
        {TimerClock::real, 200ms, 200ms, false},
        {TimerClock::real, 200ms, 1s, false},
        {TimerClock::simulated, 200ms, 200ms, true},
        {TimerClock::simulated, 200ms, 1s, true},
    };
    for (const Row& row : rows) {
        CAPTURE(simsync::to_string(row.clock));
        CAPTURE(row.offset.count());
        PeriodicTimerConfig config;
        config.period = row.period;
        config.offset = row.offset;
        config.clock = row.clock;
        if (row.accepted) {
            CHECK_NOTHROW(PeriodicTimer(config, {.handler = &handler}));
        } else {
            try {
                PeriodicTimer timer(config, {.handler = &handler});
                FAIL("accepted an offset not smaller than the period");
            } catch (const simsync::Error& e) {
                const std::string what = e.what();
                CHECK(e.code() == simsync::errc::invalid_argument);
                CHECK(what.find("offset " + simsync::format_seconds(row.offset) + " s") != std::string::npos);
                CHECK(what.find("period " + simsync::format_seconds(row.period) + " s") != std::string::npos);
            }
        }
    }
}

TEST_CASE("Timer.Config.BadInputThrows")
{
    CHECK_THROWS_WITH_AS(PeriodicTimer(real_config(0ns, 0ns)), doctest::Contains("period 0.000000000 s must be > 0"),
                         simsync::Error);
    CHECK_THROWS_WITH_AS(PeriodicTimer(real_config(1ms, -1ns)), doctest::Contains("offset -0.000000001 s"),
                         simsync::Error);
    CHECK_THROWS_WITH_AS(PeriodicTimer(sim_config(1ms, 0ns)), doctest::Contains("needs a handler"), simsync::Error);
    PeriodicTimerConfig waits = real_config(1ms, 0ns);
    waits.wait_for_start = true;
    CHECK_THROWS_WITH_AS(PeriodicTimer{waits}, doctest::Contains("needs a signal"), simsync::Error);

    ManualWallClock clock;
    PeriodicTimer timer(real_config(1ms, 0ns), {.wall_clock = &clock});
    CHECK_THROWS_WITH_AS(timer.start({}), doctest::Contains("empty callback"), simsync::Error);
    CHECK_FALSE(timer.running());
}

// ------------------------------------------------------------ simulated time

TEST_CASE("Timer.SimulatedTime.CallsAtOffsetPlusPeriodsTable")
{
    struct Row {
        const char* what;
        nanoseconds period, offset;
        std::vector<std::int64_t> expected_ms;
    };
    const std::vector<Row> rows{
        {"issue example", 21ms, 5ms, {5, 26, 47, 68, 89}},
        {"offset beyond the period", 10ms, 25ms, {25, 35, 45, 55, 65}},
        {"offset equal to the period", 10ms, 10ms, {10, 20, 30, 40, 50}},
    };
    for (const Row& row : rows) {
        CAPTURE(row.what);
        simsync::CountingWorld world;
        simsync::SimSyncHandler handler(world, {.step = 1ms});
        PeriodicTimer timer(sim_config(row.period, row.offset, "controller"), {.handler = &handler});
        std::vector<SimTime> nominal, now, granted;
        timer.start([&](const TimerTick& tick) {
            REQUIRE(tick.access != nullptr);
            nominal.push_back(tick.sim_time);
            now.push_back(handler.now());
            granted.push_back(tick.access->granted_time());
            if (nominal.size() == row.expected_ms.size()) timer.stop();
        });
        REQUIRE(nominal.size() == row.expected_ms.size());
        for (std::size_t k = 0; k < nominal.size(); ++k) {
            CAPTURE(k);
            const SimTime expected = simsync::sim_time(std::chrono::milliseconds(row.expected_ms[k]));
            CHECK(nominal[k] == expected);
            CHECK(now[k] == nominal[k]);
            CHECK(granted[k] == nominal[k]);
        }
        CHECK_FALSE(timer.error());
        // The accessor is gone with the run: nothing holds time any more.
        CHECK(handler.snapshot().accessors.empty());
    }
}

TEST_CASE("Timer.SimulatedTime.PeriodFinerThanTheStepLetsTimeMove" * doctest::timeout(30))
{
    // A 1 ms timer on a 25 ms step (issue 23 point 1: no accessor that always
    // asks again may hold time at one instant). Every period is still called,
    // 25 of them at each grid instant, and time reaches the end.
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 25ms});
    PeriodicTimer timer(sim_config(1ms, 0ms, "fine"), {.handler = &handler});
    std::vector<std::pair<SimTime, SimTime>> calls; // nominal, granted
    timer.start([&](const TimerTick& tick) {
        calls.emplace_back(tick.sim_time, tick.access->granted_time());
        if (calls.size() == 101) timer.stop();
    });
    REQUIRE(calls.size() == 101);
    CHECK(calls.back().first == simsync::sim_time(100ms));
    CHECK(calls.back().second == simsync::sim_time(100ms));
    CHECK(calls[12].second == simsync::sim_time(0ms));  // 12 ms rounds to 0
    CHECK(calls[13].second == simsync::sim_time(25ms)); // 13 ms to 25
}

TEST_CASE("Timer.SimulatedTime.TwoTimersInterleaveInTimeOrder" * doctest::timeout(30))
{
    // Two lockstep timers on their own threads: neither lets time pass its next
    // call, so the calls, recorded inside their accesses, come in time order and
    // each sees the handler's time equal to its nominal instant.
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms});
    std::mutex mutex;
    std::vector<std::pair<SimTime, char>> calls;
    bool mismatch = false;
    auto record = [&](char who, PeriodicTimer& self, Latch& done) {
        return [&, who](const TimerTick& tick) {
            std::lock_guard<std::mutex> guard(mutex);
            calls.emplace_back(tick.sim_time, who);
            mismatch = mismatch || handler.now() != tick.sim_time;
            if (tick.sim_time >= simsync::sim_time(200ms)) {
                self.stop();
                done.raise();
            }
        };
    };
    PeriodicTimer a(sim_config(21ms, 5ms, "a"), {.handler = &handler});
    PeriodicTimer b(sim_config(10ms, 0ns, "b"), {.handler = &handler});
    Latch a_done, b_done;
    a.start_async(record('a', a, a_done));
    b.start_async(record('b', b, b_done));
    a_done.wait();
    b_done.wait();
    a.stop();
    b.stop();
    std::lock_guard<std::mutex> guard(mutex);
    CHECK_FALSE(mismatch);
    REQUIRE(calls.size() >= 2);
    for (std::size_t k = 1; k < calls.size(); ++k) {
        CAPTURE(k);
        CHECK(calls[k - 1].first <= calls[k].first);
    }
    // Every call of a timer is on its grid, and a timer never skips on simulated time.
    SimTime last_a{}, last_b{};
    bool first_a = true, first_b = true;
    for (const auto& [at, who] : calls) {
        const auto ns = at.time_since_epoch();
        if (who == 'a') {
            CHECK((ns - 5ms) % 21ms == 0ns);
            CHECK((first_a || at - last_a == 21ms));
            first_a = false;
            last_a = at;
        } else {
            CHECK(ns % 10ms == 0ns);
            CHECK((first_b || at - last_b == 10ms));
            first_b = false;
            last_b = at;
        }
    }
}

TEST_CASE("Timer.SimulatedTime.HandlerStopEndsTimer")
{
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms});
    PeriodicTimer timer(sim_config(21ms, 5ms), {.handler = &handler});
    timer.start([&](const TimerTick&) {
        if (timer.calls() == 2) handler.stop();
    });
    CHECK(timer.calls() == 2);
    CHECK(timer.error() == simsync::errc::stopped);
}

// -------------------------------------------------------------------- stop

TEST_CASE("Timer.Stop.BeforeStartNoCall")
{
    SUBCASE("real")
    {
        ManualWallClock clock;
        PeriodicTimer timer(real_config(1ms, 0ns), {.wall_clock = &clock});
        timer.stop();
        timer.start([](const TimerTick&) { FAIL("called after stop"); });
        CHECK(timer.calls() == 0);
    }
    SUBCASE("simulated")
    {
        simsync::CountingWorld world;
        simsync::SimSyncHandler handler(world, {.step = 1ms});
        PeriodicTimer timer(sim_config(1ms, 0ns), {.handler = &handler});
        timer.stop();
        timer.start([](const TimerTick&) { FAIL("called after stop"); });
        CHECK(timer.calls() == 0);
        CHECK(handler.snapshot().accessors.empty());
    }
}

TEST_CASE("Timer.Stop.FromCallbackNoFurtherCall")
{
    SUBCASE("real")
    {
        ManualWallClock clock(simsync::WallTime{}, unix_time(10s));
        PeriodicTimer timer(real_config(200ms, 5ms), {.wall_clock = &clock});
        timer.start([&](const TimerTick&) {
            if (timer.calls() == 3) timer.stop();
        });
        CHECK(timer.calls() == 3);
    }
    SUBCASE("simulated")
    {
        simsync::CountingWorld world;
        simsync::SimSyncHandler handler(world, {.step = 1ms});
        PeriodicTimer timer(sim_config(21ms, 5ms), {.handler = &handler});
        timer.start([&](const TimerTick&) {
            if (timer.calls() == 3) timer.stop();
        });
        CHECK(timer.calls() == 3);
        CHECK(handler.now() == simsync::sim_time(47ms)); // time stopped at the last call
    }
    SUBCASE("real, async: stop inside the callback does not join itself")
    {
        ManualWallClock clock(simsync::WallTime{}, unix_time(10s));
        PeriodicTimer timer(real_config(200ms, 5ms), {.wall_clock = &clock});
        Latch stopped;
        timer.start_async([&](const TimerTick&) {
            if (timer.calls() == 3) {
                timer.stop();
                stopped.raise();
            }
        });
        stopped.wait();
        timer.stop(); // joins
        CHECK(timer.calls() == 3);
    }
}

TEST_CASE("Timer.Stop.FromAnotherThreadDuringCallback" * doctest::timeout(30))
{
    // stop() arrives while call 3 runs: that call is the "at most one more", and
    // none follows. The callback waits until stop() has returned, so the race the
    // test names is the one that happens.
    auto run = [](PeriodicTimer& timer) {
        Latch in_call_3, stop_returned;
        std::thread runner([&] {
            timer.start([&](const TimerTick&) {
                if (timer.calls() == 3) {
                    in_call_3.raise();
                    stop_returned.wait();
                }
            });
        });
        in_call_3.wait();
        timer.stop(); // start() form: does not join, the caller of start() returns
        stop_returned.raise();
        runner.join();
        CHECK(timer.calls() == 3);
        CHECK_FALSE(timer.running());
    };
    SUBCASE("real")
    {
        ManualWallClock clock(simsync::WallTime{}, unix_time(10s));
        PeriodicTimer timer(real_config(200ms, 5ms), {.wall_clock = &clock});
        run(timer);
    }
    SUBCASE("simulated")
    {
        simsync::CountingWorld world;
        simsync::SimSyncHandler handler(world, {.step = 1ms});
        PeriodicTimer timer(sim_config(21ms, 5ms), {.handler = &handler});
        run(timer);
        CHECK(handler.snapshot().accessors.empty());
    }
}

TEST_CASE("Timer.Stop.AsyncFromAnotherThreadJoins" * doctest::timeout(30))
{
    SUBCASE("real: no call after stop returns")
    {
        // The manual clock never makes the timer wait: until stopped it calls as
        // fast as it can, so a stop that did not end and join it would show.
        ManualWallClock clock(simsync::WallTime{}, unix_time(10s));
        PeriodicTimer timer(real_config(200ms, 5ms), {.wall_clock = &clock});
        Latch three_calls;
        std::atomic<std::uint64_t> calls{0};
        std::atomic<bool> stop_returned{false};
        std::atomic<std::uint64_t> calls_after_stop{0};
        std::atomic<bool> thread_ended{false};
        timer.start_async([&](const TimerTick&) {
            thread_local ThreadExitFlag exit_flag;
            exit_flag.flag = &thread_ended;
            if (stop_returned.load()) ++calls_after_stop;
            if (++calls == 3) three_calls.raise();
        });
        three_calls.wait();
        timer.stop();
        stop_returned = true;
        CHECK(thread_ended.load()); // stop() joined the timer's thread: it has ended
        CHECK_FALSE(timer.running());
        CHECK(calls.load() >= 3);
        CHECK(timer.calls() == calls.load());
        clock.advance(10s); // fifty more periods for a timer that were still alive
        CHECK(calls_after_stop.load() == 0);
        CHECK(timer.calls() == calls.load());
    }
    SUBCASE("simulated: stop interrupts a request that time would never grant")
    {
        simsync::CountingWorld world;
        simsync::SimSyncHandler handler(world, {.step = 1ms, .start_paused = true});
        // Paused at 0: the call at 0 is served, the request for 21 ms waits forever.
        PeriodicTimer timer(sim_config(21ms, 0ns), {.handler = &handler});
        Latch first_call;
        timer.start_async([&](const TimerTick&) { first_call.raise(); });
        first_call.wait();
        timer.stop();
        CHECK(timer.calls() == 1);
        CHECK_FALSE(timer.running());
        CHECK_FALSE(timer.error()); // ended by stop(), not by the handler
        CHECK(handler.snapshot().accessors.empty());
        CHECK(handler.state() == simsync::HandlerState::paused);
    }
}

// ------------------------------------------------------------------- start

TEST_CASE("Timer.Start.TwiceThrows" * doctest::timeout(30))
{
    ManualWallClock clock(simsync::WallTime{}, unix_time(10s));
    PeriodicTimerConfig config = real_config(200ms, 5ms);
    config.name = "camera";
    PeriodicTimer timer(config, {.wall_clock = &clock});
    Latch first_call;
    timer.start_async([&](const TimerTick&) { first_call.raise(); });
    first_call.wait();
    CHECK_THROWS_WITH_AS(timer.start([](const TimerTick&) {}),
                         doctest::Contains("PeriodicTimer 'camera': started twice (it is already running)"),
                         simsync::Error);
    CHECK_THROWS_AS(timer.start_async([](const TimerTick&) {}), simsync::Error);
    timer.stop();
    try {
        timer.start([](const TimerTick&) {});
        FAIL("restarted a stopped timer");
    } catch (const simsync::Error& e) {
        CHECK(e.code() == simsync::errc::invalid_state);
        CHECK(std::string(e.what()).find("it is stopped") != std::string::npos);
    }
}

TEST_CASE("Timer.Callback.ExceptionEndsTimer" * doctest::timeout(30))
{
    SUBCASE("start rethrows")
    {
        ManualWallClock clock;
        PeriodicTimer timer(real_config(1ms, 0ns), {.wall_clock = &clock});
        CHECK_THROWS_WITH(timer.start([&](const TimerTick&) {
            if (timer.calls() == 2) throw std::runtime_error("sensor failed");
        }),
                          "sensor failed");
        CHECK(timer.calls() == 2);
        CHECK_FALSE(timer.running());
    }
    SUBCASE("stop rethrows after start_async; the access is released")
    {
        simsync::CountingWorld world;
        simsync::SimSyncHandler handler(world, {.step = 1ms});
        PeriodicTimer timer(sim_config(1ms, 0ns), {.handler = &handler});
        Latch threw;
        timer.start_async([&](const TimerTick&) {
            threw.raise();
            throw std::runtime_error("controller failed");
        });
        threw.wait();
        CHECK_THROWS_WITH(timer.stop(), "controller failed");
        CHECK_NOTHROW(timer.stop()); // once
        CHECK(handler.snapshot().accessors.empty());
    }
}

// ----------------------------------------------------------------- signals

TEST_CASE("Timer.Signal.StartBeginsAtTheSignal" * doctest::timeout(30))
{
    SUBCASE("real: the first call is the first grid instant after the signal")
    {
        ManualWallClock clock(simsync::WallTime{}, unix_time(10s));
        simsync::StartStopSignal signal;
        PeriodicTimerConfig config = real_config(200ms, 5ms);
        config.wait_for_start = true;
        PeriodicTimer timer(config, {.signal = &signal, .wall_clock = &clock});
        Latch called;
        nanoseconds first{};
        timer.start_async([&](const TimerTick& tick) {
            first = since_epoch(tick.real_time);
            timer.stop();
            called.raise();
        });
        clock.advance(1'234ms); // the timer cannot begin before the signal
        signal.fire_start();
        called.wait();
        timer.stop();
        CHECK(first == 11'405'000'000ns);
        CHECK(timer.calls() == 1);
    }
    SUBCASE("real: a start fired before the timer starts is latched")
    {
        ManualWallClock clock(simsync::WallTime{}, unix_time(10s));
        simsync::StartStopSignal signal;
        signal.fire_start();
        PeriodicTimerConfig config = real_config(200ms, 5ms);
        config.wait_for_start = true;
        PeriodicTimer timer(config, {.signal = &signal, .wall_clock = &clock});
        timer.start([&](const TimerTick&) { timer.stop(); });
        CHECK(timer.calls() == 1);
    }
    SUBCASE("simulated: holds time while it waits, then calls at offset + n * period")
    {
        simsync::CountingWorld world;
        simsync::SimSyncHandler handler(world, {.step = 1ms});
        simsync::StartStopSignal signal;
        PeriodicTimerConfig config = sim_config(21ms, 5ms);
        config.wait_for_start = true;
        PeriodicTimer timer(config, {.handler = &handler, .signal = &signal});
        Latch three_calls;
        std::vector<SimTime> nominal;
        timer.start_async([&](const TimerTick& tick) {
            nominal.push_back(tick.sim_time);
            if (nominal.size() == 3) {
                timer.stop();
                three_calls.raise();
            }
        });
        signal.fire_start();
        three_calls.wait();
        timer.stop();
        CHECK(nominal == std::vector<SimTime>{simsync::sim_time(5ms), simsync::sim_time(26ms),
                                              simsync::sim_time(47ms)});
    }
}

TEST_CASE("Timer.Signal.StopBeforeStartNoCall" * doctest::timeout(30))
{
    auto make_config = [](TimerClock clock) {
        PeriodicTimerConfig config = clock == TimerClock::real ? real_config(200ms, 5ms) : sim_config(21ms, 5ms);
        config.wait_for_start = true;
        return config;
    };
    for (const TimerClock clock_kind : {TimerClock::real, TimerClock::simulated}) {
        CAPTURE(simsync::to_string(clock_kind));
        simsync::CountingWorld world;
        simsync::SimSyncHandler handler(world, {.step = 1ms});
        ManualWallClock clock(simsync::WallTime{}, unix_time(10s));
        const TimerContext context{.handler = &handler, .signal = nullptr, .wall_clock = &clock};

        // Fired before the timer started: latched.
        simsync::StartStopSignal early;
        early.fire_stop();
        early.fire_start();
        TimerContext early_context = context;
        early_context.signal = &early;
        PeriodicTimer early_timer(make_config(clock_kind), early_context);
        early_timer.start([](const TimerTick&) { FAIL("called after a stop signal"); });
        CHECK(early_timer.calls() == 0);

        // Fired while the timer waits for the start (or before it got there).
        simsync::StartStopSignal late;
        TimerContext late_context = context;
        late_context.signal = &late;
        PeriodicTimer late_timer(make_config(clock_kind), late_context);
        std::atomic<int> late_calls{0}; // counted on the timer's thread, checked here
        late_timer.start_async([&](const TimerTick&) { ++late_calls; });
        late.fire_stop();
        late.fire_start();
        late_timer.stop();
        CHECK(late_calls.load() == 0);
        CHECK(late_timer.calls() == 0);
        CHECK(handler.snapshot().accessors.empty());
    }
}

TEST_CASE("Timer.Signal.StopWhileRunning" * doctest::timeout(30))
{
    SUBCASE("without a stop callback it stops the timer")
    {
        ManualWallClock clock(simsync::WallTime{}, unix_time(10s));
        simsync::StartStopSignal signal;
        PeriodicTimer timer(real_config(200ms, 5ms), {.signal = &signal, .wall_clock = &clock});
        timer.start([&](const TimerTick&) {
            if (timer.calls() == 2) signal.fire_stop();
        });
        CHECK(timer.calls() == 2);
    }
    SUBCASE("with a stop callback it calls that instead")
    {
        ManualWallClock clock(simsync::WallTime{}, unix_time(10s));
        simsync::StartStopSignal signal;
        int stop_calls = 0;
        PeriodicTimerConfig config = real_config(200ms, 5ms);
        config.on_stop_signal = [&] { ++stop_calls; };
        PeriodicTimer timer(config, {.signal = &signal, .wall_clock = &clock});
        timer.start([&](const TimerTick&) {
            if (timer.calls() == 2) signal.fire_stop();
            if (timer.calls() == 5) timer.stop();
        });
        CHECK(timer.calls() == 5);
        CHECK(stop_calls == 1);
    }
    SUBCASE("with a stop callback, a stop before the start calls it once at the start")
    {
        ManualWallClock clock(simsync::WallTime{}, unix_time(10s));
        simsync::StartStopSignal signal;
        signal.fire_stop();
        int stop_calls = 0;
        PeriodicTimerConfig config = real_config(200ms, 5ms);
        config.on_stop_signal = [&] { ++stop_calls; };
        PeriodicTimer timer(config, {.signal = &signal, .wall_clock = &clock});
        timer.start([&](const TimerTick&) {
            if (timer.calls() == 3) timer.stop();
        });
        CHECK(timer.calls() == 3);
        CHECK(stop_calls == 1);
    }
    SUBCASE("one signal stops several timers on other threads")
    {
        simsync::CountingWorld world;
        simsync::SimSyncHandler handler(world, {.step = 1ms});
        ManualWallClock clock(simsync::WallTime{}, unix_time(10s));
        simsync::StartStopSignal signal;
        PeriodicTimerConfig waits_real = real_config(200ms, 5ms);
        waits_real.wait_for_start = true;
        PeriodicTimerConfig waits_sim = sim_config(21ms, 5ms);
        waits_sim.wait_for_start = true;
        PeriodicTimer real(waits_real, {.signal = &signal, .wall_clock = &clock});
        PeriodicTimer sim(waits_sim, {.handler = &handler, .signal = &signal});
        Latch real_called, sim_called;
        real.start_async([&](const TimerTick&) { real_called.raise(); });
        sim.start_async([&](const TimerTick&) { sim_called.raise(); });
        signal.fire_start();
        real_called.wait();
        sim_called.wait();
        signal.fire_stop(); // stops both, by itself:
        const auto deadline = std::chrono::steady_clock::now() + 20s;
        while ((real.running() || sim.running()) && std::chrono::steady_clock::now() < deadline) {
            std::this_thread::sleep_for(1ms); // a sleeping poll, bounded
        }
        CHECK_FALSE(real.running());
        CHECK_FALSE(sim.running());
        real.stop(); // only joins
        sim.stop();
        CHECK(real.calls() >= 1);
        CHECK(sim.calls() >= 1);
    }
}

// ------------------------------------------- starting on a running simulation

namespace {

// A lockstep accessor that asks for every step on its own thread, so the
// simulation is always running (and mostly stepping) while a test starts timers.
// `inside` runs inside each of its accesses (time stands still there).
class Stepper {
public:
    explicit Stepper(simsync::SimSyncHandler& handler, std::function<void(SimTime)> inside = {})
        : accessor_(handler.register_accessor("stepper", {.first_request = SimTime{}})),
          inside_(std::move(inside)),
          thread_([this] {
              for (std::int64_t k = 0; !stop_.load(); ++k) {
                  simsync::Access a = accessor_.request_access(SimTime{k * 1ms});
                  if (!a) return;
                  if (inside_) inside_(a.granted_time());
                  a.release(SimTime{(k + 1) * 1ms});
              }
              accessor_.deregister();
          })
    {
    }
    ~Stepper()
    {
        stop_ = true;
        thread_.join();
    }

private:
    simsync::Accessor accessor_;
    std::function<void(SimTime)> inside_;
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

// Sleeping poll, bounded: waits for a timer without competing with it for a core.
template <class F>
bool poll_until(F condition, std::chrono::seconds limit = 10s)
{
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!condition()) {
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(100us);
    }
    return true;
}

} // namespace

TEST_CASE("Timer.SimulatedTime.StartedWhileRunningCallsFromTheNextGridInstant" * doctest::timeout(120))
{
    // A stepper runs the simulation step by step; at 20 ms, inside its access
    // (time stands still there, no step under way), it starts a timer whose grid
    // holds 20 ms. A simulated timer is a lockstep accessor at offset + n * period:
    // its first call is at the first instant of its grid not before its start
    // (20 ms itself), then every period, none skipped, each at the handler's
    // time, whatever the thread timing (handler.hpp, periodic_timer.hpp). Ten runs, all right.
    // Fails today: start_async registers the timer's accessor on the timer's own
    // thread, so the simulation runs on until that thread gets a core and the
    // first call lands later (seen with offset 3 ms: 2.173 s, 4.84 s, 13.779 s;
    // alone, 25 of 30 single runs miss 20 ms). Not one of issue 10's points
    // 1-5/9, hence not marked may_fail: reported to the lead.
    int wrong_runs = 0;
    std::string first_wrong;
    for (int run = 0; run < 10; ++run) {
        simsync::CountingWorld world;
        simsync::SimSyncHandler handler(world, {.step = 1ms});
        PeriodicTimer timer(sim_config(7ms, 6ms, "late_timer"), {.handler = &handler}); // 6, 13, 20, 27 ... ms
        std::vector<SimTime> nominal;
        bool mismatch = false;
        std::atomic<int> calls{0};
        std::atomic<bool> started{false};
        {
            Stepper stepper(handler, [&](SimTime t) {
                if (t != simsync::sim_time(20ms)) return;
                timer.start_async([&](const TimerTick& tick) {
                    nominal.push_back(tick.sim_time);
                    mismatch = mismatch || handler.now() != tick.sim_time;
                    if (++calls == 5) timer.stop();
                });
                started = true;
            });
            // Five calls, or the timer ended by itself (error() says why): no hang either way.
            REQUIRE(poll_until([&] { return started.load() && (calls.load() >= 5 || static_cast<bool>(timer.error())); }));
            timer.stop(); // joins: `nominal` is ours from here
        }
        std::vector<SimTime> expected;
        for (std::int64_t k = 0; k < 5; ++k) expected.push_back(simsync::sim_time(20ms + k * 7ms));
        if (timer.error() || mismatch || nominal != expected) {
            ++wrong_runs;
            if (first_wrong.empty()) {
                first_wrong = timer.error() ? "ended: " + timer.error().message()
                              : nominal.empty() ? std::string("no call")
                                                : "first call at " + simsync::format_seconds(nominal.front()) + " s";
            }
        }
    }
    CAPTURE(first_wrong);
    CHECK(wrong_runs == 0);
}

TEST_CASE("Timer.SimulatedTime.StartedWhileRunningWithPeriodEqualToStep" * doctest::timeout(120))
{
    // Issue 10 point 4: a simulated timer with period == dt started on a running
    // simulation registered during a step, asked for the instant it was bound to,
    // was refused with time_passed (checked against a now() that lagged) and
    // ended on its own. Every one of these timers must keep calling.
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms});
    Stepper stepper(handler);
    int ended_early = 0;
    std::string first_error;
    for (int i = 0; i < 30; ++i) {
        PeriodicTimer timer(sim_config(1ms, 0ns, "every_step_" + std::to_string(i)), {.handler = &handler});
        std::atomic<int> calls{0};
        timer.start_async([&](const TimerTick&) { ++calls; });
        // Five calls, or the timer ended by itself (error() says why).
        const bool settled = poll_until([&] { return calls.load() >= 5 || static_cast<bool>(timer.error()); });
        if (!settled || calls.load() < 5) {
            ++ended_early;
            if (first_error.empty()) first_error = timer.error() ? timer.error().message() : "no call within 10 s";
        }
        timer.stop();
    }
    CAPTURE(first_error);
    CHECK(ended_early == 0);
}

// ------------------------------------------------- on a shared event loop

namespace {

// Waits (on the test thread) until every job posted to the loop before it has run.
void drain(const Executor& executor)
{
    executor.sync([] {});
}

std::thread::id thread_of(const Executor& executor)
{
    std::thread::id id;
    executor.sync([&] { id = std::this_thread::get_id(); });
    return id;
}

struct RealCall {
    nanoseconds nominal;
    nanoseconds woke;
    std::int64_t index;
    std::uint64_t skipped;
    std::thread::id thread;
};

} // namespace

TEST_CASE("Timer.RealTime.OnASharedLoopCallsExactlyWhenTheClockReachesEachInstant" * doctest::timeout(30))
{
    // The test owns the clock: the timer never moves it, and a call runs on the
    // loop's thread exactly when an advance reaches its instant. Steady and
    // system readings differ, so the conversion between them is exercised.
    ManualWallClock clock(simsync::WallTime{} + 1h, unix_time(10'000'000'000ns));
    EventLoop loop(clock);
    const Executor ex = loop.executor();
    PeriodicTimer timer(real_config(200ms, 5ms), {.executor = ex});
    std::vector<RealCall> calls; // on the loop's thread; read here after a drain
    timer.start_async([&](const TimerTick& tick) {
        calls.push_back({since_epoch(tick.real_time), since_epoch(clock.system_now()), tick.index, tick.skipped,
                         std::this_thread::get_id()});
        if (calls.size() == 3) clock.advance(450ms); // the third call runs until 10.855 s
    });
    const auto advance = [&](nanoseconds d) {
        clock.advance(d);
        drain(ex);
        return calls.size();
    };
    drain(ex);
    CHECK(calls.empty());
    CHECK(advance(4ms) == 0);   // 10.004 s
    CHECK(advance(1ms) == 1);   // 10.005 s: the first grid instant after the start
    CHECK(advance(199ms) == 1); // 10.204 s
    CHECK(advance(1ms) == 2);   // 10.205 s
    CHECK(advance(200ms) == 3); // 10.405 s; the call overruns past 10.605 and 10.805
    CHECK(advance(149ms) == 3); // 11.004 s: the missed instants are skipped, never replayed
    CHECK(advance(1ms) == 4);   // 11.005 s
    timer.stop();
    CHECK_FALSE(timer.running());
    CHECK(advance(10s) == 4); // nothing after stop()

    const std::vector<nanoseconds> nominal{10'005'000'000ns, 10'205'000'000ns, 10'405'000'000ns, 11'005'000'000ns};
    const std::vector<std::int64_t> index{50, 51, 52, 55};
    const std::vector<std::uint64_t> skipped{0, 0, 0, 2};
    const std::thread::id loop_thread = thread_of(ex);
    REQUIRE(calls.size() == 4);
    for (std::size_t k = 0; k < calls.size(); ++k) {
        CAPTURE(k);
        CHECK(calls[k].nominal == nominal[k]);
        CHECK(calls[k].woke == nominal[k]);
        CHECK(calls[k].index == index[k]);
        CHECK(calls[k].skipped == skipped[k]);
        CHECK(calls[k].thread == loop_thread);
    }
    CHECK(loop_thread != std::this_thread::get_id());
    CHECK(timer.calls() == 4);
    CHECK(timer.skipped() == 2);
    CHECK(clock.sleeps() == 0); // the timer never moved the test's clock
}

TEST_CASE("Timer.RealTime.StartAsyncCallsOnTheLoopThread" * doctest::timeout(30))
{
    // start_async runs no thread of its own: its calls are on the loop's thread.
    SUBCASE("a shared loop")
    {
        ManualWallClock clock(simsync::WallTime{}, unix_time(10s));
        EventLoop loop(clock);
        PeriodicTimer timer(real_config(10ms, 0ns), {.executor = loop.executor()});
        std::vector<std::thread::id> threads;
        timer.start_async([&](const TimerTick&) { threads.push_back(std::this_thread::get_id()); });
        drain(loop.executor()); // started on the grid: the first call
        for (int k = 0; k < 4; ++k) {
            clock.advance(10ms);
            drain(loop.executor());
        }
        timer.stop();
        REQUIRE(threads.size() == 5);
        for (const auto& id : threads) CHECK(id == thread_of(loop.executor()));
    }
    SUBCASE("a private loop: one thread for every call, not the caller's")
    {
        ManualWallClock clock(simsync::WallTime{}, unix_time(10s));
        PeriodicTimer timer(real_config(10ms, 0ns), {.wall_clock = &clock});
        std::vector<std::thread::id> threads;
        Latch five;
        timer.start_async([&](const TimerTick&) {
            threads.push_back(std::this_thread::get_id());
            if (threads.size() == 5) {
                timer.stop();
                five.raise();
            }
        });
        five.wait();
        timer.stop(); // waits for the run to end: `threads` is ours from here
        REQUIRE(threads.size() == 5);
        for (const auto& id : threads) CHECK(id == threads.front());
        CHECK(threads.front() != std::this_thread::get_id());
    }
}

TEST_CASE("Timer.RealTime.TwoTimersShareOneLoopEachOnItsSchedule" * doctest::timeout(30))
{
    ManualWallClock clock(simsync::WallTime{}, unix_time(10s));
    EventLoop loop(clock);
    const Executor ex = loop.executor();
    PeriodicTimerConfig a_config = real_config(20ms, 3ms);
    a_config.name = "a";
    PeriodicTimerConfig b_config = real_config(25ms, 0ns); // 10 s is on its (UNIX-epoch) grid
    b_config.name = "b";
    PeriodicTimer a(a_config, {.executor = ex});
    PeriodicTimer b(b_config, {.executor = ex});
    struct Call {
        char who;
        nanoseconds nominal, woke;
        std::thread::id thread;
    };
    std::vector<Call> calls; // on the loop's thread
    const auto record = [&](char who) {
        return [&, who](const TimerTick& tick) {
            calls.push_back({who, since_epoch(tick.real_time), since_epoch(clock.system_now()), std::this_thread::get_id()});
        };
    };
    a.start_async(record('a'));
    b.start_async(record('b')); // started on its grid: calls at once
    drain(ex);
    for (int ms = 0; ms < 120; ++ms) {
        clock.advance(1ms);
        drain(ex);
    }
    a.stop();
    b.stop();

    std::map<char, std::vector<nanoseconds>> nominal;
    const std::thread::id loop_thread = thread_of(ex);
    for (std::size_t k = 0; k < calls.size(); ++k) {
        CAPTURE(k);
        CHECK(calls[k].woke == calls[k].nominal); // each exactly on time
        CHECK(calls[k].thread == loop_thread);     // one thread for both
        if (k > 0) CHECK(calls[k - 1].nominal <= calls[k].nominal);
        nominal[calls[k].who].push_back(calls[k].nominal - 10s);
    }
    CHECK(nominal['a'] == std::vector<nanoseconds>{3ms, 23ms, 43ms, 63ms, 83ms, 103ms});
    CHECK(nominal['b'] == std::vector<nanoseconds>{0ms, 25ms, 50ms, 75ms, 100ms});
    CHECK(a.skipped() == 0);
    CHECK(b.skipped() == 0);
}

TEST_CASE("Timer.Stop.FromInsideTheCallbackOnASharedLoop" * doctest::timeout(30))
{
    // The stop ends this timer only; the other timer on the loop goes on.
    ManualWallClock clock(simsync::WallTime{}, unix_time(10s));
    EventLoop loop(clock);
    const Executor ex = loop.executor();
    PeriodicTimer stopping(real_config(10ms, 0ns), {.executor = ex});
    PeriodicTimer other(real_config(10ms, 5ms), {.executor = ex});
    int stopping_calls = 0, other_calls = 0; // on the loop's thread
    bool running_inside = true;
    stopping.start_async([&](const TimerTick&) {
        if (++stopping_calls == 2) {
            stopping.stop(); // from inside: no wait for itself, no throw
            running_inside = stopping.running();
        }
    });
    other.start_async([&](const TimerTick&) { ++other_calls; });
    drain(ex);
    for (int k = 0; k < 10; ++k) {
        clock.advance(10ms);
        drain(ex);
    }
    CHECK(stopping_calls == 2);
    CHECK(running_inside); // the run ends when the callback returns
    CHECK_FALSE(stopping.running());
    CHECK(other_calls == 10);
    CHECK(other.running());
    CHECK_NOTHROW(stopping.stop());
    other.stop();
}


TEST_CASE("Timer.Destroy.FromItsCallbackOnItsOwnLoopLetsGoOfTheClockAtOnce" * doctest::timeout(30))
{
    // Destroyed from inside its own callback, on the loop it made for itself:
    // once the destructor returns nothing of the caller's is used any more, so
    // the caller may destroy its clock next. Before the fix the loop was torn
    // down later, on a detached thread, which then removed its listener from
    // the caller's clock (still attached when the destructor returned).
    const int loops_before = simsync::test::threads_named("simsync-loop");
    auto clock = std::make_unique<ManualWallClock>(simsync::WallTime{}, unix_time(10s));
    auto timer = std::make_unique<PeriodicTimer>(real_config(10ms, 0ns), TimerContext{.wall_clock = clock.get()});
    CHECK(clock->listener_count() == 0); // its own loop, made at the start, will follow the clock
    std::promise<std::size_t> listeners_after;
    timer->start_async([&](const TimerTick&) { // at 10 s: on the grid, called at once
        timer.reset();
        listeners_after.set_value(clock->listener_count());
    });
    auto after = listeners_after.get_future();
    REQUIRE(after.wait_for(10s) == std::future_status::ready);
    CHECK(after.get() == 0);
    clock.reset();
    // The loop's thread ends once the callback has returned.
    CHECK(simsync::test::eventually([&] { return simsync::test::threads_named("simsync-loop") == loops_before; }));
}

TEST_CASE("Timer.Stop.WhileWaitingForAFarInstantEndsAtOnce" * doctest::timeout(30))
{
    // The next instant is an hour away and nobody advances the clock: only
    // stop() can end these waits.
    ManualWallClock clock(simsync::WallTime{}, unix_time(10s));
    EventLoop loop(clock);
    const Executor ex = loop.executor();
    SUBCASE("start_async")
    {
        PeriodicTimer timer(real_config(1h, 30min), {.executor = ex});
        timer.start_async([](const TimerTick&) { FAIL("called"); });
        drain(ex); // the loop has armed the wait
        timer.stop();
        CHECK_FALSE(timer.running());
    }
    SUBCASE("start: the caller of start() wakes and returns")
    {
        // Started on its grid, so the first call is at once; then it waits an hour.
        PeriodicTimer timer(real_config(1h, 10s), {.executor = ex});
        Latch first_call;
        std::thread runner([&] { timer.start([&](const TimerTick&) { first_call.raise(); }); });
        first_call.wait();
        timer.stop();
        runner.join();
        CHECK(timer.calls() == 1);
        CHECK_FALSE(timer.running());
    }
    CHECK(clock.system_now() == unix_time(10s)); // never advanced
    CHECK(clock.sleeps() == 0);
}

TEST_CASE("Timer.RealTime.StartOnASharedLoopCallsOnTheCallersThread" * doctest::timeout(30))
{
    // start() blocks; the loop only tells it that an instant has come. The
    // signal fixes the start at 10.000 s, whenever the runner gets there.
    ManualWallClock clock(simsync::WallTime{}, unix_time(10s));
    EventLoop loop(clock);
    simsync::StartStopSignal signal;
    PeriodicTimerConfig config = real_config(200ms, 5ms);
    config.wait_for_start = true;
    PeriodicTimer timer(config, {.signal = &signal, .executor = loop.executor()});
    std::mutex mutex;
    std::condition_variable cv;
    std::vector<RealCall> calls;
    std::thread::id runner_id;
    std::thread runner([&] {
        {
            std::lock_guard<std::mutex> guard(mutex);
            runner_id = std::this_thread::get_id();
        }
        timer.start([&](const TimerTick& tick) {
            std::lock_guard<std::mutex> guard(mutex);
            calls.push_back({since_epoch(tick.real_time), since_epoch(clock.system_now()), tick.index, tick.skipped,
                             std::this_thread::get_id()});
            if (calls.size() == 3) timer.stop();
            cv.notify_all();
        });
    });
    signal.fire_start();
    const auto advance_until_call = [&](nanoseconds d, std::size_t n) {
        clock.advance(d);
        std::unique_lock<std::mutex> lock(mutex);
        return cv.wait_for(lock, 10s, [&] { return calls.size() >= n; });
    };
    CHECK(advance_until_call(5ms, 1));
    CHECK(advance_until_call(200ms, 2));
    CHECK(advance_until_call(200ms, 3));
    runner.join();
    REQUIRE(calls.size() == 3);
    for (std::size_t k = 0; k < 3; ++k) {
        CAPTURE(k);
        CHECK(calls[k].nominal == 10'005'000'000ns + static_cast<std::int64_t>(k) * 200ms);
        CHECK(calls[k].woke == calls[k].nominal);
        CHECK(calls[k].thread == runner_id);
    }
    CHECK(clock.sleeps() == 0);
}

TEST_CASE("Timer.SimulatedTime.StartAsyncCompletesOnTheSharedLoop" * doctest::timeout(30))
{
    // Two simulated timers on one loop: every call on its thread, in time order.
    // Both wait for the signal, holding time at 0 until both are registered.
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms});
    ManualWallClock clock(simsync::WallTime{}, unix_time(10s));
    EventLoop loop(clock);
    const Executor ex = loop.executor();
    simsync::StartStopSignal signal;
    PeriodicTimerConfig a_config = sim_config(3ms, 1ms, "a");
    PeriodicTimerConfig b_config = sim_config(5ms, 0ns, "b");
    a_config.wait_for_start = b_config.wait_for_start = true;
    PeriodicTimer a(a_config, {.handler = &handler, .signal = &signal, .executor = ex});
    PeriodicTimer b(b_config, {.handler = &handler, .signal = &signal, .executor = ex});
    std::vector<std::pair<char, SimTime>> calls; // on the loop's thread
    std::vector<std::thread::id> threads;
    bool mismatch = false;
    Latch done;
    const auto record = [&](char who) {
        return [&, who](const TimerTick& tick) {
            calls.emplace_back(who, tick.sim_time);
            threads.push_back(std::this_thread::get_id());
            mismatch = mismatch || handler.now() != tick.sim_time;
            if (who == 'b' && tick.sim_time == simsync::sim_time(30ms)) done.raise();
        };
    };
    a.start_async(record('a'));
    b.start_async(record('b'));
    signal.fire_start();
    done.wait();
    a.stop();
    b.stop();
    CHECK_FALSE(mismatch);
    const std::thread::id loop_thread = thread_of(ex);
    for (const auto& id : threads) CHECK(id == loop_thread);
    std::vector<SimTime> a_times, b_times;
    for (std::size_t k = 0; k < calls.size(); ++k) {
        if (k > 0) CHECK(calls[k - 1].second <= calls[k].second);
        (calls[k].first == 'a' ? a_times : b_times).push_back(calls[k].second);
    }
    REQUIRE(b_times.size() >= 7);
    for (std::size_t k = 0; k < b_times.size(); ++k) CHECK(b_times[k] == simsync::sim_time(5ms * static_cast<int>(k)));
    for (std::size_t k = 0; k < a_times.size(); ++k) CHECK(a_times[k] == simsync::sim_time(1ms + 3ms * static_cast<int>(k)));
    CHECK(handler.snapshot().accessors.empty());
}

TEST_CASE("Timer.Context.WallClockMustBeTheExecutorsClock")
{
    ManualWallClock clock, other;
    EventLoop loop(clock);
    CHECK_NOTHROW(PeriodicTimer(real_config(1ms, 0ns), {.wall_clock = &clock, .executor = loop.executor()}));
    CHECK_THROWS_WITH_AS(PeriodicTimer(real_config(1ms, 0ns), {.wall_clock = &other, .executor = loop.executor()}),
                         doctest::Contains("not the executor's clock"), simsync::Error);
}

// ------------------------------------------------------------------ stress

TEST_CASE("Timer.Stress.ManyTimersOnOneLoopStartedAndStoppedFromManyThreads" * doctest::timeout(240))
{
    // Four threads start timers on one shared loop, real ones on a manual clock
    // that a fifth thread keeps advancing and simulated ones on a handler; each
    // timer is stopped after a few calls by its starter, from inside its own
    // callback, or by a sixth thread, or that thread's stop races the start.
    // One timer in five has a private loop instead (a real one then drives the
    // manual clock itself: the others see the clock jump, and skip).
    // Invariants are collected in the callbacks (on the loop) and checked here
    // after every thread has been joined.
    constexpr int kWorkers = 4;
    constexpr int kTimersPerWorker = 100;
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms});
    ManualWallClock clock(simsync::WallTime{}, unix_time(10s));
    EventLoop loop(clock);
    const Executor ex = loop.executor();
    const std::thread::id loop_thread = thread_of(ex);

    std::atomic<std::uint64_t> violations{0};
    std::atomic<std::uint64_t> total_calls{0};
    std::atomic<int> stuck{0};
    std::mutex first_violation_mutex;
    std::string first_violation;
    const auto violate = [&](const std::string& what) {
        ++violations;
        std::lock_guard<std::mutex> guard(first_violation_mutex);
        if (first_violation.empty()) first_violation = what;
    };

    // The stopper thread: stops the timers handed to it, then says so.
    struct Handoff {
        PeriodicTimer* timer;
        std::shared_ptr<Latch> stopped;
    };
    std::mutex handoff_mutex;
    std::condition_variable handoff_cv;
    std::vector<Handoff> handoffs;
    bool workers_done = false;
    std::thread stopper([&] {
        for (;;) {
            std::vector<Handoff> batch;
            {
                std::unique_lock<std::mutex> lock(handoff_mutex);
                handoff_cv.wait(lock, [&] { return !handoffs.empty() || workers_done; });
                if (handoffs.empty()) return;
                batch.swap(handoffs);
            }
            for (auto& h : batch) {
                h.timer->stop();
                h.stopped->raise();
            }
        }
    });
    const auto hand_over = [&](PeriodicTimer& timer) {
        auto stopped = std::make_shared<Latch>();
        {
            std::lock_guard<std::mutex> guard(handoff_mutex);
            handoffs.push_back({&timer, stopped});
        }
        handoff_cv.notify_all();
        return stopped;
    };

    std::atomic<bool> advancing{true};
    std::thread driver([&] {
        while (advancing.load()) {
            clock.advance(1ms);
            drain(ex); // keeps the loop's queue short
        }
    });

    enum How { by_starter, from_inside, by_stopper, racing_the_start };
    std::vector<std::thread> workers;
    for (int w = 0; w < kWorkers; ++w) {
        workers.emplace_back([&, w] {
            std::mt19937 rng(static_cast<std::uint32_t>(1234 + w));
            for (int i = 0; i < kTimersPerWorker; ++i) {
                const bool simulated = (i + w) % 2 == 0;
                const How how = static_cast<How>(rng() % 4);
                const int wanted = 1 + static_cast<int>(rng() % 5); // calls before the stop
                const nanoseconds period = std::chrono::milliseconds(1 + rng() % 4);
                // Simulated instants on the step grid (so now() is the instant itself).
                const nanoseconds offset = simulated ? nanoseconds(std::chrono::milliseconds(rng() % (period / 1ms)))
                                                     : nanoseconds(static_cast<std::int64_t>(rng() % period.count()));
                const bool private_loop = rng() % 5 == 0;
                PeriodicTimerConfig config = simulated ? sim_config(period, offset) : real_config(period, offset);
                config.name = "t" + std::to_string(w) + "_" + std::to_string(i);
                PeriodicTimer timer(config, private_loop ? TimerContext{.handler = &handler, .wall_clock = &clock}
                                                         : TimerContext{.handler = &handler, .executor = ex});
                const std::thread::id worker_thread = std::this_thread::get_id();
                std::optional<std::thread::id> first_thread; // on the timer's loop only

                std::mutex mutex;
                std::condition_variable cv;
                int calls = 0; // guarded by mutex
                std::atomic<bool> stop_returned{false};
                std::optional<nanoseconds> last; // on the loop only
                const auto callback = [&](const TimerTick& tick) {
                    if (stop_returned.load()) violate(config.name + ": called after stop() returned");
                    if (!first_thread) first_thread = std::this_thread::get_id();
                    if (std::this_thread::get_id() != (private_loop ? *first_thread : loop_thread) ||
                        std::this_thread::get_id() == worker_thread) {
                        violate(config.name + ": not on the loop's thread");
                    }
                    nanoseconds at;
                    if (simulated) {
                        at = tick.sim_time.time_since_epoch();
                        if (tick.access == nullptr || handler.now() != tick.sim_time) {
                            violate(config.name + ": not inside its access at its instant");
                        }
                        if (last && at - *last != period) violate(config.name + ": simulated gap is not one period");
                    } else {
                        at = since_epoch(tick.real_time);
                        if (since_epoch(clock.system_now()) < at) violate(config.name + ": called early");
                        if (last && at - *last != static_cast<std::int64_t>(tick.skipped + 1) * period) {
                            violate(config.name + ": real gap is not (1 + skipped) periods");
                        }
                    }
                    if ((at - offset) % period != 0ns) violate(config.name + ": off its grid");
                    last = at;
                    ++total_calls;
                    int n;
                    {
                        std::lock_guard<std::mutex> guard(mutex);
                        n = ++calls;
                    }
                    if (how == from_inside && n == wanted) timer.stop();
                    cv.notify_all();
                };
                if (how == racing_the_start) {
                    const auto stopped = hand_over(timer);
                    timer.start_async(callback);
                    stopped->wait();
                } else {
                    timer.start_async(callback);
                    {
                        std::unique_lock<std::mutex> lock(mutex);
                        if (!cv.wait_for(lock, 30s, [&] { return calls >= wanted; })) ++stuck;
                    }
                    if (how == by_stopper) {
                        hand_over(timer)->wait();
                    } else {
                        timer.stop(); // after a stop from inside: waits for the run to end
                    }
                }
                stop_returned = true;
                if (timer.running()) violate(config.name + ": running after stop()");
                if (timer.error()) violate(config.name + ": ended with " + timer.error().message());
            }
        });
    }
    for (auto& t : workers) t.join();
    {
        std::lock_guard<std::mutex> guard(handoff_mutex);
        workers_done = true;
    }
    handoff_cv.notify_all();
    stopper.join();
    advancing = false;
    driver.join();
    drain(ex);

    CAPTURE(first_violation);
    CHECK(violations.load() == 0);
    CHECK(stuck.load() == 0);
    CHECK(handler.snapshot().accessors.empty());
    MESSAGE(total_calls.load() << " calls of " << kWorkers * kTimersPerWorker << " timers");
}
