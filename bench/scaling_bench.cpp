// bench_scaling: what a grant costs as the number of accessors grows.
//
// N = 1, 8, 64, 1024 accessors, each on its own thread, on a no-op world
// (CountingWorld) with a 1 ms step. Accessor i has a period of 1, 2, 5 or 10
// steps (i mod 4), is lockstep for even i and free for odd i, and exclusive
// when i is a multiple of 3, shared otherwise; accessor 0 is a lockstep,
// exclusive, every-step accessor, so N = 1 is the lone-accessor case (no
// handoff at all). N = 8 is the first count where grants go to other threads
// (a handoff each), so the goal divides 1024 by 8, not by 1: both hand off,
// and the ratio is what more accessors cost the grant engine. Each thread
// requests its next instant and releases at once. The simulated span is chosen
// so that every N makes about the same number of grants. Measured from resume() to the last thread's
// end: wall time per grant, and voluntary / involuntary context switches per
// grant (getrusage, whole process). Thread start-up and registration are
// outside the measured span (the handler starts paused).
// Memory: heap bytes the handler keeps per registered accessor (glibc
// mallinfo2, registering N accessors without threads), and resident memory per
// accessor thread (64 KiB stacks; /proc/self/statm).
// The scenario is run by each accessor style in `families`: a blocking thread
// per accessor, inline systems on the host thread, coroutines on a 2-thread
// io_context (issue 11); ratios are within a style (to its N = 1 and N = 8)
// and to the blocking style at the same N.

#include "report.hpp"

#include <simsync/core/asio.hpp>
#include <simsync/simsync.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/thread/thread.hpp>

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <stdexcept>
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

// The next instant of a free accessor's grid after the current time, for one
// that missed its instant (every style does the same).
simsync::SimTime next_after_now(const simsync::SimSyncHandler& handler, simsync::SimDuration period)
{
    const auto now = handler.now().time_since_epoch();
    return simsync::SimTime{(now / period + 1) * period};
}

// Returns once n accessors are blocked in a request (the snapshot says so).
void wait_until_all_waiting(const simsync::SimSyncHandler& handler, int n)
{
    auto waiting = [&] {
        const simsync::Snapshot snap = handler.snapshot();
        return std::count_if(snap.accessors.begin(), snap.accessors.end(), [](const simsync::AccessorStatus& a) {
                   return a.activity == simsync::AccessorStatus::Activity::waiting;
               }) == n;
    };
    while (!waiting()) std::this_thread::yield();
}

// The same scenario as inline systems (issue 11): no thread of their own. The
// host thread sits in handler.run(), steps the world and runs every system's
// completion right after the step; each re-arms from inside its completion.
// Measured from run() to its return (after the last system stops the handler).
Run run_inline_systems(int n, std::int64_t steps)
{
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = kStep, .step_thread = simsync::StepThread::host});
    const simsync::SimTime end{steps * kStep};
    struct System {
        simsync::SimSyncHandler* handler;
        simsync::Accessor accessor;
        simsync::SimDuration period;
        simsync::SimTime end;
        std::uint64_t grants = 0;
        int* running;
        void request(simsync::SimTime at)
        {
            accessor.async_request_access(at, simsync::run_inline([this, at](std::error_code ec, simsync::Access a) {
                if (ec == simsync::errc::time_passed) return request(next_after_now(*handler, period));
                simsync::SimTime next = at + period;
                if (!ec) {
                    ++grants;
                    a.release(next);
                }
                if (!ec && next <= end) return request(next);
                if (--*running == 0) handler->stop();
            }));
        }
    };
    int running = n;
    std::vector<System> systems;
    systems.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
        systems.push_back({&handler, handler.register_accessor("a" + std::to_string(i), options_of(i)),
                           kPeriods[i % 4] * kStep, end, 0, &running});
    }
    for (System& s : systems) s.request(simsync::kSimStart); // run by the host, in run()

    const auto cs0 = simsync::bench::ContextSwitches::now();
    const auto t0 = std::chrono::steady_clock::now();
    handler.run();
    const auto t1 = std::chrono::steady_clock::now();
    const auto cs = simsync::bench::ContextSwitches::now() - cs0;
    std::uint64_t grants = 0;
    for (const System& s : systems) grants += s.grants;
    return {std::chrono::duration<double>(t1 - t0).count(), grants, cs.voluntary, cs.involuntary};
}

