// bench_scaling: what a grant costs as the number of accessors grows.
//
// N = 1, 8, 64, 1024 accessors, each on its own thread, on a no-op world
// (CountingWorld) with a 1 ms step. Accessor i has a period of 1, 2, 5 or 10
// steps (i mod 4), is lockstep for even i and free for odd i, and exclusive
// when i is a multiple of 3, shared otherwise; accessor 0 is a lockstep,
// exclusive, every-step accessor, so N = 1 is the lone-accessor case and the
// baseline every other N is divided by. Each thread requests its next instant
// and releases at once. The simulated span is chosen so that every N makes
// about the same number of grants. Measured from resume() to the last thread's
// end: wall time per grant, and voluntary / involuntary context switches per
// grant (getrusage, whole process). Thread start-up and registration are
// outside the measured span (the handler starts paused).
// Memory: heap bytes the handler keeps per registered accessor (glibc
// mallinfo2, registering N accessors without threads), and resident memory per
// accessor thread (64 KiB stacks; /proc/self/statm).
//
// Usage: bench_scaling [--quick] [--json=PATH]

#include "report.hpp"

#include <simsync/simsync.hpp>

#include <boost/thread/thread.hpp>

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using simsync::bench::format;

namespace {

constexpr simsync::SimDuration kStep = 1ms;
constexpr int kPeriods[] = {1, 2, 5, 10};

simsync::AccessorOptions options_of(int i)
{
    simsync::AccessorOptions o;
    o.kind = i % 2 == 0 ? simsync::AccessorKind::lockstep : simsync::AccessorKind::free;
    o.mode = i % 3 == 0 ? simsync::AccessMode::exclusive : simsync::AccessMode::shared;
    if (o.kind == simsync::AccessorKind::lockstep) o.first_request = simsync::kSimStart;
    return o;
}

// Grants per simulated step that N accessors ask for.
double grants_per_step(int n)
{
    double sum = 0;
    for (int i = 0; i < n; ++i) sum += 1.0 / kPeriods[i % 4];
    return sum;
}

struct Run {
    double wall_s = 0;
    std::uint64_t grants = 0;
    long vcsw = 0;
    long ivcsw = 0;
};

Run run(int n, std::int64_t steps)
{
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = kStep, .start_paused = true});
    const simsync::SimTime end{steps * kStep};
    std::vector<simsync::Accessor> accessors;
    accessors.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) accessors.push_back(handler.register_accessor("a" + std::to_string(i), options_of(i)));

    std::atomic<std::uint64_t> grants{0};
    std::atomic<int> ready{0};
    boost::thread::attributes attributes;
    attributes.set_stack_size(64 * 1024); // 1024 threads: keep the address space small
    std::vector<boost::thread> threads;
    threads.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
        threads.emplace_back(attributes, [&, i] {
            // Boost threads only for their stack size: without interruption,
            // waits take the futex path, as on any std::thread.
            boost::this_thread::disable_interruption no_interruption;
            simsync::Accessor& a = accessors[static_cast<std::size_t>(i)];
            const simsync::SimDuration period = kPeriods[i % 4] * kStep;
            std::uint64_t mine = 0;
            ready.fetch_add(1);
            simsync::SimTime at = simsync::kSimStart;
            while (at <= end) {
                simsync::Access access = a.request_access(at);
                if (!access) {
                    if (access.error() == simsync::errc::time_passed) {
                        // A free accessor that missed its instant takes the next
                        // one of its grid after the current time.
                        const auto now = handler.now().time_since_epoch();
                        at = simsync::SimTime{(now / period + 1) * period};
                        continue;
                    }
                    break;
                }
                ++mine;
                at += period;
                access.release(at);
            }
            grants.fetch_add(mine);
            a.deregister();
        });
    }
    while (ready.load() < n) std::this_thread::yield(); // start-up, outside the measurement

    const auto cs0 = simsync::bench::ContextSwitches::now();
    const auto t0 = std::chrono::steady_clock::now();
    handler.resume();
    for (auto& t : threads) t.join();
    const auto t1 = std::chrono::steady_clock::now();
    const auto cs = simsync::bench::ContextSwitches::now() - cs0;
    return {std::chrono::duration<double>(t1 - t0).count(), grants.load(), cs.voluntary, cs.involuntary};
}

