// Grant throughput: what one grant costs, against two-thread ping-pongs built on
// the usual handoff mechanisms, all measured in the same run.
//
//   simsync, 1 accessor      one lockstep accessor asking for every step of a
//                            no-op world: request(t), release(t + dt). No other
//                            thread is involved, so no handoff should be paid.
//   simsync, 2 accessors     two lockstep accessors on two threads taking turns
//                            (even and odd steps): every grant is a handoff.
//   ping-pong baselines      two threads passing a token: mutex + condition
//                            variable, C++20 atomic wait/notify, pure spinning.
//
// Every figure is per grant (or per one-way handoff), as median / min / max over
// repetitions. Ratios are against the mutex + condition variable ping-pong.
// Own harness rather than Google Benchmark: the interesting cases are two threads
// in lockstep, whose setup and teardown must stay outside the timed region.
//
// Usage: bench_grant_throughput [--quick] [--json FILE]

#include <simsync/simsync.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

// A world whose step costs nothing: the benchmark measures the handler alone.
class NoopWorld final : public simsync::World {
public:
    void step(simsync::SimDuration) override { ++steps; }
    std::uint64_t steps = 0;
};

// Runs `body(n)`, which performs n operations, and returns ns per operation.
double ns_per_op(const std::function<void(std::uint64_t)>& body, std::uint64_t n)
{
    const auto t0 = Clock::now();
    body(n);
    return std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / static_cast<double>(n);
}

void simsync_single(std::uint64_t n, double& result)
{
    NoopWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms});
    auto accessor = handler.register_accessor("bench", {.first_request = simsync::kSimStart});
    result = ns_per_op(
        [&](std::uint64_t count) {
            for (std::uint64_t k = 0; k < count; ++k) {
                const simsync::SimTime t{static_cast<std::int64_t>(k) * 1ms};
                simsync::Access a = accessor.request_access(t);
                a.release(t + 1ms);
            }
        },
        n);
}

// Two accessors alternate instants; the clock starts when both threads are ready.
void simsync_pair(std::uint64_t n, double& result)
{
    NoopWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms});
    auto even = handler.register_accessor("even", {.first_request = simsync::kSimStart});
    auto odd = handler.register_accessor("odd", {.first_request = simsync::SimTime{1ms}});
    std::atomic<int> ready{0};
    Clock::time_point t0;
    std::thread other([&] {
        ++ready;
        for (std::uint64_t k = 1; k < 2 * n; k += 2) {
            const simsync::SimTime t{static_cast<std::int64_t>(k) * 1ms};
            odd.request_access(t).release(t + 2ms);
        }
    });
    while (ready.load() == 0) std::this_thread::yield();
    t0 = Clock::now();
    for (std::uint64_t k = 0; k < 2 * n; k += 2) {
        const simsync::SimTime t{static_cast<std::int64_t>(k) * 1ms};
        even.request_access(t).release(t + 2ms);
    }
    other.join();
    result = std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / static_cast<double>(2 * n);
}

// Ping-pongs: `rounds` one-way handoffs between two threads.
void pingpong_cv(std::uint64_t rounds, double& result)
{
    std::mutex m;
    std::condition_variable cv;
    std::uint64_t turn = 0; // even: main, odd: other
    std::thread other([&] {
        for (std::uint64_t k = 1; k < rounds; k += 2) {
            std::unique_lock<std::mutex> lock(m);
            cv.wait(lock, [&] { return turn == k; });
            ++turn;
            cv.notify_one();
        }
    });
    const auto t0 = Clock::now();
    for (std::uint64_t k = 0; k < rounds; k += 2) {
        std::unique_lock<std::mutex> lock(m);
        cv.wait(lock, [&] { return turn == k; });
        ++turn;
        cv.notify_one();
    }
    other.join();
    result = std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / static_cast<double>(rounds);
}

void pingpong_atomic_wait(std::uint64_t rounds, double& result)
{
    std::atomic<std::uint64_t> turn{0};
    std::thread other([&] {
        for (std::uint64_t k = 1; k < rounds; k += 2) {
            for (std::uint64_t seen = turn.load(); seen != k; seen = turn.load()) turn.wait(seen);
            turn.store(k + 1);
            turn.notify_one();
        }
    });
    const auto t0 = Clock::now();
    for (std::uint64_t k = 0; k < rounds; k += 2) {
        for (std::uint64_t seen = turn.load(); seen != k; seen = turn.load()) turn.wait(seen);
        turn.store(k + 1);
        turn.notify_one();
    }
    other.join();
    result = std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / static_cast<double>(rounds);
}

