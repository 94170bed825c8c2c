// The handler's promises at the limits of its contract: an Access that outlives
// its Accessor, the ends of SimTime's range, registration while a step is in
// flight, the calls that would wait for the caller's own access, and stalls.
// Expected values come from the headers (handler.hpp, accessor.hpp, time.hpp).

#include "support.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

using namespace simsync;
using namespace simsync::test;

namespace {

SimTime ns(std::int64_t n) { return SimTime{SimDuration{n}}; }

// Collects diagnostics on whatever thread reports them.
struct DiagnosticLog {
    std::mutex mutex;
    std::vector<Diagnostic> items;
    DiagnosticsCallback callback()
    {
        return [this](const Diagnostic& d) {
            std::lock_guard<std::mutex> lock(mutex);
            items.push_back(d);
        };
    }
    std::size_t count(Diagnostic::Kind kind)
    {
        std::lock_guard<std::mutex> lock(mutex);
        std::size_t n = 0;
        for (const auto& d : items) n += d.kind == kind ? 1 : 0;
        return n;
    }
    std::optional<Diagnostic> first(Diagnostic::Kind kind)
    {
        std::lock_guard<std::mutex> lock(mutex);
        for (const auto& d : items) {
            if (d.kind == kind) return d;
        }
        return std::nullopt;
    }
};

HandlerConfig quiet(HandlerConfig config = {})
{
    config.diagnostics = [](const Diagnostic&) {};
    return config;
}

} // namespace

// ------------------------------------------------- 1. an Access outlives its Accessor

TEST_CASE("Edges.AccessOutlivesAccessor.DeregisterKeepsTheWorldProtected" * doctest::timeout(30))
{
    CountingWorld world;
    SimSyncHandler handler(world, quiet({.step = 1ms}));
    auto writer = handler.register_accessor("writer", {.kind = AccessorKind::free});
    auto other = handler.register_accessor("other", {.kind = AccessorKind::free});

    Access access = writer.request_access(ms(0));
    REQUIRE(access);
    writer.deregister();

    // The header: the access stays held until its Access is released.
    CHECK(static_cast<bool>(access));
    CHECK_FALSE(access.revoked());
    CHECK_NOTHROW(access.world());
    // Nobody else is granted and the world is not stepped under it.
    CHECK(other.try_request_access(ms(0)).error() == errc::would_block);
    CHECK(other.try_request_access(ms(5)).error() == errc::would_block);
    CHECK(handler.now() == ms(0));
    CHECK(world.steps() == 0);

    const Snapshot snap = handler.snapshot();
    const AccessorStatus* status = find_status(snap, "writer");
    REQUIRE(status != nullptr);
    CHECK_FALSE(status->registered);
    CHECK(status->activity == AccessorStatus::Activity::holding);

    access.release();
    Access later = other.try_request_access(ms(5));
    CHECK(later);
    CHECK(later.granted_time() == ms(5));
    CHECK(handler.snapshot().accessors.size() == 1); // the deregistered one is gone now
}

TEST_CASE("Edges.AccessOutlivesAccessor.DestroyedAccessorKeepsTheHold" * doctest::timeout(30))
{
    CountingWorld world;
    SimSyncHandler handler(world, quiet({.step = 1ms}));
    auto other = handler.register_accessor("other", {.kind = AccessorKind::free});
    Access access;
    {
        auto shortlived = handler.register_accessor("shortlived", {.mode = AccessMode::shared});
        access = shortlived.request_access(ms(0));
        REQUIRE(access);
    } // Accessor destroyed here
    CHECK(static_cast<bool>(access));
    CHECK(other.try_request_access(ms(1)).error() == errc::would_block);
    CHECK(world.steps() == 0);
    // The name is free again while the old access is still held.
    auto again = handler.register_accessor("shortlived", {.kind = AccessorKind::free});
    access = Access{}; // releases
    CHECK(other.try_request_access(ms(1)));
}

