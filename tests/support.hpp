#pragma once
// Small helpers shared by the test suites.

#include <simsync/simsync.hpp>

#include <chrono>
#include <functional>
#include <thread>
#include <vector>

namespace simsync::test {

using namespace std::chrono_literals;

inline SimTime ms(std::int64_t n) { return sim_time(std::chrono::milliseconds(n)); }

// Waits for a condition another thread brings about, up to a generous deadline.
// This is not a sleep that hides a race: the assertion that follows checks the
// condition, and the deadline only keeps a broken build from hanging.
inline bool eventually(const std::function<bool()>& condition,
                       std::chrono::milliseconds timeout = std::chrono::milliseconds(10000))
{
    const auto deadline = WallClock::now() + timeout;
    while (!condition()) {
        if (WallClock::now() >= deadline) return false;
        std::this_thread::yield();
    }
    return true;
}

inline const AccessorStatus* find_status(const Snapshot& snap, const std::string& name)
{
    for (const auto& a : snap.accessors) {
        if (a.name == name) return &a;
    }
    return nullptr;
}

// A status points into its snapshot: refuse temporaries, which would dangle.
const AccessorStatus* find_status(const Snapshot&& snap, const std::string& name) = delete;

inline bool is_waiting(const SimSyncHandler& handler, const std::string& name)
{
    const auto snap = handler.snapshot();
    const auto* s = find_status(snap, name);
    return s != nullptr && s->activity == AccessorStatus::Activity::waiting;
}

// Joins on destruction so a failed CHECK never leaves a joinable thread behind.
class Threads {
public:
    template <class F>
    void spawn(F&& f)
    {
        threads_.emplace_back(std::forward<F>(f));
    }
    void join()
    {
        for (auto& t : threads_) {
            if (t.joinable()) t.join();
        }
    }
    ~Threads() { join(); }

private:
    std::vector<std::thread> threads_;
};

} // namespace simsync::test
