#pragma once
// Private: the shared state behind a StartStopSignal and how timers listen to it.

#include <simsync/accessors/start_signal.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace simsync::detail {

// What a timer does when a signal fires; called on the firing thread, outside
// the signal's mutex so that a listener may call back into the signal.
struct SignalListener {
    std::function<void()> on_start;
    std::function<void()> on_stop;
};

struct SignalState {
    mutable std::mutex mutex;
    bool started = false;
    std::uint64_t stops = 0;
    // Weak: a timer that ends unsubscribes, but one that ends while a fire is in
    // flight must not be kept in the list, nor the fire wait for it.
    std::vector<std::weak_ptr<SignalListener>> listeners;
};

// The state of the signal at the moment of subscribing; every fire after it
// reaches the listener, none before it does.
struct Subscription {
    bool started = false;
    std::uint64_t stops = 0;
};

struct SignalAccess {
    static std::shared_ptr<SignalState> state(StartStopSignal& signal) { return signal.state_; }
};

Subscription subscribe(SignalState& state, const std::shared_ptr<SignalListener>& listener);
void unsubscribe(SignalState& state, const SignalListener* listener) noexcept;

} // namespace simsync::detail
