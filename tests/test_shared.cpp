// Shared accesses at one instant run at the same time; an exclusive access is
// always alone. Both are measured from inside the accesses.

#include "support.hpp"

#include <doctest/doctest.h>

#include <atomic>

using namespace simsync;
using namespace simsync::test;

TEST_CASE("Shared.Overlap.ReadersAtOneInstantHoldTogether" * doctest::timeout(60))
{
    for (int readers : {2, 4, 8}) {
        CAPTURE(readers);
        CountingWorld world;
        SimSyncHandler handler(world, {.step = 1ms});
        std::vector<Accessor> accessors;
        for (int i = 0; i < readers; ++i) {
            accessors.push_back(handler.register_accessor(
                "reader" + std::to_string(i), {.kind = AccessorKind::lockstep, .mode = AccessMode::shared}));
        }
        constexpr int kInstants = 20;
        std::atomic<int> inside{0};
        std::atomic<int> max_inside{0};
        std::vector<std::atomic<int>> arrived(kInstants + 1); // per instant, never decremented
        std::atomic<int> full_overlaps{0};
        std::atomic<int> refused{0};
        Threads threads;
        for (int i = 0; i < readers; ++i) {
            threads.spawn([&, i] {
                for (int n = 1; n <= kInstants; ++n) {
                    Access a = accessors[static_cast<std::size_t>(i)].request_access(ms(n));
                    if (!a) {
                        ++refused; // checked on the test thread
                        return;
                    }
                    const int now_inside = ++inside;
                    ++arrived[static_cast<std::size_t>(n)];
                    int seen = max_inside.load();
                    while (now_inside > seen && !max_inside.compare_exchange_weak(seen, now_inside)) {
                    }
                    // Stay until every reader of this instant is inside too: this can
                    // only succeed if the handler granted them all at once.
                    if (eventually([&] { return arrived[static_cast<std::size_t>(n)].load() >= readers; },
                                   std::chrono::milliseconds(5000))) {
                        ++full_overlaps;
                    }
                    --inside;
                    a.release(ms(n + 1));
                }
            });
        }
        threads.join();
        CHECK(refused.load() == 0);
        CHECK(max_inside.load() == readers);
        CHECK(full_overlaps.load() == readers * kInstants);
    }
}

TEST_CASE("Shared.Exclusion.WritersAreAloneReadersNeverMeetAWriter" * doctest::timeout(120))
{
    for (int threads_n : {2, 4, 8}) {
        CAPTURE(threads_n);
        CountingWorld world;
        SimSyncHandler handler(world, {.step = 1ms});
        std::vector<Accessor> accessors;
        for (int i = 0; i < threads_n; ++i) {
            const bool writer = i % 3 == 0;
            accessors.push_back(handler.register_accessor(
                "acc" + std::to_string(i),
                {.kind = i % 4 == 3 ? AccessorKind::free : AccessorKind::lockstep,
                 .mode = writer ? AccessMode::exclusive : AccessMode::shared,
                 .priority = i % 2}));
        }
        std::atomic<int> readers{0};
        std::atomic<int> writers{0};
        std::atomic<int> violations{0};
        std::atomic<int> grants{0};
        std::atomic<int> exclusive_grants{0};
        Threads threads;
        for (int i = 0; i < threads_n; ++i) {
            threads.spawn([&, i] {
                Accessor& acc = accessors[static_cast<std::size_t>(i)];
                const std::int64_t period = 1 + i % 3;
                for (std::int64_t t = 0; t <= 300; t += period) {
                    Access a = acc.request_access(ms(t));
                    if (!a) continue; // a free accessor that fell behind: time_passed
                    ++grants;
                    if (a.mode() == AccessMode::exclusive) {
                        if (++writers != 1 || readers.load() != 0) ++violations;
                        ++exclusive_grants;
                        ++a.world_as<CountingWorld>().value; // plain ++: a lost update shows an overlap
                        std::this_thread::yield();
                        if (readers.load() != 0) ++violations;
                        --writers;
                    } else {
                        ++readers;
                        if (writers.load() != 0) ++violations;
                        std::this_thread::yield();
                        if (writers.load() != 0) ++violations;
                        --readers;
                    }
                    a.release(ms(t + period));
                }
                acc.deregister();
            });
        }
        threads.join();
        CHECK(violations.load() == 0);
        CHECK(grants.load() > 0);
        CHECK(exclusive_grants.load() > 0);
        CHECK(world.value == exclusive_grants.load()); // no write lost to a concurrent writer
    }
}

TEST_CASE("Shared.Exclusion.ExclusiveWaitsForSharedHoldersAtItsInstant" * doctest::timeout(30))
{
    CountingWorld world;
    SimSyncHandler handler(world, {.step = 1ms});
    // The reader comes first in order (priority); the writer at the same instant waits.
    auto reader = handler.register_accessor("reader", {.mode = AccessMode::shared, .priority = 1});
    auto writer = handler.register_accessor("writer", {.mode = AccessMode::exclusive});
    Access r = reader.request_access(ms(0));
    REQUIRE(r);
    const std::uint64_t reader_sequence = r.sequence();
    std::atomic<bool> written{false};
    Outcome w;
    Threads threads;
    threads.spawn([&] {
        w = Outcome::of(writer.request_access(ms(0)));
        written = true;
    });
    REQUIRE(eventually([&] { return is_waiting(handler, "writer"); }));
    CHECK_FALSE(written.load());
    r.release(ms(5));
    threads.join();
    CHECK(w.granted);
    CHECK(w.at == ms(0));
    CHECK(w.sequence > reader_sequence); // after the reader, at the same instant
}
