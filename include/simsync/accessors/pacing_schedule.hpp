#pragma once
/// @file
/// The pacing maths of the real-time pacing view, free of threads and clocks:
/// the wall-clock deadline of each grant, the catch-up policy, re-anchoring on
/// pause, resume, step and scale changes.

#include <simsync/core/time.hpp>

#include <cstdint>
#include <string>

namespace simsync {

/// What the pacer does after it has fallen behind its schedule (a grant that
/// arrives after its wall-clock deadline: the world stepped too slowly, or the
/// machine was busy).
enum class CatchUp {
    /// Forget the backlog at once: re-anchor the schedule at the late grant. The
    /// simulation never runs faster than the target to make up for lost time; the
    /// schedule drifts by every lateness.
    none,
    /// Keep the schedule (run flat out to catch up) while at most
    /// `PacerConfig::max_catch_up` of wall time behind; when further behind, slide
    /// the schedule so that exactly that much remains to catch up. The default.
    bounded,
    /// Keep the schedule whatever the backlog: after a stall the simulation runs
    /// flat out until it is back on the original schedule.
    full,
};

const char* to_string(CatchUp policy) noexcept;
/// Parses "none", "bounded" or "full". @throws simsync::Error (invalid_argument).
CatchUp parse_catch_up(const std::string& name);

/// What the pacer knows at a grant (or while it waits for the deadline of one).
/// Plain values, so that PacingSchedule can be driven by a table in a test.
struct PacingInput {
    /// The granted simulation time the pacer holds.
    SimTime granted{};
    /// The wall clock now.
    WallTime now{};
    /// SimSyncHandler::run_generation() at this moment.
    std::uint64_t run_generation = 0;
    /// SimSyncHandler::state() == running (false while paused or stopped).
    bool running = true;
    /// TimeScale::generation() and TimeScale::value() at this moment.
    std::uint64_t scale_generation = 0;
    double scale = 1.0;
};

/// Why a decision departs from plain pacing.
enum class PacingEvent {
    none,     ///< on schedule (or late and catching up)
    anchored, ///< first grant, or the first after a pause / resume / step / run_until
    paused,   ///< the handler is not running: no pacing until it runs again
    rescaled, ///< the time scale changed: the schedule continues from here at the new scale
    dropped,  ///< late beyond what the catch-up policy allows: backlog forgiven
};

const char* to_string(PacingEvent event) noexcept;

/// The outcome of PacingSchedule::on_grant / on_wake.
struct PacingDecision {
    /// True: wait until `deadline`, then release. False: release at once.
    bool sleep = false;
    /// The wall instant at which the grant is due (== input.now when releasing at once
    /// because of an anchoring or a pause).
    WallTime deadline{};
    /// How long after its deadline the grant arrived (> 0 only for late grants,
    /// measured before any re-anchoring).
    WallClock::duration lateness{};
    /// Wall time of backlog forgiven by this decision (CatchUp none / bounded).
    WallClock::duration dropped{};
    PacingEvent event = PacingEvent::none;
};

/// The pacing maths, free of threads and clocks: maps a granted simulation time to
/// the wall-clock deadline `anchor_wall + (T - anchor_sim) / scale` and keeps the
/// anchor (the pair of simulated and wall instants the schedule is measured from)
/// up to date per catch-up policy, pause, resume, step and scale changes.
///
/// Rules, applied by on_grant in this order:
///  1. handler not running (paused at this grant, single steps, stopped): release
///     at once and drop the anchor, so stepping is never slowed down;
///  2. no anchor yet, or run_generation changed since the last call (pause, resume,
///     step, run_until happened in between): anchor at (T, now) and release at
///     once: the schedule restarts from the moment the pacer sees the change, so
///     a long pause neither bursts (old deadlines) nor stalls;
///  3. scale_generation changed: re-anchor at (the simulated time the old schedule
///     had reached at `now`, clamped to T; now) with the new scale, so the
///     displayed motion stays continuous (a backlog is forgiven);
///  4. deadline not passed: sleep until it; passed: release at once, report the
///     lateness, and apply the CatchUp policy.
/// Deadlines are exact integer nanoseconds, rounded up (never early).
///
/// Copy/move: both (a value type).
/// Thread safety: distinct objects: safe. Shared objects: unsafe.
///
/// @code
/// simsync::PacingSchedule schedule(simsync::CatchUp::bounded, 100ms);
/// auto d = schedule.on_grant({.granted = t, .now = clock.steady_now(), ...});
/// if (d.sleep) clock.sleep_until(d.deadline);
/// @endcode
class PacingSchedule {
public:
    /// @throws simsync::Error (invalid_argument) if `max_catch_up < 0`.
    explicit PacingSchedule(CatchUp policy = CatchUp::bounded,
                            WallClock::duration max_catch_up = std::chrono::milliseconds(100));

    /// Decides what to do with a grant at `in.granted`. Calls must come in order of
    /// grant (non-decreasing `granted` and `now`).
    /// @throws simsync::Error (invalid_argument) if `in.scale` is not in
    ///         [TimeScale::kMin, TimeScale::kMax].
    PacingDecision on_grant(const PacingInput& in);
    /// Re-decides while waiting for the deadline of the grant at `in.granted`: the
    /// handler may have paused or stopped (release at once) or the scale changed
    /// (new deadline). A resume or run_until seen here keeps the deadline.
    PacingDecision on_wake(const PacingInput& in);

    bool anchored() const noexcept { return anchored_; }
    SimTime anchor_sim() const noexcept { return anchor_sim_; }
    WallTime anchor_wall() const noexcept { return anchor_wall_; }
    /// The scale the schedule runs at, in parts per billion (exact).
    std::int64_t scale_ppb() const noexcept { return ppb_; }
    CatchUp policy() const noexcept { return policy_; }
    WallClock::duration max_catch_up() const noexcept { return max_catch_up_; }

    /// `anchor_wall + (t - anchor_sim) / scale`, rounded up to the nanosecond.
    /// @throws simsync::Error (invalid_state) if not anchored.
    WallTime deadline(SimTime t) const;
    /// Places the anchor explicitly.
    void anchor(SimTime sim, WallTime wall) noexcept;
    /// Forgets the anchor: the next grant anchors.
    void unanchor() noexcept { anchored_ = false; }

private:
    void observe(const PacingInput& in) noexcept;
    void rescale(std::int64_t ppb, WallTime now, SimTime held) noexcept;

    CatchUp policy_;
    WallClock::duration max_catch_up_;
    bool anchored_ = false;
    bool observed_ = false;
    SimTime anchor_sim_{};
    WallTime anchor_wall_{};
    std::int64_t ppb_ = 1'000'000'000;
    std::uint64_t run_generation_ = 0;
    std::uint64_t scale_generation_ = 0;
};

} // namespace simsync
