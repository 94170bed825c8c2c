// Determinism: whatever the thread timing, the handler produces the sequence of
// grants that a single-threaded reference model computes from the same config,
// and an operator pausing, stepping and resuming from outside changes nothing.

#include "support.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <random>
#include <tuple>

using namespace simsync;
using namespace simsync::test;

namespace {

struct Spec {
    std::string name;
    SimDuration period;
    SimDuration offset;
    int priority;
    AccessMode mode;
};

struct Grant {
    std::size_t accessor;
    SimTime granted;
    friend bool operator==(const Grant&, const Grant&) = default;
};

constexpr SimDuration kStep = std::chrono::milliseconds(1);

// A mix that exercises every ordering rule: equal instants from different
// rates, priorities, shared and exclusive, and a rate faster than the step
// (two requests rounding to one instant: the second queues behind the others).
std::vector<Spec> make_specs(std::size_t n)
{
    const SimDuration periods[] = {1ms, 2ms, 3ms, 5ms, 7ms, 10ms, SimDuration{33'333'333}, 600us};
    const SimDuration offsets[] = {0ms, 1ms, 2500us};
    std::vector<Spec> specs;
    for (std::size_t i = 0; i < n; ++i) {
        specs.push_back({"acc" + std::to_string(i), periods[i % 8], offsets[(i / 2) % 3], static_cast<int>(i % 3),
                         i % 2 == 0 ? AccessMode::exclusive : AccessMode::shared});
    }
    return specs;
}

SimTime nth_request(const Spec& s, std::int64_t n) { return SimTime{s.offset + n * s.period}; }

// The world's state depends on the order of exclusive writes and on the instants.
std::int64_t mix(std::int64_t value, std::size_t accessor, SimTime t)
{
    // Unsigned arithmetic: the hash wraps by design (signed overflow would be UB).
    const std::uint64_t h = static_cast<std::uint64_t>(value) * 1'000'003u + accessor * 7919u +
                            static_cast<std::uint64_t>(t.time_since_epoch().count() / 1000);
    return static_cast<std::int64_t>(h);
}

// Single-threaded reference: repeatedly grant the smallest (instant, round,
// -priority, registration) among every accessor's next request.
std::pair<std::vector<Grant>, std::int64_t> reference_model(const std::vector<Spec>& specs, SimTime end)
{
    struct State {
        std::int64_t n = 0;
        SimTime at;
        std::uint64_t round = 0;
        SimTime last_instant = SimTime::min();
        std::uint64_t count_at_last = 0;
        bool done = false;
    };
    std::vector<State> st(specs.size());
    auto schedule = [&](std::size_t i) {
        const SimTime want = nth_request(specs[i], st[i].n);
        if (want > end) {
            st[i].done = true;
            return;
        }
        st[i].at = round_to_grid(want, kStep);
        st[i].round = st[i].last_instant == st[i].at ? st[i].count_at_last : 0;
    };
    for (std::size_t i = 0; i < specs.size(); ++i) schedule(i);
    std::vector<Grant> grants;
    std::int64_t value = 0;
    for (;;) {
        std::optional<std::size_t> best;
        auto key = [&](std::size_t i) { return std::make_tuple(st[i].at, st[i].round, -specs[i].priority, i); };
        for (std::size_t i = 0; i < specs.size(); ++i) {
            if (!st[i].done && (!best || key(i) < key(*best))) best = i;
        }
        if (!best) break;
        const std::size_t i = *best;
        grants.push_back({i, st[i].at});
        if (specs[i].mode == AccessMode::exclusive) value = mix(value, i, st[i].at);
        st[i].count_at_last = st[i].last_instant == st[i].at ? st[i].count_at_last + 1 : 1;
        st[i].last_instant = st[i].at;
        ++st[i].n;
        schedule(i);
    }
    return {grants, value};
}

struct RunResult {
    std::vector<Grant> grants;
    std::int64_t value;
    std::uint64_t steps;
    SimTime now;
};

// Runs the scenario on real threads that sleep and yield at random before each
// request and inside each access. With `operator_chaos`, a further thread
// pauses, steps and resumes the simulation at random meanwhile.
RunResult run_threads(const std::vector<Spec>& specs, SimTime end, std::uint32_t seed, bool operator_chaos)
{
    CountingWorld world;
    SimSyncHandler handler(world, {.step = kStep});
    std::vector<Accessor> accessors;
    for (const Spec& s : specs) {
        accessors.push_back(handler.register_accessor(
            s.name, {.kind = AccessorKind::lockstep, .mode = s.mode, .priority = s.priority,
                     .first_request = SimTime{s.offset}}));
    }
    // Holds time at the end of the scenario, so an operator's step or run_until
    // cannot move the world past it once the workers are done.
    Accessor keeper = handler.register_accessor("keeper", {.kind = AccessorKind::lockstep, .first_request = end});
    std::mutex m;
    std::vector<std::pair<std::uint64_t, Grant>> log;
    std::atomic<std::size_t> finished{0};
    Threads threads;
    for (std::size_t i = 0; i < specs.size(); ++i) {
        threads.spawn([&, i] {
            std::mt19937 rng(seed * 7919u + static_cast<std::uint32_t>(i));
            std::uniform_int_distribution<int> jitter(0, 9);
            auto shake = [&] {
                const int r = jitter(rng);
                if (r < 2) std::this_thread::sleep_for(std::chrono::microseconds(r * 40));
                else if (r < 5) std::this_thread::yield();
            };
            for (std::int64_t n = 0;; ++n) {
                const SimTime want = nth_request(specs[i], n);
                if (want > end) break;
                shake();
                Access a = accessors[i].request_access(want);
                REQUIRE(a);
                shake();
                auto& w = a.world_as<CountingWorld>();
                if (a.mode() == AccessMode::exclusive) w.value = mix(w.value, i, a.granted_time());
                {
                    std::lock_guard<std::mutex> g(m);
                    log.emplace_back(a.sequence(), Grant{i, a.granted_time()});
                }
                a.release(nth_request(specs[i], n + 1));
            }
            accessors[i].deregister();
            ++finished;
        });
    }
    if (operator_chaos) {
        threads.spawn([&] {
            std::mt19937 rng(seed);
            std::uniform_int_distribution<int> action(0, 3);
            while (finished.load() < specs.size()) {
                switch (action(rng)) {
                case 0: handler.pause(); break;
                case 1: handler.step(1 + rng() % 5); break;
                case 2: handler.run_until(handler.now() + std::chrono::milliseconds(rng() % 20)); break;
                default: handler.resume(); break;
                }
                std::this_thread::sleep_for(std::chrono::microseconds(rng() % 300));
                if (rng() % 3 == 0) handler.resume(); // keep it moving on average
            }
            handler.resume();
        });
    }
    threads.join();
    std::sort(log.begin(), log.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    RunResult result;
    for (std::size_t k = 0; k < log.size(); ++k) {
        REQUIRE(log[k].first == k); // sequence numbers are dense: no grant unrecorded
        result.grants.push_back(log[k].second);
    }
    result.value = world.value;
    result.steps = world.steps();
    result.now = handler.now();
    return result;
}

int runs_from_env(int fallback)
{
    if (const char* v = std::getenv("SIMSYNC_DETERMINISM_RUNS")) return std::max(1, std::atoi(v));
    return fallback;
}

} // namespace

TEST_CASE("Determinism.ReferenceModel.SanityOfTheModelItself")
{
    // Two accessors at 10 ms and 5 ms, hand-checked order at the shared instants.
    const std::vector<Spec> specs{{"a", 10ms, 0ms, 0, AccessMode::exclusive}, {"b", 5ms, 0ms, 1, AccessMode::shared}};
    const auto [grants, value] = reference_model(specs, ms(10));
    const std::vector<Grant> expected{{1, ms(0)}, {0, ms(0)}, {1, ms(5)}, {1, ms(10)}, {0, ms(10)}};
    CHECK(grants == expected);
}

TEST_CASE("Determinism.Threads.SameSequenceAsReferenceModel" * doctest::timeout(600))
{
    const int runs = runs_from_env(20);
    const SimTime end = ms(60);
    for (std::size_t n : {2u, 4u, 8u, 16u}) {
        const auto specs = make_specs(n);
        const auto [expected, expected_value] = reference_model(specs, end);
        for (int run = 0; run < runs; ++run) {
            CAPTURE(n);
            CAPTURE(run);
            const RunResult r = run_threads(specs, end, static_cast<std::uint32_t>(run + 1), false);
            REQUIRE(r.grants.size() == expected.size());
            CHECK(r.grants == expected);
            CHECK(r.value == expected_value);
            CHECK(r.steps * static_cast<std::uint64_t>(kStep.count()) ==
                  static_cast<std::uint64_t>(r.now.time_since_epoch().count()));
        }
    }
}

TEST_CASE("Determinism.Pause.OperatorActionsAreTransparent" * doctest::timeout(600))
{
    const int runs = runs_from_env(20);
    const SimTime end = ms(60);
    const auto specs = make_specs(6);
    const auto [expected, expected_value] = reference_model(specs, end);
    const RunResult undisturbed = run_threads(specs, end, 1, false);
    for (int run = 0; run < runs; ++run) {
        CAPTURE(run);
        const RunResult r = run_threads(specs, end, static_cast<std::uint32_t>(100 + run), true);
        CHECK(r.grants == expected);
        CHECK(r.grants == undisturbed.grants);
        CHECK(r.value == undisturbed.value);
        CHECK(r.value == expected_value);
        CHECK(r.steps == undisturbed.steps);
    }
}
