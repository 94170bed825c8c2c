#pragma once
// The results document every benchmark executable writes (--json=PATH), and that
// scripts/bench_page.py turns into docs/benchmarks.md and its plots; the command
// line every benchmark takes; the statistics and goal checks they share.
//
// Why one format: the page is regenerated from scratch by one command, so every
// figure on it must come out of a run, with its baseline beside it; the page
// generator only lays out what the benchmarks measured. Cells are preformatted
// strings (the benchmark knows its units and precision); goals carry the measured
// value and whether it met the target, decided by the benchmark from its figures,
// both as text for the page and as numbers for a later run to compare with
// (--reference).
//
// Format (JSON object):
//   id, title, description (Markdown), mode ("full" | "quick"),
//   tables: [{caption, columns: [..], rows: [[..], ..]}],
//   goals:  [{id, goal, target, measured, met: bool, checked: bool,
//             value: number|null, target_value: number|null, compare: "<=" | ">=" | "<" | ">", unit}],
//   plots:  [{file, title, xlabel, ylabel, logx, logy, style, series: [{name, points: [[x, y], ..]}]}],
//   notes:  [Markdown lines the run itself produced, e.g. "all hashes equal"].
//
// Thread safety: plain values; fill and write from one thread.

#include <boost/program_options.hpp>

#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace simsync::bench {

struct Table {
    std::string caption;
    std::vector<std::string> columns;
    std::vector<std::vector<std::string>> rows;
};

/// How a measured value is held against its target.
enum class Compare {
    at_most,  // measured <= target
    at_least, // measured >= target
    below,    // measured <  target
    above,    // measured >  target
};

const char* to_string(Compare c) noexcept; // "<=", ">=", "<", ">"
bool holds(double measured, Compare c, double target) noexcept;

struct Goal {
    /// Stable, file-name-safe name ("grant_cost_1024_vs_8"): what a later run's
    /// --reference looks the goal up by. Empty for goals nobody refers to.
    std::string id;
    std::string goal;     // "per-grant cost at 1024 accessors at most 2x that at 8"
    std::string target;   // "<= 2x"
    std::string measured; // "1.0504x (13989 ns vs 13318 ns)"
    bool met = false;
    /// False when this run did not measure it (e.g. a long mode not asked for):
    /// the page says "not run" rather than met or missed.
    bool checked = true;
    /// The same as numbers (NaN when not measured), for --reference.
    double value = 0;
    double target_value = 0;
    Compare compare = Compare::at_most;
    std::string unit; // as printed after the number: "x", " us", " %", ""
};

/// A checked goal: `measured` against `target` by `compare`. The measured value
/// is printed with as many decimals as it takes (at least `decimals`) for the
/// printed value to compare with the printed target the way the true value does,
/// so that a reader never sees "1.050x" missing "<= 1.05x". `detail` follows in
/// parentheses ("13989 ns vs 13318 ns"). A NaN measurement is "not measured", missed.
Goal check_goal(std::string id, std::string text, double measured, Compare compare, double target,
                std::string unit, std::string detail = {}, int decimals = 2);

/// A goal this run did not measure (checked = false): `why` ("not run (needs --long)").
Goal unchecked_goal(std::string id, std::string text, Compare compare, double target, std::string unit,
                    std::string why);

/// `measured` printed with at least `decimals` decimals and as many more as it
/// takes for the printed value to hold against `target` exactly when `measured`
/// does (see check_goal). For table cells beside a goal.
std::string decided(double measured, Compare compare, double target, int decimals = 2);

/// A target as printed: the shortest form that reads back as the same number ("1.05", "20").
std::string number_text(double value);

struct Series {
    std::string name;
    std::vector<std::pair<double, double>> points;
};

struct Plot {
    std::string file; // PNG file name, unique over the whole page
    std::string title;
    std::string xlabel;
    std::string ylabel;
    bool logx = false;
    bool logy = false;
    std::string style = "linespoints"; // gnuplot style: linespoints, steps, points
    std::vector<Series> series;
};

struct Report {
    std::string id; // file-name-safe: also names bench/<id>.notes.md
    std::string title;
    std::string description;
    bool quick = false;
    std::vector<Table> tables;
    std::vector<Goal> goals;
    std::vector<Plot> plots;
    std::vector<std::string> notes;

    /// Writes the JSON document; throws std::runtime_error naming the path on failure.
    void write_json(const std::string& path) const;
    /// Prints what a reader of the terminal needs: every table with its column
    /// headers, columns aligned, then the goals (met / MISSED / not run) and the
    /// notes. Plots are left to the page.
    void print(std::FILE* out = stdout) const;
};

// ------------------------------------------------------------------ statistics

/// The median of `values` (the upper one of the two middle values for an even
/// count); 0 for none.
double median(std::vector<double> values);

/// A distribution over every sample given (several repetitions pooled), exact:
/// nearest-rank percentiles of the sorted samples, not medians of per-repetition
/// percentiles.
struct Distribution {
    std::size_t count = 0;
    double p50 = 0;
    double p99 = 0;
    double min = 0;
    double max = 0;
    double mean = 0;
};

/// Nearest-rank percentile `p` in [0, 1] of sorted `values` (0 for none).
double percentile_of_sorted(const std::vector<double>& sorted, double p);
Distribution distribution(std::vector<double> samples);

