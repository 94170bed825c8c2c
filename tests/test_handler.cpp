// The handler's grant rule, lockstep bounds, order at one instant, refusals,
// operator control and diagnostics, one behaviour per case.

#include "support.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <mutex>
#include <limits>
#include <set>

using namespace simsync;
using namespace simsync::test;

namespace {

AccessorOptions lockstep(AccessMode mode = AccessMode::exclusive, int priority = 0)
{
    return {.kind = AccessorKind::lockstep, .mode = mode, .priority = priority};
}

AccessorOptions free_kind(AccessMode mode = AccessMode::exclusive)
{
    return {.kind = AccessorKind::free, .mode = mode};
}

// A world that remembers which threads stepped it.
class ThreadRecordingWorld final : public World {
public:
    void step(SimDuration) override
    {
        std::lock_guard<std::mutex> g(m);
        threads.insert(std::this_thread::get_id());
        ++steps;
    }
    std::mutex m;
    std::set<std::thread::id> threads;
    int steps = 0;
};

class FailingWorld final : public World {
public:
    void step(SimDuration) override
    {
        if (++steps == 5) throw std::runtime_error("engine exploded");
    }
    int steps = 0;
};

} // namespace

TEST_CASE("Handler.Config.RejectsNonPositiveStep")
{
    CountingWorld world;
    CHECK_THROWS_AS(SimSyncHandler(world, {.step = SimDuration{0}}), Error);
}

TEST_CASE("Handler.Grant.AtCurrentTimeWithoutStepping")
{
    CountingWorld world;
    SimSyncHandler handler(world);
    auto a = handler.register_accessor("a", free_kind());
    Access access = a.request_access(kSimStart);
    REQUIRE(access);
    CHECK(access.granted_time() == kSimStart);
    CHECK(access.requested_time() == kSimStart);
    CHECK(world.steps() == 0);
}

TEST_CASE("Handler.Grant.StepsWorldToRequestedTime")
{
    CountingWorld world;
    SimSyncHandler handler(world, {.step = 1ms});
    auto a = handler.register_accessor("a", lockstep());
    Access access = a.request_access(ms(5));
    REQUIRE(access);
    CHECK(access.granted_time() == ms(5));
    CHECK(world.steps() == 5);
    CHECK(handler.now() == ms(5));
    CHECK(handler.steps() == 5);
    CHECK(&access.world() == &world);
    CHECK(&access.world_as<CountingWorld>() == &world);
}

