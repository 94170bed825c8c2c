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
    /// ns per handoff for these, to set against the plain handoffs measured in the same run.
    int handoffs_per_op = 0;
    /// Units counted in items/s per op (grants per op for simsync cases,
    /// handoffs per op for ping-pongs). Must be > 0.
    int items_per_op = 1;
    std::function<void(benchmark::State&)> body;
};

/// What a GoalSpec's ratio divides.
enum class GoalMeasure {
    /// The subject's median time per item over the baseline's: below 1 is faster.
    time_per_item,
    /// The subject's items per second over the baseline's (the inverse): above 1 is faster.
    items_per_second,
};

/// A goal the suite checks against its own figures, a ratio of `subject` to the
/// best (fastest per item; Case::items_per_op: grants for simsync cases,
/// handoffs for ping-pongs) of the `baselines` measured in the same run, held
/// against `target` by `compare`: "at most 0.5x the time per grant" is
/// {time_per_item, at_most, 0.5}, "at least 5x the grants per second" is
/// {items_per_second, at_least, 5}.
struct GoalSpec {
    /// Stable name of the goal in the results document (Goal::id).
    std::string id;
    std::string goal;
    std::string subject;
    std::vector<std::string> baselines;
    GoalMeasure measure = GoalMeasure::time_per_item;
    Compare compare = Compare::at_most;
    double target = 1.0;
    /// > 0: also a goal against an earlier run (--reference=PATH, that run's
    /// results document): this run's ratio must be no worse than that run's ratio
    /// of the same goal id times this tolerance (1.1 = up to 10 % worse), each
    /// against its own run's baseline. "Not run" without --reference.
    double reference_tolerance = 0;
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

    /// Parses the common options (report.hpp: CommandLine: --quick, --json,
    /// --reference, --help) and passes Google Benchmark's own (--benchmark_*)
    /// through to it, runs every case, prints Google Benchmark's console output
    /// followed by the results table and goals.
    /// @return the process exit code (2 for a usage error).
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
