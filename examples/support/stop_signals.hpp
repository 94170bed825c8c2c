#pragma once
// How the example programs end on SIGINT (Ctrl-C) and SIGTERM (kill, systemd,
// docker stop): as the operator's `quit` does, with the run's summary, never by
// the default action that kills the process mid-run (and leaves a terminal in
// single-key mode). Example code, not library API.

#include <functional>
#include <memory>

namespace simsync::examples {

// Calls `on_signal(number)` for the first SIGINT or SIGTERM the process gets,
// once, on a thread of its own (Boost.Asio's signal_set: the signal handler only
// wakes that thread, so `on_signal` may lock, print and call the handler). It
// then restores the default actions, so a second Ctrl-C ends a run that does
// not end at once.
//
// Copy/move: neither. Threads: construct and destroy on one thread (the
// destructor joins its thread; `on_signal` must not destroy the object).
// Create it before the run starts: a signal that comes earlier gets the default
// action.
class StopOnSignals {
public:
    explicit StopOnSignals(std::function<void(int)> on_signal);
    ~StopOnSignals();
    StopOnSignals(const StopOnSignals&) = delete;
    StopOnSignals& operator=(const StopOnSignals&) = delete;

    // The signal that came (SIGINT or SIGTERM), or 0. Any thread.
    int received() const noexcept;

private:
    struct State;
    std::unique_ptr<State> state_;
};

// "SIGINT", "SIGTERM", or "signal N".
const char* signal_name(int number) noexcept;

} // namespace simsync::examples