// Heap bytes in use per registered accessor (no threads).
double heap_per_accessor(int n)
{
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = kStep, .start_paused = true});
    std::vector<simsync::Accessor> accessors;
    accessors.reserve(static_cast<std::size_t>(n));
    std::vector<std::string> names;
    for (int i = 0; i < n; ++i) names.push_back("a" + std::to_string(i));
    const auto before = mallinfo2().uordblks;
    for (int i = 0; i < n; ++i) accessors.push_back(handler.register_accessor(names[static_cast<std::size_t>(i)], options_of(i)));
    const auto after = mallinfo2().uordblks;
    return static_cast<double>(after - before) / n;
}

double resident_bytes()
{
    std::ifstream statm("/proc/self/statm");
    long size = 0, resident = 0;
    statm >> size >> resident;
    return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

// Resident memory per idle thread blocked in a request (64 KiB stacks).
double resident_per_thread(int n)
{
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = kStep, .start_paused = true});
    std::vector<simsync::Accessor> accessors;
    for (int i = 0; i < n; ++i) accessors.push_back(handler.register_accessor("a" + std::to_string(i), options_of(i)));
    const double before = resident_bytes();
    boost::thread::attributes attributes;
    attributes.set_stack_size(64 * 1024);
    std::atomic<int> ready{0};
    std::vector<boost::thread> threads;
    for (int i = 0; i < n; ++i) {
        threads.emplace_back(attributes, [&, i] {
            ready.fetch_add(1);
            (void)accessors[static_cast<std::size_t>(i)].request_access(simsync::SimTime{1s});
        });
    }
    // Every thread blocked in its request (a waiting accessor in the snapshot).
    auto all_waiting = [&] {
        const simsync::Snapshot snap = handler.snapshot();
        return std::count_if(snap.accessors.begin(), snap.accessors.end(), [](const simsync::AccessorStatus& a) {
                   return a.activity == simsync::AccessorStatus::Activity::waiting;
               }) == n;
    };
    while (!all_waiting()) std::this_thread::yield();
    const double after = resident_bytes();
    handler.stop(); // every request returns `stopped`
    for (auto& t : threads) t.join();
    return (after - before) / n;
}

} // namespace

