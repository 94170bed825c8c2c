// Stress: 8 accessor threads of every kind and mode race for the world while a
// 9th thread pauses, resumes, steps and runs-until at random. Invariants are
// checked inside every grant. SIMSYNC_STRESS_GRANTS sets the total (default
// 1,000,000; the sanitizer presets run fewer).
// Also: two accessors handing off between threads pinned to one CPU.
// Also: the clock publisher (an inline system with paused messages on an event
// loop) under an operator acting at random and a stop at a random moment.

#include "support.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include <pthread.h>
#include <sched.h>

using namespace simsync;
using namespace simsync::test;

namespace {

std::uint64_t total_grants()
{
    if (const char* v = std::getenv("SIMSYNC_STRESS_GRANTS")) return std::max<std::uint64_t>(1000, std::strtoull(v, nullptr, 10));
    return 1'000'000;
}

} // namespace

TEST_CASE("Stress.MixedAccessors.InvariantsHoldOnEveryGrant" * doctest::timeout(280))
{
    constexpr int kThreads = 8;
    const std::uint64_t quota = total_grants() / kThreads;
    const SimDuration step = 1ms;

    CountingWorld world;
    SimSyncHandler handler(world, {.step = step});
    std::vector<Accessor> accessors;
    for (int i = 0; i < kThreads; ++i) {
        accessors.push_back(handler.register_accessor(
            "acc" + std::to_string(i),
            {.kind = i < 6 ? AccessorKind::lockstep : AccessorKind::free,
             .mode = i % 2 == 0 ? AccessMode::exclusive : AccessMode::shared,
             .priority = i % 3}));
    }

    std::atomic<int> exclusive_inside{0};
    std::atomic<int> shared_inside{0};
    std::atomic<std::int64_t> last_granted_ns{0};
    std::atomic<std::uint64_t> violations{0};
    std::atomic<std::uint64_t> grants{0};
    std::atomic<std::uint64_t> refusals{0};
    std::atomic<std::uint64_t> exclusive_grants{0};
    std::atomic<std::uint64_t> shared_grants{0};
    std::atomic<int> finished{0};

    auto check = [&](bool ok) {
        if (!ok) ++violations;
    };

    Threads threads;
    for (int i = 0; i < kThreads; ++i) {
        threads.spawn([&, i] {
            std::mt19937 rng(static_cast<std::uint32_t>(1234 + i));
            Accessor& acc = accessors[static_cast<std::size_t>(i)];
            const bool lockstep = i < 6;
            // Lockstep periods of 1..4 steps; free accessors aim a little ahead of now.
            SimTime next = kSimStart;
            for (std::uint64_t done = 0; done < quota;) {
                const SimTime want = lockstep ? next : handler.now() + std::chrono::milliseconds(rng() % 3);
                Access a = acc.request_access(want);
                if (!a) {
                    check(!lockstep && a.error() == errc::time_passed);
                    ++refusals;
                    continue;
                }
                ++done;
                ++grants;
                const SimTime t = a.granted_time();
                // Time never decreases across grants.
                std::int64_t prev = last_granted_ns.load();
                while (prev < t.time_since_epoch().count() &&
                       !last_granted_ns.compare_exchange_weak(prev, t.time_since_epoch().count())) {
                }
                check(prev <= t.time_since_epoch().count());
                // The world was stepped exactly to the granted time.
                check(handler.now() == t);
                check(world.time() == t);
                check(world.steps() * static_cast<std::uint64_t>(step.count()) ==
                      static_cast<std::uint64_t>(t.time_since_epoch().count()));
                if (a.mode() == AccessMode::exclusive) {
                    check(++exclusive_inside == 1);
                    check(shared_inside.load() == 0);
                    ++exclusive_grants;
                    // A plain read-modify-write: two writers at once would lose one.
                    ++a.world_as<CountingWorld>().value;
                    check(exclusive_inside.load() == 1 && shared_inside.load() == 0);
                    --exclusive_inside;
                } else {
                    ++shared_inside;
                    ++shared_grants;
                    check(exclusive_inside.load() == 0);
                    check(a.world_as<CountingWorld>().value >= 0); // readers read, never write
                    --shared_inside;
                }
                if (lockstep) {
                    next = t + static_cast<std::int64_t>(1 + rng() % 4) * step;
                    a.release(next);
                } else {
                    a.release();
                }
            }
            acc.deregister();
            ++finished;
        });
    }
    threads.spawn([&] {
        std::mt19937 rng(99);
        while (finished.load() < kThreads) {
            switch (rng() % 5) {
            case 0: handler.pause(); break;
            case 1: handler.step(1 + rng() % 10); break;
            case 2: handler.run_until(handler.now() + std::chrono::milliseconds(rng() % 50)); break;
            default: handler.resume(); break;
            }
            const auto snap = handler.snapshot(); // diagnostics race with everything too
            check(snap.now <= handler.now());
            std::this_thread::sleep_for(std::chrono::microseconds(rng() % 200));
        }
        handler.resume();
    });
    threads.join();

    MESSAGE("grants=" << grants.load() << " refusals=" << refusals.load() << " sim_time=" << format_seconds(handler.now()));
    CHECK(violations.load() == 0);
    CHECK(grants.load() == quota * kThreads);
    CHECK(world.steps() == handler.steps());
    CHECK(exclusive_grants.load() + shared_grants.load() == grants.load());
    CHECK(exclusive_grants.load() > 0);
    CHECK(shared_grants.load() > 0);
    // Every exclusive grant wrote once, none lost to an overlapping writer.
    CHECK(world.value == static_cast<std::int64_t>(exclusive_grants.load()));
}

