#include "chrome_trace.hpp"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>

namespace simsync::examples {

namespace {

[[noreturn]] void cannot_write(const std::string& path, int error)
{
    throw std::runtime_error("cannot write the trace file '" + path + "': " + std::strerror(error));
}

} // namespace

ChromeTraceFile::ChromeTraceFile(std::string path) : path_(std::move(path))
{
    errno = 0;
    file_.reset(std::fopen(path_.c_str(), "w"));
    if (!file_) cannot_write(path_, errno);
}

void ChromeTraceFile::write(const std::vector<TraceTrack>& tracks, WallClock::time_point origin)
{
    if (!file_) throw std::runtime_error("the trace file '" + path_ + "' was written already");
    std::FILE* out = file_.get();
    auto us = [&](WallClock::time_point t) { return std::chrono::duration<double, std::micro>(t - origin).count(); };
    std::fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n", out);
    bool first = true;
    for (std::size_t i = 0; i < tracks.size(); ++i) {
        const TraceTrack& track = tracks[i];
        std::fprintf(out, R"(%s{"name":"thread_name","ph":"M","pid":1,"tid":%zu,"args":{"name":"%s"}})",
                     first ? "" : ",\n", i + 1, track.name.c_str());
        first = false;
        if (track.spans == nullptr) continue;
        for (const TraceSpan& e : *track.spans) {
            auto slice = [&](const char* name, WallClock::time_point from, WallClock::time_point to) {
                std::fprintf(out,
                             ",\n"
                             R"({"name":"%s","cat":"%s","ph":"X","pid":1,"tid":%zu,"ts":%.3f,"dur":%.3f,)"
                             R"("args":{"requested_ns":%lld,"granted_ns":%lld}})",
                             name, track.category.c_str(), i + 1, us(from), us(to) - us(from),
                             static_cast<long long>(e.requested.time_since_epoch().count()),
                             static_cast<long long>(e.granted.time_since_epoch().count()));
            };
            slice("wait", e.wall_start, e.wall_granted);
            slice("hold", e.wall_granted, e.wall_end);
        }
    }
    std::fputs("\n]}\n", out);
    const bool failed = std::ferror(out) != 0;
    const int error = errno;
    const int closed = std::fclose(file_.release());
    if (failed || closed != 0) cannot_write(path_, error != 0 ? error : EIO);
}

} // namespace simsync::examples
