// One operation per step (accessor.hpp): release_and_request, its asynchronous
// form, and persistent inline systems (run_system). Their order and determinism
// are checked against the reference model by test_determinism's drivers; here,
// their own promises: what they refuse, how a system ends, which thread runs
// it, and that going from one grant to the next allocates nothing once warm.

#include "support.hpp"

#include <simsync/core/asio.hpp>

#include <doctest/doctest.h>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/io_context.hpp>

#include <atomic>
#include <cstdlib>
#include <new>
#include <optional>
#include <thread>
#include <vector>

using namespace simsync;
using namespace simsync::test;
namespace asio = boost::asio;

// Counts the allocations of this test program (every thread): the steady
// state of an accessor that always asks again must make none. (GCC takes the
// replacement's free() of what it malloc'ed for a mismatch once inlined.)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
namespace {
std::atomic<std::uint64_t> g_allocations{0};
} // namespace

void* operator new(std::size_t size)
{
    g_allocations.fetch_add(1, std::memory_order_relaxed);
    if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
    throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace {

HandlerConfig quiet(HandlerConfig config = {})
{
    config.diagnostics = [](const Diagnostic&) {};
    config.stall_timeout = {}; // no watchdog thread: nothing else allocates meanwhile
    return config;
}

} // namespace

// ------------------------------------------------------------- blocking

TEST_CASE("Fused.Blocking.GoesFromOneAccessToTheNext" * doctest::timeout(30))
{
    CountingWorld world;
    SimSyncHandler handler(world, quiet({.step = 1ms}));
    auto a = handler.register_accessor("a");
    std::vector<SimTime> granted;
    Access access = a.request_access(ms(0));
    for (int n = 1; n <= 5 && access; ++n) {
        granted.push_back(access.granted_time());
        access = a.release_and_request(std::move(access), ms(n * 3));
    }
    CHECK(granted == std::vector<SimTime>{ms(0), ms(3), ms(6), ms(9), ms(12)});
    CHECK(access.granted_time() == ms(15));
    CHECK(world.steps() == 15);
}

TEST_CASE("Fused.Blocking.BadInputThrowsAndKeepsTheAccess" * doctest::timeout(30))
{
    CountingWorld world;
    SimSyncHandler handler(world, quiet({.step = 1ms}));
    auto a = handler.register_accessor("a");
    auto b = handler.register_accessor("b", {.kind = AccessorKind::free});
    Access access = a.request_access(ms(2));
    REQUIRE(access);
    CHECK_THROWS_AS(a.release_and_request(std::move(access), ms(1)), Error); // before the granted time
    CHECK(access);
    CHECK(a.registered());
    CHECK_THROWS_AS(b.release_and_request(std::move(access), ms(3)), Error); // another accessor's access
    CHECK(access);
    Access next = a.release_and_request(std::move(access), ms(3));
    CHECK_FALSE(access);
    CHECK(next.granted_time() == ms(3));
}

TEST_CASE("Fused.Blocking.AnEmptyOrRevokedAccessIsAPlainRequest" * doctest::timeout(30))
{
    CountingWorld world;
    SimSyncHandler handler(world, quiet({.step = 1ms}));
    auto a = handler.register_accessor("a");
    Access next = a.release_and_request(Access{}, ms(4));
    CHECK(next.granted_time() == ms(4));
    next.release();
    Access other = a.release_and_request(std::move(next), ms(5)); // released already: nothing to release
    CHECK(other.granted_time() == ms(5));
}

TEST_CASE("Fused.Blocking.TwoThreadsHandEachOtherReadyMadeGrants" * doctest::timeout(60))
{
    // Alternating instants on two threads: each release_and_request steps the
    // world for the other and grants it. Every grant arrives in order.
    CountingWorld world;
    SimSyncHandler handler(world, quiet({.step = 1ms}));
    auto even = handler.register_accessor("even", {.first_request = ms(0)});
    auto odd = handler.register_accessor("odd", {.first_request = ms(1)});
    constexpr int kRounds = 2000;
    std::vector<SimTime> odd_granted;
    std::thread partner([&] {
        Access a = odd.request_access(ms(1));
        for (int n = 0; n < kRounds && a; ++n) {
            odd_granted.push_back(a.granted_time());
            a = odd.release_and_request(std::move(a), a.granted_time() + 2ms);
        }
        odd.deregister();
    });
    std::vector<SimTime> even_granted;
    Access a = even.request_access(ms(0));
    for (int n = 0; n < kRounds && a; ++n) {
        even_granted.push_back(a.granted_time());
        a = even.release_and_request(std::move(a), a.granted_time() + 2ms);
    }
    a.release();
    even.deregister();
    partner.join();
    REQUIRE(even_granted.size() == kRounds);
    REQUIRE(odd_granted.size() == kRounds);
    bool in_order = true;
    for (int n = 0; n < kRounds; ++n) {
        in_order = in_order && even_granted[n] == ms(2 * n) && odd_granted[n] == ms(2 * n + 1);
    }
    CHECK(in_order);
}

// ----------------------------------------------------------- asynchronous

TEST_CASE("Fused.Async.OneCompletionPerGrantAndNoAllocationOnceWarm" * doctest::timeout(30))
{
    CountingWorld world;
    SimSyncHandler handler(world, quiet({.step = 1ms}));
    auto a = handler.register_accessor("a");
    constexpr int kGrants = 1000;
    int completions = 0;
    std::uint64_t allocations_at_100 = 0, allocations_at_end = 0;
    std::function<void(std::error_code, Access)> on_grant = [&](std::error_code e, Access access) {
        if (e) return;
        ++completions;
        if (completions == 100) allocations_at_100 = g_allocations.load();
        if (completions == kGrants) {
            allocations_at_end = g_allocations.load();
            return; // released on the way out
        }
        a.async_release_and_request(std::move(access), access.granted_time() + 1ms, run_inline(std::ref(on_grant)));
    };
    a.async_request_access(ms(0), run_inline(std::ref(on_grant)));
    CHECK(completions == kGrants);
    CHECK(world.steps() == kGrants - 1);
    CHECK(allocations_at_end - allocations_at_100 == 0);
}

TEST_CASE("Fused.Async.OnAnExecutorKeepsTheOrder" * doctest::timeout(30))
{
    CountingWorld world;
    SimSyncHandler handler(world, quiet({.step = 1ms, .start_paused = true}));
    auto a = handler.register_accessor("a");
    asio::io_context io;
    std::vector<SimTime> granted;
    std::function<void(std::error_code, Access)> on_grant = [&](std::error_code e, Access access) {
        if (e) return;
        granted.push_back(access.granted_time());
        if (granted.size() == 10) return;
        a.async_release_and_request(std::move(access), access.granted_time() + 5ms,
                                    asio::bind_executor(io, [&](std::error_code code, Access x) { on_grant(code, std::move(x)); }));
    };
    a.async_request_access(ms(0), asio::bind_executor(io, [&](std::error_code code, Access x) { on_grant(code, std::move(x)); }));
    handler.resume();
    io.run();
    REQUIRE(granted.size() == 10);
    CHECK(granted.front() == ms(0));
    CHECK(granted.back() == ms(45));
}

// ------------------------------------------------------- persistent systems

TEST_CASE("System.Calls.EachInstantOnTheSteppingThread" * doctest::timeout(30))
{
    CountingWorld world;
    SimSyncHandler handler(world, quiet({.step = 1ms, .start_paused = true}));
    auto sys = handler.register_accessor("sys");
    std::vector<std::pair<SimTime, std::uint64_t>> calls; // granted, world steps inside
    std::vector<std::thread::id> threads;
    sys.run_system(ms(0), [&](Access& a) -> std::optional<SimTime> {
        calls.emplace_back(a.granted_time(), a.world_as<CountingWorld>().steps());
        threads.push_back(std::this_thread::get_id());
        if (calls.size() == 5) return std::nullopt;
        return a.granted_time() + 10ms;
    });
    REQUIRE(calls.size() == 1); // at 0: now, on this thread
    handler.run_until(ms(40));
    REQUIRE(handler.wait_until_paused(WallClock::now() + 10s));
    REQUIRE(calls.size() == 5);
    for (std::size_t n = 0; n < calls.size(); ++n) {
        CHECK(calls[n].first == ms(10 * static_cast<std::int64_t>(n)));
        CHECK(calls[n].second == 10 * n); // right after the step that reaches it
        CHECK(threads[n] == std::this_thread::get_id()); // the operator's thread stepped
    }
    // Ended by std::nullopt: released as release(), idle, still registered.
    const Snapshot snap = handler.snapshot();
    const AccessorStatus* status = find_status(snap, "sys");
    REQUIRE(status != nullptr);
    CHECK(status->activity == AccessorStatus::Activity::idle);
    CHECK(status->time == ms(40)); // its bound: granted + lookahead 0
    CHECK(sys.registered());
}

TEST_CASE("System.End.OneLastCallSaysWhy" * doctest::timeout(30))
{
    for (const char* how : {"stop", "deregister", "revoke", "time_passed"}) {
        CAPTURE(how);
        CountingWorld world;
        SimSyncHandler handler(world, quiet({.step = 1ms}));
        auto sys = handler.register_accessor("sys", {.kind = AccessorKind::free});
        auto holder = handler.register_accessor("holder", {.first_request = ms(0)}); // holds time at 0
        std::vector<std::error_code> ends;
        int granted = 0;
        const std::string what = how;
        const SimTime first = what == "time_passed" ? ms(0) : ms(5);
        if (what == "time_passed") {
            holder.deregister();
            handler.run_until(ms(3));
            REQUIRE(handler.wait_until_paused(WallClock::now() + 10s));
        }
        sys.run_system(first, [&](Access& a) -> std::optional<SimTime> {
            if (!a) {
                ends.push_back(a.error());
                return ms(1000); // ignored
            }
            ++granted;
            return a.granted_time() + 1ms;
        });
        if (what == "stop") handler.stop();
        if (what == "deregister") sys.deregister();
        if (what == "revoke") CHECK(handler.revoke("sys"));
        REQUIRE(ends.size() == 1);
        CHECK(granted == 0);
        const errc expected = what == "stop"          ? errc::stopped
                              : what == "time_passed" ? errc::time_passed
                                                      : errc::not_registered;
        CHECK(ends[0] == expected);
    }
}

TEST_CASE("System.Failure.AnExceptionOrABadNextTimeStopsTheHandler" * doctest::timeout(30))
{
    for (const bool bad_time : {false, true}) {
        CAPTURE(bad_time);
        CountingWorld world;
        SimSyncHandler handler(world, quiet({.step = 1ms}));
        auto sys = handler.register_accessor("sys");
        int calls = 0;
        sys.run_system(ms(2), [&](Access& a) -> std::optional<SimTime> {
            ++calls;
            if (!a) return std::nullopt;
            if (!bad_time) throw std::runtime_error("the system failed");
            return a.granted_time() - 1ms;
        });
        handler.run_until(ms(10));
        CHECK(handler.state() == HandlerState::stopped);
        CHECK(calls == 1);
        REQUIRE(handler.failure());
        CHECK_THROWS(std::rethrow_exception(handler.failure()));
    }
}

TEST_CASE("System.Host.RunsOnTheHostThread" * doctest::timeout(30))
{
    CountingWorld world;
    SimSyncHandler handler(world, quiet({.step = 1ms, .step_thread = StepThread::host}));
    auto sys = handler.register_accessor("sys", {.kind = AccessorKind::free});
    std::vector<std::thread::id> threads;
    std::thread host([&] { handler.run(); });
    const std::thread::id host_id = host.get_id();
    sys.run_system(ms(0), [&](Access& a) -> std::optional<SimTime> {
        threads.push_back(std::this_thread::get_id());
        if (threads.size() == 20) return std::nullopt;
        return a.granted_time() + 1ms;
    });
    auto watcher = handler.register_accessor("watcher", {.kind = AccessorKind::free});
    Access seen = watcher.request_access(ms(30));
    CHECK(seen);
    seen.release();
    handler.stop();
    host.join();
    REQUIRE(threads.size() == 20);
    bool all_host = true;
    for (const auto& id : threads) all_host = all_host && id == host_id;
    CHECK(all_host);
}

TEST_CASE("System.Calls.NoAllocationPerCallOnceWarm" * doctest::timeout(30))
{
    CountingWorld world;
    SimSyncHandler handler(world, quiet({.step = 1ms, .start_paused = true}));
    auto sys = handler.register_accessor("sys");
    std::uint64_t at_100 = 0, at_1000 = 0;
    int calls = 0;
    sys.run_system(ms(0), [&](Access& a) -> std::optional<SimTime> {
        ++calls;
        if (calls == 100) at_100 = g_allocations.load();
        if (calls == 1000) {
            at_1000 = g_allocations.load();
            return std::nullopt;
        }
        return a.granted_time() + 1ms;
    });
    handler.run_until(ms(999));
    REQUIRE(handler.wait_until_paused(WallClock::now() + 10s));
    CHECK(calls == 1000);
    CHECK(at_1000 - at_100 == 0);
}

TEST_CASE("System.Stress.SystemsAndThreadsShareTheStepsInOrder" * doctest::timeout(120))
{
    // Three systems at different rates and two fused blocking threads, all
    // lockstep: every grant in time order, each at its own instants.
    CountingWorld world;
    SimSyncHandler handler(world, quiet({.step = 1ms, .start_paused = true}));
    constexpr std::int64_t kEnd = 3000;
    std::vector<Accessor> systems;
    std::vector<std::vector<SimTime>> system_times(3);
    for (int k = 0; k < 3; ++k) {
        systems.push_back(handler.register_accessor("system" + std::to_string(k), {.first_request = ms(0)}));
    }
    for (int k = 0; k < 3; ++k) {
        const std::int64_t period = 2 + k;
        systems[k].run_system(ms(0), [&, k, period](Access& a) -> std::optional<SimTime> {
            system_times[k].push_back(a.granted_time());
            if (a.granted_time() + std::chrono::milliseconds(period) > ms(kEnd)) return std::nullopt;
            return a.granted_time() + std::chrono::milliseconds(period);
        });
    }
    std::vector<std::vector<SimTime>> thread_times(2);
    std::vector<std::thread> threads;
    for (int k = 0; k < 2; ++k) {
        threads.emplace_back([&, k, accessor = handler.register_accessor("thread" + std::to_string(k),
                                                                          {.first_request = ms(0)})]() mutable {
            const std::int64_t period = 3 + 2 * k;
            Access a = accessor.request_access(ms(0));
            while (a) {
                thread_times[k].push_back(a.granted_time());
                const SimTime next = a.granted_time() + std::chrono::milliseconds(period);
                if (next > ms(kEnd)) break;
                a = accessor.release_and_request(std::move(a), next);
            }
            a.release();
            accessor.deregister();
        });
    }
    handler.resume();
    for (auto& t : threads) t.join();
    for (auto& s : systems) s.deregister();
    for (int k = 0; k < 3; ++k) {
        const std::int64_t period = 2 + k;
        CHECK(system_times[k].size() == static_cast<std::size_t>(kEnd / period + 1));
        bool exact = true;
        for (std::size_t n = 0; n < system_times[k].size(); ++n) {
            exact = exact && system_times[k][n] == ms(static_cast<std::int64_t>(n) * period);
        }
        CHECK(exact);
    }
    for (int k = 0; k < 2; ++k) {
        const std::int64_t period = 3 + 2 * k;
        CHECK(thread_times[k].size() == static_cast<std::size_t>(kEnd / period + 1));
    }
}
