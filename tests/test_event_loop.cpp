// The shared event loop of the wall-clock accessors: FIFO jobs, timers that
// follow a ManualWallClock (no real sleep), cancellation, sync(), and the
// change notifications (ManualWallClock listeners, TimeScale::subscribe).
#include <doctest/doctest.h>

#include <simsync/clock/event_loop.hpp>
#include <simsync/clock/time_scale.hpp>
#include <simsync/core/error.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using simsync::EventLoop;
using simsync::Executor;
using simsync::ManualWallClock;
using simsync::WallTime;
using simsync::WallTimer;

namespace {

// Waits (on the test thread) until every job posted before it has run.
void drain(const Executor& executor)
{
    executor.sync([] {});
}

} // namespace

TEST_CASE("EventLoop.JobsRunInOrderOnTheLoopThread")
{
    EventLoop loop;
    const Executor ex = loop.executor();
    CHECK_FALSE(ex.running_in_this_thread());
    std::vector<int> order;
    std::vector<bool> on_loop;
    for (int i = 0; i < 100; ++i) {
        ex.post([&, i] {
            order.push_back(i);
            on_loop.push_back(ex.running_in_this_thread());
        });
    }
    drain(ex);
    REQUIRE(order.size() == 100);
    for (int i = 0; i < 100; ++i) {
        CHECK(order[static_cast<std::size_t>(i)] == i);
        CHECK(on_loop[static_cast<std::size_t>(i)]);
    }
}

TEST_CASE("EventLoop.SyncOnTheLoopThreadRunsAtOnceAndRethrows")
{
    EventLoop loop;
    const Executor ex = loop.executor();
    bool nested_ran_inline = false;
    ex.sync([&] {
        bool ran = false;
        ex.sync([&] { ran = true; }); // would deadlock if it posted
        nested_ran_inline = ran;
    });
    CHECK(nested_ran_inline);
    CHECK_THROWS_AS(ex.sync([] { throw std::runtime_error("boom"); }), std::runtime_error);
}

TEST_CASE("EventLoop.AGoneLoopRefusesPostsAndSyncRunsHere")
{
    Executor ex;
    CHECK_FALSE(static_cast<bool>(ex));
    CHECK_THROWS_AS(ex.post([] {}), simsync::Error);
    {
        EventLoop loop;
        ex = loop.executor();
        CHECK(static_cast<bool>(ex));
    }
    CHECK_FALSE(static_cast<bool>(ex));
    CHECK_THROWS_AS(ex.post([] {}), simsync::Error);
    const auto caller = std::this_thread::get_id();
    std::thread::id ran_on;
    ex.sync([&] { ran_on = std::this_thread::get_id(); });
    CHECK(ran_on == caller);
}

TEST_CASE("WallTimer.ManualClockFiresAtTheDeadlineAndNotBefore")
{
    ManualWallClock clock;
    EventLoop loop(clock);
    const Executor ex = loop.executor();
    WallTimer timer(ex);
    std::atomic<int> fired{0};
    WallTime fired_at{};
    const WallTime deadline = clock.steady_now() + 10ms;
    timer.wait_until(deadline, [&] {
        fired_at = clock.steady_now();
        fired.fetch_add(1);
    });
    CHECK(timer.armed());
    clock.advance(9ms);
    drain(ex);
    CHECK(fired.load() == 0);
    clock.advance(1ms);
    drain(ex); // the clock's listener posted the check before this
    CHECK(fired.load() == 1);
    CHECK(fired_at == deadline);
    CHECK_FALSE(timer.armed());
    clock.advance(1s);
    drain(ex);
    CHECK(fired.load() == 1); // one shot
    CHECK(clock.sleeps() == 0);
}

TEST_CASE("WallTimer.ReArmingDropsThePendingWaitAndCancelDropsIt")
{
    ManualWallClock clock;
    EventLoop loop(clock);
    const Executor ex = loop.executor();
    WallTimer timer(ex);
    std::vector<int> calls;
    timer.wait_until(clock.steady_now() + 5ms, [&] { calls.push_back(1); });
    timer.wait_until(clock.steady_now() + 20ms, [&] { calls.push_back(2); });
    clock.advance(10ms);
    drain(ex);
    CHECK(calls.empty());
    clock.advance(10ms);
    drain(ex);
    CHECK(calls == std::vector<int>{2});
    timer.wait_until(clock.steady_now() + 5ms, [&] { calls.push_back(3); });
    timer.cancel();
    clock.advance(1s);
    drain(ex);
    CHECK(calls == std::vector<int>{2});
}

