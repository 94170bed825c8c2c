// Asynchronous grants (simsync/core/asio.hpp): completion tokens, executors, inline
// systems, cancellation, and the four ways of waiting mixed in one handler.
// Expected values come from the contract in accessor.hpp and handler.hpp.

#include "support.hpp"

#include <simsync/core/asio.hpp>

#include <doctest/doctest.h>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <future>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

using namespace simsync;
using namespace simsync::test;
namespace asio = boost::asio;

namespace {

HandlerConfig quiet(HandlerConfig config = {})
{
    config.diagnostics = [](const Diagnostic&) {};
    return config;
}

// A world that records which threads stepped it.
class ThreadRecordingWorld final : public World {
public:
    void step(SimDuration) override
    {
        std::lock_guard<std::mutex> lock(mutex_);
        threads_.insert(std::this_thread::get_id());
        ++steps_;
    }
    std::set<std::thread::id> threads() const
    {
        std::lock_guard<std::mutex> lock(mutex_);
        return threads_;
    }
    std::uint64_t steps() const
    {
        std::lock_guard<std::mutex> lock(mutex_);
        return steps_;
    }

private:
    mutable std::mutex mutex_;
    std::set<std::thread::id> threads_;
    std::uint64_t steps_ = 0;
};

// Runs an io_context on a thread of its own until destroyed.
struct IoThread {
    asio::io_context io;
    asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
    std::thread thread{[this] { io.run(); }};
    ~IoThread()
    {
        work.reset();
        io.stop();
        thread.join();
    }
};

} // namespace

TEST_CASE("Async.Callback.CompletesOnItsExecutorThread" * doctest::timeout(30))
{
    ThreadRecordingWorld world;
    SimSyncHandler handler(world, quiet({.step = 1ms}));
    auto blocker = handler.register_accessor("blocker"); // holds time at 0
    auto camera = handler.register_accessor("camera", {.mode = AccessMode::shared});
    IoThread io;

    std::promise<std::tuple<std::error_code, SimTime, std::thread::id>> done;
    camera.async_request_access(ms(5), asio::bind_executor(io.io, [&](std::error_code ec, Access a) {
                                    const SimTime granted_at = a.granted_time();
                                    a.release(); // before the test thread asks again
                                    done.set_value({ec, granted_at, std::this_thread::get_id()});
                                }));
    CHECK(world.steps() == 0);
    blocker.deregister(); // lifts the bound on this thread; the request's executor steps
    auto [ec, granted, thread] = done.get_future().get();
    CHECK_FALSE(ec);
    CHECK(granted == ms(5));
    CHECK(thread == io.thread.get_id());
    // The request's executor stepped the world on its way to the grant.
    CHECK(world.threads() == std::set<std::thread::id>{io.thread.get_id()});
    CHECK(world.steps() == 5);

    // A request that is next when it is made: the calling thread steps it
    // (no post, no handoff), and the completion still runs on the executor.
    std::promise<std::thread::id> second;
    camera.async_request_access(ms(8), asio::bind_executor(io.io, [&](std::error_code, Access) {
                                    second.set_value(std::this_thread::get_id());
                                }));
    CHECK(world.steps() == 8);
    CHECK(world.threads().count(std::this_thread::get_id()) == 1);
    CHECK(second.get_future().get() == io.thread.get_id());
}

TEST_CASE("Async.Future.DeliversTheGrantAndTheRefusal" * doctest::timeout(30))
{
    CountingWorld world;
    SimSyncHandler handler(world, quiet({.step = 1ms}));
    auto a = handler.register_accessor("a", {.kind = AccessorKind::free});
    auto f = a.async_request_access(ms(3), asio::use_future);
    auto [ec, access] = f.get();
    CHECK_FALSE(ec);
    CHECK(access.granted_time() == ms(3));
    access.release();
    // A refusal is a value (the signature's std::error_code), not an exception.
    auto [late_ec, late] = a.async_request_access(ms(1), asio::use_future).get();
    CHECK(late_ec == errc::time_passed);
    CHECK_FALSE(late);
}

