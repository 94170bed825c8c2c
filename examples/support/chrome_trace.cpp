#include "chrome_trace.hpp"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <stdexcept>

namespace simsync::examples {

void write_chrome_trace(const std::string& file, const std::vector<TraceTrack>& tracks,
                        WallClock::time_point origin)
{
    std::ofstream out(file);
    if (!out) throw std::runtime_error("cannot write the trace file '" + file + "'");
    auto us = [&](WallClock::time_point t) { return std::chrono::duration<double, std::micro>(t - origin).count(); };
    out << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
    bool first = true;
    for (std::size_t i = 0; i < tracks.size(); ++i) {
        const TraceTrack& track = tracks[i];
        out << (first ? "" : ",\n") << R"({"name":"thread_name","ph":"M","pid":1,"tid":)" << i + 1
            << R"(,"args":{"name":")" << track.name << "\"}}";
        first = false;
        if (track.spans == nullptr) continue;
        for (const TraceSpan& e : *track.spans) {
            char line[400];
            std::snprintf(line, sizeof line,
                          R"({"name":"%s","cat":"%s","ph":"X","pid":1,"tid":%zu,"ts":%.3f,"dur":%.3f,)"
                          R"("args":{"requested_ns":%lld,"granted_ns":%lld}})",
                          track.name.c_str(), track.category.c_str(), i + 1, us(e.wall_start),
                          us(e.wall_end) - us(e.wall_start),
                          static_cast<long long>(e.requested.time_since_epoch().count()),
                          static_cast<long long>(e.granted.time_since_epoch().count()));
            out << ",\n" << line;
        }
    }
    out << "\n]}\n";
    if (!out) throw std::runtime_error("cannot write the trace file '" + file + "'");
}

} // namespace simsync::examples
