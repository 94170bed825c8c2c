#include "signal_state.hpp"

#include <simsync/accessors/start_signal.hpp>

#include <algorithm>

namespace simsync {

namespace detail {

namespace {
// Copies the live listeners so they can be called without holding the mutex.
std::vector<std::shared_ptr<SignalListener>> live_listeners(SignalState& state)
{
    std::vector<std::shared_ptr<SignalListener>> live;
    live.reserve(state.listeners.size());
    for (const auto& weak : state.listeners) {
        if (auto listener = weak.lock()) live.push_back(std::move(listener));
    }
    return live;
}
} // namespace

Subscription subscribe(SignalState& state, const std::shared_ptr<SignalListener>& listener)
{
    std::lock_guard<std::mutex> guard(state.mutex);
    std::erase_if(state.listeners, [](const auto& weak) { return weak.expired(); });
    state.listeners.push_back(listener);
    return Subscription{state.started, state.stops};
}

void unsubscribe(SignalState& state, const SignalListener* listener) noexcept
{
    std::lock_guard<std::mutex> guard(state.mutex);
    std::erase_if(state.listeners, [listener](const auto& weak) {
        const auto locked = weak.lock();
        return !locked || locked.get() == listener;
    });
}

} // namespace detail

StartStopSignal::StartStopSignal() : state_(std::make_shared<detail::SignalState>()) {}

StartStopSignal::~StartStopSignal() = default;

void StartStopSignal::fire_start()
{
    std::vector<std::shared_ptr<detail::SignalListener>> listeners;
    {
        std::lock_guard<std::mutex> guard(state_->mutex);
        if (state_->started) return;
        state_->started = true;
        listeners = detail::live_listeners(*state_);
    }
    for (const auto& listener : listeners) {
        if (listener->on_start) listener->on_start();
    }
}

void StartStopSignal::fire_stop()
{
    std::vector<std::shared_ptr<detail::SignalListener>> listeners;
    {
        std::lock_guard<std::mutex> guard(state_->mutex);
        ++state_->stops;
        listeners = detail::live_listeners(*state_);
    }
    for (const auto& listener : listeners) {
        if (listener->on_stop) listener->on_stop();
    }
}

bool StartStopSignal::started() const
{
    std::lock_guard<std::mutex> guard(state_->mutex);
    return state_->started;
}

std::uint64_t StartStopSignal::stops() const
{
    std::lock_guard<std::mutex> guard(state_->mutex);
    return state_->stops;
}

} // namespace simsync
