#pragma once
/// @file
/// StartStopSignal: a start and a stop that one party fires and any number of
/// periodic timers obey, so timers started apart begin and end together.

#include <cstdint>
#include <memory>

namespace simsync {

namespace detail {
struct SignalState;
struct SignalAccess;
} // namespace detail

/// A start signal and a stop signal for PeriodicTimer, fired by the host (and,
/// later, by a remote peer on its behalf), as the central timing instance of the
/// CPM Lab starts and stops the timers of all its participants.
///
/// Both are latched: a timer that starts waiting after the start was fired starts
/// at once; a timer started after a stop was fired sees that stop when it starts.
/// Firing the start more than once has no further effect; every stop is counted
/// (a timer with a stop callback gets one call per stop it sees).
///
/// Copy/move: neither (timers refer to it). Its shared state outlives it, so a
/// timer may outlive the signal; it must be alive when a timer is started.
/// Thread safety: distinct objects: safe. Shared objects: safe; every member may
/// be called from any thread at any time, also from inside a timer's callback.
/// A stop runs the timers' stop callbacks on the firing thread, so `fire_stop`
/// returns after those callbacks did; a stop fired before a timer started runs
/// its stop callback once when it starts, on the thread running the timer (the
/// caller of start(), or its event loop's thread after start_async()).
///
/// @code
/// simsync::StartStopSignal signal;
/// simsync::PeriodicTimer timer({.period = 20ms, .wait_for_start = true}, {.signal = &signal});
/// timer.start_async([](const simsync::TimerTick& tick) { control(tick.real_time); });
/// signal.fire_start();   // every timer waiting on `signal` begins now
/// ...
/// signal.fire_stop();    // and they all stop
/// @endcode
class StartStopSignal {
public:
    StartStopSignal();
    StartStopSignal(const StartStopSignal&) = delete;
    StartStopSignal& operator=(const StartStopSignal&) = delete;
    ~StartStopSignal();

    /// Fires the start: waiting timers begin. Idempotent.
    void fire_start();
    /// Fires a stop: timers without a stop callback stop (even those still waiting
    /// for the start, which then never call their callback); timers with a stop
    /// callback call it instead, on this thread.
    void fire_stop();

    /// True once the start was fired.
    bool started() const;
    /// Number of stops fired so far.
    std::uint64_t stops() const;

private:
    friend struct detail::SignalAccess;
    std::shared_ptr<detail::SignalState> state_;
};

} // namespace simsync
