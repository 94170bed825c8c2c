#pragma once
/// @file
/// The time scale: simulated seconds per wall second, changeable by any thread.

#include <simsync/time.hpp>
#include <simsync/wall_clock.hpp>

#include <atomic>
#include <cstdint>
#include <mutex>

namespace simsync {

/// One time-scale value shared by the pacing view and the scaled time sources,
/// plus the scaled wall time it implies: wall time elapsed since construction,
/// each stretch multiplied by the scale in force during it, so a change applies
/// from the moment of the change and never rewrites the past.
///
/// The scale is kept in fixed point (parts per billion) so scaled time is exact
/// integer nanoseconds: 1 s of wall time at scale 0.5 is exactly 500000000 ns.
///
/// Copy/move: neither. Thread safety: every member is safe from any thread.
/// Reads (`value`, `generation`, `scaled_elapsed`) are lock-free and never wait
/// for a writer for longer than it takes to write four words; `set` serialises
/// writers with a mutex of its own.
class TimeScale {
public:
    /// @throws simsync::Error (invalid_argument) if `initial` is not a finite value > 0.
    explicit TimeScale(double initial = 1.0, WallClockSource& clock = real_wall_clock());
    TimeScale(const TimeScale&) = delete;
    TimeScale& operator=(const TimeScale&) = delete;

    /// The current scale (simulated seconds per wall second).
    double value() const noexcept;
    /// Changes the scale from now on.
    /// @throws simsync::Error (invalid_argument, naming the value) unless finite and > 0.
    void set(double scale);
    /// Increases by one on every `set`; lets a pacer notice a change between grants.
    std::uint64_t generation() const noexcept;
    /// Scaled wall time since construction, at the clock's current time.
    /// Never runs backwards, across threads and across `set`, as long as the
    /// clock's `steady_now` does not: the clock is read inside the same seqlock
    /// section as the scale, and `set` reads it inside its write section, so
    /// every reading is ordered before or after each change (a reading cannot
    /// combine an instant after a change with the scale before it).
    /// Saturates at SimDuration::max() (about 292 years of scaled time: after
    /// about 2.5 h of wall time at the largest scale) and stays there.
    SimDuration scaled_elapsed() const noexcept;
    /// Scaled wall time since construction at wall time `at` (>= the last change).
    /// Unlike `scaled_elapsed`, not ordered against a concurrent `set`.
    SimDuration scaled_elapsed_at(WallTime at) const noexcept;

    WallClockSource& clock() const noexcept { return clock_; }

    /// Smallest and largest accepted scales.
    static constexpr double kMin = 1e-6;
    static constexpr double kMax = 1e6;

private:
    struct Segment {
        std::int64_t wall_start_ns; // steady time of the last change
        std::int64_t scaled_start_ns; // scaled time reached at that change
        std::int64_t ppb;           // scale in parts per billion
        std::uint64_t generation;
    };
    Segment read() const noexcept;

    WallClockSource& clock_;
    std::mutex writer_;
    // Seqlock: odd while a writer is between its two increments.
    std::atomic<std::uint64_t> seq_{0};
    std::atomic<std::int64_t> wall_start_ns_{0};
    std::atomic<std::int64_t> scaled_start_ns_{0};
    std::atomic<std::int64_t> ppb_{1'000'000'000};
    std::atomic<std::uint64_t> generation_{0};
};

} // namespace simsync
