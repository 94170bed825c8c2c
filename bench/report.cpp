#include "report.hpp"

#include <sys/resource.h>
#include <time.h>

#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace simsync::bench {
namespace {

void quote(std::ostream& out, const std::string& s)
{
    out << '"';
    for (const unsigned char c : s) {
        switch (c) {
        case '"': out << "\\\""; break;
        case '\\': out << "\\\\"; break;
        case '\n': out << "\\n"; break;
        case '\t': out << "\\t"; break;
        case '\r': out << "\\r"; break;
        default:
            if (c < 0x20) {
                char buf[8];
                std::snprintf(buf, sizeof buf, "\\u%04x", c);
                out << buf;
            } else {
                out << c;
            }
        }
    }
    out << '"';
}

void number(std::ostream& out, double v)
{
    // JSON has no NaN or infinity; a point that has neither value is left off the plot.
    if (!std::isfinite(v)) {
        out << "null";
        return;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", v);
    out << buf;
}

template <class T, class F>
void array(std::ostream& out, const std::vector<T>& items, F&& each)
{
    out << '[';
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (i) out << ',';
        each(items[i]);
    }
    out << ']';
}

} // namespace

void Report::write_json(const std::string& path) const
{
    std::ostringstream out;
    out << "{\"id\":";
    quote(out, id);
    out << ",\"title\":";
    quote(out, title);
    out << ",\"description\":";
    quote(out, description);
    out << ",\"mode\":" << (quick ? "\"quick\"" : "\"full\"");
    out << ",\n\"tables\":";
    array(out, tables, [&](const Table& t) {
        out << "\n{\"caption\":";
        quote(out, t.caption);
        out << ",\"columns\":";
        array(out, t.columns, [&](const std::string& s) { quote(out, s); });
        out << ",\"rows\":";
        array(out, t.rows, [&](const std::vector<std::string>& row) {
            out << '\n';
            array(out, row, [&](const std::string& s) { quote(out, s); });
        });
        out << '}';
    });
    out << ",\n\"goals\":";
    array(out, goals, [&](const Goal& g) {
        out << "\n{\"id\":";
        quote(out, g.id);
        out << ",\"goal\":";
        quote(out, g.goal);
        out << ",\"target\":";
        quote(out, g.target);
        out << ",\"measured\":";
        quote(out, g.measured);
        out << ",\"met\":" << (g.met ? "true" : "false");
        out << ",\"checked\":" << (g.checked ? "true" : "false");
        out << ",\"value\":";
        number(out, g.checked ? g.value : std::nan(""));
        out << ",\"target_value\":";
        number(out, g.target_value);
        out << ",\"compare\":";
        quote(out, to_string(g.compare));
        out << ",\"unit\":";
        quote(out, g.unit);
        out << '}';
    });
    out << ",\n\"plots\":";
    array(out, plots, [&](const Plot& p) {
        out << "\n{\"file\":";
        quote(out, p.file);
        out << ",\"title\":";
        quote(out, p.title);
        out << ",\"xlabel\":";
        quote(out, p.xlabel);
        out << ",\"ylabel\":";
        quote(out, p.ylabel);
        out << ",\"logx\":" << (p.logx ? "true" : "false");
        out << ",\"logy\":" << (p.logy ? "true" : "false");
        out << ",\"style\":";
        quote(out, p.style);
        out << ",\"series\":";
        array(out, p.series, [&](const Series& s) {
            out << "\n{\"name\":";
            quote(out, s.name);
            out << ",\"points\":";
            array(out, s.points, [&](const std::pair<double, double>& xy) {
                out << '[';
                number(out, xy.first);
                out << ',';
                number(out, xy.second);
                out << ']';
            });
            out << '}';
        });
        out << '}';
    });
    out << ",\n\"notes\":";
    array(out, notes, [&](const std::string& s) {
        out << '\n';
        quote(out, s);
    });
    out << "}\n";

    std::ofstream file(path);
    file << out.str();
    file.close();
    if (!file) {
        throw std::runtime_error("cannot write benchmark results to " + path);
    }
}

double median(std::vector<double> values)
{
    if (values.empty()) return 0;
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
}

