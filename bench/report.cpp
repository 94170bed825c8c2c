#include "report.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <fstream>
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
        out << "\n{\"goal\":";
        quote(out, g.goal);
        out << ",\"target\":";
        quote(out, g.target);
        out << ",\"measured\":";
        quote(out, g.measured);
        out << ",\"met\":" << (g.met ? "true" : "false");
        out << ",\"checked\":" << (g.checked ? "true" : "false") << '}';
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

std::optional<ScenarioArgs> take_scenario_args(int& argc, char** argv, const char* own_flags)
{
    ScenarioArgs args;
    args.json_path = take_json_flag(argc, argv);
    args.quick = take_flag(argc, argv, "--quick");
    if (argc > 1) {
        std::fprintf(stderr, "%s: unknown argument '%s'\nusage: %s [--quick]%s%s [--json=PATH]\n", argv[0], argv[1],
                     argv[0], *own_flags ? " " : "", own_flags);
        return std::nullopt;
    }
    return args;
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

std::string take_json_flag(int& argc, char** argv)
{
    std::string path;
    int out = 1;
    for (int i = 1; i < argc; ++i) {
        if (std::strncmp(argv[i], "--json=", 7) == 0) {
            path = argv[i] + 7;
        } else {
            argv[out++] = argv[i];
        }
    }
    argc = out;
    argv[argc] = nullptr;
    return path;
}

bool take_flag(int& argc, char** argv, const char* flag)
{
    bool found = false;
    int out = 1;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], flag) == 0) {
            found = true;
        } else {
            argv[out++] = argv[i];
        }
    }
    argc = out;
    argv[argc] = nullptr;
    return found;
}

} // namespace simsync::bench
