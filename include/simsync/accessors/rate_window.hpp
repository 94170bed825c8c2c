#pragma once
/// @file
/// The real-time factor achieved over a sliding window of wall time.

#include <simsync/core/time.hpp>

#include <cstddef>
#include <deque>
#include <optional>

namespace simsync {

/// The real-time factor actually achieved over a sliding window of wall time.
///
/// Formula: of the samples (wall w_i, simulated t_i) whose wall instant lies in
/// `[now - window, now]`, take the oldest (w_0, t_0) and the newest (w_n, t_n):
///
///     factor = (t_n - t_0) / (w_n - w_0)      (simulated seconds per wall second)
///
/// Limits, so that nobody reads more into it than it says:
///  - it is unknown (nullopt) until two samples with distinct wall instants fall in
///    the window, e.g. at start or after a pause longer than the window;
///  - its resolution is one sample (the pacer samples at every release, i.e. once
///    per pacing period), so a window should span many periods; it describes
///    the stretch between two releases, not the instant `now`;
///  - paused wall time inside the window counts (the factor drops during and just
///    after a pause); while no samples arrive it keeps describing the last
///    window with samples, until they age out;
///  - at most `max_samples` samples are kept (the oldest go first), which
///    shortens the effective window if samples come faster than
///    `max_samples / window`.
/// Unlike Drake's Simulator::get_actual_realtime_rate (since the last reset),
/// this forgets the past beyond the window, so it follows changes of scale.
///
/// Copy/move: both. Thread safety: distinct objects: safe. Shared objects: unsafe.
class RealTimeFactorWindow {
public:
    /// @throws simsync::Error (invalid_argument) if `window <= 0` or `max_samples < 2`.
    explicit RealTimeFactorWindow(WallClock::duration window = std::chrono::seconds(1),
                                  std::size_t max_samples = 10'000);
    /// Adds a sample. Wall instants must not decrease.
    void add(WallTime wall, SimTime sim);
    /// The factor over `[now - window, now]`, or nullopt (see above).
    std::optional<double> factor(WallTime now) const noexcept;
    WallClock::duration window() const noexcept { return window_; }
    std::size_t size() const noexcept { return samples_.size(); }
    void clear() noexcept { samples_.clear(); }

private:
    struct Sample {
        WallTime wall;
        SimTime sim;
    };
    WallClock::duration window_;
    std::size_t max_samples_;
    std::deque<Sample> samples_;
};

} // namespace simsync
