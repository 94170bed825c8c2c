#pragma once
// The results document every benchmark executable writes (--json=PATH), and that
// scripts/bench_page.py turns into docs/benchmarks.md and its plots.
//
// Why one format: the page is regenerated from scratch by one command, so every
// figure on it must come out of a run, with its baseline beside it; the page
// generator only lays out what the benchmarks measured. Cells are preformatted
// strings (the benchmark knows its units and precision); goals carry the measured
// value and whether it met the target, decided by the benchmark from its figures.
//
// Format (JSON object):
//   id, title, description (Markdown), mode ("full" | "quick"),
//   tables: [{caption, columns: [..], rows: [[..], ..]}],
//   goals:  [{goal, target, measured, met: bool, checked: bool}],
//   plots:  [{file, title, xlabel, ylabel, logx, logy, style, series: [{name, points: [[x, y], ..]}]}],
//   notes:  [Markdown lines the run itself produced, e.g. "all hashes equal"].
//
// Thread safety: plain values; fill and write from one thread.

#include <cstdio>
#include <cstdio>
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

struct Goal {
    std::string goal;     // "grant cost at 1024 accessors <= 2x at 1"
    std::string target;   // "<= 2.00x"
    std::string measured; // "37.1x"
    bool met = false;
    /// False when this run did not measure it (e.g. a long mode not asked for):
    /// the page says "not run" rather than met or missed.
    bool checked = true;
};

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

/// The median of `values` (the upper one of the two middle values for an even
/// count); 0 for none.
double median(std::vector<double> values);

/// User + system CPU time of the whole process so far (getrusage), in seconds.
double process_cpu_seconds();

/// printf into a std::string, for table cells.
[[gnu::format(printf, 1, 2)]] std::string format(const char* fmt, ...);

/// What every scenario benchmark takes on its command line.
struct ScenarioArgs {
    bool quick = false;     // a smoke run: short, figures not to be trusted
    std::string json_path;  // where to write the results document ("" = nowhere)
};

/// Takes `--quick` and `--json=PATH` out of argv, after the benchmark has taken
/// its own flags. Anything left is a usage error: prints the usage (with
/// `own_flags`, e.g. "[--long]") to stderr and returns nullopt (exit with 2).
std::optional<ScenarioArgs> take_scenario_args(int& argc, char** argv, const char* own_flags = "");

/// Prints the report (Report::print) and writes its document to `json_path`
/// unless that is empty. @throws std::runtime_error naming the path on failure.
void publish(const Report& report, const std::string& json_path);

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

/// Removes `--json=PATH` from argv (so the benchmark's own parsing never sees it)
/// and returns PATH, or "" if absent.
std::string take_json_flag(int& argc, char** argv);

/// Removes a bare flag such as `--quick` from argv; true if it was present.
bool take_flag(int& argc, char** argv, const char* flag);

} // namespace simsync::bench