TEST_CASE("Edges.AccessOutlivesAccessor.HandlerDestructorWaitsForTheHolder" * doctest::timeout(30))
{
    CountingWorld world;
    std::atomic<bool> released{false};
    std::atomic<bool> holding{false};
    std::atomic<bool> destroyed_before_release{false};
    std::thread holder;
    {
        SimSyncHandler handler(world, quiet({.step = 1ms}));
        holder = std::thread([&] {
            Access access;
            {
                auto a = handler.register_accessor("a");
                access = a.request_access(ms(0));
            }
            holding = true;
            std::this_thread::sleep_for(50ms); // work inside the access, Accessor gone
            released = true;
            access.release();
        });
        REQUIRE(eventually([&] { return holding.load(); }));
    } // ~SimSyncHandler: must wait for the deregistered holder on the other thread
    destroyed_before_release = !released.load();
    holder.join();
    CHECK_FALSE(destroyed_before_release.load());
}

TEST_CASE("Edges.Revoke.EndsTheAccessAndTheAccessSaysSo" * doctest::timeout(30))
{
    CountingWorld world;
    SimSyncHandler handler(world, quiet({.step = 1ms}));
    auto stuck = handler.register_accessor("stuck");
    Access access = stuck.request_access(ms(0));
    REQUIRE(access);
    REQUIRE(handler.revoke("stuck"));
    CHECK_FALSE(static_cast<bool>(access));
    CHECK(access.revoked());
    CHECK_THROWS_AS(access.world(), Error);
    access.release(); // harmless
    CHECK_FALSE(access.revoked());
}

// ------------------------------------------------------- 2. the ends of SimTime

TEST_CASE("Edges.Range.RoundingSaturates")
{
    struct Row {
        SimTime t;
        std::int64_t dt;
        Rounding policy;
        SimTime expected;
    };
    constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
    constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
    const std::int64_t last_ms = kMax / 1'000'000 * 1'000'000;   // last grid point of 1 ms
    const std::int64_t first_ms = kMin / 1'000'000 * 1'000'000;  // first grid point of 1 ms
    const std::vector<Row> rows{
        // the sentinels round to themselves under every policy
        {kSimTimeMax, 1'000'000, Rounding::nearest, kSimTimeMax},
        {kSimTimeMax, 1'000'000, Rounding::up, kSimTimeMax},
        {kSimTimeMax, 1'000'000, Rounding::down, kSimTimeMax},
        {kSimTimeMin, 1'000'000, Rounding::nearest, kSimTimeMin},
        {kSimTimeMin, 1'000'000, Rounding::up, kSimTimeMin},
        {kSimTimeMin, 1'000'000, Rounding::down, kSimTimeMin},
        // the last grid point is a grid point
        {ns(last_ms), 1'000'000, Rounding::up, ns(last_ms)},
        {ns(last_ms + 1), 1'000'000, Rounding::down, ns(last_ms)},
        // beyond the last grid point: "never"
        {ns(last_ms + 1), 1'000'000, Rounding::up, kSimTimeMax},
        {ns(kMax - 1), 1'000'000, Rounding::nearest, kSimTimeMax},
        // below the first grid point: "before everything"
        {ns(first_ms), 1'000'000, Rounding::down, ns(first_ms)},
        {ns(first_ms - 1), 1'000'000, Rounding::down, kSimTimeMin},
        {ns(first_ms - 1), 1'000'000, Rounding::up, ns(first_ms)},
        // nearest to kMin + 1 is the grid point below the range
        {ns(kMin + 1), 1'000'000, Rounding::nearest, kSimTimeMin},
        // a step as large as the range
        {ns(kMax - 1), kMax, Rounding::down, ns(0)},
        {ns(kMax - 1), kMax, Rounding::nearest, kSimTimeMax},
        {ns(-1), kMax, Rounding::down, ns(-kMax)},
    };
    for (const Row& row : rows) {
        CAPTURE(row.t.time_since_epoch().count());
        CAPTURE(row.dt);
        CAPTURE(to_string(row.policy));
        CHECK(round_to_grid(row.t, SimDuration{row.dt}, row.policy) == row.expected);
    }
    CHECK(saturating_add(ns(kMax - 5), SimDuration{10}) == kSimTimeMax);
    CHECK(saturating_add(ns(kMin + 5), SimDuration{-10}) == kSimTimeMin);
    CHECK(saturating_add(kSimTimeMax, SimDuration{-10}) == kSimTimeMax);
    CHECK(saturating_add(ns(5), SimDuration{-10}) == ns(-5));
}

