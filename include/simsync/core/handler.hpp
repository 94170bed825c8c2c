#pragma once
/// @file
/// SimSyncHandler: the one object per simulation that owns simulated time and
/// grants timestamped access to the world.

#include <simsync/core/accessor.hpp>
#include <simsync/core/error.hpp>
#include <simsync/core/time.hpp>
#include <simsync/core/world.hpp>

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace simsync {

/// Which thread runs World::step.
enum class StepThread {
    /// The thread that makes a request steps the world for whichever request
    /// is next, its own or another's, and grants it: it would wait anyway (a
    /// blocking request, release_and_request) or it asks from a completion (an
    /// asynchronous request, a system asking again). A blocking thread granted
    /// that way wakes with its Access made and returns without the handler's
    /// lock: one wake-up per grant. A plain release, a deregistration or an
    /// operator's resume that makes a step possible hands the duty to the thread
    /// (or executor) whose request is next instead, so a thread that releases
    /// and goes on with other work is not kept stepping. When only an
    /// operator's step(n) or run_until target is a reason to advance (no request
    /// pending), the thread that made it possible steps: the operator calling
    /// step/run_until, or the accessor whose release lifted the last bound.
    /// A lone accessor pays no thread handoff at all.
    any,
    /// Only the host thread steps, inside SimSyncHandler::run(); for engines that
    /// must be stepped on the thread that created them.
    host,
};

/// Something the handler, or an accessor built on it, reports without being
/// asked, so that a stall or an accessor's silent end is never a mystery.
struct Diagnostic {
    enum class Kind {
        /// Simulated time has not advanced for HandlerConfig::stall_timeout of
        /// wall time while somebody waits for it (not paused by an operator).
        /// Grants at the current instant are no progress: an accessor that
        /// asks again and again for the instant it was just granted is named
        /// as the cause.
        stall,
        /// Time advances again after a reported stall.
        stall_over,
        /// An accessor built on the handler (a timer, a pacer, a clock
        /// publisher, ...) ended on its own because a request was refused,
        /// or one that stands for something outside was lost (a remote
        /// participant whose liveliness lease expired: reason timed_out;
        /// the message says what was done about it).
        accessor_ended,
    };
    Kind kind = Kind::stall;
    /// The simulation time when it was reported.
    SimTime at{};
    /// stall: who time is waiting for, as Snapshot::waiting_for, or, if
    /// nobody holds it back, the accessors that keep asking for the current
    /// instant.
    std::vector<std::string> waiting_for;
    /// stall: wall time since time last advanced; stall_over: how long it stood.
    WallClock::duration for_how_long{};
    /// accessor_ended: the accessor's name.
    std::string accessor;
    /// accessor_ended: the refusal that ended it (time_passed, not_registered,
    /// ...), or timed_out for a lost remote participant.
    std::error_code reason;
    /// The whole report as one line, ready to print.
    std::string message;
};
const char* to_string(Diagnostic::Kind kind) noexcept;

/// Receives diagnostics. Called on the handler's watchdog thread for stalls and
/// on the reporting thread otherwise; never with the handler's lock held, so it
/// may call any member of the handler, and may even destroy the handler (the
/// watchdog then ends without touching it again). Must not throw.
using DiagnosticsCallback = std::function<void(const Diagnostic&)>;

/// A change of how simulated time runs, as subscribers learn of it
/// (SimSyncHandler::subscribe): the event replaces polling `state()` or
/// `run_generation()`.
struct HandlerEvent {
    enum class Kind {
        paused,         ///< pause()
        resumed,        ///< resume()
        stepping,       ///< step(n): `pause_at` is where it will pause
        running_until,  ///< run_until(t): `pause_at` is where it will pause
        target_reached, ///< a step(n) / run_until target was reached: now paused
        stopped,        ///< stop(), or World::step threw
    };
    Kind kind = Kind::paused;
    /// run_generation() right after the change (each event adds one).
    std::uint64_t generation = 0;
    /// The simulation time when it happened.
    SimTime at{};
    /// stepping, running_until: where time will pause.
    std::optional<SimTime> pause_at;
};
const char* to_string(HandlerEvent::Kind kind) noexcept;

/// Receives handler events. Called after the handler's lock is released, one
/// event at a time and in generation order (never two at once, also when
/// several threads act together), on the thread that made the change or on
/// another thread that is delivering events at that moment; for
/// target_reached, on the thread that stepped. Never while that thread has a
/// step in flight or holds the duty to step, so it may call any member of the
/// handler, wait_until_paused included (an event it causes is delivered after
/// it returns), and may destroy the handler. Must not throw.
using EventCallback = std::function<void(const HandlerEvent&)>;

/// A subscription to handler events; destroying it (or reset()) unsubscribes.
/// Copy: no. Move: yes. Thread safety: distinct objects: safe. Unsubscribing
/// waits for a callback of this subscription running on another thread, so
/// once it returns the callback is not running and will not be called again;
/// unsubscribing from inside the callback itself is allowed.
class Subscription {
public:
    Subscription() noexcept = default;
    Subscription(Subscription&& other) noexcept;
    Subscription& operator=(Subscription&& other) noexcept;
    Subscription(const Subscription&) = delete;
    Subscription& operator=(const Subscription&) = delete;
    ~Subscription();
    void reset() noexcept;
    explicit operator bool() const noexcept { return id_ != 0; }

private:
    friend class detail::Core;
    Subscription(std::weak_ptr<detail::Core> core, std::uint64_t id) noexcept : core_(std::move(core)), id_(id) {}
    std::weak_ptr<detail::Core> core_;
    std::uint64_t id_ = 0;
};

/// Configuration of a handler; fixed for its life.
struct HandlerConfig {
    /// The physics step `dt`; the grid is `k * step`, k >= 0. Must be > 0.
    SimDuration step{std::chrono::milliseconds(1)};
    /// How requested times are mapped onto the grid.
    Rounding rounding = Rounding::nearest;
    /// Start paused (time does not advance until resume, step or run_until).
    bool start_paused = false;
    StepThread step_thread = StepThread::any;
    /// Report a stall (Diagnostic::Kind::stall) when simulated time has not
    /// advanced for this long of wall time while somebody waits for it. Zero
    /// turns the watchdog (one thread of the handler's) off. Must be >= 0.
    WallClock::duration stall_timeout = std::chrono::seconds(5);
    /// Where diagnostics go. Empty: one line each on stderr. A function that
    /// does nothing silences them.
    DiagnosticsCallback diagnostics{};
};

enum class HandlerState { running, paused, stopped };
const char* to_string(HandlerState state) noexcept;

/// One accessor in a Snapshot.
struct AccessorStatus {
    enum class Activity {
        idle,    ///< between accesses (a lockstep accessor holds time at `time`)
        waiting, ///< blocked in a request for `time`
        holding, ///< holds an access granted at `time`
    };
    std::string name;
    AccessorKind kind{};
    AccessMode mode{};
    int priority = 0;
    /// False for an accessor deregistered (or destroyed) while its Access is
    /// still held: it is listed, as `holding`, until that Access is released.
    bool registered = true;
    Activity activity = Activity::idle;
    /// idle lockstep: its bound; waiting: the rounded requested time; holding:
    /// the granted time; idle free: the time of its last grant (or start).
    SimTime time{};
    /// Wall time spent in the current activity when the snapshot was taken.
    WallClock::duration for_how_long{};
    std::uint64_t grants = 0;
};

const char* to_string(AccessorStatus::Activity activity) noexcept;

/// A consistent picture of the handler at one moment, for operators and status
/// lines. Taking one is O(number of accessors) and briefly blocks grants.
struct Snapshot {
    SimTime now{};
    HandlerState state = HandlerState::running;
    std::uint64_t steps = 0;
    std::uint64_t grants = 0;
    /// Time that run_until or step(n) will pause at, if any.
    std::optional<SimTime> pause_at;
    std::vector<AccessorStatus> accessors;
    /// Who simulated time is waiting for, if a request is pending beyond now and
    /// the simulation is not paused: holders of an access, or the lockstep
    /// accessors whose bound is the earliest. Empty when time is free to move
    /// or nobody waits.
    std::vector<std::string> waiting_for;
    /// Wall time since simulated time last advanced (or an operator resumed,
    /// stepped or ran it), while `waiting_for` is not empty.
    WallClock::duration waiting_for_how_long{};
};

/// The one object per simulation that owns simulated time and grants threads
/// timestamped access to the world.
///
/// A thread asks for access at the time it wants; the handler rounds that time to
/// the step grid, steps the world until that time and grants the access; the
/// thread works on the world and releases it. See Accessor and Access.
///
/// Grant rule: when nobody holds an exclusive access and the earliest pending
/// request is at T: if T == now it is granted; if T > now, the simulation is not
/// paused and T is not beyond any lockstep accessor's bound, the world is stepped
/// `(T - now) / dt` times and the request granted; otherwise it waits. At one
/// instant the order is by priority, then registration order, never arrival
/// order; a grant also waits for every lockstep accessor that could still ask
/// for that instant ahead of it. An accessor that asks again at an instant it was
/// already granted queues behind those that have not had that instant yet:
/// repeats go in rounds, every accessor's n-th grant at T before any (n+1)-th
/// (a asking three times and b twice, a first: a b a b a).
/// Same config and same lockstep accessors: the same sequence of grants,
/// whatever the thread timing.
///
/// Copy/move: neither. The world must outlive the handler.
/// Thread safety: every member function is safe from any thread, at any time,
/// including from inside an access (where operations that need the world to be
/// stepped take effect after the access is released), except the two that wait
/// for what an access held by the calling thread prevents: wait_until_paused and
/// run() refuse with `invalid_state` on a thread that holds an access (a
/// blocking requester until it releases; an inline or executor completion
/// while it runs).
/// Destruction stops the handler (waiters get `stopped`) and waits for the
/// current holders to release, except an access held by the destroying thread
/// and a grant whose executor completion has not begun (its executor may never
/// run it: the grant is void, and the completion, if it runs, gets `stopped`).
///
/// @code
/// simsync::CountingWorld world;
/// simsync::SimSyncHandler handler(world, {.step = 1ms});
/// auto camera = handler.register_accessor("camera", {.mode = simsync::AccessMode::shared});
/// for (std::int64_t n = 0;; ++n) {                    // on the camera's thread
///     auto at = simsync::SimTime{n * std::chrono::nanoseconds(1s) / 30};
///     simsync::Access access = camera.request_access(at); // granted at 0, 33, 67 ms ...
///     if (!access) break;                              // stopped
///     render(access.world_as<simsync::CountingWorld>());
/// }
/// @endcode
class SimSyncHandler {
public:
    /// @throws simsync::Error (invalid_argument) if `config.step <= 0`.
    SimSyncHandler(World& world, HandlerConfig config = {});
    SimSyncHandler(const SimSyncHandler&) = delete;
    SimSyncHandler& operator=(const SimSyncHandler&) = delete;
    ~SimSyncHandler();

    /// Registers an accessor. Names are unique among registered accessors.
    /// The accessor takes part from the current time on: if a World::step is in
    /// progress on another thread, registration waits for it (one step), so the
    /// current time is one the world is at and now() right after the call is
    /// that time (a lockstep accessor without a first request holds time there,
    /// so it may ask for exactly now()). Called from inside World::step, the
    /// current time is the end of that step.
    /// @throws simsync::Error: duplicate_name, or invalid_argument (empty name,
    ///         negative lookahead, first_request before the current time);
    ///         stopped handlers still register (requests then return `stopped`).
    Accessor register_accessor(std::string name, AccessorOptions options = {});

    /// The current simulated time. Lock-free; from any thread.
    SimTime now() const noexcept;
    SimDuration step_size() const noexcept;
    Rounding rounding() const noexcept;
    /// Number of World::step calls so far (== now / step). Lock-free.
    std::uint64_t steps() const noexcept;
    HandlerState state() const;
    /// Counts the changes of how time runs: pause, resume, step, run_until,
    /// stop and reaching a step/run_until target each add one (each is a
    /// HandlerEvent). Lock-free.
    std::uint64_t run_generation() const noexcept;

    /// Calls `callback` for every later HandlerEvent (see EventCallback for the
    /// thread) until the returned Subscription is destroyed. Any thread.
    /// @throws simsync::Error (invalid_argument) if `callback` is empty.
    Subscription subscribe(EventCallback callback);

    /// Stops the advance of time. Requests at the current instant are still served,
    /// so accessors come to rest at their next future request. Returns once time
    /// has stopped: a World::step in progress on another thread completes first.
    void pause();
    /// Lets time advance again (clears any run_until / step target).
    void resume();
    /// Advances `n` steps from now (or from the pending pause target), then pauses.
    void step(std::uint64_t n = 1);
    /// Runs and pauses at `t` (rounded down to the grid). If `t` is not after now,
    /// pauses at now.
    void run_until(SimTime t);
    /// Stops for good: every waiting and later request returns `stopped`; holders
    /// finish their accesses; a step in progress completes. Idempotent.
    void stop();

    /// Host mode (StepThread::host): steps the world on the calling thread whenever
    /// a grant needs it, and runs the inline systems' completions, until stop().
    /// In `any` mode it just waits for stop().
    /// @throws simsync::Error (invalid_state) if called twice at once, or by a
    ///         thread that holds an access (no step could happen while it does).
    void run();

    /// Blocks until the handler is paused with nobody holding an access and no
    /// step in progress, or stopped, or the wall-clock deadline passes.
    /// A lockstep accessor whose bound is the pause instant may still ask for it
    /// and be granted after this returns: the handler cannot know whether it will.
    /// @return true unless the deadline passed.
    /// @throws simsync::Error (invalid_state) if the calling thread holds an
    ///         access (the wait could never end).
    bool wait_until_paused(WallTime deadline);

    /// A consistent picture of every accessor and of who time is waiting for.
    Snapshot snapshot() const;

    /// Operator action on a stuck accessor: removes its registration. A waiting
    /// request returns `not_registered`; a held access ends at once (the thread
    /// behind it is no longer protected, and its Access says so: it converts to
    /// false, world() throws, revoked() is true); a lockstep bound is lifted.
    /// The only way an access ends before its Access is released.
    /// @return false if no accessor has that name.
    bool revoke(const std::string& name);

    /// Delivers `diagnostic` to HandlerConfig::diagnostics (or stderr), on the
    /// calling thread. Accessors built on the handler report their end this way.
    /// Any thread.
    void report(const Diagnostic& diagnostic) const;
    /// Reports an accessor_ended Diagnostic for the accessor `name`, which is a
    /// `what` ("pacer", "timer", ...), ended at the current time by `reason`:
    /// "simsync: <what> '<name>' ended at <t> s: its request was refused
    /// (<reason>)", then "; <consequence>" if given. Any thread.
    void report_accessor_ended(const std::string& what, const std::string& name, std::error_code reason,
                               const std::string& consequence = {}) const;

    /// The exception World::step threw, if the handler stopped because of one.
    std::exception_ptr failure() const;

private:
    std::shared_ptr<detail::Core> core_;
};

} // namespace simsync