TEST_CASE("WallTimer.ADeadlineInThePastFiresThroughTheLoop")
{
    ManualWallClock clock;
    EventLoop loop(clock);
    const Executor ex = loop.executor();
    WallTimer timer(ex);
    std::promise<bool> on_loop;
    timer.wait_until(clock.steady_now() - 1ms, [&] { on_loop.set_value(ex.running_in_this_thread()); });
    CHECK(on_loop.get_future().get());
}

TEST_CASE("WallTimer.RealClockFiresOnceTheSteadyClockReachesTheDeadline")
{
    EventLoop loop;
    WallTimer timer(loop.executor());
    std::promise<WallTime> fired;
    const WallTime deadline = simsync::WallClock::now() + 2ms;
    timer.wait_until(deadline, [&] { fired.set_value(simsync::WallClock::now()); });
    CHECK(fired.get_future().get() >= deadline);
}

TEST_CASE("WallTimer.CancelOnTheLoopThreadWinsAgainstADueTimer")
{
    ManualWallClock clock;
    EventLoop loop(clock);
    const Executor ex = loop.executor();
    WallTimer timer(ex);
    std::atomic<bool> fired{false};
    timer.wait_until(clock.steady_now() + 1ms, [&] { fired = true; });
    // The job below runs before the check the clock move posts: cancelling
    // there must win although the deadline has passed by then.
    ex.sync([&] {
        clock.advance(1ms); // posts the check behind this job
        timer.cancel();
    });
    drain(ex);
    CHECK_FALSE(fired.load());
}

TEST_CASE("WallTimer.Stress.ArmCancelFromManyThreads")
{
    // Every synchronisation path of the timer at once: arms and cancels from
    // four threads, a fifth advancing the clock. Each callback counts; a
    // callback may run at most once per arm, and nothing runs after the
    // final cancel on the loop thread.
    ManualWallClock clock;
    EventLoop loop(clock);
    const Executor ex = loop.executor();
    WallTimer timer(ex);
    std::atomic<int> arms{0};
    std::atomic<int> calls{0};
    std::atomic<bool> stop{false};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < 2000; ++i) {
                if ((i + t) % 3 == 0) {
                    timer.cancel();
                } else {
                    arms.fetch_add(1);
                    timer.wait_until(clock.steady_now() + std::chrono::microseconds(i % 7), [&] { calls.fetch_add(1); });
                }
            }
        });
    }
    std::thread mover([&] {
        for (int i = 0; i < 5000 && !stop.load(); ++i) clock.advance(1us);
    });
    for (auto& thread : threads) thread.join();
    stop = true;
    mover.join();
    ex.sync([&] { timer.cancel(); });
    const int after_cancel = calls.load();
    clock.advance(1s);
    drain(ex);
    CHECK(calls.load() == after_cancel);
    CHECK(calls.load() <= arms.load());
}

TEST_CASE("ManualWallClock.ListenersHearEveryMoveUntilRemoved")
{
    ManualWallClock clock;
    int heard = 0;
    const auto id = clock.add_listener([&] { ++heard; });
    clock.advance(1ms);
    clock.sleep_until(clock.steady_now() + 1ms);
    clock.sleep_until(clock.steady_now() - 1ms); // does not move: not heard
    CHECK(heard == 2);
    clock.remove_listener(id);
    clock.advance(1ms);
    CHECK(heard == 2);
    CHECK_THROWS_AS(clock.add_listener({}), simsync::Error);
}

TEST_CASE("TimeScale.SubscribersHearEverySetWithTheNewValue")
{
    ManualWallClock clock;
    simsync::TimeScale scale(1.0, clock);
    std::vector<double> heard;
    std::uint64_t generation_seen = 0;
    auto subscription = scale.subscribe([&](double value) {
        heard.push_back(value);
        generation_seen = scale.generation(); // the change is visible already
    });
    scale.set(2.0);
    scale.set(0.5);
    CHECK(heard == std::vector<double>{2.0, 0.5});
    CHECK(generation_seen == scale.generation());
    subscription.reset();
    scale.set(3.0);
    CHECK(heard.size() == 2);
    CHECK_THROWS_AS(scale.subscribe({}), simsync::Error);
}

TEST_CASE("TimeScale.Stress.SetAndUnsubscribeConcurrently")
{
    simsync::TimeScale scale(1.0);
    std::atomic<int> calls{0};
    std::thread setter([&] {
        for (int i = 0; i < 2000; ++i) scale.set(1.0 + (i % 10));
    });
    for (int i = 0; i < 200; ++i) {
        auto subscription = scale.subscribe([&](double) { calls.fetch_add(1); });
        subscription.reset();
    }
    setter.join();
    const int before = calls.load();
    scale.set(5.0); // nobody listens any more
    CHECK(calls.load() == before);
}