// The same scenario as C++20 coroutines on one io_context run by two threads:
// a coroutine holds no thread while it waits for its grant. Start-up (the two
// threads, every coroutine's first request) is outside the measured span: the
// handler starts paused and is resumed once every accessor is waiting.
Run run_coroutines(int n, std::int64_t steps)
{
    namespace asio = boost::asio;
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = kStep, .start_paused = true});
    const simsync::SimTime end{steps * kStep};
    std::vector<simsync::Accessor> accessors;
    accessors.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) accessors.push_back(handler.register_accessor("a" + std::to_string(i), options_of(i)));
    std::atomic<std::uint64_t> grants{0};
    asio::io_context io(2);
    auto body = [&](int i) -> asio::awaitable<void> {
        simsync::Accessor& a = accessors[static_cast<std::size_t>(i)];
        const simsync::SimDuration period = kPeriods[i % 4] * kStep;
        std::uint64_t mine = 0;
        simsync::SimTime at = simsync::kSimStart;
        while (at <= end) {
            auto [ec, access] = co_await a.async_request_access(at, asio::use_awaitable);
            if (ec == simsync::errc::time_passed) {
                at = next_after_now(handler, period);
                continue;
            }
            if (ec) break;
            ++mine;
            at += period;
            access.release(at);
        }
        grants.fetch_add(mine);
        a.deregister();
    };
    for (int i = 0; i < n; ++i) asio::co_spawn(io, body(i), asio::detached);
    std::thread second([&] { io.run(); });
    std::thread first([&] { io.run(); });
    wait_until_all_waiting(handler, n); // start-up, outside the measurement

    const auto cs0 = simsync::bench::ContextSwitches::now();
    const auto t0 = std::chrono::steady_clock::now();
    handler.resume();
    first.join();
    second.join();
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
    wait_until_all_waiting(handler, n);
    const double after = resident_bytes();
    handler.stop(); // every request returns `stopped`
    for (auto& t : threads) t.join();
    return (after - before) / n;
}

} // namespace

