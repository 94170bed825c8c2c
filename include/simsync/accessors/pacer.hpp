#pragma once
/// @file
/// The real-time pacing view: a lockstep accessor that holds simulated time back
/// so that it advances with wall time times the time scale. Its pure parts have
/// headers of their own: the pacing maths (pacing_schedule.hpp), the lateness
/// histogram (lateness.hpp) and the achieved real-time factor (rate_window.hpp).

#include <simsync/accessors/lateness.hpp>
#include <simsync/accessors/pacing_schedule.hpp>
#include <simsync/accessors/rate_window.hpp>
#include <simsync/clock/event_loop.hpp>
#include <simsync/clock/time_scale.hpp>
#include <simsync/clock/wall_clock.hpp>
#include <simsync/core/handler.hpp>
#include <simsync/core/time.hpp>

#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>

namespace simsync {

/// Configuration of a RealTimePacer (plain values with defaults).
struct PacerConfig {
    /// The accessor's name in the handler (snapshots, traces).
    std::string name = "pacer";
    /// Simulated time between two releases; should be a multiple of the handler's
    /// step (requests are rounded to its grid). Must be > 0.
    SimDuration period{std::chrono::milliseconds(10)};
    CatchUp catch_up = CatchUp::bounded;
    /// CatchUp::bounded: the most wall time the pacer catches up after falling
    /// behind. Must be >= 0.
    WallClock::duration max_catch_up{std::chrono::milliseconds(100)};
    /// Sleep until `deadline - spin_tail`, then spin on the clock until the deadline.
    /// A sleep wakes 50-150 us late on a typical (virtual) machine; the spin
    /// releases within about a microsecond of the deadline, for the tail's share
    /// of a core (150 us per 10 ms period: 1.5 %). On by default because pacing
    /// accuracy is what users of a pacer ask for (bench_pacing: p50 lateness from
    /// ~100 us to under 1 us). Zero sleeps to the deadline. Not used on a machine
    /// with one hardware thread (the spin would hold up the threads it paces) nor
    /// with an injected clock. Must be >= 0.
    WallClock::duration spin_tail{std::chrono::microseconds(150)};
    /// Linux: set the event loop thread's timer slack to 1 ns (prctl PR_SET_TIMERSLACK),
    /// so that its sleeps are not rounded up by the default 50 us of slack; costs no
    /// CPU. Ignored elsewhere.
    bool tight_timer_slack = true;
    /// Sliding window of the achieved real-time factor. Must be > 0.
    WallClock::duration rate_window{std::chrono::seconds(1)};
    /// Order among accessors at one instant; the lowest by default, so that every
    /// other accessor has had its access at T before the pacer holds T.
    int priority = -1'000'000'000;
    /// Shared (default) lets other shared readers at T (a viewer, a logger) work
    /// while the pacer waits; exclusive keeps everyone else out. The pacer never
    /// touches the world itself.
    AccessMode mode = AccessMode::shared;
};

struct PacerSectionConfig; // config.hpp

/// The PacerConfig that a scenario's `pacer:` section describes: its period,
/// catch-up policy and limit and spin tail; the other fields keep their defaults.
/// Whether to pace at all (`section.enabled`) is the caller's decision. Any thread.
/// The values are copied as they are: RealTimePacer checks them (load_scenario
/// has checked a section it read).
PacerConfig pacer_config(const PacerSectionConfig& section);

/// What a RealTimePacer has done so far.
struct PacerStats {
    /// Grants received.
    std::uint64_t grants = 0;
    /// Grants released at their deadline after waiting for it.
    std::uint64_t on_time = 0;
    /// Grants that arrived after their deadline (released at once).
    std::uint64_t late = 0;
    /// Grants released at once without a deadline: anchoring (start, after a
    /// pause, resume or step) or while the handler was not running.
    std::uint64_t unpaced = 0;
    /// Times the schedule was re-anchored (start, pause/resume/step, scale change,
    /// backlog dropped).
    std::uint64_t reanchors = 0;
    /// Wall time of backlog forgiven by the catch-up policy.
    WallClock::duration dropped{};
    /// Lateness of every paced grant: how long after its deadline it was released
    /// (timer overshoot for grants that waited, arrival delay for late ones).
    LatenessSummary lateness;
    /// Achieved real-time factor over PacerConfig::rate_window (see
    /// RealTimeFactorWindow for the formula and its limits).
    std::optional<double> achieved_factor;
    /// The time scale's value when the stats were taken: the target factor.
    double target_factor = 1.0;
    /// Wall time spent waiting for deadlines (sleeping or spinning).
    WallClock::duration waited{};
    /// Wall time spent spinning in the spin tail: CPU burnt for accuracy.
    WallClock::duration spun{};
    /// Wall time since the pacer started.
    WallClock::duration elapsed{};
    /// The simulated time of the last release.
    SimTime last_release{};
};

/// The real-time pacing view: keeps a simulation in step with the wall clock.
///
/// A lockstep accessor, registered at construction, that lives on an event
/// loop (EventLoop) instead of a thread of its own: its grants complete on the
/// loop's thread, and it waits for deadlines with the loop's WallTimers. At each
/// grant at T (every `period` of simulated time) it waits until the wall instant
/// `anchor_wall + (T - anchor_sim) / scale` (an absolute deadline on the clock of
/// the TimeScale) and then releases, naming T + period as its next request, so
/// simulated time can run ahead by at most one period. A grant that comes too late
/// is released at once and its lateness counted; the CatchUp policy says what
/// happens to the backlog. Pause, resume, step(n), run_until and scale changes
/// re-anchor the schedule (see PacingSchedule); the pacer learns of them as
/// events (SimSyncHandler::subscribe, TimeScale::subscribe) when they happen, so
/// a wait for a deadline is re-decided at once and nothing wakes up while
/// nothing changes. Without a pacer the simulation runs as fast as it can;
/// stopping the pacer deregisters its accessor, and the simulation runs as fast
/// as it can again.
///
/// The spin tail (PacerConfig::spin_tail) spins on the loop's thread: other
/// work on a shared loop waits for it (at most the tail per period).
///
/// Copy/move: neither.
/// Thread safety: distinct objects: safe. Shared objects: `stop`, `running`,
/// `stats`, `config` and `failure` are safe from any thread, the loop's included.
/// The handler, the time scale and a given loop must outlive the pacer.
///
/// @code
/// simsync::SimSyncHandler handler(world, {.step = 1ms});
/// simsync::TimeScale scale(1.0);
/// simsync::EventLoop loop;                 // shared with a clock publisher, timers
/// simsync::RealTimePacer pacer(handler, scale, {.period = 10ms}, loop.executor());
/// ...                                   // accessors run at wall-clock speed
/// scale.set(2.0);                       // twice as fast from now on
/// auto s = pacer.stats();               // s.achieved_factor ~ 2.0
/// @endcode
class RealTimePacer {
public:
    /// Registers the accessor `config.name` (holding time at handler.now()) and
    /// starts pacing on `executor`'s loop. Given no executor, the pacer makes an
    /// EventLoop of its own on the scale's clock; on a ManualWallClock that loop
    /// jumps to each deadline (EventLoop::ManualTime::jumps_to_deadlines), as a
    /// sleep on that clock would: tests run the pacer without sleeping.
    /// @throws simsync::Error: invalid_argument naming the field and value (period
    ///         <= 0, max_catch_up < 0, spin_tail < 0, rate_window <= 0, empty name);
    ///         duplicate_name from the handler; invalid_state if `executor`'s loop
    ///         is gone.
    RealTimePacer(SimSyncHandler& handler, const TimeScale& scale, PacerConfig config = {},
                  Executor executor = {});
    RealTimePacer(const RealTimePacer&) = delete;
    RealTimePacer& operator=(const RealTimePacer&) = delete;
    /// Stops the pacer (see stop()).
    ~RealTimePacer();

    /// Ends pacing: a wait for a deadline is cut short, a pending request
    /// withdrawn through its cancellation slot, the access (if held) released
    /// and the accessor deregistered. Returns when the pacer has
    /// ended: none of its work runs on the loop after that. Idempotent; safe from
    /// any thread.
    void stop();
    /// False once the pacer has ended (stop(), handler stopped, accessor
    /// revoked, or a failure).
    bool running() const noexcept;
    /// A consistent copy of the statistics. Thread-safe; briefly takes a lock the
    /// pacer takes once per grant.
    PacerStats stats() const;
    const PacerConfig& config() const noexcept;
    /// The exception that ended the pacer, if any.
    std::exception_ptr failure() const;

private:
    struct Impl;
    std::shared_ptr<Impl> impl_;
};

} // namespace simsync
