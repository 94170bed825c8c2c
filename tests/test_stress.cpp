// Stress: 8 accessor threads of every kind and mode race for the world while a
// 9th thread pauses, resumes, steps and runs-until at random. Invariants are
// checked inside every grant. SIMSYNC_STRESS_GRANTS sets the total (default
// 1,000,000; the sanitizer presets run fewer).

#include "support.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <random>

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