TEST_CASE("Edges.Range.ScheduleSaturates")
{
    const auto s = PeriodicSchedule::from_period(1ms, 3ms);
    CHECK(s.at(std::numeric_limits<std::int64_t>::max()) == kSimTimeMax);
    CHECK(s.at(-7) == ms(3));
    CHECK(s.at(s.first_index_at_or_after(kSimTimeMax)) == kSimTimeMax);
    CHECK(s.at(s.first_index_at_or_after(kSimTimeMax) - 1) < kSimTimeMax);
    CHECK(s.first_index_at_or_after(kSimTimeMin) == 0);
    const auto hz = PeriodicSchedule::from_rate(30);
    CHECK(hz.at(std::numeric_limits<std::int64_t>::max() / 2) == kSimTimeMax);
    CHECK_THROWS_AS(PeriodicSchedule::from_rate(1, std::numeric_limits<std::int64_t>::max()), Error);
}

TEST_CASE("Edges.Range.RequestForNeverWaitsUntilStopped" * doctest::timeout(30))
{
    CountingWorld world;
    SimSyncHandler handler(world, quiet({.step = 1ms}));
    auto waiter = handler.register_accessor("waiter", {.kind = AccessorKind::free});
    auto lockstep = handler.register_accessor("lockstep");

    // Timed: refused by the deadline, not by time_passed.
    const Access timed = waiter.request_access_for(kSimTimeMax, 20ms);
    CHECK(timed.error() == errc::timed_out);
    // A lockstep accessor asking for "never" holds no time and steps nothing.
    CHECK(lockstep.try_request_access(kSimTimeMax).error() == errc::would_block);
    CHECK(world.steps() == 0);

    std::error_code result;
    std::thread t([&] { result = waiter.request_access(kSimTimeMax).error(); });
    REQUIRE(eventually([&] { return is_waiting(handler, "waiter"); }));
    CHECK(world.steps() == 0); // nobody steps towards "never"
    handler.stop();
    t.join();
    CHECK(result == errc::stopped);
}

TEST_CASE("Edges.Range.ReleaseToNeverAndInfiniteLookaheadHoldNothing" * doctest::timeout(30))
{
    CountingWorld world;
    SimSyncHandler handler(world, quiet({.step = 1ms}));
    auto named = handler.register_accessor("named");
    auto lookahead = handler.register_accessor("lookahead", {.lookahead = SimDuration::max()});
    auto late = handler.register_accessor("late", {.first_request = kSimTimeMax});
    auto probe = handler.register_accessor("probe", {.kind = AccessorKind::free});

    Access a = named.request_access(ms(0));
    REQUIRE(a);
    CHECK_NOTHROW(a.release(kSimTimeMax));
    Access b = lookahead.request_access(ms(0));
    REQUIRE(b);
    b.release(); // granted + max lookahead: saturates to "never"

    // Nobody holds time now: the free probe may go far ahead.
    Access far = probe.try_request_access(ms(500));
    REQUIRE(far);
    CHECK(far.granted_time() == ms(500));
    far.release();
    // A later request of the one that named "never" is still served if not passed.
    CHECK(named.try_request_access(ms(600)).granted_time() == ms(600));
}

TEST_CASE("Edges.Range.RunUntilNeverSetsNoPausePoint" * doctest::timeout(30))
{
    CountingWorld world;
    SimSyncHandler handler(world, quiet({.step = 1ms, .start_paused = true}));
    handler.run_until(kSimTimeMax);
    CHECK(handler.state() == HandlerState::running);
    CHECK_FALSE(handler.snapshot().pause_at.has_value());
    CHECK(world.steps() == 0); // no target: nothing to advance towards without requests
    auto probe = handler.register_accessor("probe", {.kind = AccessorKind::free});
    CHECK(probe.try_request_access(ms(3)).granted_time() == ms(3));

    // step(n) saturates its pause point at the last grid point, never overflows.
    auto holder = handler.register_accessor("holder"); // holds time at 3 ms: nothing steps
    handler.step(std::numeric_limits<std::uint64_t>::max());
    const auto pause_at = handler.snapshot().pause_at;
    REQUIRE(pause_at.has_value());
    CHECK(*pause_at == round_to_grid(kSimTimeMax - SimDuration{1}, 1ms, Rounding::down));
    CHECK(handler.now() == ms(3));
    // Without a stop, lifting the holder's bound would make its thread step
    // towards that far target (the thread that makes an operator target
    // reachable steps: handler.hpp, StepThread::any).
    handler.stop();
}

