#include "harness.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <sstream>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace simsync::bench {

void cpu_relax() noexcept
{
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#else
    std::this_thread::yield();
#endif
}

// ------------------------------------------------------------------ CPU pinning

static_assert(sizeof(cpu_set_t) <= 128, "CpuPin::saved_ is too small for cpu_set_t");

CpuPin::CpuPin(int cpu)
{
    auto* saved = reinterpret_cast<cpu_set_t*>(saved_);
    if (sched_getaffinity(0, sizeof(cpu_set_t), saved) != 0) return;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    ok_ = sched_setaffinity(0, sizeof(cpu_set_t), &one) == 0;
}

CpuPin::~CpuPin()
{
    if (ok_) sched_setaffinity(0, sizeof(cpu_set_t), reinterpret_cast<const cpu_set_t*>(saved_));
}

int CpuPin::current_cpu() noexcept
{
    const int cpu = sched_getcpu();
    return cpu < 0 ? 0 : cpu;
}

// ------------------------------------------------------------- context switches

ContextSwitchMeter::ContextSwitchMeter() : start_(ContextSwitches::now()) {}

void ContextSwitchMeter::report(benchmark::State& state, int ops_done) const
{
    const ContextSwitches done = ContextSwitches::now() - start_;
    const double ops = std::max(1, ops_done);
    state.counters["vcsw_per_op"] = static_cast<double>(done.voluntary) / ops;
    state.counters["ivcsw_per_op"] = static_cast<double>(done.involuntary) / ops;
}

// ------------------------------------------------------------------- statistics

namespace {

// A dozen repetitions give no meaningful p99: the max over repetitions is the
// honest "bad case" figure, the min the least disturbed one.
double min_of(const std::vector<double>& v)
{
    return v.empty() ? 0.0 : *std::min_element(v.begin(), v.end());
}

double max_of(const std::vector<double>& v)
{
    return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end());
}

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Figures {
    double median_ns = kNaN;
    double min_ns = kNaN;
    double max_ns = kNaN;
    double median_cpu_ns = kNaN;
    double vcsw_per_op = kNaN;
    double ivcsw_per_op = kNaN;
    std::string error;
};

double counter(const benchmark::BenchmarkReporter::Run& run, const char* name)
{
    const auto it = run.counters.find(name);
    return it == run.counters.end() ? kNaN : it->second.value;
}

// Prints Google Benchmark's usual console output and keeps the aggregates the
// results table needs, keyed by case name.
class TableReporter final : public benchmark::ConsoleReporter {
public:
    explicit TableReporter(OutputOptions options) : ConsoleReporter(options) {}

    void ReportRuns(const std::vector<Run>& runs) override
    {
        ConsoleReporter::ReportRuns(runs);
        for (const Run& run : runs) {
            Figures& f = figures_[run.run_name.function_name];
            if (run.error_occurred) {
                f.error = run.error_message;
                continue;
            }
            if (run.run_type != Run::RT_Aggregate) continue;
            const double real_ns = run.GetAdjustedRealTime();
            if (run.aggregate_name == "median") {
                f.median_ns = real_ns;
                f.median_cpu_ns = run.GetAdjustedCPUTime();
                f.vcsw_per_op = counter(run, "vcsw_per_op");
                f.ivcsw_per_op = counter(run, "ivcsw_per_op");
            } else if (run.aggregate_name == "min") {
                f.min_ns = real_ns;
            } else if (run.aggregate_name == "max") {
                f.max_ns = real_ns;
            }
        }
    }

    const Figures* find(const std::string& name) const
    {
        const auto it = figures_.find(name);
        return it == figures_.end() ? nullptr : &it->second;
    }

private:
    std::map<std::string, Figures> figures_;
};

std::string fixed(double value, int decimals)
{
    if (std::isnan(value)) return "n/a";
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
    return buffer;
}

// Enough digits to compare, not so many that noise looks like signal.
std::string ns(double value) { return fixed(value, value < 100 ? 1 : 0); }

// Two significant digits at least, so that a case 100x faster than the
// baseline does not read as 0.00.
std::string ratio(double value)
{
    if (std::isnan(value)) return "n/a";
    return fixed(value, value >= 0.1 ? 2 : value >= 0.01 ? 3 : 4);
}

std::string rate(double ns_per_op)
{
    if (std::isnan(ns_per_op) || ns_per_op <= 0) return "n/a";
    const double per_second = 1e9 / ns_per_op;
    char buffer[64];
    if (per_second >= 1e6) {
        std::snprintf(buffer, sizeof buffer, "%.2f M", per_second / 1e6);
    } else {
        std::snprintf(buffer, sizeof buffer, "%.1f k", per_second / 1e3);
    }
    return buffer;
}

} // namespace

