// Time-source reads per second from several threads: simsync's lock-free
// sources against a mutex-guarded source built the way AWSIM's TimeSource is
// (lock, read the wall clock, read the scale, accumulate the scaled delta since
// the previous call, unlock). Both run in the same process, one after the other,
// so the ratio is meaningful even on a noisy shared machine.
//
// Usage: bench_time_source [--quick] [--json=PATH]

#include "report.hpp"

#include <simsync/simsync.hpp>

#include <algorithm>
#include <fstream>
#include <functional>
#include <string>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;

class MutexGuardedSource final : public simsync::TimeSource {
public:
    explicit MutexGuardedSource(const simsync::TimeScale& scale)
        : scale_(scale), previous_(simsync::WallClock::now())
    {
    }

protected:
    simsync::SourceTime read() const noexcept override
    {
        std::lock_guard<std::mutex> guard(mutex_);
        const auto now = simsync::WallClock::now();
        const double scale = scale_.value();
        const auto delta = std::chrono::duration_cast<std::chrono::nanoseconds>(now - previous_).count();
        elapsed_ns_ += std::llround(static_cast<double>(delta) * scale);
        previous_ = now;
        return simsync::SourceTime{simsync::SourceTime::duration{elapsed_ns_}};
    }

private:
    const simsync::TimeScale& scale_;
    mutable std::mutex mutex_;
    mutable simsync::WallTime previous_;
    mutable std::int64_t elapsed_ns_ = 0;
};

struct Result {
    double reads_per_second;
    double ns_per_read; // wall time per read per thread
};

template <class Read>
Result measure(const Read& read, int threads, std::chrono::milliseconds duration)
{
    std::atomic<bool> go{false};
    std::atomic<bool> stop{false};
    std::atomic<std::uint64_t> total{0};
    std::atomic<std::int64_t> sink{0}; // keeps reads from being optimised away
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&] {
            while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
            std::uint64_t n = 0;
            std::int64_t last = 0;
            while (!stop.load(std::memory_order_relaxed)) {
                for (int i = 0; i < 64; ++i) last = read();
                n += 64;
            }
            total.fetch_add(n);
            sink.fetch_add(last);
        });
    }
    const auto start = std::chrono::steady_clock::now();
    go.store(true, std::memory_order_release);
    std::this_thread::sleep_for(duration); // a benchmark's measuring window, not a race fix
    stop.store(true);
    for (auto& t : pool) t.join();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double rate = static_cast<double>(total.load()) / seconds;
    return {rate, 1e9 * threads / rate};
}

std::string clocksource()
{
    std::ifstream in("/sys/devices/system/clocksource/clocksource0/current_clocksource");
    std::string name;
    return std::getline(in, name) ? name : std::string("unknown");
}

} // namespace

int main(int argc, char** argv)
{
    const auto args = simsync::bench::take_scenario_args(argc, argv);
    if (!args) return 2;
    const bool quick = args->quick;
    // Rows are short and repeated, interleaved, so that a burst of someone
    // else's load lands on every source rather than on one.
    const auto duration = quick ? 50ms : 200ms;
    const int repetitions = quick ? 2 : 7;
    simsync::TimeScale scale(0.5);
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms});

    simsync::ScaledWallTimeSource lock_free(scale, simsync::ScaledWallTimeSource::Origin::zero);
    simsync::SimTimeSource sim(handler);
    simsync::RosTimeSource ros;
    MutexGuardedSource guarded(scale);

    struct Row {
        const char* name;
        std::function<std::int64_t()> read;
        std::vector<double> rates[2]; // reads/s per repetition, for 1 and 2 threads
    };
    std::vector<Row> rows;
    rows.push_back({"mutex-guarded, AWSIM design (baseline)", [&] { return guarded.now().time_since_epoch().count(); }, {}});
    rows.push_back({"`simulation` (scaled wall time)", [&] { return lock_free.now().time_since_epoch().count(); }, {}});
    rows.push_back({"`sim` (handler.now)", [&] { return sim.now().time_since_epoch().count(); }, {}});
    rows.push_back({"`ros` (system clock, clamped)", [&] { return ros.now().time_since_epoch().count(); }, {}});
    rows.push_back({"steady_clock::now() alone (floor of any wall-clock source)",
                    [] { return std::chrono::steady_clock::now().time_since_epoch().count(); }, {}});

    for (int rep = 0; rep < repetitions; ++rep) {
        for (int threads : {1, 2}) {
            for (Row& row : rows) {
                row.rates[threads - 1].push_back(measure(row.read, threads, duration).reads_per_second);
            }
        }
    }

    auto median = [](std::vector<double> v) {
        std::sort(v.begin(), v.end());
        return v.empty() ? 0.0 : v[v.size() / 2];
    };
    using simsync::bench::format;
    simsync::bench::Report report;
    report.id = "time_source";
    report.title = "Time-source reads";
    report.quick = quick;
    report.description =
        "Reads per second of a time source's `now()` from 1 and 2 threads at once, every thread reading in "
        "a tight loop. Baseline: a mutex-guarded source built the way AWSIM's TimeSource is (lock, read "
        "the wall clock and the scale, accumulate the scaled delta, unlock), in the same run. " +
        format("%d interleaved repetitions of %lld ms per row; median and min-max over them. ", repetitions,
               static_cast<long long>(duration.count())) +
        "ns per read = wall time per read on each thread. The last row reads only the steady clock: no "
        "source that reads the wall clock can be faster, so it bounds the ratio a wall-clock source can "
        "reach against the baseline.";
    simsync::bench::Table table{"", {"source", "threads", "median reads/s (total)", "min", "max",
                                     "ns per read per thread", "ratio to baseline"}, {}};
    double ratio2[8] = {};
    for (int threads : {1, 2}) {
        const double base = median(rows[0].rates[threads - 1]);
        for (std::size_t i = 0; i < rows.size(); ++i) {
            const auto& v = rows[i].rates[threads - 1];
            const double m = median(v);
            table.rows.push_back({rows[i].name, std::to_string(threads), format("%.3g", m),
                                  format("%.3g", *std::min_element(v.begin(), v.end())),
                                  format("%.3g", *std::max_element(v.begin(), v.end())),
                                  format("%.1f", 1e9 * threads / m), format("%.2f", m / base)});
            if (threads == 2) ratio2[i] = m / base;
        }
    }
    report.tables.push_back(std::move(table));
    report.goals.push_back({"`simulation` source read from 2 threads: at least 20x the mutex-guarded source", ">= 20x",
                            format("%.2fx", ratio2[1]), ratio2[1] >= 20});
    report.goals.push_back({"`sim` source read from 2 threads: at least 20x the mutex-guarded source", ">= 20x",
                            format("%.2fx", ratio2[2]), ratio2[2] >= 20});
    report.notes.push_back(format("The steady clock alone reaches %.2fx the baseline from 2 threads: the ceiling "
                                  "for any source that reads the wall clock on this machine (clock source: %s).",
                                  ratio2[4], clocksource().c_str()));

    simsync::bench::publish(report, args->json_path);
    return 0;
}