// ----------------------------------------------- 4. registration during a step

TEST_CASE("Edges.Registration.DuringAStepBindsToTheInstantItChecks" * doctest::timeout(60))
{
    GatedWorld world;
    SimSyncHandler handler(world, quiet({.step = 1ms}));
    auto driver = handler.register_accessor("driver", {.kind = AccessorKind::free});
    std::thread stepping([&] { (void)driver.request_access(ms(1)); }); // steps 0 -> 1 ms
    REQUIRE(world.wait_entered(1));                                     // the step is in flight

    // A lockstep accessor registered now asks for exactly handler.now().
    std::error_code first_error;
    SimTime asked{};
    SimTime granted{};
    std::atomic<bool> registered{false};
    std::thread newcomer([&] {
        auto late = handler.register_accessor("late");
        registered = true;
        asked = handler.now();
        Access a = late.request_access(asked);
        first_error = a.error();
        granted = a.granted_time();
    });
    // Give a registration that does not wait for the step the chance to return
    // while the step is still in flight (that is the defect); one that waits
    // returns only after the gate opens, whatever this delay.
    (void)eventually([&] { return registered.load(); }, 200ms);
    world.open();
    newcomer.join();
    stepping.join();
    CHECK_FALSE(first_error);
    CHECK(granted == asked);
    CHECK(asked == ms(1));
}

TEST_CASE("Edges.Registration.FirstRequestIsCheckedAgainstTheBoundInstant" * doctest::timeout(60))
{
    GatedWorld world;
    SimSyncHandler handler(world, quiet({.step = 1ms}));
    auto driver = handler.register_accessor("driver", {.kind = AccessorKind::free});
    std::thread stepping([&] { (void)driver.request_access(ms(1)); });
    REQUIRE(world.wait_entered(1));
    const SimTime stale = handler.now(); // 0: the world is being stepped to 1 ms

    std::optional<errc> registration_error;
    std::error_code request_error;
    std::thread newcomer([&] {
        try {
            auto late = handler.register_accessor("late", {.first_request = stale});
            request_error = late.request_access(stale).error();
        } catch (const Error& e) {
            registration_error = static_cast<errc>(e.code().value());
        }
    });
    (void)eventually([&] { return handler.snapshot().accessors.size() == 2; }, 200ms);
    world.open();
    newcomer.join();
    stepping.join();
    // Either the registration is refused (the first request lies before the
    // instant it would be bound to) or the request it accepted is granted:
    // never accepted at registration and then refused as time_passed.
    if (registration_error) {
        CHECK(*registration_error == errc::invalid_argument);
    } else {
        CHECK_FALSE(request_error);
    }
}

TEST_CASE("Edges.Registration.SimulatedTimerStartedWhileTimeRuns" * doctest::timeout(60))
{
    GatedWorld world;
    DiagnosticLog log;
    SimSyncHandler handler(world, {.step = 1ms, .diagnostics = log.callback()});
    auto driver = handler.register_accessor("driver", {.kind = AccessorKind::free});
    std::thread stepping([&] { (void)driver.request_access(ms(5)); });
    REQUIRE(world.wait_entered(1));

    std::atomic<int> ended{0};
    PeriodicTimer timer({.name = "tick", .period = 1ms, .clock = TimerClock::simulated,
                         .on_end = [&](std::error_code) { ++ended; }},
                        {.handler = &handler});
    std::atomic<int> calls{0};
    // start_async registers the timer's accessor on the calling thread, and
    // registration waits for the step in flight: start it from a thread of its
    // own, and open the world once it is waiting there.
    std::thread starter([&] { timer.start_async([&](const TimerTick&) { ++calls; }); });
    (void)eventually([&] { return handler.snapshot().accessors.size() == 2; }, 200ms);
    world.open();
    starter.join();
    stepping.join();
    const bool ticked = eventually([&] { return calls.load() >= 3 || !timer.running(); });
    const std::error_code error = timer.error();
    timer.stop();
    CHECK(ticked);
    CHECK(calls.load() >= 3);
    CHECK_FALSE(error);
    CHECK(ended.load() == 0);
    CHECK(log.count(Diagnostic::Kind::accessor_ended) == 0);
}