TEST_CASE("Stress.ClockPublisher.OperatorAndStopRaceTheTicks" * doctest::timeout(280))
{
    // Each round: a controller drives time step by step, an operator pauses,
    // resumes, steps, runs-until and moves the (manual) wall clock at random,
    // and the test thread stops the publisher at a random moment. Checked after
    // the threads are joined: consecutive sequence numbers, time never going
    // back, every tick once and in order, nothing published after stop().
    constexpr int kRounds = 12;
    const SimDuration period = 2ms;
    std::mt19937 rounds_rng(7);
    std::uint64_t total_messages = 0;
    std::uint64_t total_paused = 0;
    std::uint64_t total_actions = 0;
    for (int round = 0; round < kRounds; ++round) {
        CAPTURE(round);
        ManualWallClock wall;
        EventLoop loop(wall);
        CountingWorld world;
        SimSyncHandler handler(world, {.step = 1ms, .diagnostics = [](const Diagnostic&) {}});
        SimTimeSource source(handler);
        Accessor controller = handler.register_accessor("controller", {.first_request = SimTime{}});
        std::mutex mutex;
        std::vector<ClockMessage> messages; // from the stepping threads and the loop's
        ClockPublisher clock(handler, source, {.schedule = PeriodicSchedule::from_period(period), .paused_period = 1ms},
                             loop.executor());
        clock.add_callback([&](const ClockMessage& m) {
            std::lock_guard<std::mutex> guard(mutex);
            messages.push_back(m);
        });
        clock.start();

        std::atomic<bool> done{false};
        std::atomic<std::uint64_t> actions{0};
        Threads threads;
        threads.spawn([&] {
            for (std::int64_t k = 0;; ++k) {
                Access a = controller.request_access(ms(k));
                if (!a) return; // the handler stopped
                ++a.world_as<CountingWorld>().value;
                a.release(ms(k + 1));
            }
        });
        threads.spawn([&, seed = rounds_rng()] {
            std::mt19937 rng(seed);
            while (!done.load()) {
                switch (rng() % 6) {
                case 0: handler.pause(); break;
                case 1: handler.step(1 + rng() % 5); break;
                case 2: handler.run_until(handler.now() + std::chrono::milliseconds(rng() % 20)); break;
                case 3: wall.advance(std::chrono::microseconds(rng() % 3000)); break;
                default: handler.resume(); break;
                }
                ++actions;
                std::this_thread::sleep_for(std::chrono::microseconds(rng() % 200));
            }
        });
        // Stop at a random moment, while the operator keeps acting.
        const std::uint64_t stop_after = 50 + rounds_rng() % 250;
        const bool reached =
            eventually([&] { return actions.load() >= stop_after && clock.published() >= 20; }, 60s);
        clock.stop();
        const std::uint64_t at_stop = clock.published();
        // Deregistered at once (a tick granted just before may still be on its
        // way to its completion, which releases it: see after the join).
        const Snapshot after_stop = handler.snapshot();
        const AccessorStatus* status = find_status(after_stop, "clock");
        const bool deregistered = status == nullptr || !status->registered;
        // A little more of everything, then the end.
        const std::uint64_t steps_at_stop = handler.steps();
        eventually([&] { return handler.steps() >= steps_at_stop + 50; }, 10s);
        for (int i = 0; i < 5; ++i) wall.advance(1ms);
        done = true;
        handler.stop();
        threads.join();
        loop.executor().sync([] {}); // the loop's jobs so far have run

        CHECK(reached);
        CHECK(deregistered);
        const Snapshot at_end = handler.snapshot();
        CHECK(find_status(at_end, "clock") == nullptr);
        CHECK_FALSE(clock.running());
        CHECK(clock.published() == at_stop); // nothing after stop() returned
        CHECK(clock.sink_failures() == 0);
        std::lock_guard<std::mutex> guard(mutex);
        REQUIRE(messages.size() == at_stop);
        std::uint64_t bad_sequence = 0;
        std::uint64_t backwards = 0;
        std::uint64_t off_tick = 0;
        std::uint64_t repeated_tick = 0;
        SimTime last_time{};
        SimTime last_tick{SimTime::min()};
        std::set<std::int64_t> seen; // every instant published, ticks or frozen
        for (std::size_t i = 0; i < messages.size(); ++i) {
            const ClockMessage& m = messages[i];
            total_paused += m.paused ? 1 : 0;
            if (m.sequence != i) ++bad_sequence;
            if (m.sim_time < last_time) {
                if (backwards++ == 0) {
                    for (std::size_t j = i >= 4 ? i - 4 : 0; j < std::min(messages.size(), i + 3); ++j) {
                        MESSAGE("message " << j << ": " << format_seconds(messages[j].sim_time)
                                           << std::string(messages[j].paused ? " paused" : ""));
                    }
                }
            }
            last_time = m.sim_time;
            seen.insert(m.sim_time.time_since_epoch().count());
            if (!m.paused) { // made at a tick while running: on the schedule, each once
                if (m.sim_time.time_since_epoch() % period != SimDuration::zero()) ++off_tick;
                if (m.sim_time <= last_tick) ++repeated_tick;
                last_tick = m.sim_time;
            }
        }
        CHECK(bad_sequence == 0);
        CHECK(backwards == 0);
        CHECK(off_tick == 0);
        CHECK(repeated_tick == 0);
        // Ticks in order: up to the last running tick, every tick was published.
        std::uint64_t missing = 0;
        for (SimTime t{}; t <= last_tick; t += period) {
            if (!seen.contains(t.time_since_epoch().count())) ++missing;
        }
        CHECK(missing == 0);
        total_messages += messages.size();
        total_actions += actions.load();
    }
    MESSAGE("rounds=" << kRounds << " messages=" << total_messages << " paused=" << total_paused
                      << " operator actions=" << total_actions);
}

