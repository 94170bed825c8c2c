#pragma once
/// @file
/// The time scale: simulated seconds per wall second, changeable by any thread.

#include <simsync/clock/wall_clock.hpp>
#include <simsync/core/time.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <utility>
#include <vector>

namespace simsync {

class TimeScale;

/// A listener of a TimeScale (TimeScale::subscribe); destroying it (or
/// reset()) removes the listener. Copy: no. Move: yes. Once reset returns, the
/// listener is not running on another thread and will not be called again.
/// The TimeScale must outlive it.
class ScaleSubscription {
public:
    ScaleSubscription() noexcept = default;
    ScaleSubscription(ScaleSubscription&& other) noexcept { *this = std::move(other); }
    ScaleSubscription& operator=(ScaleSubscription&& other) noexcept;
    ScaleSubscription(const ScaleSubscription&) = delete;
    ScaleSubscription& operator=(const ScaleSubscription&) = delete;
    ~ScaleSubscription() { reset(); }
    void reset() noexcept;
    explicit operator bool() const noexcept { return scale_ != nullptr; }

private:
    friend class TimeScale;
    ScaleSubscription(const TimeScale* scale, std::uint64_t id) noexcept : scale_(scale), id_(id) {}
    const TimeScale* scale_ = nullptr;
    std::uint64_t id_ = 0;
};

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

    /// Calls `listener` with the new value after every later set(), on the
    /// thread that called set, once the change is visible to every reader: how
    /// a pacer learns of a change when it happens instead of polling
    /// generation(). Listeners must be quick (post the work elsewhere) and must
    /// not throw; they may call set (the nested change is reported after).
    /// @throws simsync::Error (invalid_argument) if `listener` is empty.
    ScaleSubscription subscribe(std::function<void(double)> listener) const;

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
    void write(std::int64_t ppb); // under writer_

    friend class ScaleSubscription;
    void unsubscribe(std::uint64_t id) const noexcept;

    WallClockSource& clock_;
    std::mutex writer_;
    // Held while listeners run (see ScaleSubscription); recursive, so that a
    // listener may unsubscribe or set.
    mutable std::recursive_mutex listeners_mutex_;
    mutable std::vector<std::pair<std::uint64_t, std::function<void(double)>>> listeners_;
    mutable std::uint64_t next_listener_ = 1;
    // Seqlock: odd while a writer is between its two increments.
    std::atomic<std::uint64_t> seq_{0};
    std::atomic<std::int64_t> wall_start_ns_{0};
    std::atomic<std::int64_t> scaled_start_ns_{0};
    std::atomic<std::int64_t> ppb_{1'000'000'000};
    std::atomic<std::uint64_t> generation_{0};
};

} // namespace simsync