// Records a timer's on_end (called on the timer's thread) for the test thread.
struct EndRecorder {
    std::mutex mutex;
    std::condition_variable cv;
    std::optional<std::error_code> reason;
    std::function<void(std::error_code)> callback()
    {
        return [this](std::error_code r) {
            std::lock_guard<std::mutex> lock(mutex);
            reason = r;
            cv.notify_all();
        };
    }
    std::optional<std::error_code> wait(std::chrono::nanoseconds limit)
    {
        std::unique_lock<std::mutex> lock(mutex);
        cv.wait_for(lock, limit, [&] { return reason.has_value(); });
        return reason;
    }
};

TEST_CASE("Edges.Timer.EndingOnARefusalIsAnnounced" * doctest::timeout(60))
{
    CountingWorld world;
    DiagnosticLog log;
    SimSyncHandler handler(world, {.step = 1ms, .diagnostics = log.callback()});
    EndRecorder ended;
    PeriodicTimer timer({.name = "doomed", .period = 1ms, .clock = TimerClock::simulated, .on_end = ended.callback()},
                        {.handler = &handler});
    auto holder = handler.register_accessor("holder", {.first_request = ms(2)}); // holds time at 2 ms
    timer.start_async([](const TimerTick&) {});
    REQUIRE(eventually([&] { return is_waiting(handler, "doomed"); }));
    handler.revoke("doomed");
    const std::optional<std::error_code> end_reason = ended.wait(10s);
    REQUIRE(end_reason.has_value());
    CHECK(*end_reason == errc::not_registered);
    CHECK(timer.error() == errc::not_registered);
    const auto report = log.first(Diagnostic::Kind::accessor_ended);
    REQUIRE(report.has_value());
    CHECK(report->accessor == "doomed");
    CHECK(report->reason == errc::not_registered);
    CHECK(report->message.find("doomed") != std::string::npos);
    timer.stop();
}

TEST_CASE("Edges.Timer.EndingOnAStoppedSimulationIsNoDiagnostic" * doctest::timeout(60))
{
    // periodic_timer.hpp: a stopped simulation is every timer's normal end; the
    // owner hears of it through on_end, the operator's diagnostics do not.
    CountingWorld world;
    DiagnosticLog log;
    SimSyncHandler handler(world, {.step = 1ms, .diagnostics = log.callback()});
    EndRecorder ended;
    PeriodicTimer timer({.name = "ordinary", .period = 1ms, .clock = TimerClock::simulated, .on_end = ended.callback()},
                        {.handler = &handler});
    auto holder = handler.register_accessor("holder", {.first_request = ms(2)}); // holds time at 2 ms
    timer.start_async([](const TimerTick&) {});
    REQUIRE(eventually([&] { return is_waiting(handler, "ordinary"); }));
    handler.stop();
    const std::optional<std::error_code> end_reason = ended.wait(10s);
    REQUIRE(end_reason.has_value());
    CHECK(*end_reason == errc::stopped);
    CHECK_FALSE(log.first(Diagnostic::Kind::accessor_ended).has_value());
    timer.stop();
}

// ------------------------------------------- 5. calls that wait for the caller

TEST_CASE("Edges.InsideAnAccess.WaitUntilPausedIsRefused" * doctest::timeout(60))
{
    CountingWorld world;
    SimSyncHandler handler(world, quiet({.step = 1ms, .start_paused = true}));
    auto a = handler.register_accessor("a");
    Access access = a.request_access(ms(0));
    REQUIRE(access);
    std::optional<errc> code;
    try {
        (void)handler.wait_until_paused(WallClock::now() + 2s);
    } catch (const Error& e) {
        code = static_cast<errc>(e.code().value());
    }
    REQUIRE(code.has_value());
    CHECK(*code == errc::invalid_state);
    access.release();
    CHECK(handler.wait_until_paused(WallClock::now() + 10s)); // fine outside the access
}

TEST_CASE("Edges.InsideAnAccess.RunIsRefused" * doctest::timeout(60))
{
    CountingWorld world;
    SimSyncHandler handler(world, quiet({.step = 1ms, .step_thread = StepThread::host}));
    auto a = handler.register_accessor("a");
    // A lone accessor in host mode at the current instant needs no step.
    Access access = a.request_access(ms(0));
    REQUIRE(access);
    // Should run() not refuse, it would wait forever: stop it from outside then.
    std::mutex mutex;
    std::condition_variable cv;
    bool done = false;
    std::thread guard([&] {
        std::unique_lock<std::mutex> lock(mutex);
        if (!cv.wait_for(lock, 3s, [&] { return done; })) handler.stop();
    });
    std::optional<errc> code;
    try {
        handler.run();
    } catch (const Error& e) {
        code = static_cast<errc>(e.code().value());
    }
    {
        std::lock_guard<std::mutex> lock(mutex);
        done = true;
    }
    cv.notify_all();
    guard.join();
    REQUIRE(code.has_value());
    CHECK(*code == errc::invalid_state);
}