int main(int argc, char** argv)
{
    const auto args = simsync::bench::take_scenario_args(argc, argv);
    if (!args) return 2;
    const bool quick = args->quick;
    const int counts[] = {1, 8, 64, 1024};
    // First, in a fresh process: glibc keeps the stacks of exited threads for
    // reuse, so measured after the runs new threads would cost no new memory.
    // The same for the heap: chunks freed earlier sit in glibc's per-thread
    // cache, which mallinfo2 counts as in use, so reuse would hide new memory.
    const double heap_per = heap_per_accessor(1024);
    const double rss_per_thread = resident_per_thread(1024);
    const double target_grants = quick ? 5'000 : 100'000;
    const int reps = quick ? 1 : 5;

    struct Row {
        int n;
        std::int64_t steps;
        std::vector<double> ns_per_grant, vcsw, ivcsw;
        std::uint64_t grants = 0;
    };
    std::vector<Row> rows;
    for (int n : counts) {
        rows.push_back({n, std::max<std::int64_t>(20, static_cast<std::int64_t>(target_grants / grants_per_step(n))), {}, {}, {}, 0});
    }
    for (int r = 0; r < reps; ++r) {
        for (Row& row : rows) {
            const Run x = run(row.n, row.steps);
            const double g = static_cast<double>(x.grants);
            row.ns_per_grant.push_back(1e9 * x.wall_s / g);
            row.vcsw.push_back(static_cast<double>(x.vcsw) / g);
            row.ivcsw.push_back(static_cast<double>(x.ivcsw) / g);
            row.grants = x.grants;
            std::printf("N=%4d rep %d: %llu grants in %.3f s\n", row.n, r + 1, static_cast<unsigned long long>(x.grants), x.wall_s);
        }
    }

    simsync::bench::Report report;
    report.id = "scaling";
    report.title = "Scaling with the number of accessors";
    report.quick = quick;
    report.description = format(
        "N accessors, one thread each, on a no-op world with a 1 ms step: periods of 1, 2, 5 and 10 steps, "
        "lockstep and free, shared and exclusive, mixed (accessor 0 is lockstep, exclusive, every step, so "
        "N = 1 is the lone accessor, the baseline). Each thread requests its next instant and releases at "
        "once; the simulated span gives about %.0f grants per run. Wall time from resume to the last thread's "
        "end per grant; context switches per grant are process-wide (getrusage). %d repetitions, the N "
        "values interleaved; median and min-max. Memory: heap the handler keeps per registered accessor "
        "(mallinfo2) and resident memory per accessor thread blocked in a request (64 KiB stacks).",
        target_grants, reps);
    simsync::bench::Table table{"", {"accessors", "simulated steps", "grants", "median ns/grant", "min", "max",
                                     "ratio to N=1", "ratio to N=8", "vol. cs/grant", "invol. cs/grant"}, {}};
    const double base = simsync::bench::median(rows.front().ns_per_grant);
    // N = 8 is the first case where grants go to other threads (a handoff):
    // against it, the growth is what more accessors cost the grant engine.
    const double base8 = simsync::bench::median(rows[1].ns_per_grant);
    simsync::bench::Plot cost{.file = "scaling_cost.png",
                              .title = "Wall time per grant against the number of accessors",
                              .xlabel = "accessors (one thread each)",
                              .ylabel = "ns per grant",
                              .logx = true,
                              .logy = true,
                              .style = "linespoints",
                              .series = {{"simsync, median", {}}, {"2x the lone accessor (goal)", {}}}};
    simsync::bench::Plot switches{.file = "scaling_cswitches.png",
                                  .title = "Voluntary context switches per grant",
                                  .xlabel = "accessors (one thread each)",
                                  .ylabel = "voluntary context switches per grant",
                                  .logx = true,
                                  .logy = false,
                                  .style = "linespoints",
                                  .series = {{"simsync, median", {}}, {"1.5 (goal)", {}}}};
    double worst_vcsw = 0;
    for (const Row& row : rows) {
        const double m = simsync::bench::median(row.ns_per_grant);
        const double v = simsync::bench::median(row.vcsw);
        worst_vcsw = std::max(worst_vcsw, v);
        table.rows.push_back({format("%d", row.n), format("%lld", static_cast<long long>(row.steps)),
                              format("%llu", static_cast<unsigned long long>(row.grants)), format("%.0f", m),
                              format("%.0f", *std::min_element(row.ns_per_grant.begin(), row.ns_per_grant.end())),
                              format("%.0f", *std::max_element(row.ns_per_grant.begin(), row.ns_per_grant.end())),
                              format("%.2f", m / base), format("%.2f", m / base8), format("%.2f", v), format("%.2f", simsync::bench::median(row.ivcsw))});
        cost.series[0].points.emplace_back(row.n, m);
        cost.series[1].points.emplace_back(row.n, 2 * base);
        switches.series[0].points.emplace_back(row.n, v);
        switches.series[1].points.emplace_back(row.n, 1.5);
    }
    report.tables.push_back(std::move(table));
    report.notes.push_back(format("Memory per accessor, measured first in the process with 1024 accessors: "
                                  "%.0f bytes of heap kept by the handler per registered accessor (mallinfo2), "
                                  "%.0f bytes resident per accessor thread blocked in a request (64 KiB stacks).",
                                  heap_per, rss_per_thread));
    report.plots.push_back(std::move(cost));
    report.plots.push_back(std::move(switches));
    const double at1024 = simsync::bench::median(rows.back().ns_per_grant);
    report.goals.push_back({"per-grant cost at 1024 accessors at most 2x that at 1", "<= 2.00x",
                            format("%.1fx (%.0f ns vs %.0f ns)", at1024 / base, at1024, base), at1024 / base <= 2});
    report.goals.push_back({"at most 1.5 voluntary context switches per grant (every N)", "<= 1.50",
                            format("%.2f (worst N)", worst_vcsw), worst_vcsw <= 1.5});

    simsync::bench::publish(report, args->json_path);
    return 0;
}