void Report::print(std::FILE* out) const
{
    std::fprintf(out, "%s%s\n", title.c_str(), quick ? " (quick)" : "");
    for (const Table& t : tables) {
        std::fprintf(out, "\n");
        if (!t.caption.empty()) std::fprintf(out, "%s\n", t.caption.c_str());
        // Widths in bytes: the cells are ASCII (microseconds spelt "us").
        std::vector<std::size_t> width(t.columns.size(), 0);
        auto widen = [&](const std::vector<std::string>& cells) {
            if (cells.size() > width.size()) width.resize(cells.size(), 0);
            for (std::size_t i = 0; i < cells.size(); ++i) width[i] = std::max(width[i], cells[i].size());
        };
        widen(t.columns);
        for (const auto& row : t.rows) widen(row);
        // First column (the variant) left-aligned, figures right-aligned.
        auto line = [&](const std::vector<std::string>& cells) {
            for (std::size_t i = 0; i < cells.size(); ++i) {
                const int w = static_cast<int>(width[i]);
                if (i == 0) {
                    std::fprintf(out, "%-*s", w, cells[i].c_str());
                } else {
                    std::fprintf(out, "  %*s", w, cells[i].c_str());
                }
            }
            std::fprintf(out, "\n");
        };
        line(t.columns);
        std::size_t total = 0;
        for (std::size_t w : width) total += w + 2;
        std::fprintf(out, "%s\n", std::string(total > 2 ? total - 2 : 0, '-').c_str());
        for (const auto& row : t.rows) line(row);
    }
    if (!goals.empty()) std::fprintf(out, "\n");
    for (const Goal& g : goals) {
        std::fprintf(out, "%-14s %s: %s (target %s)\n",
                     !g.checked ? "goal not run:" : g.met ? "goal met:" : "goal MISSED:", g.goal.c_str(),
                     g.measured.c_str(), g.target.c_str());
    }
    if (!notes.empty()) std::fprintf(out, "\n");
    for (const std::string& n : notes) std::fprintf(out, "%s\n", n.c_str());
}

void publish(const Report& report, const std::string& json_path)
{
    report.print();
    if (!json_path.empty()) report.write_json(json_path);
}

ContextSwitches ContextSwitches::now()
{
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return {usage.ru_nvcsw, usage.ru_nivcsw};
}

double process_cpu_seconds()
{
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    auto seconds = [](const timeval& tv) {
        return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) * 1e-6;
    };
    return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

std::string format(const char* fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    va_list copy;
    va_copy(copy, args);
    const int n = std::vsnprintf(nullptr, 0, fmt, copy);
    va_end(copy);
    std::string s(n > 0 ? static_cast<std::size_t>(n) : 0, '\0');
    if (n > 0) std::vsnprintf(s.data(), s.size() + 1, fmt, args);
    va_end(args);
    return s;
}

// ------------------------------------------------------------------ goals

const char* to_string(Compare c) noexcept
{
    switch (c) {
    case Compare::at_most: return "<=";
    case Compare::at_least: return ">=";
    case Compare::below: return "<";
    case Compare::above: return ">";
    }
    return "?";
}

bool holds(double measured, Compare c, double target) noexcept
{
    switch (c) {
    case Compare::at_most: return measured <= target;
    case Compare::at_least: return measured >= target;
    case Compare::below: return measured < target;
    case Compare::above: return measured > target;
    }
    return false;
}

namespace {

std::string fixed(double value, int decimals) { return format("%.*f", decimals, value); }

} // namespace

std::string number_text(double value)
{
    if (!std::isfinite(value)) return format("%g", value);
    // Plain decimals first ("150", "1.05"), never an exponent for an everyday target.
    for (int decimals = 0; decimals <= 9; ++decimals) {
        std::string s = format("%.*f", decimals, value);
        if (std::strtod(s.c_str(), nullptr) == value) return s;
    }
    return format("%.17g", value);
}

