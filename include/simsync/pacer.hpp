#pragma once
/// @file
/// The real-time pacing view: a lockstep accessor that holds simulated time back
/// so that it advances with wall time times the time scale, plus the pure pacing
/// maths it is built from (deadlines, catch-up policy, lateness, achieved rate).

#include <simsync/event_loop.hpp>
#include <simsync/handler.hpp>
#include <simsync/time.hpp>
#include <simsync/time_scale.hpp>
#include <simsync/wall_clock.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <vector>

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

// ------------------------------------------------------------------ pure maths

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

/// A summary of a lateness distribution.
struct LatenessSummary {
    std::uint64_t count = 0;
    WallClock::duration p50{};
    WallClock::duration p99{};
    WallClock::duration max{};
    WallClock::duration mean{};
    /// One bucket of the display histogram: `count` values in [previous upper, upper).
    struct Bucket {
        WallClock::duration upper{};
        std::uint64_t count = 0;
    };
    /// 1-2-5 buckets from 1 us to 10 s plus an overflow bucket (upper ==
    /// duration::max()); empty buckets included, so the layout is fixed.
    std::vector<Bucket> histogram;
};

/// Lateness values in a log-linear histogram: constant memory, O(1) record.
/// Percentiles are exact below 16 ns and otherwise within 1/16 (6.25%) above the
/// true value, never below it (each is the top of its bucket, capped at the
/// maximum); count, max and mean are exact. Negative values count as zero.
///
/// Copy/move: both. Thread safety: distinct objects: safe. Shared objects: unsafe.
class LatenessHistogram {
public:
    void record(WallClock::duration lateness) noexcept;
    std::uint64_t count() const noexcept { return count_; }
    WallClock::duration max() const noexcept { return WallClock::duration{max_ns_}; }
    WallClock::duration mean() const noexcept;
    /// The nearest-rank percentile, `p` in [0, 1]; zero when empty.
    WallClock::duration percentile(double p) const noexcept;
    LatenessSummary summary() const;
    void clear() noexcept;

private:
    static constexpr std::size_t kSubBuckets = 16;
    static constexpr std::size_t kBuckets = kSubBuckets + (64 - 4) * kSubBuckets;
    static constexpr std::size_t kDisplayBuckets = 23;
    static std::size_t index_of(std::uint64_t ns) noexcept;
    static std::uint64_t top_of(std::size_t index) noexcept;

    std::array<std::uint64_t, kBuckets> buckets_{};
    std::array<std::uint64_t, kDisplayBuckets> display_{};
    std::uint64_t count_ = 0;
    std::int64_t max_ns_ = 0;
    long double sum_ns_ = 0;
};

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

// ------------------------------------------------------------------ the pacer

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

    /// Ends pacing: a wait for a deadline or a grant is cut short, the access (if
    /// held) released and the accessor deregistered. Returns when the pacer has
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