void pingpong_spin(std::uint64_t rounds, double& result)
{
    std::atomic<std::uint64_t> turn{0};
    std::thread other([&] {
        for (std::uint64_t k = 1; k < rounds; k += 2) {
            while (turn.load(std::memory_order_acquire) != k) {
            }
            turn.store(k + 1, std::memory_order_release);
        }
    });
    const auto t0 = Clock::now();
    for (std::uint64_t k = 0; k < rounds; k += 2) {
        while (turn.load(std::memory_order_acquire) != k) {
        }
        turn.store(k + 1, std::memory_order_release);
    }
    other.join();
    result = std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / static_cast<double>(rounds);
}

struct Row {
    std::string name;
    std::vector<double> samples; // ns per grant or handoff
    double median() const
    {
        std::vector<double> s = samples;
        std::sort(s.begin(), s.end());
        return s[s.size() / 2];
    }
    double min() const { return *std::min_element(samples.begin(), samples.end()); }
    double max() const { return *std::max_element(samples.begin(), samples.end()); }
};

} // namespace

int main(int argc, char** argv)
{
    bool quick = false;
    std::string json_file;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--quick") == 0) quick = true;
        else if (std::strcmp(argv[i], "--json") == 0 && i + 1 < argc) json_file = argv[++i];
        else {
            std::fprintf(stderr, "usage: %s [--quick] [--json FILE]\n", argv[0]);
            return 2;
        }
    }
    const int repetitions = quick ? 3 : 9;
    const std::uint64_t single_n = quick ? 200'000 : 2'000'000;
    const std::uint64_t pair_n = quick ? 20'000 : 200'000;

    struct Case {
        const char* name;
        std::function<void(std::uint64_t, double&)> run;
        std::uint64_t n;
    };
    std::vector<Case> cases{
        {"ping-pong mutex+cv (baseline)", pingpong_cv, pair_n},
        {"ping-pong atomic wait/notify", pingpong_atomic_wait, pair_n},
        {"ping-pong spinning", pingpong_spin, pair_n},
        {"simsync, 1 accessor", simsync_single, single_n},
        {"simsync, 2 accessors (handoff)", simsync_pair, pair_n},
    };
    if (std::thread::hardware_concurrency() < 2) cases.erase(cases.begin() + 2); // spinning needs 2 cores

    std::vector<Row> rows;
    for (const Case& c : cases) rows.push_back({c.name, {}});
    // Interleave repetitions so that a noisy moment hits every case alike.
    for (int r = 0; r < repetitions; ++r) {
        for (std::size_t i = 0; i < cases.size(); ++i) {
            double ns = 0;
            cases[i].run(cases[i].n, ns);
            rows[i].samples.push_back(ns);
        }
    }

    const double baseline = rows[0].median();
    std::printf("grant throughput, %d repetitions (%s), %u hardware threads\n", repetitions,
                quick ? "quick" : "full", std::thread::hardware_concurrency());
    std::printf("| %-32s | %12s | %10s | %10s | %14s | %8s |\n", "case", "median ns", "min ns", "max ns",
                "per second", "ratio");
    std::printf("|%s|%s|%s|%s|%s|%s|\n", std::string(34, '-').c_str(), std::string(14, '-').c_str(),
                std::string(12, '-').c_str(), std::string(12, '-').c_str(), std::string(16, '-').c_str(),
                std::string(10, '-').c_str());
    for (const Row& row : rows) {
        std::printf("| %-32s | %12.1f | %10.1f | %10.1f | %14.0f | %8.2f |\n", row.name.c_str(), row.median(),
                    row.min(), row.max(), 1e9 / row.median(), baseline / row.median());
    }
    std::printf("ratio: baseline time / case time (above 1: faster than the mutex+cv ping-pong)\n");

    if (!json_file.empty()) {
        FILE* f = std::fopen(json_file.c_str(), "w");
        if (f == nullptr) {
            std::fprintf(stderr, "cannot write %s\n", json_file.c_str());
            return 1;
        }
        std::fprintf(f, "{\"benchmark\":\"grant_throughput\",\"unit\":\"ns\",\"baseline\":\"%s\",\"rows\":[",
                     rows[0].name.c_str());
        for (std::size_t i = 0; i < rows.size(); ++i) {
            std::fprintf(f, "%s{\"name\":\"%s\",\"median\":%.1f,\"min\":%.1f,\"max\":%.1f,\"ratio\":%.3f}",
                         i ? "," : "", rows[i].name.c_str(), rows[i].median(), rows[i].min(), rows[i].max(),
                         baseline / rows[i].median());
        }
        std::fprintf(f, "]}\n");
        std::fclose(f);
    }
    return 0;
}
