#pragma once
// The example programs' Chrome trace-event JSON (opens in Perfetto and
// chrome://tracing): one track per accessor, one slice per access, from the
// request to the release, with the requested and granted simulated times.
// Example code, not library API.

#include <simsync/time.hpp>
#include <simsync/wall_clock.hpp>

#include <string>
#include <vector>

namespace simsync::examples {

// One access as a thread saw it.
struct TraceSpan {
    SimTime requested{};
    SimTime granted{};
    WallClock::time_point wall_start{}; // when it asked
    WallClock::time_point wall_end{};   // when it released
};

// One accessor's track. `spans` must outlive the call to write_chrome_trace.
struct TraceTrack {
    std::string name;
    std::string category; // e.g. the access mode: "shared", "exclusive"
    const std::vector<TraceSpan>* spans = nullptr;
};

// Writes `tracks` to `file`, wall times in microseconds since `origin`.
// @throws std::runtime_error if the file cannot be written.
void write_chrome_trace(const std::string& file, const std::vector<TraceTrack>& tracks,
                        WallClock::time_point origin);

} // namespace simsync::examples