/// The empirical cumulative distribution of `samples` as plot points (value,
/// fraction of samples at or below it), at most `max_points` of them, always
/// including the smallest and largest sample.
std::vector<std::pair<double, double>> cumulative(std::vector<double> samples, std::size_t max_points = 400);

/// User + system CPU time of the whole process so far (getrusage), in seconds.
double process_cpu_seconds();
/// CPU time of the calling thread so far (CLOCK_THREAD_CPUTIME_ID), in seconds.
double thread_cpu_seconds();

/// printf into a std::string, for table cells.
[[gnu::format(printf, 1, 2)]] std::string format(const char* fmt, ...);

/// The whole process's context switches so far (getrusage): voluntary (a thread
/// blocked) and involuntary (a thread was preempted).
struct ContextSwitches {
    long voluntary = 0;
    long involuntary = 0;
    static ContextSwitches now();
    ContextSwitches operator-(const ContextSwitches& earlier) const
    {
        return {voluntary - earlier.voluntary, involuntary - earlier.involuntary};
    }
};

// ---------------------------------------------------------------- command line

/// What every benchmark takes on its command line.
struct CommonArgs {
    /// A smoke run: short, figures not to be trusted.
    bool quick = false;
    /// Where to write the results document ("" = nowhere).
    std::string json_path;
    /// An earlier run's results document of the same benchmark ("" = none), for
    /// goals stated against an earlier figure ("no worse than before").
    std::string reference_path;
};

/// A benchmark's command line, parsed by Boost.Program_options: the common
/// options (--quick, --json PATH, --reference PATH, --help) and the benchmark's
/// own (add()). Errors name the option and exit with 2; --help exits with 0.
///
/// @code
/// simsync::bench::CommandLine cli("bench_pacing", "Pacing lateness against plain sleeps.");
/// bool long_mode = false;
/// cli.add()("long", po::bool_switch(&long_mode), "also the 60 s drift run");
/// if (const auto exit = cli.parse(argc, argv)) return *exit;
/// @endcode
///
/// Copy/move: neither. Thread safety: single-threaded; from main().
class CommandLine {
public:
    CommandLine(std::string program, std::string about);
    CommandLine(const CommandLine&) = delete;
    CommandLine& operator=(const CommandLine&) = delete;

    /// The benchmark's own options (boost::program_options syntax).
    boost::program_options::options_description_easy_init add();
    /// Text after the option list in --help (e.g. defaults that depend on --quick).
    void epilogue(std::string text) { epilogue_ = std::move(text); }

    /// Parses argv and runs the options' notifiers. Returns nullopt to go on, or
    /// the exit code to return from main at once: 0 after --help (usage on
    /// stdout), 2 after a usage error (one line naming the option on stderr).
    /// Arguments starting with one of `passthrough_prefixes` are not parsed but
    /// kept, in order, in passthrough() (Google Benchmark's --benchmark_* flags).
    std::optional<int> parse(int argc, char** argv, std::vector<std::string> passthrough_prefixes = {});

    const CommonArgs& args() const noexcept { return args_; }
    /// True if `name` was given on the command line (not left at its default).
    bool given(const std::string& name) const;
    const std::vector<std::string>& passthrough() const noexcept { return passthrough_; }
    /// For a check after parse(): prints "PROGRAM: MESSAGE" and the --help hint to
    /// stderr; returns 2, the exit code.
    int usage_error(const std::string& message) const;

private:
    CommonArgs args_; // before common_, whose options write into it
    std::string program_;
    std::string about_;
    std::string epilogue_;
    boost::program_options::options_description common_;
    boost::program_options::options_description own_;
    boost::program_options::variables_map vm_;
    std::vector<std::string> passthrough_;
};

/// The repetitions and the simulated length of the benchmarks that time whole
/// runs (the physics hosts'): --reps N (at least 1) and --seconds S (positive),
/// each with a smaller default under --quick.
/// @code
/// simsync::bench::RepeatedRuns runs{.reps = 5, .seconds = 10, .quick_reps = 2, .quick_seconds = 1};
/// runs.add_options(cli, "alternating which run goes first");
/// if (const auto exit = cli.parse(argc, argv)) return *exit;
/// runs.apply_quick(cli);
/// @endcode
struct RepeatedRuns {
    int reps = 5;
    double seconds = 10;
    int quick_reps = 2;
    double quick_seconds = 1;
    /// Adds both options; `order` says how runs are ordered within a repetition.
    void add_options(CommandLine& cli, const std::string& order);
    /// After parse(): under --quick, the quick defaults for what was not given.
    void apply_quick(const CommandLine& cli);
};

/// The goal values of an earlier run's results document (Goal::id -> Goal::value;
/// goals that run did not measure are left out). Empty when `path` is "".
/// @throws std::runtime_error naming the path (and the line for malformed JSON).
struct Reference {
    std::string path;
    std::map<std::string, double> values;
    std::optional<double> value(const std::string& id) const;
    static Reference load(const std::string& path);
};

/// Prints the report (Report::print) and writes its document to `json_path`
/// unless that is empty. @throws std::runtime_error naming the path on failure.
void publish(const Report& report, const std::string& json_path);

} // namespace simsync::bench
