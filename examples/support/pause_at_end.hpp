#pragma once
// The end of a run of fixed length (the programs' --duration), as the example
// programs mark it. Example code, not library API.

#include <simsync/core/handler.hpp>
#include <simsync/core/time.hpp>

#include <atomic>
#include <functional>
#include <memory>

namespace simsync::examples {

// Stops simulated time at `end` without holding anybody's request back.
//
// It is a free, shared accessor named "--duration" (kName: the option it comes
// from, so a user who meets the name in a snapshot or on the web console can
// look it up), last in every order (priority INT_MIN), whose one request, for
// `end`, is an inline system. A pending request stops time at its instant, so
// time reaches `end` and stands there until it is granted; it is granted after
// every other accessor's first request at `end` and before anybody's second
// one there (the handler's order at an instant); it then pauses the handler at
// `end`, releases, and calls `on_reached` on that thread. Requests at `end`
// are still served while paused, so every accessor finishes its last requests.
// Being free, it never holds time back otherwise: the lockstep marker it
// replaces held every second request at `end` behind it, forever (a 2000 Hz
// accessor on a 1 ms step froze the run there).
//
// An operator may resume after the end; time then runs on.
// Copy/move: neither. Threads: construct and destroy on one thread;
// `on_reached` is called at most once, on the thread that steps to `end` (it
// must be quick and must not destroy this object). Destroy it before the
// handler, after the handler has stopped (its request then ends `stopped`).
class PauseAtEnd {
public:
    static constexpr const char* kName = "--duration";

    // @throws simsync::Error: duplicate_name if an accessor is already called kName.
    PauseAtEnd(SimSyncHandler& handler, SimTime end, std::function<void()> on_reached);
    ~PauseAtEnd();
    PauseAtEnd(const PauseAtEnd&) = delete;
    PauseAtEnd& operator=(const PauseAtEnd&) = delete;

    // True once time has reached the end. Any thread.
    bool reached() const noexcept;

private:
    struct State;
    std::shared_ptr<State> state_;
};

} // namespace simsync::examples
