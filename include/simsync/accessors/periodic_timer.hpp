#pragma once
/// @file
/// PeriodicTimer: calls a function at `offset + n * period`, on the UNIX-epoch
/// wall clock or on simulated time (the CPM Lab timer semantics).

#include <simsync/accessors/start_signal.hpp>
#include <simsync/clock/event_loop.hpp>
#include <simsync/clock/wall_clock.hpp>
#include <simsync/core/accessor.hpp>
#include <simsync/core/time.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <system_error>

namespace simsync {

class SimSyncHandler;

/// Which time a PeriodicTimer runs on.
enum class TimerClock {
    /// The UNIX-epoch system clock: timers on different machines (NTP-synchronised)
    /// fire at the same instants.
    real,
    /// The simulated time of a SimSyncHandler, as a lockstep accessor.
    simulated,
};

const char* to_string(TimerClock clock) noexcept;

/// Configuration of a PeriodicTimer; a plain struct, fixed for the timer's life.
struct PeriodicTimerConfig {
    /// Names the timer in error messages and, on simulated time, its accessor
    /// (accessor names are unique per handler).
    std::string name = "timer";
    /// Time between calls. Must be > 0.
    std::chrono::nanoseconds period{std::chrono::milliseconds(100)};
    /// Calls are at `offset + n * period`. Must be >= 0; on the real clock also
    /// < period (the grid is anchored at the UNIX epoch, so a larger offset would
    /// only shift n). On simulated time it may exceed the period: the first call
    /// is then at `offset`.
    std::chrono::nanoseconds offset{0};
    TimerClock clock = TimerClock::real;
    /// Wait for TimerContext::signal's start before the first call.
    bool wait_for_start = false;
    /// If set, a stop fired on TimerContext::signal calls this (on the firing
    /// thread) instead of stopping the timer. stop() still stops it.
    std::function<void()> on_stop_signal{};
    /// Simulated time: the accessor's priority at one instant (see AccessorOptions).
    int priority = 0;
    /// Simulated time: called once, on the thread running the timer, when the
    /// timer ends on its own because its request was refused (the reason, as
    /// error() then says); the handler's diagnostics get an accessor_ended report
    /// too, except for `stopped` (the simulation's normal end). Not called after
    /// stop() or a stop signal.
    std::function<void(std::error_code)> on_end{};
};

/// What a PeriodicTimer runs against besides its config. Everything is borrowed.
struct TimerContext {
    /// Simulated time: the handler whose time the timer follows; must outlive the
    /// timer. Ignored on the real clock.
    SimSyncHandler* handler = nullptr;
    /// Start and stop signals; required if `wait_for_start`. Optional otherwise:
    /// a timer with a signal also obeys its stops.
    StartStopSignal* signal = nullptr;
    /// Real clock: where wall time is read. With an `executor`, null or that
    /// executor's clock (anything else is refused: the waits follow the loop's
    /// clock). Without one, the timer's private loop follows this clock (null:
    /// real_wall_clock()); a ManualWallClock is then driven by the timer itself,
    /// as its sleep_until would be: each wait moves it to the deadline at once,
    /// so single-threaded tests run without sleeping. A timer given an executor
    /// never moves the clock: its waits end when whoever owns the clock
    /// advances it. Must outlive the timer.
    WallClockSource* wall_clock = nullptr;
    /// Where the timer waits and, after start_async(), runs: its real-clock
    /// waits are WallTimers on this loop and, after start_async(), a simulated
    /// timer's requests complete on it, so any number of timers (and a pacer, a
    /// clock publisher) share one thread. Empty: the timer makes a private
    /// EventLoop when it starts and needs one (a real timer, or start_async);
    /// its thread is joined by stop() or the destructor. The loop must outlive
    /// the timer.
    Executor executor{};
};

/// One call of the timer's callback.
struct TimerTick {
    /// n in `offset + n * period`: counted from the UNIX epoch on the real clock,
    /// from the start of the simulation on simulated time.
    std::int64_t index = 0;
    /// Real clock: the instant this call was scheduled for (not when the thread
    /// woke up). Unused on simulated time.
    SystemTime real_time{};
    /// Simulated time: the instant this call was scheduled for (before rounding to
    /// the step grid; `access->granted_time()` is the rounded one). Unused on the
    /// real clock.
    SimTime sim_time{};
    /// Grid instants skipped just before this call because the previous call
    /// overran (real clock only; simulated time never skips).
    std::uint64_t skipped = 0;
    /// Simulated time: the access held during this call (release it only through
    /// the timer, i.e. by returning). Null on the real clock.
    Access* access = nullptr;
};

using TimerCallback = std::function<void(const TimerTick&)>;

/// The first instant of the grid `offset + n * period`, n >= 0, that is not
/// before `t`. All three are durations since the same epoch (the UNIX epoch or
/// the start of the simulation). Pure integer arithmetic: a thin wrapper over
/// `PeriodicSchedule::from_period(period, offset)` (simsync/core/schedule.hpp), the
/// one grid function of simsync, which the timer itself uses.
/// Example: period 200 ms, offset 5 ms, t = 10.000 s -> 10.005 s; t = 10.005 s
/// -> 10.005 s (a start on the grid fires there); t = 0 -> 5 ms.
/// @throws simsync::Error (invalid_argument) if `period <= 0` or `offset < 0`.
std::chrono::nanoseconds first_grid_instant(std::chrono::nanoseconds t, std::chrono::nanoseconds period,
                                            std::chrono::nanoseconds offset);

/// Calls a function periodically at `offset + n * period`, either on the
/// UNIX-epoch wall clock or on a handler's simulated time; optionally waits for
/// a start signal and obeys stop signals (StartStopSignal). A timer has no
/// thread of its own: it waits on an EventLoop (TimerContext::executor, or a
/// private one), so many timers cost one thread.
///
/// Real clock: the first call is at the first grid instant not before the start
/// (the start() call, or the start signal if the timer waits for one); a start
/// exactly on the grid calls at once. Deadlines are absolute (the previous
/// instant plus whole periods), so the timer never drifts. A call that overruns
/// skips the instants it missed, never replays them: the next call is at the
/// first grid instant not before the end of the overrunning call, and
/// TimerTick::skipped counts the skipped ones. Each wait is a WallTimer on the
/// loop: the grid instant, on the system clock, becomes a steady deadline
/// through one reading of both clocks (`steady_now + (instant - system_now)`);
/// on waking the timer reads the system clock again and waits on if it is still
/// early (the system clock was stepped back), so a call is never early. A system
/// clock stepped forward makes the pending call late by up to the step (the
/// instants it passed are then skipped).
///
/// Simulated time: the timer registers a lockstep accessor named `config.name`
/// when it starts (on the calling thread, also for start_async), requests
/// `offset + n * period` (the first such instant not before the handler's
/// current time) and calls the callback inside the granted access, then
/// releases it naming the next instant, so simulated time cannot pass the
/// timer's next call. After start_async() the requests are asynchronous
/// (Accessor::async_request_access) and complete on the loop; after start()
/// they block the caller. While it waits for a start signal it holds time
/// where it was started. It ends on its own when the handler stops or an
/// operator revokes it (see error()). stop() withdraws a waiting request through
/// the request's cancellation (the cancellation slot of the asynchronous request,
/// the std::stop_token of the blocking one); it never touches an access the
/// callback holds.
///
/// The callback is called on the thread running the timer: the caller of
/// start(), or the event loop's thread after start_async(). Never two calls at
/// once. Timers sharing a loop take turns on its thread: a long callback delays
/// the others' calls (on the real clock they then skip, never replay). An
/// exception from the callback ends the timer: start() rethrows it; after
/// start_async() the next stop() does.
///
/// A timer runs once: start or start_async a second time, even after a stop,
/// throws. stop() before the start makes the start return without any call.
///
/// Copy/move: neither. Destruction stops the timer (as stop(), swallowing a
/// pending callback exception) and joins its private loop's thread, if it made
/// one; do not destroy a timer from inside its callback.
/// Thread safety: distinct objects: safe. Shared objects: stop(), calls(),
/// skipped(), running() and error() are safe from any thread, also from inside
/// the callback; start and start_async are called once, from one thread.
///
/// @code
/// simsync::EventLoop loop;                 // one thread for every timer below
/// simsync::PeriodicTimer timer({.period = 200ms, .offset = 5ms},  // real clock
///                              {.executor = loop.executor()});
/// timer.start_async([](const simsync::TimerTick& tick) {         // on the loop's thread
///     publish_state(tick.real_time);       // 10.005 s, 10.205 s, ... since the epoch
/// });
/// ...
/// timer.stop();                            // no call runs after this returns
///
/// simsync::PeriodicTimer sim({.name = "controller", .period = 21ms, .offset = 5ms,
///                             .clock = simsync::TimerClock::simulated}, {.handler = &handler});
/// sim.start([](const simsync::TimerTick& tick) {      // here: 5, 26, 47 ms ...
///     control(tick.access->world_as<MyWorld>());      // handler.now() == tick.sim_time
/// });
/// @endcode
class PeriodicTimer {
public:
    /// @throws simsync::Error (invalid_argument) naming the field and value if the
    ///         period is not positive, the offset negative (or, on the real clock,
    ///         not smaller than the period), a simulated timer has no handler,
    ///         the timer waits for a start signal without a signal, or a real
    ///         timer's wall_clock is not its executor's clock; (invalid_state) if
    ///         the executor's loop is gone.
    explicit PeriodicTimer(PeriodicTimerConfig config, TimerContext context = {});
    PeriodicTimer(const PeriodicTimer&) = delete;
    PeriodicTimer& operator=(const PeriodicTimer&) = delete;
    /// Stops the timer (swallowing a pending callback exception) and joins its
    /// private loop's thread, if any.
    ~PeriodicTimer();