int main(int argc, char** argv)
{
    simsync::bench::CommandLine cli("bench_scaling",
                                    "Cost and context switches per grant for 1 to 1024 accessors, and memory per "
                                    "accessor.");
    if (const auto exit = cli.parse(argc, argv)) return *exit;
    const bool quick = cli.args().quick;
    using simsync::bench::Compare;
    const int counts[] = {1, 8, 64, 1024};
    // First, in a fresh process: glibc keeps the stacks of exited threads for
    // reuse, so measured after the runs new threads would cost no new memory.
    // The same for the heap: chunks freed earlier sit in glibc's per-thread
    // cache, which mallinfo2 counts as in use, so reuse would hide new memory.
    const double heap_per = heap_per_accessor(1024);
    const double rss_per_thread = resident_per_thread(1024);
    const double target_grants = quick ? 5'000 : 100'000;
    const int reps = quick ? 1 : 5;

    // Each way of being an accessor runs the same scenario, with its own goals
    // (NaN: none); the first is what the cross-style ratio column divides by.
    struct Family {
        std::string id; // names its goals
        std::string name;
        std::function<Run(int, std::int64_t)> run;
        double max_cost_1024_vs_8;   // per-grant cost at 1024 over that at 8
        double max_vcsw_per_grant;   // at every N
    };
    const double none = std::nan("");
    // Inline systems run on the one thread that steps: no wake-up, so no
    // context switch per grant (0.01 leaves room for the process's other,
    // unrelated wake-ups, counted process-wide).
    const std::vector<Family> families{{"blocking", "blocking, one thread each", run, 2.0, 1.5},
                                       {"inline", "inline systems, host thread", run_inline_systems, 1.2, 0.01},
                                       {"coroutine", "coroutines, 2-thread io_context", run_coroutines, none, none}};
    // Goals between styles at one N: `family`'s grants per second over `against`'s.
    struct Versus {
        std::string id;
        std::string goal;
        std::size_t family;
        std::size_t against;
        int n;
        Compare compare;
        double target;
    };
    const std::vector<Versus> versus{{"scaling_coroutine_vs_blocking_1024",
                                      "1024 coroutine accessors on a 2-thread io_context: grants per second at least "
                                      "5x 1024 blocking threads",
                                      2, 0, 1024, Compare::at_least, 5.0}};

    struct Row {
        const Family* family;
        int n;
        std::int64_t steps;
        std::vector<double> ns_per_grant, vcsw, ivcsw;
        std::uint64_t grants = 0;
        double median_ns() const { return simsync::bench::median(ns_per_grant); }
    };
    std::vector<Row> rows;
    for (const Family& f : families) {
        for (int n : counts) {
            rows.push_back({&f, n, std::max<std::int64_t>(20, static_cast<std::int64_t>(target_grants / grants_per_step(n))),
                            {}, {}, {}, 0});
        }
    }
    for (int r = 0; r < reps; ++r) {
        for (Row& row : rows) {
            const Run x = row.family->run(row.n, row.steps);
            const double g = static_cast<double>(x.grants);
            row.ns_per_grant.push_back(1e9 * x.wall_s / g);
            row.vcsw.push_back(static_cast<double>(x.vcsw) / g);
            row.ivcsw.push_back(static_cast<double>(x.ivcsw) / g);
            row.grants = x.grants;
            std::printf("%s, N=%4d rep %d: %llu grants in %.3f s\n", row.family->name.c_str(), row.n, r + 1,
                        static_cast<unsigned long long>(x.grants), x.wall_s);
        }
    }
    auto find = [&](const Family& f, int n) -> const Row& {
        for (const Row& row : rows) {
            if (row.family == &f && row.n == n) return row;
        }
        throw std::logic_error("no such row");
    };

    simsync::bench::Report report;
    report.id = "scaling";
    report.title = "Scaling with the number of accessors";
    report.quick = quick;
    report.description = format(
        "N accessors on a no-op world with a 1 ms step: periods of 1, 2, 5 and 10 steps, lockstep and free, "
        "shared and exclusive, mixed (accessor 0 is lockstep, exclusive, every step, so N = 1 is the lone "
        "accessor, which never hands off). Each requests its next instant and releases at once; the "
        "simulated span gives about %.0f grants per run. Three accessor styles run it: a blocking thread per "
        "accessor; inline systems (completions with no executor, run by the host thread in handler.run() right "
        "after the step); C++20 coroutines on one io_context run by two threads. Wall time from resume (inline: "
        "from run()) to the last accessor's end, per grant; context switches per grant are process-wide "
        "(getrusage). %d repetitions, the N values interleaved; median and min-max. Ratios are within an "
        "accessor style: to N = 1 and to N = 8 (for blocking threads the first N where grants go to other "
        "threads; the goal's baseline, since both hand off), and to the blocking style at the same N. "
        "Memory: heap the handler keeps per registered accessor (mallinfo2) and resident memory per accessor "
        "thread blocked in a request (64 KiB stacks).",
        target_grants, reps);
    std::vector<std::string> columns{"accessors", "accessor style", "simulated steps", "grants", "median ns/grant",
                                     "min", "max", "ratio to N=1", "ratio to N=8", "vol. cs/grant", "invol. cs/grant"};
    if (families.size() > 1) columns.push_back("ratio to " + families.front().name + " at same N");
    simsync::bench::Table table{"", columns, {}};
    simsync::bench::Plot cost{.file = "scaling_cost.png",
                              .title = "Wall time per grant against the number of accessors",
                              .xlabel = "accessors",
                              .ylabel = "ns per grant",
                              .logx = true,
                              .logy = true,
                              .style = "linespoints",
                              .series = {}};
    simsync::bench::Plot switches{.file = "scaling_cswitches.png",
                                  .title = "Voluntary context switches per grant",
                                  .xlabel = "accessors",
                                  .ylabel = "voluntary context switches per grant",
                                  .logx = true,
                                  .logy = false,
                                  .style = "linespoints",
                                  .series = {}};
    for (const Family& f : families) {
        const double at1 = find(f, 1).median_ns();
        const double at8 = find(f, 8).median_ns();
        const double goal_factor = f.max_cost_1024_vs_8;
        simsync::bench::Series c{f.name + ", median", {}}, v{f.name + ", median", {}};
        simsync::bench::Series goal{f.name + ": " + simsync::bench::number_text(goal_factor) + "x N=8 (goal)", {}};
        for (int n : counts) {
            const Row& row = find(f, n);
            const double m = row.median_ns();
            std::vector<std::string> cells{
                format("%d", n), f.name, format("%lld", static_cast<long long>(row.steps)),
                format("%llu", static_cast<unsigned long long>(row.grants)), format("%.0f", m),
                format("%.0f", *std::min_element(row.ns_per_grant.begin(), row.ns_per_grant.end())),
                format("%.0f", *std::max_element(row.ns_per_grant.begin(), row.ns_per_grant.end())),
                format("%.2f", m / at1),
                n == 1024 && !std::isnan(goal_factor) ? simsync::bench::decided(m / at8, Compare::at_most, goal_factor)
                                                      : format("%.2f", m / at8),
                format("%.2f", simsync::bench::median(row.vcsw)), format("%.2f", simsync::bench::median(row.ivcsw))};
            if (families.size() > 1) cells.push_back(format("%.3g", m / find(families.front(), n).median_ns()));
            table.rows.push_back(std::move(cells));
            c.points.emplace_back(n, m);
            if (n >= 8 && !std::isnan(goal_factor)) goal.points.emplace_back(n, goal_factor * at8);
            v.points.emplace_back(n, simsync::bench::median(row.vcsw));
        }
        cost.series.push_back(std::move(c));
        if (!goal.points.empty()) cost.series.push_back(std::move(goal));
        switches.series.push_back(std::move(v));
        if (!std::isnan(f.max_vcsw_per_grant)) {
            switches.series.push_back({f.name + ": " + simsync::bench::number_text(f.max_vcsw_per_grant) + " (goal)",
                                       {{counts[0], f.max_vcsw_per_grant},
                                        {counts[std::size(counts) - 1], f.max_vcsw_per_grant}}});
        }
    }
    report.tables.push_back(std::move(table));
    report.notes.push_back(format("Memory per accessor, measured first in the process with 1024 accessors: "
                                  "%.0f bytes of heap kept by the handler per registered accessor (mallinfo2), "
                                  "%.0f bytes resident per accessor thread blocked in a request (64 KiB stacks).",
                                  heap_per, rss_per_thread));
    report.plots.push_back(std::move(cost));
    report.plots.push_back(std::move(switches));

    for (const Family& f : families) {
        if (!std::isnan(f.max_cost_1024_vs_8)) {
            const double at8 = find(f, 8).median_ns();
            const double at1024 = find(f, 1024).median_ns();
            report.goals.push_back(simsync::bench::check_goal(
                "scaling_" + f.id + "_1024_vs_8",
                f.name + ": per-grant cost at 1024 accessors at most " + simsync::bench::number_text(f.max_cost_1024_vs_8) +
                    "x that at 8" + (f.id == "blocking" ? std::string(" (both hand off)") : std::string()),
                at1024 / at8, Compare::at_most, f.max_cost_1024_vs_8, "x", format("%.0f ns vs %.0f ns", at1024, at8)));
        }
        if (!std::isnan(f.max_vcsw_per_grant)) {
            double worst_vcsw = 0;
            int worst_n = 0;
            for (int n : counts) {
                const double v = simsync::bench::median(find(f, n).vcsw);
                if (v >= worst_vcsw) {
                    worst_vcsw = v;
                    worst_n = n;
                }
            }
            report.goals.push_back(simsync::bench::check_goal(
                "scaling_" + f.id + "_vcsw",
                f.name + ": at most " + simsync::bench::number_text(f.max_vcsw_per_grant) +
                    " voluntary context switches per grant (every N)",
                worst_vcsw, Compare::at_most, f.max_vcsw_per_grant, "", format("worst N: %d", worst_n)));
        }
    }
    for (const Versus& g : versus) {
        const double mine = find(families[g.family], g.n).median_ns();
        const double theirs = find(families[g.against], g.n).median_ns();
        report.goals.push_back(simsync::bench::check_goal(
            g.id, g.goal, theirs / mine, g.compare, g.target, "x",
            format("%.3g vs %.3g grants/s at N = %d", 1e9 / mine, 1e9 / theirs, g.n)));
    }

    simsync::bench::publish(report, cli.args().json_path);
    return 0;
}