// Two accessors handing the world back and forth from threads pinned to one CPU:
// the waiter sleeps at once when its waker shares its CPU (it cannot run while
// the waiter spins). Every handoff must still arrive, in order, each seeing the
// world stepped exactly to its instant.
TEST_CASE("Stress.Handoff.TwoThreadsPinnedToOneCpuAlternate" * doctest::timeout(120))
{
    cpu_set_t one;
    CPU_ZERO(&one);
    const int cpu = std::max(0, sched_getcpu());
    CPU_SET(cpu, &one);
    const std::uint64_t rounds = std::min<std::uint64_t>(total_grants() / 4, 50'000);
    const SimDuration step = 1ms;
    CountingWorld world;
    SimSyncHandler handler(world, {.step = step});
    Accessor even = handler.register_accessor("even", {.first_request = kSimStart});
    Accessor odd = handler.register_accessor("odd", {.first_request = sim_time(step)});

    struct Seen {
        bool pinned = false;
        std::uint64_t grants = 0;
        std::uint64_t out_of_order = 0; // a grant at the wrong instant or on a wrongly stepped world
    };
    auto run = [&](Accessor& a, SimTime first, Seen& seen) {
        seen.pinned = pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0;
        Access access;
        for (std::uint64_t n = 0; n < rounds; ++n) {
            const SimTime t = first + 2 * step * static_cast<std::int64_t>(n);
            access = a.release_and_request(std::move(access), t);
            if (!access) break;
            ++seen.grants;
            if (access.granted_time() != t || static_cast<std::int64_t>(world.steps()) != t.time_since_epoch() / step)
                ++seen.out_of_order;
        }
        if (access) access.release();
        a.deregister();
    };
    Seen seen_even, seen_odd;
    std::thread odd_thread([&] { run(odd, sim_time(step), seen_odd); });
    std::thread even_thread([&] { run(even, kSimStart, seen_even); });
    odd_thread.join();
    even_thread.join();
    handler.stop();

    CHECK(seen_even.pinned);
    CHECK(seen_odd.pinned);
    CHECK(seen_even.grants == rounds);
    CHECK(seen_odd.grants == rounds);
    CHECK(seen_even.out_of_order == 0);
    CHECK(seen_odd.out_of_order == 0);
}