    /// Runs the timer on the calling thread until it is stopped: the thread
    /// sleeps between calls (woken by the loop's timer, or by stop()) and makes
    /// every call itself.
    /// @throws simsync::Error (invalid_state) if the timer was started before;
    ///         (invalid_argument) if `callback` is empty; (duplicate_name) if a
    ///         simulated timer's name is taken; whatever the callback throws.
    void start(TimerCallback callback);
    /// Runs the timer on its event loop and returns at once; the callback is
    /// called on the loop's thread. Same errors as start(), except the
    /// callback's exceptions, which the next stop() rethrows.
    void start_async(TimerCallback callback);
    /// Stops the timer, from any thread, also from inside the callback. A
    /// waiting timer wakes at once; a simulated timer's waiting request is
    /// withdrawn. No call begins after stop() returns.
    ///  - After start_async(), called from outside the loop's thread: it waits
    ///    for a call in progress to end and for the timer to wind down (its
    ///    accessor deregistered, its private loop's thread joined), so nothing of
    ///    the timer runs after it returns. From inside the callback it only marks
    ///    the timer stopped (the run ends when the callback returns); from
    ///    another job on a shared loop it ends the timer there, except that a
    ///    simulated timer's withdrawn request completes on the loop afterwards.
    ///  - After start(): a call in progress on the caller of start() finishes
    ///    (so at most one more call ends after stop() returns) and the caller of
    ///    start() returns on its own.
    /// Idempotent.
    /// @throws what an async callback threw (once; not from inside the callback).
    void stop();

    /// True between the start and the end of the run.
    bool running() const;
    /// Number of callback calls so far.
    std::uint64_t calls() const;
    /// Total grid instants skipped so far (real clock).
    std::uint64_t skipped() const;
    /// Why a simulated timer ended on its own: the refusal of its request
    /// (`stopped`: the handler stopped; `not_registered`: revoked by an
    /// operator; ...). Empty while running and after stop() or a stop signal.
    std::error_code error() const;

    const PeriodicTimerConfig& config() const noexcept;

private:
    struct Impl;
    std::shared_ptr<Impl> impl_;
};

} // namespace simsync