// ------------------------------------------------------------------ 9. stalls

TEST_CASE("Edges.Stall.IsReportedNamingWhoTimeWaitsFor" * doctest::timeout(60))
{
    CountingWorld world;
    DiagnosticLog log;
    SimSyncHandler handler(world, {.step = 1ms, .stall_timeout = 50ms, .diagnostics = log.callback()});
    auto silent = handler.register_accessor("silent"); // lockstep, never asks
    auto observer = handler.register_accessor("observer", {.kind = AccessorKind::free});
    std::thread t([&] { (void)observer.request_access(ms(10)); });
    REQUIRE(eventually([&] { return log.count(Diagnostic::Kind::stall) > 0; }));
    const auto stall = log.first(Diagnostic::Kind::stall);
    REQUIRE(stall.has_value());
    CHECK(stall->waiting_for == std::vector<std::string>{"silent"});
    CHECK(stall->at == ms(0));
    CHECK(stall->for_how_long >= 50ms);
    CHECK(stall->message.find("silent") != std::string::npos);
    CHECK(log.count(Diagnostic::Kind::stall) == 1); // once per stall, not once per timeout

    silent.deregister(); // time moves on
    t.join();
    REQUIRE(eventually([&] { return log.count(Diagnostic::Kind::stall_over) > 0; }));
    CHECK(log.count(Diagnostic::Kind::stall) == 1);
}

TEST_CASE("Edges.Stall.GrantsAtOneInstantAreNoProgress" * doctest::timeout(60))
{
    // Issue 23 point 1: an accessor that asks again and again for the instant
    // it was just granted keeps time there while grants go on. The watchdog
    // must see that time does not advance and name it (before the fix every
    // grant counted as progress: no report, ever).
    CountingWorld world;
    DiagnosticLog log;
    SimSyncHandler handler(world, {.step = 30ms, .stall_timeout = 100ms, .diagnostics = log.callback()});
    auto spinner = handler.register_accessor("spinner"); // lockstep: holds time where it asks
    auto sensor = handler.register_accessor("sensor", {.kind = AccessorKind::free});
    std::atomic<bool> done{false};
    std::uint64_t spins = 0;
    std::thread spin([&] {
        SimTime at = handler.now();
        for (; !done.load() && spins < 50'000'000; ++spins) {
            Access a = spinner.request_access(at);
            if (!a) break;
            at = a.granted_time() + 10ms; // rounds back to the instant granted
            a.release(at);
        }
        spinner.deregister();
    });
    Outcome outcome;
    std::thread waiting([&] { outcome = Outcome::of(sensor.request_access(ms(60))); });
    const bool reported = eventually([&] { return log.count(Diagnostic::Kind::stall) > 0; });
    done = true;
    spin.join();
    waiting.join();
    REQUIRE(reported);
    const auto stall = log.first(Diagnostic::Kind::stall);
    REQUIRE(stall.has_value());
    CHECK(stall->at == ms(0));
    CHECK(stall->waiting_for == std::vector<std::string>{"spinner"});
    CHECK(stall->message.find("'spinner' (") != std::string::npos);
    CHECK(stall->message.find("asked again for the instant just granted") != std::string::npos);
    CHECK(outcome.granted); // time moved once the spinner was gone
    CHECK(outcome.at == ms(60));
}

TEST_CASE("Edges.Stall.AnIdleLockstepAccessorIsToldHowItsHoldEnds" * doctest::timeout(60))
{
    CountingWorld world;
    DiagnosticLog log;
    SimSyncHandler handler(world, {.step = 1ms, .stall_timeout = 50ms, .diagnostics = log.callback()});
    auto done_with = handler.register_accessor("finished"); // lockstep, never asks again
    auto observer = handler.register_accessor("observer", {.kind = AccessorKind::free});
    std::thread t([&] { (void)observer.request_access(ms(10)); });
    REQUIRE(eventually([&] { return log.count(Diagnostic::Kind::stall) > 0; }));
    done_with.deregister();
    t.join();
    const auto stall = log.first(Diagnostic::Kind::stall);
    REQUIRE(stall.has_value());
    CHECK(stall->message.find("holds time at its bound until it asks again, is deregistered or destroyed, or is "
                              "revoked") != std::string::npos);
}

