#pragma once
/// @file
/// The shared event loop of the accessors that live on wall time (pacer, clock
/// publisher's paused messages, real-time timers): one thread, one FIFO of jobs
/// and wall-clock timers that follow an injected WallClockSource, so that a
/// ManualWallClock drives them in tests without a real sleep. Free of Boost;
/// simsync/core/asio.hpp gives the Asio executor of a loop to asynchronous accessors.

#include <simsync/clock/wall_clock.hpp>

#include <functional>
#include <memory>

namespace simsync {

namespace detail {
struct LoopImpl;
struct TimerState;
struct LoopAccess;
} // namespace detail

/// A handle on an EventLoop that posts jobs to its thread; not an Asio
/// executor (that is asio_executor() in simsync/core/asio.hpp): this one is
/// simsync's own and Boost-free. It also tells whether the calling thread is
/// the loop's. Cheap to copy; it does not keep the loop alive: once the loop
/// is destroyed, post() throws and sync() runs its job on the calling thread.
///
/// Copy/move: both (a value type). Thread safety: every member is safe from any
/// thread.
class Executor {
public:
    Executor() noexcept = default;

    /// Runs `job` on the loop's thread, after the jobs posted before it (FIFO).
    /// A job must not throw (it would end the loop's thread: std::terminate).
    /// @throws simsync::Error (invalid_state) if the handle is empty or the
    ///         loop has been destroyed.
    void post(std::function<void()> job) const;
    /// Runs `job` on the loop's thread and waits until it has run: at once when
    /// called on that thread; on the calling thread when the loop is gone
    /// (nothing else can run on it then). Components use it in stop() so that
    /// none of their jobs runs after it returns. Exceptions from `job` reach the
    /// caller.
    void sync(const std::function<void()>& job) const;
    /// True on the loop's thread.
    bool running_in_this_thread() const noexcept;
    /// The clock the loop's timers follow.
    /// @throws simsync::Error (invalid_state) if the handle is empty or the
    ///         loop has been destroyed.
    WallClockSource& clock() const;
    /// False for an empty handle (a default-constructed one).
    explicit operator bool() const noexcept { return !loop_.expired(); }

private:
    friend class EventLoop;
    friend class WallTimer;
    friend struct detail::LoopAccess;
    explicit Executor(std::weak_ptr<detail::LoopImpl> loop) noexcept : loop_(std::move(loop)) {}
    std::weak_ptr<detail::LoopImpl> loop_;
};

/// A one-shot wall-clock timer on an EventLoop, armed again as often as needed.
/// The callback runs on the loop's thread once the loop's clock reads at least
/// the deadline: with the real clock through an Asio steady timer, with a
/// ManualWallClock when a test advances it past the deadline.
///
/// Copy/move: neither. Thread safety: distinct objects: safe. Shared objects:
/// every member is safe from any thread. A callback that has begun to run when
/// cancel() is called on another thread finishes; on the loop's thread (in any
/// job or callback of the loop) cancel() guarantees the callback will not run.
/// Destroying the timer cancels it; the loop must outlive it.
class WallTimer {
public:
    /// @throws simsync::Error (invalid_state) if `executor` is empty or its
    ///         loop is gone.
    explicit WallTimer(const Executor& executor);
    ~WallTimer();
    WallTimer(const WallTimer&) = delete;
    WallTimer& operator=(const WallTimer&) = delete;

    /// Calls `callback` on the loop's thread at `deadline` (at once, through
    /// the loop, if it has passed). Replaces a pending wait: its callback is
    /// dropped, never called.
    void wait_until(WallTime deadline, std::function<void()> callback);
    /// Drops the pending wait, if any.
    void cancel() noexcept;
    /// True while a wait is pending.
    bool armed() const noexcept;

private:
    std::shared_ptr<detail::TimerState> state_;
    Executor loop_;
};

/// One thread running a FIFO of jobs and the WallTimers made on its executor:
/// the one place where the wall-clock accessors of a process wait, instead of
/// a thread or a private io_context each. A pacer, a clock publisher and any
/// number of real-time timers may share one loop; each component that is
/// given none makes its own.
///
/// Copy/move: neither. Thread safety: every member is safe from any thread.
/// Destruction stops and joins the thread (not from the loop's own thread);
/// jobs and timers not yet run are dropped. Components that use the loop must
/// be destroyed (or stopped) first.
///
/// @code
/// simsync::EventLoop loop;                                  // one thread
/// simsync::RealTimePacer pacer(handler, scale, {}, loop.executor());
/// simsync::ClockPublisher clock(handler, source, {}, loop.executor());
/// @endcode
class EventLoop {
public:
    /// How a loop on a ManualWallClock treats a timer armed for a later instant.
    enum class ManualTime {
        /// The test moves the clock (advance, sleep_until); timers fire then.
        advanced_by_test,
        /// The loop moves the clock to the deadline (after the jobs posted
        /// before the timer was armed), as ManualWallClock::sleep_until does: a
        /// wait takes no time, and the clock moves only when something waits.
        jumps_to_deadlines,
    };

    /// Starts the loop's thread. Timers follow `clock`: a ManualWallClock
    /// fires them when it moves (see ManualTime); any other clock is read as
    /// the steady clock.
    explicit EventLoop(WallClockSource& clock = real_wall_clock(),
                       ManualTime manual_time = ManualTime::advanced_by_test);
    ~EventLoop();
    EventLoop(const EventLoop&) = delete;
    EventLoop& operator=(const EventLoop&) = delete;

    Executor executor() const noexcept;
    WallClockSource& clock() const noexcept;

private:
    std::shared_ptr<detail::LoopImpl> impl_;
};

} // namespace simsync