TEST_CASE("Async.Coroutine.AwaitsEachGrant" * doctest::timeout(30))
{
    CountingWorld world;
    SimSyncHandler handler(world, quiet({.step = 1ms}));
    auto sensor = handler.register_accessor("sensor", {.mode = AccessMode::shared});
    asio::io_context io;
    std::vector<SimTime> granted;
    std::error_code failure;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            for (int n = 0; n < 10; ++n) {
                // 30 Hz on a 1 ms grid: 0, 33, 67, 100 ... (round_to_grid, time.hpp)
                const SimTime at = SimTime{std::chrono::nanoseconds(n * 1'000'000'000LL / 30)};
                auto [ec, a] = co_await sensor.async_request_access(at, asio::use_awaitable);
                if (ec) {
                    failure = ec;
                    co_return;
                }
                granted.push_back(a.granted_time());
                a.release(SimTime{std::chrono::nanoseconds((n + 1) * 1'000'000'000LL / 30)});
            }
        },
        asio::detached);
    io.run(); // returns once the coroutine is done: pending requests keep it busy
    CHECK_FALSE(failure);
    const std::vector<SimTime> expected{ms(0), ms(33), ms(67), ms(100), ms(133), ms(167), ms(200), ms(233), ms(267), ms(300)};
    CHECK(granted == expected);
}

TEST_CASE("Async.Inline.ReArmingDoesNotGrowTheStack" * doctest::timeout(60))
{
    CountingWorld world;
    SimSyncHandler handler(world, quiet({.step = 1ms}));
    auto system = handler.register_accessor("system");
    constexpr int kGrants = 100'000;
    int count = 0;
    std::uintptr_t low = UINTPTR_MAX;
    std::uintptr_t high = 0;
    std::vector<std::thread::id> threads;
    std::function<void(std::error_code, Access)> on_grant = [&](std::error_code ec, Access a) {
        int marker = 0;
        const auto here = reinterpret_cast<std::uintptr_t>(&marker);
        low = std::min(low, here);
        high = std::max(high, here);
        if (ec) return;
        if (threads.empty() || threads.back() != std::this_thread::get_id()) threads.push_back(std::this_thread::get_id());
        if (++count == kGrants) return;
        const SimTime next = a.granted_time() + 1ms;
        a.release(next);
        system.async_request_access(next, run_inline(std::ref(on_grant)));
    };
    system.async_request_access(ms(0), run_inline(std::ref(on_grant)));
    // A lone inline system: this thread steps and runs it, 100000 times over,
    // all before the first call returns, at a constant stack depth.
    CHECK(count == kGrants);
    CHECK(world.steps() == kGrants - 1);
    CHECK(high - low < 64 * 1024);
    CHECK(threads == std::vector<std::thread::id>{std::this_thread::get_id()});
}

TEST_CASE("Async.Inline.RunsOnTheThreadThatSteps" * doctest::timeout(30))
{
    CountingWorld world;
    SimSyncHandler handler(world, quiet({.step = 1ms}));
    auto controller = handler.register_accessor("controller", {.priority = 1});
    auto sensor = handler.register_accessor("sensor", {.mode = AccessMode::shared});
    std::vector<std::pair<SimTime, std::thread::id>> sensor_grants;
    std::function<void(std::error_code, Access)> on_grant = [&](std::error_code ec, Access a) {
        if (ec) return;
        sensor_grants.emplace_back(a.granted_time(), std::this_thread::get_id());
        const SimTime next = a.granted_time() + 2ms;
        a.release(next);
        if (next <= ms(10)) sensor.async_request_access(next, on_grant);
    };
    sensor.async_request_access(ms(0), on_grant); // held back: the controller is ahead at 0
    CHECK(sensor_grants.empty());
    std::thread::id controller_thread;
    std::thread t([&] {
        controller_thread = std::this_thread::get_id();
        for (int n = 0; n <= 2; ++n) {
            Access a = controller.request_access(ms(5 * n));
            a.release(ms(5 * (n + 1)));
        }
        controller.deregister();
    });
    t.join();
    // The controller's thread made every sensor grant possible, so it ran them.
    std::vector<SimTime> times;
    for (const auto& [time, thread] : sensor_grants) {
        times.push_back(time);
        CHECK(thread == controller_thread);
    }
    CHECK(times == std::vector<SimTime>{ms(0), ms(2), ms(4), ms(6), ms(8), ms(10)});
}

TEST_CASE("Async.Inline.AnAccessMovedToAnotherThreadIsNotTheSteppingThreads" * doctest::timeout(30))
{
    // handler.hpp: wait_until_paused is refused only inside the caller's own
    // access. An inline system that hands its Access to another thread (a
    // mailbox, a strand) leaves the thread that ran it outside that access:
    // that thread may wait for the quiet, which comes with the release.
    CountingWorld world;
    SimSyncHandler handler(world, quiet({.step = 1ms, .start_paused = true}));
    auto holder = handler.register_accessor("holder");
    std::promise<Access> handed;
    std::atomic<bool> released{false};
    holder.async_request_access(ms(0), simsync::run_inline([&](std::error_code ec, Access a) {
        if (!ec) handed.set_value(std::move(a));
    }));
    std::future<Access> mailbox = handed.get_future();
    std::thread worker([&] {
        Access a = mailbox.get();
        released = true;
        a.release();
    });
    bool quiet_reached = false;
    bool refused = false;
    try {
        quiet_reached = handler.wait_until_paused(WallClock::now() + 20s);
    } catch (const Error&) {
        refused = true;
    }
    const bool released_before_quiet = released.load();
    worker.join();
    CHECK_FALSE(refused);
    CHECK(quiet_reached);
    CHECK(released_before_quiet);
}

TEST_CASE("Async.Inline.HostModeRunsThemOnTheHostThread" * doctest::timeout(30))
{
    ThreadRecordingWorld world;
    SimSyncHandler handler(world, quiet({.step = 1ms, .step_thread = StepThread::host}));
    auto system = handler.register_accessor("system");
    std::vector<std::thread::id> ran_on;
    std::function<void(std::error_code, Access)> on_grant = [&](std::error_code ec, Access a) {
        if (ec) return;
        ran_on.push_back(std::this_thread::get_id());
        const SimTime next = a.granted_time() + 1ms;
        a.release(next);
        if (next <= ms(20)) {
            system.async_request_access(next, on_grant);
        } else {
            handler.stop();
        }
    };
    // Made on this thread before the host runs: still run by the host.
    system.async_request_access(ms(0), on_grant);
    CHECK(ran_on.empty());
    std::thread host([&] { handler.run(); });
    const auto host_id = host.get_id();
    host.join();
    REQUIRE(ran_on.size() == 21);
    CHECK(std::all_of(ran_on.begin(), ran_on.end(), [&](std::thread::id id) { return id == host_id; }));
    CHECK(world.threads() == std::set<std::thread::id>{host_id});
}

TEST_CASE("Async.Inline.ThrowingSystemStopsTheSimulation" * doctest::timeout(30))
{
    CountingWorld world;
    SimSyncHandler handler(world, quiet({.step = 1ms}));
    auto system = handler.register_accessor("system");
    auto other = handler.register_accessor("other", {.kind = AccessorKind::free});
    system.async_request_access(ms(2), [](std::error_code, Access) { throw std::runtime_error("system broke"); });
    CHECK(handler.state() == HandlerState::stopped);
    REQUIRE(handler.failure());
    CHECK_THROWS_WITH_AS(std::rethrow_exception(handler.failure()), "system broke", std::runtime_error);
    CHECK(other.request_access(ms(3)).error() == errc::world_failed);
}

TEST_CASE("Async.Cancel.SlotWithdrawsThePendingRequest" * doctest::timeout(30))
{
    CountingWorld world;
    SimSyncHandler handler(world, quiet({.step = 1ms}));
    auto blocker = handler.register_accessor("blocker"); // holds time at 0
    auto sensor = handler.register_accessor("sensor");
    asio::io_context io;
    asio::cancellation_signal signal;
    std::optional<std::error_code> result;
    sensor.async_request_access(ms(4), asio::bind_cancellation_slot(signal.slot(), asio::bind_executor(io, [&](std::error_code ec, Access a) {
                                                                       result = ec;
                                                                       CHECK_FALSE(a);
                                                                   })));
    CHECK(io.poll() == 0); // pending: nothing to run yet
    CHECK(is_waiting(handler, "sensor"));
    signal.emit(asio::cancellation_type::terminal);
    io.run();
    REQUIRE(result.has_value());
    CHECK(*result == errc::cancelled);
    // Like a timeout: the lockstep accessor still holds time where it asked.
    const Snapshot snap = handler.snapshot();
    const AccessorStatus* st = find_status(snap, "sensor");
    REQUIRE(st != nullptr);
    CHECK(st->activity == AccessorStatus::Activity::idle);
    CHECK(st->time == ms(4));
    // A late emission after completion is harmless.
    signal.emit(asio::cancellation_type::terminal);
}

// An inline system re-arming through one cancellation slot: its first grant
// completes inside the initiating call and asks again from there. The slot
// must then withdraw the request that is pending, not the finished one.
TEST_CASE("Async.Cancel.SlotOfAReArmingInlineSystemWithdrawsItsLiveRequest" * doctest::timeout(30))
{
    CountingWorld world;
    SimSyncHandler handler(world, quiet({.step = 1ms}));
    auto system = handler.register_accessor("system");
    auto blocker = handler.register_accessor("blocker"); // holds time at 0 after the system's first grant
    asio::cancellation_signal signal;
    std::vector<std::pair<SimTime, std::error_code>> seen; // this thread only: all inline, here
    std::function<void(std::error_code, Access)> on_grant = [&](std::error_code ec, Access a) {
        seen.emplace_back(a ? a.granted_time() : SimTime{}, ec);
        if (ec) return;
        a.release();
        system.async_request_access(ms(5), asio::bind_cancellation_slot(signal.slot(), run_inline(on_grant)));
    };
    // Granted at once (time is 0 and nobody is ahead), inside this call.
    system.async_request_access(ms(0), asio::bind_cancellation_slot(signal.slot(), run_inline(on_grant)));
    REQUIRE(seen.size() == 1);
    CHECK(seen[0] == std::pair<SimTime, std::error_code>{ms(0), {}});
    CHECK(is_waiting(handler, "system")); // for 5 ms, behind the blocker at 0
    signal.emit(asio::cancellation_type::terminal);
    REQUIRE(seen.size() == 2); // the cancelled completion runs inline, on the emitting thread
    CHECK(seen[1].second == errc::cancelled);
    CHECK_FALSE(is_waiting(handler, "system"));
}

TEST_CASE("Async.Refusals.DeregisterAndStopEndPendingRequests" * doctest::timeout(30))
{
    CountingWorld world;
    SimSyncHandler handler(world, quiet({.step = 1ms}));
    auto blocker = handler.register_accessor("blocker");
    auto a = handler.register_accessor("a");
    auto b = handler.register_accessor("b");
    asio::io_context io;
    std::vector<std::pair<std::string, std::error_code>> results;
    auto record = [&](std::string name) {
        return asio::bind_executor(io, [&, name](std::error_code ec, Access) { results.emplace_back(name, ec); });
    };
    a.async_request_access(ms(3), record("a"));
    b.async_request_access(ms(3), record("b"));
    CHECK_THROWS_AS(b.async_request_access(ms(4), record("b2")), Error); // busy: one request at a time
    a.deregister();
    handler.stop();
    io.run();
    REQUIRE(results.size() == 2);
    CHECK(results[0] == std::pair<std::string, std::error_code>{"a", errc::not_registered});
    CHECK(results[1] == std::pair<std::string, std::error_code>{"b", errc::stopped});
}

TEST_CASE("Async.Duty.UnstartedDutyIsNamedAndHandedBackWithoutLosingAWaiter" * doctest::timeout(30))
{
    // Issue 10 point 3, made deterministic: the step duty goes to a request
    // whose executor does not run, so it stays unstarted for as long as we like.
    CountingWorld world;
    SimSyncHandler handler(world, quiet({.step = 1ms, .start_paused = true}));
    auto sleepy = handler.register_accessor("sleepy");
    asio::io_context io; // never run while the duty is pending
    sleepy.async_request_access(ms(3), asio::bind_executor(io, [](std::error_code, Access) {}));
    handler.resume(); // the duty is posted to io
    CHECK(handler.snapshot().waiting_for == std::vector<std::string>{"sleepy"});
    handler.pause();
    std::atomic<bool> returned{false};
    bool quiet_result = false;
    std::thread waiter([&] {
        quiet_result = handler.wait_until_paused(WallTime::max());
        returned = true;
    });
    // Not quiet: a step duty is out. The revoke hands it back and must wake the waiter.
    (void)eventually([&] { return returned.load(); }, 100ms);
    const bool returned_before_revoke = returned.load();
    handler.revoke("sleepy");
    waiter.join();
    CHECK_FALSE(returned_before_revoke);
    CHECK(quiet_result);
    io.run(); // the stale duty and the refusal run now, harmlessly
    CHECK(world.steps() == 0);
}

TEST_CASE("Async.Duty.PostedToALoopThatIsGoneIsHandedBack" * doctest::timeout(60))
{
    // A step duty posted to an executor whose loop is gone is dropped by the
    // executor (LoopExecutor). The duty must come back and be carried by
    // another thread; before the fix stepping stayed claimed and the
    // simulation stalled for good (the other accessor timed out).
    CountingWorld world;
    SimSyncHandler handler(world, quiet({.step = 1ms, .start_paused = true}));
    auto orphan = handler.register_accessor("orphan", {.kind = AccessorKind::free});
    auto other = handler.register_accessor("other", {.kind = AccessorKind::free});
    auto loop = std::make_unique<EventLoop>();
    const LoopExecutor dead = asio_executor(loop->executor());
    loop.reset();
    std::atomic<int> orphan_completions{0};
    orphan.async_request_access(ms(5), asio::bind_executor(dead, [&](std::error_code, Access) {
                                    ++orphan_completions; // never: the loop is gone
                                }));
    Outcome outcome;
    std::thread t([&] { outcome = Outcome::of(other.request_access_for(ms(10), 10s)); });
    REQUIRE(eventually([&] { return is_waiting(handler, "other"); }));
    handler.resume(); // the duty goes to the orphan's executor first: it is the earliest
    t.join();
    CHECK(outcome.granted);
    CHECK(outcome.at == ms(10));
    CHECK(orphan_completions.load() == 0);
    const Snapshot snap = handler.snapshot();
    const AccessorStatus* status = find_status(snap, "orphan");
    REQUIRE(status != nullptr);
    CHECK(status->grants == 1); // granted at 5 ms; its completion was dropped with the loop, releasing it
    CHECK(status->activity == AccessorStatus::Activity::idle);
}

TEST_CASE("Async.Duty.ADroppedGrantDoesNotStallTheThreadThatDeliveredIt" * doctest::timeout(30))
{
    // Found by the spin model (tests/spin, SEED_NO_RECHECK): a's thread steps
    // to 1 ms and grants c, whose completion goes to a loop that is gone; the
    // dropped Access releases on a's thread, which makes a's own grant (or
    // duty) possible there, where wake() does not reach. a must look again
    // instead of sleeping until its deadline (before: 5 s, then timed out).
    GatedWorld world;
    SimSyncHandler handler(world, quiet({.step = 1ms, .stall_timeout = {}}));
    auto c = handler.register_accessor("c", {.kind = AccessorKind::free});
    auto a = handler.register_accessor("a", {.kind = AccessorKind::free});
    auto loop = std::make_unique<EventLoop>();
    Outcome outcome;
    WallClock::duration took{};
    std::thread requester([&] {
        const auto start = WallClock::now();
        outcome = Outcome::of(a.request_access_for(ms(2), 5s));
        took = WallClock::now() - start;
    });
    REQUIRE(world.wait_entered(1)); // a's thread steps 0 -> 1 ms
    c.async_request_access(ms(1), asio::bind_executor(asio_executor(loop->executor()), [](std::error_code, Access) {}));
    loop.reset();
    world.open();
    requester.join();
    CHECK(outcome.granted);
    CHECK(took < 4s); // not the whole deadline
}

TEST_CASE("Async.Executor.CompletionThatHoldsItsAccessIsItsHolder" * doctest::timeout(60))
{
    // handler.hpp: wait_until_paused refuses at once on a thread that holds an
    // access. An executor completion holding its Access is such a thread
    // (before the fix it waited for the whole deadline and returned false).
    CountingWorld world;
    SimSyncHandler handler(world, quiet({.step = 1ms, .start_paused = true}));
    auto a = handler.register_accessor("a");
    IoThread io;
    std::promise<std::pair<std::optional<errc>, WallClock::duration>> result;
    a.async_request_access(ms(0), asio::bind_executor(io.io, [&](std::error_code, Access access) {
                               const auto started = WallClock::now();
                               std::optional<errc> code;
                               try {
                                   (void)handler.wait_until_paused(WallClock::now() + 1500ms);
                               } catch (const Error& e) {
                                   code = static_cast<errc>(e.code().value());
                               }
                               access.release();
                               result.set_value({code, WallClock::now() - started});
                           }));
    auto future = result.get_future();
    REQUIRE(future.wait_for(30s) == std::future_status::ready);
    const auto [code, took] = future.get();
    REQUIRE(code.has_value());
    CHECK(*code == errc::invalid_state);
    CHECK(took < 1500ms); // refused, not timed out
    // The same thread is no holder once the completion has returned.
    std::promise<bool> later;
    asio::post(io.io, [&] { later.set_value(handler.wait_until_paused(WallClock::now() + 10s)); });
    CHECK(later.get_future().get());
}

TEST_CASE("Async.Executor.HandlerDestroyedWithAGrantQueuedInAStoppedContext" * doctest::timeout(60))
{
    // A grant whose completion waits in an io_context that does not run: the
    // handler's destructor must not wait for it (before the fix it hung). The
    // completion, when the context runs later, is told `stopped`.
    CountingWorld world;
    auto handler = std::make_unique<SimSyncHandler>(world, quiet({.step = 1ms}));
    auto a = handler->register_accessor("a");
    asio::io_context io; // not running
    std::vector<std::pair<std::error_code, bool>> completions;
    a.async_request_access(ms(0), asio::bind_executor(io, [&](std::error_code error, Access access) {
                               completions.emplace_back(error, static_cast<bool>(access));
                           }));
    CHECK(handler->snapshot().accessors.at(0).activity == AccessorStatus::Activity::holding);
    std::promise<void> destroyed;
    std::thread destroyer([&] {
        handler.reset();
        destroyed.set_value();
    });
    const bool ended = destroyed.get_future().wait_for(10s) == std::future_status::ready;
    if (!ended) {
        io.run(); // let the stuck destructor go, so the test can end and report
    }
    destroyer.join();
    REQUIRE(ended);
    io.run();
    REQUIRE(completions.size() == 1);
    CHECK(completions[0].first == errc::stopped);
    CHECK_FALSE(completions[0].second);
}

TEST_CASE("Async.Revoke.AGrantRevokedBeforeItsCompletionRunsArrivesAsNotRegistered" * doctest::timeout(60))
{
    // accessor.hpp: the completion's error is empty when the access is granted,
    // else the refusal. A grant whose completion still waits in its executor
    // when an operator revokes the accessor is no longer granted: it must
    // arrive as not_registered (the revoke's refusal of a waiting request), not
    // as an empty error with an Access that converts to false (before the fix;
    // the periodic timer then ended with no reason).
    CountingWorld world;
    SimSyncHandler handler(world, quiet({.step = 1ms}));
    auto a = handler.register_accessor("a");
    asio::io_context io; // runs only after the revoke
    std::vector<std::tuple<std::error_code, bool, std::error_code, bool>> completions;
    a.async_request_access(ms(0), asio::bind_executor(io, [&](std::error_code error, Access access) {
                               completions.emplace_back(error, static_cast<bool>(access), access.error(),
                                                        access.revoked());
                           }));
    REQUIRE(handler.snapshot().accessors.at(0).activity == AccessorStatus::Activity::holding);
    REQUIRE(handler.revoke("a"));
    io.run();
    REQUIRE(completions.size() == 1);
    const auto [error, held, access_error, revoked] = completions[0];
    CHECK(error == errc::not_registered);
    CHECK_FALSE(held);
    CHECK(access_error == errc::not_registered);
    CHECK_FALSE(revoked); // nothing is held any more
    // Time is not held by the revoked accessor: another one goes on.
    auto b = handler.register_accessor("b");
    CHECK(b.request_access(ms(5)));
}

TEST_CASE("Async.Mix.FourStylesFollowTheOneOrder" * doctest::timeout(60))
{
    // Four lockstep accessors at 1 kHz, one of each style, with distinct
    // priorities; the contract (handler.hpp): at each instant by priority, then
    // registration order, whatever the style.
    CountingWorld world;
    SimSyncHandler handler(world, quiet({.step = 1ms}));
    constexpr int kInstants = 200;
    std::mutex mutex;
    std::vector<std::pair<std::int64_t, std::string>> order; // (sequence, name)
    auto note = [&](const Access& a, const char* name) {
        std::lock_guard<std::mutex> lock(mutex);
        order.emplace_back(static_cast<std::int64_t>(a.sequence()), name);
    };
    auto blocking = handler.register_accessor("blocking", {.priority = 1});
    auto callback = handler.register_accessor("callback", {.priority = 4});
    auto coroutine = handler.register_accessor("coroutine", {.priority = 3});
    auto system = handler.register_accessor("inline", {.priority = 2});

    IoThread io_a;
    IoThread io_b;
    std::function<void(std::error_code, Access)> on_callback = [&](std::error_code ec, Access a) {
        if (ec) return;
        note(a, "callback");
        const SimTime next = a.granted_time() + 1ms;
        a.release(next);
        if (next < ms(kInstants)) callback.async_request_access(next, asio::bind_executor(io_a.io, on_callback));
    };
    std::function<void(std::error_code, Access)> on_inline = [&](std::error_code ec, Access a) {
        if (ec) return;
        note(a, "inline");
        const SimTime next = a.granted_time() + 1ms;
        a.release(next);
        if (next < ms(kInstants)) system.async_request_access(next, on_inline);
    };
    std::promise<void> coroutine_done;
    asio::co_spawn(
        io_b.io,
        [&]() -> asio::awaitable<void> {
            for (int n = 0; n < kInstants; ++n) {
                auto [ec, a] = co_await coroutine.async_request_access(ms(n), asio::use_awaitable);
                if (ec) co_return;
                note(a, "coroutine");
                a.release(ms(n + 1));
            }
        },
        [&](std::exception_ptr) { coroutine_done.set_value(); });
    callback.async_request_access(ms(0), asio::bind_executor(io_a.io, on_callback));
    system.async_request_access(ms(0), on_inline);
    std::thread blocking_thread([&] {
        for (int n = 0; n < kInstants; ++n) {
            Access a = blocking.request_access(ms(n));
            if (!a) break;
            note(a, "blocking");
            a.release(ms(n + 1));
        }
    });
    blocking_thread.join();
    coroutine_done.get_future().wait();
    REQUIRE(eventually([&] {
        std::lock_guard<std::mutex> lock(mutex);
        return order.size() == 4u * kInstants;
    }));
    std::sort(order.begin(), order.end());
    std::vector<std::string> expected;
    for (int n = 0; n < kInstants; ++n) {
        for (const char* name : {"callback", "coroutine", "inline", "blocking"}) expected.emplace_back(name);
    }
    std::vector<std::string> names;
    for (std::size_t i = 0; i < order.size(); ++i) {
        CHECK(order[i].first == static_cast<std::int64_t>(i)); // sequence numbers 0, 1, 2, ... without gaps
        names.push_back(order[i].second);
    }
    CHECK(names == expected);
}

TEST_CASE("Events.Subscription.OrderedAcrossThreads" * doctest::timeout(60))
{
    CountingWorld world;
    SimSyncHandler handler(world, quiet({.step = 1ms}));
    // Holds time at 0, so operator actions change state but nobody steps.
    auto holder = handler.register_accessor("holder");
    std::vector<std::uint64_t> generations; // touched by the callback only: one at a time by contract
    std::atomic<int> concurrent{0};
    std::atomic<int> overlaps{0};
    Subscription sub = handler.subscribe([&](const HandlerEvent& e) {
        if (concurrent.fetch_add(1) != 0) ++overlaps;
        generations.push_back(e.generation);
        concurrent.fetch_sub(1);
    });
    const auto g0 = handler.run_generation();
    constexpr int kThreads = 4;
    constexpr int kActions = 2000;
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < kActions; ++i) {
                if ((i + t) % 2 == 0) handler.pause();
                else handler.resume();
            }
        });
    }
    for (auto& t : threads) t.join();
    sub.reset(); // waits for a callback running elsewhere
    CHECK(overlaps.load() == 0);
    REQUIRE(generations.size() == static_cast<std::size_t>(kThreads * kActions));
    bool in_order = true;
    for (std::size_t i = 0; i < generations.size(); ++i) in_order = in_order && generations[i] == g0 + i + 1;
    CHECK(in_order);
}
