#pragma once
// Shared harness for simsync's benchmark executables.
//
// Every Google Benchmark executable (the micro-benchmarks; scenario benchmarks
// have their own loops) is a Suite: a list of cases, one of which is the
// baseline that every other case is divided by. The machine these run on is a
// shared, noisy 2-vCPU VM, so an absolute time means little on its own; a ratio
// against a baseline measured minutes earlier in the same process is what a
// reader can compare across runs and machines. Hence one run, repetitions,
// and the median with min and max beside it.
//
// Copy/move: Suite is neither (Google Benchmark keeps pointers into it while it
// runs). Thread safety: single-threaded; build and run it from main().

#include "report.hpp"

#include <benchmark/benchmark.h>

#include <functional>
#include <string>
#include <vector>

namespace simsync::bench {

/// One benchmark case as the results table describes it.
struct Case {
    /// Google Benchmark's name, e.g. "pingpong/mutex_cv". Unique in a suite.
    std::string name;
    /// What the table's first column says, e.g. "simsync, 1 lockstep accessor".
    std::string mechanism;
    /// What one timed iteration is, e.g. "grant" or "round trip".
    std::string op;
    /// Thread handoffs in one op (0 when the op needs none); the table shows
    /// ns per handoff for these so that design.md's handoff budgets can be checked.
    int handoffs_per_op = 0;
    /// Units counted in items/s per op (grants per op for simsync cases,
    /// handoffs per op for ping-pongs). Must be > 0.
    int items_per_op = 1;
    std::function<void(benchmark::State&)> body;
};

/// Run-wide options, from the command line.
struct Options {
    /// Few, short repetitions: a smoke run that checks every case runs (CI),
    /// whose figures are not to be trusted.
    bool quick = false;
    int repetitions = 12;
    double min_time_seconds = 0.25;
    /// Where to write the results document (report.hpp; "" = nowhere).
    std::string json_path;
};

/// A goal the suite checks against its own figures: the median time per item
/// (Case::items_per_op: grants for simsync cases, handoffs for ping-pongs) of
/// `subject`, divided by the best (smallest) of the `baselines`' per-item medians,
/// must be at most `max_ratio`.
struct GoalSpec {
    std::string goal;
    std::string subject;
    std::vector<std::string> baselines;
    double max_ratio = 1.0;
};

class Suite {
public:
    /// `id` names the results document (report.hpp); `title` heads the table;
    /// `baseline` names the case every ratio is against; `description` is Markdown.
    Suite(std::string id, std::string title, std::string baseline, std::string description = {});
    Suite(const Suite&) = delete;
    Suite& operator=(const Suite&) = delete;

    void add(Case c);
    void add_goal(GoalSpec goal);

    /// Parses the harness's own flags (--quick, --json=PATH) and Google
    /// Benchmark's (--benchmark_filter=... and friends), runs every case, prints
    /// Google Benchmark's console output followed by the results table and goals.
    /// @return the process exit code.
    int run(int argc, char** argv);

private:
    std::string id_;
    std::string title_;
    std::string baseline_;
    std::string description_;
    std::vector<Case> cases_;
    std::vector<GoalSpec> goals_;
};

/// Counts the process's context switches over a benchmark loop and reports them
/// per op as counters `vcsw_per_op` (voluntary: a thread blocked, the cost
/// a wake-up mechanism is trying to avoid) and `ivcsw_per_op` (involuntary: a
/// thread was preempted, which on a shared machine is mostly other people's work).
/// Process-wide on purpose: a ping-pong partner's switches count too.
class ContextSwitchMeter {
public:
    ContextSwitchMeter();
    /// Call once after the timed loop.
    void report(benchmark::State& state, int ops_done) const;

private:
    ContextSwitches start_;
};

/// Pins the calling thread to one CPU for the object's lifetime, then restores
/// its previous affinity. Cases that put both threads of a handoff on one CPU
/// use it to show, reproducibly, what a handoff costs when no second core is
/// free, which on a shared machine otherwise happens only when someone builds.
/// Copy/move: neither.
class CpuPin {
public:
    explicit CpuPin(int cpu);
    CpuPin(const CpuPin&) = delete;
    CpuPin& operator=(const CpuPin&) = delete;
    ~CpuPin();
    /// False if the pin failed (the case should then skip itself).
    bool ok() const noexcept { return ok_; }
    /// The CPU the calling thread runs on now (0 if unknown).
    static int current_cpu() noexcept;

private:
    bool ok_ = false;
    alignas(8) unsigned char saved_[128]; // a cpu_set_t, kept opaque to keep <sched.h> out
};

/// A processor hint that we are in a spin loop (lets the sibling hyperthread
/// run, saves power); a yield where the architecture has no such hint.
void cpu_relax() noexcept;

} // namespace simsync::bench
