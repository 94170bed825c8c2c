#pragma once
// The example programs' Chrome trace-event JSON (opens in Perfetto and
// chrome://tracing): one track per accessor and, for every access, two slices
// back to back: "wait" from the request to the grant, and "hold" from the
// grant to the release, with the requested and granted simulated times. So a
// track shows where its thread waited for time and where it held the world,
// as the web console's timeline does. Example code, not library API.

#include <simsync/clock/wall_clock.hpp>
#include <simsync/core/time.hpp>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace simsync::examples {

// One access as a thread saw it.
struct TraceSpan {
    SimTime requested{};
    SimTime granted{};
    WallClock::time_point wall_start{};   // when it asked
    WallClock::time_point wall_granted{}; // when the grant arrived
    WallClock::time_point wall_end{};     // when it released
};

// One accessor's track. `spans` must outlive the call to write.
struct TraceTrack {
    std::string name;
    std::string category; // e.g. the access mode: "shared", "exclusive"
    const std::vector<TraceSpan>* spans = nullptr;
};

// The trace file of a run: opened (created, or emptied) when the program
// starts, so a path that cannot be written is refused before the run rather
// than after it; written once the run is over.
// Copy: no. Move: yes. One thread at a time.
class ChromeTraceFile {
public:
    // @throws std::runtime_error "cannot write the trace file '<path>': <the
    //         system's reason>".
    explicit ChromeTraceFile(std::string path);
    ChromeTraceFile(ChromeTraceFile&&) noexcept = default;
    ChromeTraceFile& operator=(ChromeTraceFile&&) noexcept = default;

    const std::string& path() const noexcept { return path_; }

    // Writes `tracks`, wall times in microseconds since `origin`, and closes
    // the file. @throws std::runtime_error as the constructor.
    void write(const std::vector<TraceTrack>& tracks, WallClock::time_point origin);

private:
    struct Close {
        void operator()(std::FILE* f) const noexcept { std::fclose(f); }
    };
    std::string path_;
    std::unique_ptr<std::FILE, Close> file_;
};

} // namespace simsync::examples