// ------------------------------------------------------------------------ suite

Suite::Suite(std::string id, std::string title, std::string baseline, std::string description)
    : id_(std::move(id)), title_(std::move(title)), baseline_(std::move(baseline)), description_(std::move(description))
{
}

void Suite::add(Case c) { cases_.push_back(std::move(c)); }

void Suite::add_goal(GoalSpec goal) { goals_.push_back(std::move(goal)); }

int Suite::run(int argc, char** argv)
{
    const std::string program = argc > 0 ? std::filesystem::path(argv[0]).filename().string() : "benchmark";
    CommandLine cli(program, title_ + ": Google Benchmark cases against baselines measured in the same run.");
    cli.epilogue("--quick: 3 repetitions of at least 0.02 s per case (default 12 of 0.25 s).\n"
                 "Google Benchmark's own flags (below) are passed through to it.");
    if (const auto exit = cli.parse(argc, argv, {"--benchmark_", "--v="})) {
        if (*exit == 0) benchmark::PrintDefaultHelp(); // after our --help
        return *exit;
    }
    const bool quick = cli.args().quick;
    const int repetitions = quick ? 3 : 12;
    const double min_time_seconds = quick ? 0.02 : 0.25;
    Reference reference;
    try {
        reference = Reference::load(cli.args().reference_path);
    } catch (const std::exception& e) {
        return cli.usage_error(e.what());
    }

    // Interleave the repetitions of all cases in random order: load from other
    // work on a shared machine then spreads over every case instead of
    // penalising whichever case happened to run during a build. Placed first
    // so a caller's own --benchmark_enable_random_interleaving=false wins.
    std::vector<std::string> flags{argv[0], "--benchmark_enable_random_interleaving=true"};
    flags.insert(flags.end(), cli.passthrough().begin(), cli.passthrough().end());
    std::vector<char*> rest;
    for (std::string& f : flags) rest.push_back(f.data());
    int rest_count = static_cast<int>(rest.size());
    rest.push_back(nullptr);
    benchmark::Initialize(&rest_count, rest.data());
    if (benchmark::ReportUnrecognizedArguments(rest_count, rest.data())) return 2;

    for (Case& c : cases_) {
        // Per-case repetitions and min time rather than --benchmark_repetitions,
        // so that --quick can shorten a run without the caller knowing the
        // defaults; Google Benchmark lets a case's own setting win over the flag.
        benchmark::RegisterBenchmark(c.name.c_str(),
                                     [&c](benchmark::State& state) {
                                         c.body(state);
                                         state.SetItemsProcessed(state.iterations() * c.items_per_op);
                                     })
            ->Unit(benchmark::kNanosecond)
            ->Repetitions(repetitions)
            ->MinTime(min_time_seconds)
            ->ReportAggregatesOnly(true)
            ->ComputeStatistics("min", &min_of)
            ->ComputeStatistics("max", &max_of)
            // Wall time for every case, threaded or not: the ratios must compare
            // like with like, and a benchmark thread's CPU time misses the time
            // it spends blocked waiting for its partner. Process CPU time (all
            // threads) is kept beside it to show who burns a core by spinning.
            ->MeasureProcessCPUTime()
            ->UseRealTime();
    }

    // Colour escapes would litter a log built from our output. Google
    // Benchmark's --benchmark_color only configures the reporter it makes
    // itself, not one passed in, so the choice is made here.
    TableReporter reporter(isatty(STDOUT_FILENO) != 0 ? benchmark::ConsoleReporter::OO_ColorTabular
                                                      : benchmark::ConsoleReporter::OO_Tabular);
    benchmark::RunSpecifiedBenchmarks(&reporter);
    benchmark::Shutdown();

    const Figures* base = reporter.find(baseline_);
    const double base_ns = base != nullptr ? base->median_ns : kNaN;
    const Case* base_case = nullptr;
    for (const Case& c : cases_) {
        if (c.name == baseline_) base_case = &c;
    }

    Report report;
    report.id = id_;
    report.title = title_;
    report.quick = quick;
    std::ostringstream method;
    if (!description_.empty()) method << description_ << "\n\n";
    method << "Google Benchmark, wall time per op over " << repetitions
           << " repetitions (interleaved in random order) of at least " << min_time_seconds
           << " s each: median, min and max over the repetitions. Ratio = median ns/op divided by the "
              "baseline's (`"
           << (base_case != nullptr ? base_case->mechanism : baseline_)
           << "`, same run); below 1 is faster. CPU = process CPU time / wall time (cores kept "
              "busy). Context switches per op are process-wide (vol. = a thread blocked, invol. = "
              "a thread was preempted).";
    report.description = method.str();

    Table table{.caption = "",
                .columns = {"mechanism", "op", "median ns/op", "min", "max", "ratio to baseline", "ns/handoff",
                            "ops/s", "CPU", "vol. cs/op", "invol. cs/op"},
                .rows = {}};
    for (const Case& c : cases_) {
        const Figures* f = reporter.find(c.name);
        std::vector<std::string> row{c.mechanism, c.op};
        if (f == nullptr || !f->error.empty()) {
            row.push_back(f == nullptr ? "not run (filtered out)" : "error: " + f->error);
            row.resize(table.columns.size(), "");
        } else {
            for (std::string cell :
                 {ns(f->median_ns), ns(f->min_ns), ns(f->max_ns), ratio(f->median_ns / base_ns),
                  c.handoffs_per_op > 0 ? ns(f->median_ns / c.handoffs_per_op) : std::string("-"),
                  rate(f->median_ns), fixed(f->median_cpu_ns / f->median_ns, 2), fixed(f->vcsw_per_op, 2),
                  fixed(f->ivcsw_per_op, 2)}) {
                row.push_back(std::move(cell));
            }
        }
        table.rows.push_back(std::move(row));
    }
    report.tables.push_back(std::move(table));

    // Per-item medians (ns per grant or per handoff) for the goals.
    auto per_item = [&](const std::string& name) -> double {
        const Figures* f = reporter.find(name);
        for (const Case& c : cases_) {
            if (c.name == name && f != nullptr && f->error.empty()) return f->median_ns / c.items_per_op;
        }
        return kNaN;
    };
    for (const GoalSpec& g : goals_) {
        const double subject = per_item(g.subject);
        double best = kNaN;
        std::string best_name;
        for (const std::string& b : g.baselines) {
            const double v = per_item(b);
            if (!std::isnan(v) && (std::isnan(best) || v < best)) {
                best = v;
                best_name = b;
            }
        }
        const double r = g.measure == GoalMeasure::time_per_item ? subject / best : best / subject;
        // A case left out by --benchmark_filter is not run; one that failed is a miss.
        bool filtered = reporter.find(g.subject) == nullptr;
        if (!filtered) {
            filtered = std::none_of(g.baselines.begin(), g.baselines.end(),
                                    [&](const std::string& b) { return reporter.find(b) != nullptr; });
        }
        if (filtered) {
            report.goals.push_back(unchecked_goal(g.id, g.goal, g.compare, g.target, "x", "not run (filtered out)"));
        } else {
            const std::string detail = ns(subject) + " ns vs " + ns(best) + " ns per item, " + best_name;
            report.goals.push_back(check_goal(g.id, g.goal, r, g.compare, g.target, "x", detail));
        }
        if (g.reference_tolerance <= 0) continue;
        const std::string text = g.goal + ": ratio no worse than in the reference run (tolerance " +
                                 number_text(g.reference_tolerance) + "x)";
        // "No worse": a smaller time ratio or a larger rate ratio is better.
        const bool smaller_is_better = g.compare == Compare::at_most || g.compare == Compare::below;
        const Compare no_worse = smaller_is_better ? Compare::at_most : Compare::at_least;
        const auto before = reference.value(g.id);
        if (!before || filtered) {
            Goal unchecked = unchecked_goal(g.id + "_vs_reference", text, no_worse, kNaN, "x",
                                            filtered ? "not run (filtered out)"
                                            : reference.path.empty() ? "not run (needs --reference)"
                                                                     : "not run (goal not in the reference run)");
            unchecked.target = std::string(to_string(no_worse)) + " the reference run's ratio " +
                               (smaller_is_better ? "x " : "/ ") + number_text(g.reference_tolerance);
            report.goals.push_back(std::move(unchecked));
            continue;
        }
        const double limit = smaller_is_better ? *before * g.reference_tolerance : *before / g.reference_tolerance;
        report.goals.push_back(check_goal(g.id + "_vs_reference", text, r, no_worse, limit, "x",
                                          "reference run: " + number_text(*before) + "x, " + reference.path));
    }

    std::cout << "\n" << std::flush; // after Google Benchmark's console output
    try {
        publish(report, cli.args().json_path);
    } catch (const std::exception& e) {
        std::cerr << e.what() << "\n";
        return 1;
    }
    return 0;
}

} // namespace simsync::bench
