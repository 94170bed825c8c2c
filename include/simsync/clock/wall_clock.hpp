#pragma once
/// @file
/// Injectable wall time: the real clocks in production, a manual clock in tests.

#include <simsync/core/time.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace simsync {

using SystemClock = std::chrono::system_clock;
using SystemTime = SystemClock::time_point;

/// Where everything that relates simulated time to wall time (pacing view, time
/// sources, real-time timer, clock publisher) reads the wall clock and sleeps.
/// Injecting a ManualWallClock makes that logic testable without sleeping.
///
/// Copy/move: an interface. Thread safety: implementations are safe to call from
/// any thread concurrently.
class WallClockSource {
public:
    virtual ~WallClockSource() = default;
    /// Monotonic wall time (never jumps; for deadlines and durations).
    virtual WallTime steady_now() const noexcept = 0;
    /// Calendar time since the UNIX epoch (may be stepped by NTP).
    virtual SystemTime system_now() const noexcept = 0;
    /// Blocks the calling thread until `steady_now() >= deadline`.
    virtual void sleep_until(WallTime deadline) = 0;
};

/// The real clocks: std::chrono::steady_clock and system_clock.
/// Thread safety: stateless; safe from any thread.
class RealWallClock final : public WallClockSource {
public:
    WallTime steady_now() const noexcept override { return WallClock::now(); }
    SystemTime system_now() const noexcept override { return SystemClock::now(); }
    void sleep_until(WallTime deadline) override;
};

/// The process-wide RealWallClock, for components whose clock was not injected.
WallClockSource& real_wall_clock() noexcept;

/// A wall clock that moves only when told to, for tests. `sleep_until` does not
/// block: it moves the clock to the deadline (a sleep that takes no real time),
/// which keeps single-threaded timing tests deterministic and instant.
///
/// Copy/move: neither. Thread safety: every member is safe from any thread.
class ManualWallClock final : public WallClockSource {
public:
    /// Starts at steady time `steady_start` and UNIX time `system_start`.
    explicit ManualWallClock(WallTime steady_start = WallTime{},
                             SystemTime system_start = SystemTime{}) noexcept
        : steady_(steady_start), system_(system_start)
    {
    }
    ManualWallClock(const ManualWallClock&) = delete;
    ManualWallClock& operator=(const ManualWallClock&) = delete;

    WallTime steady_now() const noexcept override;
    SystemTime system_now() const noexcept override;
    /// Advances both clocks to `deadline` if it is in the future.
    void sleep_until(WallTime deadline) override;

    /// Advances both clocks by `d` (>= 0).
    void advance(WallClock::duration d);
    /// Number of sleep_until calls so far (for tests that assert "no sleep").
    std::uint64_t sleeps() const noexcept;

    /// Calls `listener` every time the clock moves (advance, or a sleep_until
    /// that moved it), on the thread that moved it, after the move and outside
    /// the clock's lock: how an EventLoop learns that its timers may be due.
    /// Listeners must be quick and must not throw. Returns an id for
    /// remove_listener.
    std::uint64_t add_listener(std::function<void()> listener);
    /// Removes a listener; once it returns, the listener is not running on
    /// another thread and will not be called again (from inside the listener
    /// itself it only removes).
    void remove_listener(std::uint64_t id);
    /// Number of listeners attached: what follows this clock. Whatever
    /// attached one (an EventLoop, through a component that made its own) has
    /// removed it by the time its destructor returns.
    std::size_t listener_count() const;

private:
    void notify_moved();

    mutable std::mutex mutex_;
    mutable std::recursive_mutex listeners_mutex_; // held while listeners run
    std::vector<std::pair<std::uint64_t, std::function<void()>>> listeners_;
    std::uint64_t next_listener_ = 1;
    WallTime steady_;
    SystemTime system_;
    std::uint64_t sleeps_ = 0;
};

} // namespace simsync