std::string decided(double measured, Compare compare, double target, int decimals)
{
    if (std::isnan(measured)) return "n/a";
    // Held against the target as printed, which is what the reader compares with.
    const double printed_target = std::strtod(number_text(target).c_str(), nullptr);
    const bool truth = holds(measured, compare, printed_target);
    for (int d = std::max(0, decimals); d <= 12; ++d) {
        std::string s = fixed(measured, d);
        if (holds(std::strtod(s.c_str(), nullptr), compare, printed_target) == truth) return s;
    }
    return format("%.17g", measured);
}

Goal check_goal(std::string id, std::string text, double measured, Compare compare, double target,
                std::string unit, std::string detail, int decimals)
{
    Goal g;
    g.id = std::move(id);
    g.goal = std::move(text);
    g.target = std::string(to_string(compare)) + " " + number_text(target) + unit;
    g.value = measured;
    g.target_value = target;
    g.compare = compare;
    if (std::isnan(measured)) {
        g.measured = "not measured";
        g.met = false;
    } else {
        g.measured = decided(measured, compare, target, decimals) + unit;
        if (!detail.empty()) g.measured += " (" + detail + ")";
        g.met = holds(measured, compare, std::strtod(number_text(target).c_str(), nullptr));
    }
    g.unit = std::move(unit);
    return g;
}

Goal unchecked_goal(std::string id, std::string text, Compare compare, double target, std::string unit,
                    std::string why)
{
    Goal g;
    g.id = std::move(id);
    g.goal = std::move(text);
    g.target = std::string(to_string(compare)) + " " + number_text(target) + unit;
    g.measured = std::move(why);
    g.checked = false;
    g.value = std::nan("");
    g.target_value = target;
    g.compare = compare;
    g.unit = std::move(unit);
    return g;
}

// ------------------------------------------------------------------ statistics

double percentile_of_sorted(const std::vector<double>& sorted, double p)
{
    if (sorted.empty()) return 0;
    const auto n = static_cast<double>(sorted.size());
    const auto rank = static_cast<std::size_t>(std::ceil(std::clamp(p, 0.0, 1.0) * n));
    return sorted[std::max<std::size_t>(rank, 1) - 1];
}

Distribution distribution(std::vector<double> samples)
{
    Distribution d;
    if (samples.empty()) return d;
    std::sort(samples.begin(), samples.end());
    d.count = samples.size();
    d.p50 = percentile_of_sorted(samples, 0.50);
    d.p99 = percentile_of_sorted(samples, 0.99);
    d.min = samples.front();
    d.max = samples.back();
    long double sum = 0;
    for (double v : samples) sum += v;
    d.mean = static_cast<double>(sum / static_cast<long double>(samples.size()));
    return d;
}

std::vector<std::pair<double, double>> cumulative(std::vector<double> samples, std::size_t max_points)
{
    std::vector<std::pair<double, double>> points;
    if (samples.empty()) return points;
    std::sort(samples.begin(), samples.end());
    const std::size_t n = samples.size();
    const std::size_t m = std::clamp<std::size_t>(max_points, 2, n < 2 ? 2 : n);
    double last = std::nan("");
    for (std::size_t j = 0; j < m; ++j) {
        const std::size_t i = n == 1 ? 0 : (j * (n - 1) + (m - 1) / 2) / (m - 1);
        const double v = samples[i];
        if (v == last) continue;
        last = v;
        // Fraction of samples at or below v (ties included).
        const auto at_or_below = std::upper_bound(samples.begin(), samples.end(), v) - samples.begin();
        points.emplace_back(v, static_cast<double>(at_or_below) / static_cast<double>(n));
    }
    return points;
}

