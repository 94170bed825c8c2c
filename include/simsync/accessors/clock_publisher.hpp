#pragma once
/// @file
/// The clock publisher: an inline system (a lockstep accessor run on the thread
/// that steps the world) that publishes the selected time source at a fixed rate
/// of simulated time, to any number of sinks.

#include <simsync/accessors/clock_sink.hpp>
#include <simsync/accessors/clock_udp.hpp>
#include <simsync/clock/event_loop.hpp>
#include <simsync/clock/time_source.hpp>
#include <simsync/clock/wall_clock.hpp>
#include <simsync/core/handler.hpp>
#include <simsync/core/schedule.hpp>
#include <simsync/core/time.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace simsync {

/// Configuration of a ClockPublisher.
struct ClockPublisherConfig {
    /// The accessor's name (unique in the handler).
    std::string name = "clock";
    /// The publish instants in simulated time (100 Hz by default): tick n is
    /// `schedule.at(n)` (n >= 0), rounded to the step grid by the handler. A
    /// rate that does not divide a second is exact: from_rate(30) puts tick n
    /// at floor(n * 1e9 / 30) ns, with no drift however long the run.
    PeriodicSchedule schedule = PeriodicSchedule::from_period(std::chrono::milliseconds(10));
    /// Priority of the clock accessor at an instant shared with other accessors.
    int priority = 0;
    /// While the simulation is paused, the wall-clock period of the paused
    /// messages. Zero: the schedule's (nominal) period read as wall time.
    /// Must be >= 0.
    WallClock::duration paused_period{0};
    /// The wall clock of the paused messages when the publisher makes its own
    /// EventLoop (no executor given); null: the real clock. With an executor
    /// the loop's clock is used, and this must be null or that same clock.
    /// Tests inject a ManualWallClock here or through their EventLoop.
    WallClockSource* wall_clock = nullptr;
};

/// Publishes the time of a TimeSource at a fixed rate of simulated time, to any
/// number of sinks: the AWSIM ClockPublisher, built on the handler's public API.
///
/// It is a lockstep, shared-mode accessor (named "clock" by default) served as
/// an inline system: it has no thread of its own. Each tick is an asynchronous
/// request whose completion runs on the thread that steps the world to it,
/// right after the step; there it reads the time source during the access,
/// releases naming the next tick (one atomic call, so simulated time cannot
/// slip past a tick unpublished), publishes to every sink and asks for the
/// next tick. So in a lockstep run every tick is published exactly once, in
/// order, with consecutive sequence numbers; the rate is independent of the
/// physics step, and in an unpaced run no thread wakes up for the clock at
/// all. If the period is shorter than the step, several consecutive ticks
/// round to the same grid instant and carry the same simulation time.
///
/// Who steps: as for every inline system, the thread that makes the next tick
/// reachable steps the world to it (a controller's release, the pacer, an
/// operator's resume/step/run_until, the host thread with StepThread::host).
/// The first request is made on the executor's thread, so start() returns at
/// once. If the clock is the only lockstep participant and the simulation runs
/// unpaced, nothing else bounds time: the thread that set it going (the
/// executor's after start(), the caller of resume()) then steps the simulation
/// until it is paused or stopped; give such a run a driver (a pacer, a
/// controller, host mode).
///
/// While the simulation is paused (and its next tick is not reachable) it keeps
/// publishing at `paused_period` of wall time, with the paused flag and the
/// frozen time: the source time and simulation time read when the pause began
/// (re-read when a single step or run_until reaches its target). It learns of
/// pause, resume, step, run_until and stop from the handler's events
/// (SimSyncHandler::subscribe), never by polling or a timeout: the paused
/// messages come from a WallTimer on the executor's EventLoop, armed only while
/// paused, so nothing wakes up while the simulation runs or while it is paused
/// between two paused messages. Subscribers see a pause rather than silence;
/// sources that follow the wall clock (`simulation`, `system`, `ros`) show the
/// time that passed once it resumes.
///
/// Copy/move: neither. Thread safety: distinct objects: safe. Shared objects:
/// safe, every member from any thread (see stop() for sinks).
/// Sinks: see ClockSink for which thread calls them. The handler, the time
/// source, the executor's EventLoop and the publisher's sinks must outlive the
/// publisher (its destructor stops it).
///
/// @code
/// simsync::SimTimeSource source(handler);
/// simsync::ClockPublisher clock(handler, source, {.schedule = simsync::PeriodicSchedule::from_rate(30)});
/// clock.add_callback([](const simsync::ClockMessage& m) { ... }); // stepping thread: be quick
/// clock.add_sink(std::make_unique<simsync::UdpClockSink>("127.0.0.1", 9870));
/// clock.start();
/// ...
/// clock.stop();
/// @endcode
class ClockPublisher {
public:
    /// `executor`: the EventLoop of the paused messages (shared with a pacer,
    /// timers, ...); none: the publisher makes a private one on
    /// `config.wall_clock` (the real clock if null).
    /// @throws simsync::Error (invalid_argument) if `paused_period < 0`
    ///         (naming the value), or if `config.wall_clock` is set and is not
    ///         the executor's clock; (invalid_state) if `executor` refers to a
    ///         loop that is gone.
    ClockPublisher(SimSyncHandler& handler, const TimeSource& source, ClockPublisherConfig config = {},
                   Executor executor = {});
    /// Stops (as stop()) and waits for it. Not from one of its own sinks.
    ~ClockPublisher();
    ClockPublisher(const ClockPublisher&) = delete;
    ClockPublisher& operator=(const ClockPublisher&) = delete;

    /// Adds a sink, also while running. If a message was published already, the
    /// new sink gets the last one at once, on the calling thread, before this
    /// returns; then every later message.
    /// @throws simsync::Error (invalid_argument) if `sink` is null.
    void add_sink(std::unique_ptr<ClockSink> sink);
    /// Adds a CallbackClockSink.
    void add_callback(CallbackClockSink::Callback callback);

    /// Registers the clock accessor (it holds simulated time from now on),
    /// subscribes to the handler's events and asks for the first tick: the
    /// first `schedule.at(n)` at or after the handler's current time. Returns
    /// at once: the request is made on the executor's thread (time is held at
    /// the current instant until then).
    /// @throws simsync::Error: invalid_state if started or stopped before;
    ///         duplicate_name if the name is taken in the handler.
    void start();
    /// Stops publishing: withdraws a pending request through its cancellation
    /// slot, then deregisters the accessor, which lifts the hold on simulated
    /// time: prompt even while paused. Returns once no completion, paused message or event callback of
    /// the publisher is running on another thread and none will publish (a
    /// tick being published on the stepping thread meanwhile finishes first).
    /// A tick granted just before, whose completion the stepping thread has
    /// not run yet, stays held until it runs: it finds the publisher stopped
    /// and releases at once (stop() cannot wait for it: that thread may be
    /// the caller).
    /// From one of the publisher's own sinks (or a nested call on that
    /// thread) it only asks: nothing is published after that sink returns,
    /// and the destructor completes the stop. Idempotent; also fine if never
    /// started.
    void stop();
    /// True from start() until stop(), the handler's stop, or the end of the
    /// accessor (an operator's revoke or a world failure, reported as a
    /// Diagnostic of kind accessor_ended).
    bool running() const noexcept;

    /// The last message published, if any.
    std::optional<ClockMessage> last_message() const;
    /// Number of messages published.
    std::uint64_t published() const noexcept;
    /// Number of exceptions caught from sinks.
    std::uint64_t sink_failures() const noexcept;
    const ClockPublisherConfig& config() const noexcept;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace simsync
