#pragma once
/// @file
/// Simulation time: integer nanoseconds on its own clock, and rounding to the step grid.

#include <chrono>
#include <cstdint>
#include <limits>
#include <string>

namespace simsync {

/// The clock that simulation time is measured on. It has no `now()`: only a
/// SimSyncHandler knows the current simulation time. Being a distinct clock type
/// makes `SimTime` impossible to mix with `std::chrono::steady_clock` or
/// `system_clock` time points by accident.
struct SimClock {
    using rep = std::int64_t;
    using period = std::nano;
    using duration = std::chrono::duration<rep, period>;
    using time_point = std::chrono::time_point<SimClock, duration>;
    static constexpr bool is_steady = true;
};

/// A span of simulation time (integer nanoseconds; exact, no floating point).
using SimDuration = SimClock::duration;

/// An instant of simulation time: nanoseconds since the start of the simulation.
using SimTime = SimClock::time_point;

/// The start of every simulation.
inline constexpr SimTime kSimStart{};

/// "Never": later than any instant a simulation reaches (the largest SimTime,
/// about 292 years). It is a sentinel, not a grid point: it rounds to itself; a
/// request for it is never granted (it returns on stop, timeout, cancellation or
/// deregistration); a lockstep bound at it (a release naming it, a saturated
/// `lookahead`, a `first_request` of it) holds time nowhere; `run_until` of it
/// sets no pause point.
inline constexpr SimTime kSimTimeMax{SimDuration{std::numeric_limits<std::int64_t>::max()}};
/// "Before everything": the smallest SimTime. Also a sentinel that rounds to
/// itself; every request for it is refused with `time_passed`.
inline constexpr SimTime kSimTimeMin{SimDuration{std::numeric_limits<std::int64_t>::min()}};

/// Wall-clock types used where a caller waits (deadlines of timed requests,
/// "since when" in diagnostics). Kept apart from SimTime by type.
using WallClock = std::chrono::steady_clock;
using WallTime = WallClock::time_point;

/// Makes a SimTime from a duration since the start, e.g. `sim_time(33ms)`.
template <class Rep, class Period>
constexpr SimTime sim_time(std::chrono::duration<Rep, Period> since_start)
{
    return SimTime{std::chrono::duration_cast<SimDuration>(since_start)};
}

/// How a requested time is mapped onto the step grid `k * dt`.
enum class Rounding {
    nearest, ///< closest grid point; a tie goes up (towards the future). The default.
    up,      ///< the first grid point at or after the time
    down,    ///< the last grid point at or before the time
};

/// Rounds `t` to the grid `k * dt` (k any integer) with `policy`.
///
/// Pure integer arithmetic, correct for negative times (the grid extends below
/// zero; a handler refuses a rounded time that lies before its current time).
/// Example, dt = 1 ms: 33.333 ms -> 33 ms (nearest), 66.667 ms -> 67 ms,
/// 0.5 ms -> 1 ms (tie goes up), -0.5 ms -> 0 ms, -0.6 ms -> -1 ms.
///
/// The grid saturates at the ends of SimTime's range instead of overflowing:
/// kSimTimeMax and kSimTimeMin round to themselves; a time whose grid point
/// (under `policy`) lies beyond the last representable grid point rounds to
/// kSimTimeMax ("never"), below the first one to kSimTimeMin.
/// @throws simsync::Error (errc::invalid_argument) if `dt <= 0`.
SimTime round_to_grid(SimTime t, SimDuration dt, Rounding policy = Rounding::nearest);

/// `t + d`, saturating at kSimTimeMax and kSimTimeMin instead of overflowing;
/// kSimTimeMax ("never") plus anything stays kSimTimeMax.
SimTime saturating_add(SimTime t, SimDuration d) noexcept;

/// The wall-clock instant `timeout` from now, saturating at WallTime::max()
/// (which every timed wait of simsync reads as "no deadline") instead of
/// overflowing: WallClock::duration::max() is a valid "forever".
WallTime deadline_after(WallClock::duration timeout) noexcept;

/// The time an accessor that always asks again should ask for after a grant
/// at `granted` (a grid instant) when its own schedule says `wanted`:
/// `wanted` itself if it rounds to a later instant than `granted`, else the
/// first grid instant after `granted`. An accessor whose rate is finer than
/// the step (a 10 ms pacer on a 30 ms step) would otherwise be granted at one
/// instant again and again while time stands still: its instants are the
/// grid's. Saturates at kSimTimeMax.
/// @throws simsync::Error (errc::invalid_argument) if `dt <= 0`.
SimTime next_instant_after(SimTime granted, SimTime wanted, SimDuration dt, Rounding policy = Rounding::nearest);

/// Parses "nearest", "up" or "down". @throws simsync::Error on anything else.
Rounding parse_rounding(const std::string& name);
const char* to_string(Rounding policy) noexcept;

/// Formats a time as seconds with nanosecond precision, e.g. "1.033000000".
std::string format_seconds(SimTime t);
std::string format_seconds(SimDuration d);

} // namespace simsync
