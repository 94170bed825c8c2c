// Time-source reads per second from several threads, against two baselines in
// the same run: a bare read of the clock a wall-clock source cannot avoid
// (steady_clock::now(); system_clock::now() for `ros`), which is what the
// wall-clock sources' goal is stated against (no source that reads the clock
// can be cheaper, so a goal against anything slower cannot tell a good source
// from a bad one), and a mutex-guarded source built the way AWSIM's TimeSource
// is (lock, read the wall clock, read the scale, accumulate the scaled delta
// since the previous call, unlock), which the `sim` source's goal is against.
// All rows run in the same process, interleaved, so the ratios are meaningful
// even on a noisy shared machine.

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
    simsync::bench::CommandLine cli("bench_time_source",
                                    "Time-source reads per second from 1 and 2 threads against a bare clock read "
                                    "and a mutex-guarded source.");
    if (const auto exit = cli.parse(argc, argv)) return *exit;
    const bool quick = cli.args().quick;
    using simsync::bench::Compare;
    using simsync::bench::format;
    // Rows are short and repeated, interleaved, so that a burst of someone
    // else's load lands on every source rather than on one.
    const auto duration = quick ? 50ms : 200ms;
    const int repetitions = quick ? 2 : 7;
    simsync::TimeScale scale(0.5);
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms});

    simsync::ScaledWallTimeSource simulation(scale, simsync::ScaledWallTimeSource::Origin::zero);
    simsync::ScaledWallTimeSource system(scale, simsync::ScaledWallTimeSource::Origin::system_time);
    simsync::SimTimeSource sim(handler);
    simsync::RosTimeSource ros;
    MutexGuardedSource guarded(scale);

    // The baselines, by their row index below.
    enum Base : std::size_t { kMutex = 0, kSteady = 1, kSystemClock = 2 };
    struct Row {
        const char* name;
        std::function<std::int64_t()> read;
        Base floor; // the bare clock read this source cannot avoid (kMutex: none)
        std::vector<double> rates[2]; // reads/s per repetition, for 1 and 2 threads
    };
    std::vector<Row> rows;
    rows.push_back({"mutex-guarded, AWSIM design (baseline of `sim`)",
                    [&] { return guarded.now().time_since_epoch().count(); }, kMutex, {}});
    rows.push_back({"steady_clock::now() alone (baseline of `simulation`, `system`)",
                    [] { return std::chrono::steady_clock::now().time_since_epoch().count(); }, kMutex, {}});
    rows.push_back({"system_clock::now() alone (baseline of `ros`)",
                    [] { return std::chrono::system_clock::now().time_since_epoch().count(); }, kMutex, {}});
    rows.push_back({"`simulation` (scaled wall time from 0)", [&] { return simulation.now().time_since_epoch().count(); },
                    kSteady, {}});
    rows.push_back({"`system` (scaled wall time from the UNIX time at start)",
                    [&] { return system.now().time_since_epoch().count(); }, kSteady, {}});
    rows.push_back({"`sim` (handler.now)", [&] { return sim.now().time_since_epoch().count(); }, kMutex, {}});
    rows.push_back({"`ros` (system clock, clamped)", [&] { return ros.now().time_since_epoch().count(); },
                    kSystemClock, {}});

    for (int rep = 0; rep < repetitions; ++rep) {
        for (int threads : {1, 2}) {
            for (Row& row : rows) {
                row.rates[threads - 1].push_back(measure(row.read, threads, duration).reads_per_second);
            }
        }
    }

    simsync::bench::Report report;
    report.id = "time_source";
    report.title = "Time-source reads";
    report.quick = quick;
    report.description =
        "Reads per second of a time source's `now()` from 1 and 2 threads at once, every thread reading in "
        "a tight loop. Baselines, in the same run: for the wall-clock sources, a bare read of the clock they "
        "read (`steady_clock::now()` for `simulation` and `system`, which read it through the TimeScale; "
        "`system_clock::now()` for `ros`): no source that reads the clock can be cheaper, so the cost ratio "
        "to it is the source's own overhead; for `sim`, a mutex-guarded source built the way AWSIM's "
        "TimeSource is (lock, read the wall clock and the scale, accumulate the scaled delta, unlock). " +
        format("%d interleaved repetitions of %lld ms per row; median and min-max over them. ", repetitions,
               static_cast<long long>(duration.count())) +
        "ns per read = wall time per read on each thread; cost ratio = ns per read over the bare clock "
        "read's ns per read with as many threads (1 = no overhead); ratio to mutex = reads/s over the "
        "mutex-guarded source's.";
    simsync::bench::Table table{"", {"source", "threads", "median reads/s (total)", "min", "max",
                                     "ns per read per thread", "cost ratio to its bare clock read",
                                     "ratio to mutex-guarded (reads/s)"}, {}};
    auto rate = [&](std::size_t row, int threads) { return simsync::bench::median(rows[row].rates[threads - 1]); };
    constexpr std::size_t kSimulationRow = 3;
    constexpr std::size_t kSimRow = 5;
    constexpr double kSimulationMax = 1.5;
    constexpr double kSimMin = 20;
    for (int threads : {1, 2}) {
        for (std::size_t i = 0; i < rows.size(); ++i) {
            const auto& v = rows[i].rates[threads - 1];
            const double m = rate(i, threads);
            std::string cost = "-";
            if (rows[i].floor != kMutex) {
                const double c = rate(rows[i].floor, threads) / m;
                cost = i == kSimulationRow && threads == 2 ? simsync::bench::decided(c, Compare::at_most, kSimulationMax)
                                                           : format("%.2f", c);
            }
            const double to_mutex = m / rate(kMutex, threads);
            table.rows.push_back({rows[i].name, std::to_string(threads), format("%.3g", m),
                                  format("%.3g", *std::min_element(v.begin(), v.end())),
                                  format("%.3g", *std::max_element(v.begin(), v.end())),
                                  format("%.1f", 1e9 * threads / m), cost,
                                  i == kSimRow && threads == 2 ? simsync::bench::decided(to_mutex, Compare::at_least, kSimMin)
                                                               : format("%.2f", to_mutex)});
        }
    }
    report.tables.push_back(std::move(table));
    const double simulation_cost = rate(kSteady, 2) / rate(kSimulationRow, 2);
    report.goals.push_back(simsync::bench::check_goal(
        "time_source_simulation_vs_steady_clock",
        "`simulation` source read from 2 threads: at most 1.5x the cost of a bare steady_clock::now() read",
        simulation_cost, Compare::at_most, kSimulationMax, "x",
        format("%.1f ns vs %.1f ns per read", 2e9 / rate(kSimulationRow, 2), 2e9 / rate(kSteady, 2))));
    const double sim_ratio = rate(kSimRow, 2) / rate(kMutex, 2);
    report.goals.push_back(simsync::bench::check_goal(
        "time_source_sim_vs_mutex", "`sim` source read from 2 threads: at least 20x the reads/s of the mutex-guarded source",
        sim_ratio, Compare::at_least, kSimMin, "x",
        format("%.3g vs %.3g reads/s", rate(kSimRow, 2), rate(kMutex, 2))));
    report.notes.push_back(format("Clock source: %s. A bare steady_clock read reaches %.2fx the mutex-guarded "
                                  "source's reads/s from 2 threads: the most any wall-clock source could reach "
                                  "against that baseline.",
                                  clocksource().c_str(), rate(kSteady, 2) / rate(kMutex, 2)));

    simsync::bench::publish(report, cli.args().json_path);
    return 0;
}