TEST_CASE("Edges.Stall.OperatorPauseIsNoStall" * doctest::timeout(60))
{
    CountingWorld world;
    DiagnosticLog log;
    SimSyncHandler handler(world, {.step = 1ms, .start_paused = true, .stall_timeout = 20ms,
                                   .diagnostics = log.callback()});
    auto observer = handler.register_accessor("observer", {.kind = AccessorKind::free});
    std::thread t([&] { (void)observer.request_access(ms(10)); });
    REQUIRE(eventually([&] { return is_waiting(handler, "observer"); }));
    // Ten timeouts of an operator's pause: a wait the operator asked for.
    std::this_thread::sleep_for(200ms);
    CHECK(log.count(Diagnostic::Kind::stall) == 0);
    handler.resume();
    t.join();
    CHECK(log.count(Diagnostic::Kind::stall) == 0);
}

TEST_CASE("Edges.Stall.WatchdogOffWithZeroTimeout")
{
    CountingWorld world;
    CHECK_THROWS_AS(SimSyncHandler(world, {.step = 1ms, .stall_timeout = -1s}), Error);
    SimSyncHandler handler(world, {.step = 1ms, .stall_timeout = WallClock::duration::zero()});
    CHECK(handler.state() == HandlerState::running);
}

TEST_CASE("Edges.Stop.ARequestWaitingForTheStepInFlightIsRefused" * doctest::timeout(30))
{
    // handler.hpp: after stop() every waiting request returns `stopped`; the
    // one a step in flight was taking time to as well (found by the spin
    // model, tests/spin: run_steps granted it after the step).
    GatedWorld world;
    SimSyncHandler handler(world, quiet({.step = 1ms, .stall_timeout = {}}));
    auto a = handler.register_accessor("a", {.kind = AccessorKind::free});
    Outcome outcome;
    std::thread requester([&] { outcome = Outcome::of(a.request_access(ms(1))); });
    REQUIRE(world.wait_entered(1)); // a's thread steps 0 -> 1 ms
    handler.stop();
    world.open();
    requester.join();
    CHECK_FALSE(outcome.granted);
    CHECK(outcome.error == errc::stopped);
}

// ------------------------------------------------- 10. callbacks may do anything

TEST_CASE("Edges.Callbacks.DiagnosticsCallbackMayDestroyTheHandler" * doctest::timeout(60))
{
    // handler.hpp: the diagnostics callback is called without the handler's
    // lock and may call any member; here it ends the handler and its last
    // accessor on the watchdog thread, so nothing else owns the core. The
    // watchdog must not touch the core after the callback returns (before the
    // fix it locked the freed mutex: heap-use-after-free under ASan).
    const int watchdogs_before = threads_named("simsync-stall");
    CountingWorld world;
    std::unique_ptr<SimSyncHandler> handler;
    std::optional<Accessor> silent;
    std::promise<void> destroyed;
    std::atomic<int> stalls{0};
    HandlerConfig config{.step = 1ms, .stall_timeout = 20ms};
    config.diagnostics = [&](const Diagnostic& d) {
        if (d.kind != Diagnostic::Kind::stall || stalls.fetch_add(1) != 0) return;
        silent.reset();
        handler.reset();
        destroyed.set_value();
    };
    handler = std::make_unique<SimSyncHandler>(world, config);
    CHECK(threads_named("simsync-stall") == watchdogs_before + 1);
    silent.emplace(handler->register_accessor("silent")); // lockstep at 0, never asks
    handler->run_until(ms(10));                           // somebody wants time to move: a stall
    REQUIRE(destroyed.get_future().wait_for(30s) == std::future_status::ready);
    CHECK(eventually([&] { return threads_named("simsync-stall") == watchdogs_before; }));
    CHECK(stalls.load() == 1);
    CHECK(handler == nullptr);
}

