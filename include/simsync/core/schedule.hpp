#pragma once
/// @file
/// Exact periodic instants: the n-th request of a 30 Hz camera is at n/30 s,
/// computed from n, never by adding a rounded period n times.

#include <simsync/core/time.hpp>

#include <cstdint>
#include <string>

namespace simsync {

/// The instants `offset + n * period` (n >= 0) where the period is a rational
/// number of nanoseconds, so rates like 30 Hz or 29.97 Hz keep no drift: instant n
/// is `offset + floor(n * period_num / period_den)` ns, exact for any n a
/// simulation reaches.
///
/// Copy/move: a value type. Thread safety: immutable after construction.
class PeriodicSchedule {
public:
    /// @throws simsync::Error (invalid_argument) if `period <= 0` or `offset < 0`.
    static PeriodicSchedule from_period(SimDuration period, SimDuration offset = SimDuration::zero());
    /// A rate of `hz_num / hz_den` Hz (e.g. 2997/100 for 29.97 Hz).
    /// @throws simsync::Error (invalid_argument) unless both are > 0.
    static PeriodicSchedule from_rate(std::int64_t hz_num, std::int64_t hz_den = 1,
                                      SimDuration offset = SimDuration::zero());

    /// The n-th instant (n >= 0; a negative n is read as 0). An instant beyond
    /// SimTime's range is kSimTimeMax ("never"), never a wrapped value.
    SimTime at(std::int64_t n) const noexcept;
    /// The smallest n whose instant is at or after `t`. For a `t` beyond the
    /// last representable instant that n's instant is kSimTimeMax; the result
    /// itself saturates at the largest std::int64_t.
    std::int64_t first_index_at_or_after(SimTime t) const noexcept;
    SimDuration offset() const noexcept { return offset_; }
    /// The period, rounded down to whole nanoseconds (for display).
    SimDuration nominal_period() const noexcept { return SimDuration{period_num_ / period_den_}; }
    /// "30 Hz", "10 ms", ... for messages.
    std::string describe() const;

    friend bool operator==(const PeriodicSchedule&, const PeriodicSchedule&) = default;

private:
    PeriodicSchedule(std::int64_t num, std::int64_t den, SimDuration offset) noexcept
        : period_num_(num), period_den_(den), offset_(offset)
    {
    }
    std::int64_t period_num_; // period in ns = period_num_ / period_den_
    std::int64_t period_den_;
    SimDuration offset_;
};

} // namespace simsync