TEST_CASE("Handler.Grant.RoundsToGridAndReportsBothTimes")
{
    CountingWorld world;
    SimSyncHandler handler(world, {.step = 1ms});
    auto camera = handler.register_accessor("camera", lockstep(AccessMode::shared));
    const std::vector<std::int64_t> expected_ms{0, 33, 67, 100, 133, 167, 200};
    for (std::size_t n = 0; n < expected_ms.size(); ++n) {
        const SimTime want{SimDuration{static_cast<std::int64_t>(n) * 1'000'000'000 / 30}};
        Access access = camera.request_access(want);
        REQUIRE(access);
        CHECK(access.requested_time() == want);
        CHECK(access.granted_time() == ms(expected_ms[n]));
        CHECK(world.time() == access.granted_time());
    }
}

TEST_CASE("Handler.Grant.RoundingPolicyUpAndDown")
{
    CountingWorld world;
    SUBCASE("up")
    {
        SimSyncHandler handler(world, {.step = 1ms, .rounding = Rounding::up});
        auto a = handler.register_accessor("a", lockstep());
        CHECK(a.request_access(sim_time(1100us)).granted_time() == ms(2));
    }
    SUBCASE("down")
    {
        SimSyncHandler handler(world, {.step = 1ms, .rounding = Rounding::down});
        auto a = handler.register_accessor("a", lockstep());
        CHECK(a.request_access(sim_time(1900us)).granted_time() == ms(1));
    }
}

TEST_CASE("Handler.Refuse.TimePassedForFreeButNotAtNow")
{
    CountingWorld world;
    SimSyncHandler handler(world, {.step = 1ms});
    auto a = handler.register_accessor("a", free_kind());
    REQUIRE(a.request_access(ms(10)));
    Access late = a.request_access(ms(9));
    CHECK_FALSE(late);
    CHECK(late.error() == errc::time_passed);
    CHECK(a.request_access(ms(10))); // exactly now
    // 9.6 ms rounds to 10 ms under nearest: granted.
    CHECK(a.request_access(sim_time(9600us)));
}

TEST_CASE("Handler.Refuse.NotRegisteredAfterDeregister")
{
    CountingWorld world;
    SimSyncHandler handler(world);
    auto a = handler.register_accessor("a", free_kind());
    a.deregister();
    CHECK_FALSE(a.registered());
    CHECK(a.request_access(kSimStart).error() == errc::not_registered);
    // The name is free again.
    CHECK_NOTHROW(handler.register_accessor("a"));
}

TEST_CASE("Handler.Errors.NamesTheOffendingInput")
{
    CountingWorld world;
    SimSyncHandler handler(world, {.step = 1ms});
    auto a = handler.register_accessor("a", lockstep());
    CHECK_THROWS_WITH_AS(handler.register_accessor("a"), doctest::Contains("'a'"), Error);
    CHECK_THROWS_AS(handler.register_accessor(""), Error);
    CHECK_THROWS_AS(handler.register_accessor("b", {.lookahead = SimDuration{-1}}), Error);

    Access access = a.request_access(ms(3));
    REQUIRE(access);
    // Asking again while holding would deadlock: refused as a caller error.
    CHECK_THROWS_AS(a.request_access(ms(4)), Error);
    // A next request before the granted time is bad input: throws and keeps the access.
    CHECK_THROWS_WITH_AS(access.release(ms(2)), doctest::Contains("0.002000000"), Error);
    CHECK(access);
    access.release(ms(4));
    CHECK_FALSE(access);
    CHECK_THROWS_WITH_AS(handler.register_accessor("late", {.first_request = ms(1)}),
                         doctest::Contains("first_request"), Error);
}

TEST_CASE("Handler.Lockstep.HoldsTimeAtItsBound" * doctest::timeout(30))
{
    CountingWorld world;
    SimSyncHandler handler(world, {.step = 1ms});
    auto slow = handler.register_accessor("slow", lockstep());
    auto fast = handler.register_accessor("fast", lockstep());

    Access s = slow.request_access(ms(0));
    REQUIRE(s);
    s.release(ms(10)); // "slow" computes; it will ask again at 10 ms

    Threads threads;
    std::atomic<bool> fast_done{false};
    threads.spawn([&] {
        Access f = fast.request_access(ms(20));
        CHECK(f);
        CHECK(f.granted_time() == ms(20));
        fast_done = true;
    });
    // Time advances to the bound and no further while "slow" holds it.
    REQUIRE(eventually([&] { return handler.now() == ms(10) && is_waiting(handler, "fast"); }));
    const Snapshot snap = handler.snapshot();
    REQUIRE(snap.waiting_for.size() == 1);
    CHECK(snap.waiting_for[0] == "slow");
    CHECK_FALSE(fast_done.load());

    Access s2 = slow.request_access(ms(10));
    REQUIRE(s2);
    CHECK(s2.granted_time() == ms(10));
    CHECK_FALSE(fast_done.load());
    s2.release(ms(30));
    threads.join();
    CHECK(fast_done.load());
    CHECK(handler.now() == ms(20));
}

TEST_CASE("Handler.Lockstep.LookaheadDeclaresTheBound" * doctest::timeout(30))
{
    CountingWorld world;
    SimSyncHandler handler(world, {.step = 1ms});
    auto planner = handler.register_accessor("planner", {.lookahead = 5ms});
    auto other = handler.register_accessor("other", lockstep());
    planner.request_access(ms(0)).release(); // bound = 0 + 5 ms
    Threads threads;
    threads.spawn([&] { CHECK(other.request_access(ms(50))); });
    REQUIRE(eventually([&] { return handler.now() == ms(5) && is_waiting(handler, "other"); }));
    planner.deregister();
    threads.join();
    CHECK(handler.now() == ms(50));
}

TEST_CASE("Handler.Lockstep.FirstRequestHoldsTimeFromRegistration" * doctest::timeout(30))
{
    CountingWorld world;
    SimSyncHandler handler(world, {.step = 1ms});
    auto late_starter = handler.register_accessor("late_starter", {.first_request = ms(7)});
    auto other = handler.register_accessor("other", lockstep());
    Threads threads;
    threads.spawn([&] { CHECK(other.request_access(ms(20))); });
    REQUIRE(eventually([&] { return handler.now() == ms(7) && is_waiting(handler, "other"); }));
    CHECK(late_starter.request_access(ms(7)).granted_time() == ms(7));
    late_starter.deregister();
    threads.join();
}

TEST_CASE("Handler.Free.NeverHoldsTimeBack" * doctest::timeout(30))
{
    CountingWorld world;
    SimSyncHandler handler(world, {.step = 1ms});
    auto viewer = handler.register_accessor("viewer", free_kind(AccessMode::shared));
    auto sim = handler.register_accessor("sim", lockstep());
    CHECK(viewer.request_access(ms(0)));
    // The free viewer is idle: the lockstep accessor runs past it unhindered.
    CHECK(sim.request_access(ms(100)));
    CHECK(viewer.request_access(ms(50)).error() == errc::time_passed);
    CHECK(handler.snapshot().waiting_for.empty());
}

TEST_CASE("Handler.Kind.SwitchWhileRunning" * doctest::timeout(30))
{
    CountingWorld world;
    SimSyncHandler handler(world, {.step = 1ms});
    auto a = handler.register_accessor("a", lockstep());
    auto b = handler.register_accessor("b", lockstep());
    CHECK(a.kind() == AccessorKind::lockstep);

    // a (lockstep, idle at 0) holds b back ...
    Threads threads;
    threads.spawn([&] { CHECK(b.request_access(ms(30))); });
    REQUIRE(eventually([&] { return is_waiting(handler, "b"); }));
    CHECK(handler.now() == ms(0));
    // ... until it becomes free: then time runs to b's request.
    a.set_kind(AccessorKind::free);
    threads.join();
    CHECK(handler.now() == ms(30));
    CHECK(a.request_access(ms(10)).error() == errc::time_passed);

    // Becoming lockstep again holds time at the current instant.
    a.set_kind(AccessorKind::lockstep);
    threads.spawn([&] { CHECK(b.request_access(ms(40))); });
    REQUIRE(eventually([&] { return is_waiting(handler, "b"); }));
    CHECK(handler.now() == ms(30));
    a.request_access(ms(30)).release(ms(45));
    threads.join();
    CHECK(handler.now() == ms(40));
}

TEST_CASE("Handler.Try.WouldBlockWhenAnotherThreadMustAct")
{
    CountingWorld world;
    SimSyncHandler handler(world, {.step = 1ms});
    auto holder = handler.register_accessor("holder", lockstep());
    auto other = handler.register_accessor("other", free_kind());
    // The calling thread may step the world itself: granted without waiting.
    Access h = holder.try_request_access(ms(3));
    REQUIRE(h);
    CHECK(handler.now() == ms(3));
    // While "holder" holds the world, nothing else can be granted.
    CHECK(other.try_request_access(ms(3)).error() == errc::would_block);
    h.release(ms(10));
    CHECK(other.try_request_access(ms(3)));
    // Beyond a lockstep bound: would block, and the withdrawn request leaves no trace.
    CHECK(other.try_request_access(ms(20)).error() == errc::would_block);
    CHECK(handler.now() == ms(10));
    const Snapshot snap_now = handler.snapshot();
    const auto* st = find_status(snap_now, "other");
    REQUIRE(st != nullptr);
    CHECK(st->activity == AccessorStatus::Activity::idle);
}

TEST_CASE("Handler.Timed.TimesOutAndWithdraws" * doctest::timeout(30))
{
    CountingWorld world;
    SimSyncHandler handler(world, {.step = 1ms});
    auto blocker = handler.register_accessor("blocker", lockstep()); // holds time at 0
    auto waiter = handler.register_accessor("waiter", free_kind());
    Access a = waiter.request_access_for(ms(5), 20ms);
    CHECK(a.error() == errc::timed_out);
    CHECK(handler.now() == ms(0));
    CHECK(handler.snapshot().waiting_for.empty()); // nobody waits any more
    blocker.deregister();
    CHECK(waiter.request_access_until(ms(5), WallClock::now() + 10s).granted_time() == ms(5));
}

TEST_CASE("Handler.Order.PriorityThenRegistrationNotArrival" * doctest::timeout(60))
{
    // Five lockstep accessors all want 5 ms; they arrive in a random order and
    // are granted by priority, then registration order, every time.
    for (int run = 0; run < 10; ++run) {
        CountingWorld world;
        SimSyncHandler handler(world, {.step = 1ms});
        const std::vector<int> priorities{0, 2, 0, 1, 2};
        std::vector<Accessor> accessors;
        for (std::size_t i = 0; i < priorities.size(); ++i) {
            accessors.push_back(handler.register_accessor("a" + std::to_string(i), lockstep(AccessMode::exclusive, priorities[i])));
        }
        std::mutex m;
        std::vector<std::pair<std::uint64_t, std::size_t>> grants;
        Threads threads;
        for (std::size_t k = 0; k < accessors.size(); ++k) {
            const std::size_t i = (k * 3 + static_cast<std::size_t>(run)) % accessors.size(); // varying arrival order
            threads.spawn([&, i] {
                Access a = accessors[i].request_access(ms(5));
                REQUIRE(a);
                std::lock_guard<std::mutex> g(m);
                grants.emplace_back(a.sequence(), i);
                a.release(ms(100));
            });
            std::this_thread::yield();
        }
        threads.join();
        std::sort(grants.begin(), grants.end());
        std::vector<std::size_t> order;
        for (auto& g : grants) order.push_back(g.second);
        CHECK(order == std::vector<std::size_t>{1, 4, 3, 0, 2});
    }
}

TEST_CASE("Handler.Order.SecondGrantAtAnInstantQueuesBehindFirstGrants" * doctest::timeout(30))
{
    CountingWorld world;
    SimSyncHandler handler(world, {.step = 1ms});
    auto high = handler.register_accessor("high", lockstep(AccessMode::exclusive, 5));
    auto low = handler.register_accessor("low", lockstep(AccessMode::exclusive, 0));
    std::atomic<std::uint64_t> low_seq{0};
    Threads threads;
    threads.spawn([&] {
        Access a = low.request_access(ms(2));
        REQUIRE(a);
        low_seq = a.sequence();
    });
    REQUIRE(eventually([&] { return is_waiting(handler, "low"); }));
    Access first = high.request_access(ms(2));
    REQUIRE(first);
    first.release(ms(2)); // asks for the same instant again: "low" has not had it yet
    Access second = high.request_access(ms(2));
    REQUIRE(second);
    threads.join();
    CHECK(first.sequence() < low_seq.load());
    CHECK(low_seq.load() < second.sequence());
}

TEST_CASE("Handler.Pause.ServesCurrentInstantButHoldsTime" * doctest::timeout(30))
{
    CountingWorld world;
    SimSyncHandler handler(world, {.step = 1ms, .start_paused = true});
    CHECK(handler.state() == HandlerState::paused);
    auto a = handler.register_accessor("a", free_kind());
    CHECK(a.request_access(ms(0))); // current instant: served while paused
    CHECK(a.request_access_for(ms(3), 20ms).error() == errc::timed_out);
    CHECK(handler.now() == ms(0));

    Threads threads;
    threads.spawn([&] { CHECK(a.request_access(ms(3)).granted_time() == ms(3)); });
    REQUIRE(eventually([&] { return is_waiting(handler, "a"); }));
    handler.resume();
    threads.join();
    CHECK(handler.state() == HandlerState::running);
}

TEST_CASE("Handler.Pause.StepAndRunUntilWithoutAccessors" * doctest::timeout(30))
{
    CountingWorld world;
    SimSyncHandler handler(world, {.step = 2ms, .start_paused = true});
    handler.step(3);
    REQUIRE(handler.wait_until_paused(WallClock::now() + 10s));
    CHECK(handler.now() == ms(6));
    CHECK(world.steps() == 3);
    handler.run_until(ms(15)); // rounds down to 14 ms
    REQUIRE(handler.wait_until_paused(WallClock::now() + 10s));
    CHECK(handler.now() == ms(14));
    CHECK(handler.state() == HandlerState::paused);
    handler.run_until(ms(2)); // in the past: stays paused at now
    CHECK(handler.now() == ms(14));
    CHECK(handler.state() == HandlerState::paused);
}

TEST_CASE("Handler.Pause.StepAdvancesThroughLockstepRequests" * doctest::timeout(30))
{
    CountingWorld world;
    SimSyncHandler handler(world, {.step = 1ms, .start_paused = true});
    auto a = handler.register_accessor("a", lockstep());
    std::vector<SimTime> seen;
    Threads threads;
    threads.spawn([&] {
        for (int n = 1; n <= 10; ++n) {
            Access access = a.request_access(ms(n));
            if (!access) return;
            seen.push_back(access.granted_time());
            access.release(ms(n + 1));
        }
    });
    handler.step(4);
    REQUIRE(eventually([&] { return handler.now() == ms(4) && is_waiting(handler, "a"); }));
    CHECK(handler.state() == HandlerState::paused);
    handler.resume();
    threads.join();
    CHECK(seen.size() == 10);
    CHECK(handler.now() == ms(10));
}

TEST_CASE("Handler.Snapshot.DescribesEveryAccessor" * doctest::timeout(30))
{
    CountingWorld world;
    SimSyncHandler handler(world, {.step = 1ms});
    auto holder = handler.register_accessor("holder", lockstep(AccessMode::shared, 3));
    auto waiter = handler.register_accessor("waiter", free_kind());
    auto idle = handler.register_accessor("idle", free_kind());
    Access h = holder.request_access(ms(2));
    REQUIRE(h);
    Threads threads;
    threads.spawn([&] { CHECK(waiter.request_access(ms(4))); });
    REQUIRE(eventually([&] { return is_waiting(handler, "waiter"); }));

    Snapshot snap = handler.snapshot();
    CHECK(snap.now == ms(2));
    CHECK(snap.state == HandlerState::running);
    REQUIRE(snap.accessors.size() == 3);
    CHECK(snap.accessors[0].name == "holder"); // registration order
    CHECK(snap.accessors[0].activity == AccessorStatus::Activity::holding);
    CHECK(snap.accessors[0].kind == AccessorKind::lockstep);
    CHECK(snap.accessors[0].mode == AccessMode::shared);
    CHECK(snap.accessors[0].priority == 3);
    CHECK(snap.accessors[0].time == ms(2));
    CHECK(snap.accessors[1].activity == AccessorStatus::Activity::waiting);
    CHECK(snap.accessors[1].time == ms(4));
    CHECK(snap.accessors[2].activity == AccessorStatus::Activity::idle);
    REQUIRE(snap.waiting_for == std::vector<std::string>{"holder"});
    h.release(ms(10));
    threads.join();
}

TEST_CASE("Handler.StepThread.AnyStepsOnTheGrantedThread" * doctest::timeout(30))
{
    ThreadRecordingWorld world;
    SimSyncHandler handler(world, {.step = 1ms});
    auto a = handler.register_accessor("a", lockstep());
    Threads threads;
    std::thread::id worker;
    threads.spawn([&] {
        worker = std::this_thread::get_id();
        for (int n = 1; n <= 50; ++n) a.request_access(ms(n)).release(ms(n + 1));
    });
    threads.join();
    CHECK(world.steps == 50);
    CHECK(world.threads == std::set<std::thread::id>{worker}); // a lone accessor: no handoff
}

TEST_CASE("Handler.StepThread.HostStepsOnlyInRun" * doctest::timeout(30))
{
    ThreadRecordingWorld world;
    SimSyncHandler handler(world, {.step = 1ms, .step_thread = StepThread::host});
    auto a = handler.register_accessor("a", lockstep());
    CHECK(a.try_request_access(ms(3)).error() == errc::would_block); // only the host may step
    std::thread::id host_id;
    Threads threads;
    threads.spawn([&] {
        host_id = std::this_thread::get_id();
        handler.run();
    });
    for (int n = 1; n <= 20; ++n) {
        Access access = a.request_access(ms(n));
        REQUIRE(access);
        access.release(ms(n + 1));
    }
    handler.stop();
    threads.join();
    CHECK(world.steps == 20);
    CHECK(world.threads == std::set<std::thread::id>{host_id});
}

TEST_CASE("Handler.Failure.WorldExceptionStopsAndIsReported" * doctest::timeout(30))
{
    FailingWorld world;
    SimSyncHandler handler(world, {.step = 1ms});
    auto a = handler.register_accessor("a", lockstep());
    Access access = a.request_access(ms(10));
    CHECK(access.error() == errc::world_failed);
    CHECK(handler.state() == HandlerState::stopped);
    REQUIRE(handler.failure());
    CHECK_THROWS_WITH(std::rethrow_exception(handler.failure()), "engine exploded");
    CHECK(handler.now() == ms(4));
}

TEST_CASE("Handler.RunGeneration.CountsEveryChangeAsAnEvent")
{
    CountingWorld world;
    SimSyncHandler handler(world);
    std::vector<HandlerEvent> events; // delivered on this thread: it makes every change
    Subscription sub = handler.subscribe([&](const HandlerEvent& e) { events.push_back(e); });
    const auto g0 = handler.run_generation();
    handler.pause();
    handler.resume();
    handler.step(1);          // with nobody waiting, this thread steps: and reaches the target
    handler.run_until(ms(5)); // likewise
    handler.stop();
    // handler.hpp: pause, resume, step, run_until, stop and reaching a target each add one.
    CHECK(handler.run_generation() == g0 + 7);
    using K = HandlerEvent::Kind;
    const std::vector<K> expected{K::paused, K::resumed, K::stepping, K::target_reached,
                                  K::running_until, K::target_reached, K::stopped};
    REQUIRE(events.size() == expected.size());
    for (std::size_t i = 0; i < events.size(); ++i) {
        CAPTURE(i);
        CHECK(events[i].kind == expected[i]);
        CHECK(events[i].generation == g0 + i + 1);
    }
    CHECK(events[2].pause_at == ms(1));
    CHECK(events[3].at == ms(1));
    CHECK(events[4].pause_at == ms(5));
    CHECK(events[5].at == ms(5));
    sub.reset();
    handler.resume(); // no longer delivered
    CHECK(events.size() == expected.size());
}

TEST_CASE("Handler.Order.ExtremePrioritiesOrderCorrectly" * doctest::timeout(30))
{
    // Priorities are compared, never negated: INT_MIN is simply the lowest.
    CountingWorld world;
    SimSyncHandler handler(world, {.step = 1ms});
    auto lowest = handler.register_accessor("lowest", lockstep(AccessMode::exclusive, std::numeric_limits<int>::min()));
    auto middle = handler.register_accessor("middle", lockstep(AccessMode::exclusive, 0));
    auto highest = handler.register_accessor("highest", lockstep(AccessMode::exclusive, std::numeric_limits<int>::max()));
    std::mutex m;
    std::vector<std::pair<std::uint64_t, std::string>> grants;
    Threads threads;
    for (Accessor* a : {&lowest, &middle, &highest}) {
        threads.spawn([&, a] {
            Access access = a->request_access(ms(5));
            REQUIRE(access);
            std::lock_guard<std::mutex> g(m);
            grants.emplace_back(access.sequence(), a->name());
        });
    }
    threads.join();
    std::sort(grants.begin(), grants.end());
    REQUIRE(grants.size() == 3);
    CHECK(grants[0].second == "highest");
    CHECK(grants[1].second == "middle");
    CHECK(grants[2].second == "lowest");
}