TEST_CASE("Edges.Callbacks.SubscriberMayDestroyTheHandler" * doctest::timeout(60))
{
    // The `stopped` event is delivered on the thread that called stop(); its
    // subscriber destroys the handler, the core's only owner. Before the fix
    // the delivery loop then locked the freed mutex (ASan: use after free).
    CountingWorld world;
    auto handler = std::make_unique<SimSyncHandler>(world, HandlerConfig{.step = 1ms});
    std::vector<HandlerEvent::Kind> seen;
    Subscription subscription;
    subscription = handler->subscribe([&](const HandlerEvent& e) {
        seen.push_back(e.kind);
        if (e.kind != HandlerEvent::Kind::stopped) return;
        // Nothing refers to the core after this (a subscription's weak
        // reference would keep its memory, hiding a use after destruction).
        subscription.reset();
        handler.reset();
    });
    SimSyncHandler* const raw = handler.get();
    raw->stop();
    CHECK(handler == nullptr);
    CHECK(seen == std::vector<HandlerEvent::Kind>{HandlerEvent::Kind::stopped});
}

TEST_CASE("Edges.Callbacks.SubscriberOnTheSteppingThreadMayWaitUntilPaused" * doctest::timeout(60))
{
    // No accessor: step(3) is carried by the operator's own thread, which also
    // delivers the `stepping` event. A subscriber that waits for the pause
    // there must see the three steps done and the handler paused, not wait for
    // a step its own thread has in flight (before the fix: false after the
    // whole 2 s deadline, with state() reading `running`).
    CountingWorld world;
    SimSyncHandler handler(world, quiet({.step = 1ms, .start_paused = true}));
    struct Seen {
        std::thread::id thread;
        bool quiet = false;
        HandlerState state = HandlerState::running;
        SimTime now{};
    };
    std::vector<Seen> seen; // the subscriber runs on this test's thread
    Subscription subscription = handler.subscribe([&](const HandlerEvent& e) {
        if (e.kind != HandlerEvent::Kind::stepping) return;
        Seen s;
        s.thread = std::this_thread::get_id();
        s.quiet = handler.wait_until_paused(WallClock::now() + 2s);
        s.state = handler.state();
        s.now = handler.now();
        seen.push_back(s);
    });
    handler.step(3);
    REQUIRE(seen.size() == 1);
    CHECK(seen[0].thread == std::this_thread::get_id());
    CHECK(seen[0].quiet);
    CHECK(seen[0].state == HandlerState::paused);
    CHECK(seen[0].now == ms(3));
    CHECK(handler.now() == ms(3));
    CHECK(world.steps() == 3);
}

TEST_CASE("Edges.Callbacks.SubscriberOnAnotherAccessorsSteppingThreadMayWaitUntilPaused" * doctest::timeout(60))
{
    // The same with a blocking accessor carrying the steps: run_until's event
    // may be delivered on the operator's thread or, once stepping, on the
    // accessor's; either way the subscriber's wait ends with time paused at 5 ms.
    CountingWorld world;
    SimSyncHandler handler(world, quiet({.step = 1ms, .start_paused = true}));
    auto a = handler.register_accessor("a", {.kind = AccessorKind::free});
    std::mutex m;
    std::vector<std::pair<bool, SimTime>> seen;
    Subscription subscription = handler.subscribe([&](const HandlerEvent& e) {
        if (e.kind != HandlerEvent::Kind::running_until && e.kind != HandlerEvent::Kind::target_reached) return;
        const bool quiet = handler.wait_until_paused(WallClock::now() + 5s);
        std::lock_guard<std::mutex> guard(m);
        seen.emplace_back(quiet, handler.now());
    });
    Outcome outcome;
    std::thread t([&] { outcome = Outcome::of(a.request_access(ms(20))); });
    REQUIRE(eventually([&] { return is_waiting(handler, "a"); }));
    handler.run_until(ms(5));
    REQUIRE(eventually([&] {
        std::lock_guard<std::mutex> guard(m);
        return seen.size() == 2;
    }));
    handler.resume();
    t.join();
    CHECK(outcome.granted);
    CHECK(outcome.at == ms(20));
    std::lock_guard<std::mutex> guard(m);
    REQUIRE(seen.size() == 2);
    for (const auto& [quiet, now] : seen) {
        CHECK(quiet);
        CHECK(now == ms(5));
    }
}