double thread_cpu_seconds()
{
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// ---------------------------------------------------------------- command line

namespace po = boost::program_options;

CommandLine::CommandLine(std::string program, std::string about)
    : program_(std::move(program)), about_(std::move(about)), common_("Options"),
      own_("Options of this benchmark")
{
    common_.add_options()
        ("help,h", "print this help and exit")
        ("quick", po::bool_switch(&args_.quick),
         "a smoke run: few, short repetitions, figures not to be trusted (CI)")
        ("json", po::value(&args_.json_path)->value_name("PATH"),
         "write the results document (bench/report.hpp) to PATH")
        ("reference", po::value(&args_.reference_path)->value_name("PATH"),
         "an earlier run's results document of this benchmark (docs/benchmarks/*.json), for goals stated "
         "against an earlier figure");
}

po::options_description_easy_init CommandLine::add() { return own_.add_options(); }

int CommandLine::usage_error(const std::string& message) const
{
    std::fprintf(stderr, "%s: %s\nTry '%s --help'.\n", program_.c_str(), message.c_str(), program_.c_str());
    return 2;
}

std::optional<int> CommandLine::parse(int argc, char** argv, std::vector<std::string> passthrough_prefixes)
{
    std::vector<std::string> mine;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        const bool pass = std::any_of(passthrough_prefixes.begin(), passthrough_prefixes.end(),
                                      [&](const std::string& p) { return arg.rfind(p, 0) == 0; });
        (pass ? passthrough_ : mine).push_back(arg);
    }
    po::options_description all;
    all.add(common_);
    if (!own_.options().empty()) all.add(own_);
    try {
        // No guessing of abbreviated names: "--qu" is an error, not --quick.
        const int style = po::command_line_style::default_style & ~po::command_line_style::allow_guessing;
        const po::parsed_options parsed = po::command_line_parser(mine).options(all).style(style).run();
        for (const po::option& o : parsed.options) {
            // The benchmarks take no positional arguments (a lone "PATH" after --json= is one).
            if (o.position_key >= 0) {
                return usage_error("unexpected argument '" + (o.value.empty() ? std::string() : o.value.front()) + "'");
            }
        }
        po::store(parsed, vm_);
        if (vm_.count("help") != 0) {
            std::ostringstream help;
            help << "usage: " << program_ << " [options]\n" << about_ << "\n" << all;
            if (!epilogue_.empty()) help << "\n" << epilogue_ << "\n";
            std::fputs(help.str().c_str(), stdout);
            return 0;
        }
        po::notify(vm_);
    } catch (const po::error& e) {
        return usage_error(e.what());
    }
    return std::nullopt;
}

void RepeatedRuns::add_options(CommandLine& cli, const std::string& order)
{
    namespace po = boost::program_options;
    cli.add()("reps", po::value(&reps)->value_name("N")->notifier([](int v) {
        if (v < 1) throw po::error(format("the argument ('%d') for option '--reps' must be at least 1", v));
    }), format("repetitions, %s (default %d; --quick: %d)", order.c_str(), reps, quick_reps).c_str())(
        "seconds", po::value(&seconds)->value_name("S")->notifier([](double v) {
            if (!(v > 0) || !std::isfinite(v)) {
                throw po::error(format("the argument ('%g') for option '--seconds' must be a positive number", v));
            }
        }), format("simulated seconds per run (default %g; --quick: %g)", seconds, quick_seconds).c_str());
}

void RepeatedRuns::apply_quick(const CommandLine& cli)
{
    if (!cli.args().quick) return;
    if (!cli.given("seconds")) seconds = quick_seconds;
    if (!cli.given("reps")) reps = quick_reps;
}

bool CommandLine::given(const std::string& name) const
{
    const auto it = vm_.find(name);
    return it != vm_.end() && !it->second.defaulted();
}

// ------------------------------------------------------------------- reference

std::optional<double> Reference::value(const std::string& id) const
{
    const auto it = values.find(id);
    if (it == values.end()) return std::nullopt;
    return it->second;
}

Reference Reference::load(const std::string& path)
{
    Reference ref;
    ref.path = path;
    if (path.empty()) return ref;
    namespace pt = boost::property_tree;
    pt::ptree doc;
    try {
        pt::read_json(path, doc);
    } catch (const pt::json_parser_error& e) {
        throw std::runtime_error("reference " + e.filename() + ":" + std::to_string(e.line()) +
                                 ": not a results document: " + e.message());
    }
    const auto goals = doc.get_child_optional("goals");
    if (!goals) throw std::runtime_error("reference " + path + ": no 'goals' array (not a results document)");
    for (const auto& [key, goal] : *goals) {
        const std::string id = goal.get<std::string>("id", "");
        // A goal not measured in that run has "value": null, which is no number.
        const auto v = goal.get_optional<double>("value");
        if (!id.empty() && v) ref.values[id] = *v;
    }
    return ref;
}

} // namespace simsync::bench
