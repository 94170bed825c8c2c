#pragma once
// Small helpers shared by the test suites.

#include <simsync/simsync.hpp>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <filesystem>
#include <fstream>
#include <string>
#include <chrono>
#include <functional>
#include <system_error>
#include <thread>
#include <vector>

namespace simsync::test {

using namespace std::chrono_literals;

inline SimTime ms(std::int64_t n) { return sim_time(std::chrono::milliseconds(n)); }

// Waits for a condition another thread brings about, up to a generous deadline.
// This is not a sleep that hides a race: the assertion that follows checks the
// condition, and the deadline only keeps a broken build from hanging.
// It polls by sleeping (20 us, doubling up to 1 ms), never by spinning or
// yielding: on a 2-core machine a spinning poller takes a core from the very
// threads it waits for. Conditions that take a snapshot() also briefly block
// grants, so they must not be evaluated in a tight loop either.
inline bool eventually(const std::function<bool()>& condition,
                       std::chrono::milliseconds timeout = std::chrono::milliseconds(10000))
{
    const auto deadline = WallClock::now() + timeout;
    auto pause = std::chrono::microseconds(20);
    while (!condition()) {
        if (WallClock::now() >= deadline) return false;
        std::this_thread::sleep_for(pause);
        pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(1));
    }
    return true;
}

// Threads of this process with that name (the handler's watchdog is
// "simsync-stall", an EventLoop's thread "simsync-loop"). A thread that cannot
// be joined (detached when its owner was destroyed from its own callback) is
// seen to end here.
inline int threads_named(const std::string& name)
{
    int n = 0;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) {
        std::ifstream comm(entry.path() / "comm");
        std::string line;
        if (std::getline(comm, line) && line == name) ++n;
    }
    return n;
}

// A world whose steps can be held at a gate, so a test can act while a step is
// in flight on another thread.
class GatedWorld final : public World {
public:
    void step(SimDuration) override
    {
        std::unique_lock<std::mutex> lock(mutex_);
        ++entered_;
        cv_.notify_all();
        cv_.wait(lock, [&] { return open_; });
        ++steps_;
    }
    void open()
    {
        std::lock_guard<std::mutex> lock(mutex_);
        open_ = true;
        cv_.notify_all();
    }
    bool wait_entered(int n)
    {
        std::unique_lock<std::mutex> lock(mutex_);
        return cv_.wait_for(lock, std::chrono::seconds(10), [&] { return entered_ >= n; });
    }
    int steps() const
    {
        std::lock_guard<std::mutex> lock(mutex_);
        return steps_;
    }

private:
    mutable std::mutex mutex_;
    std::condition_variable cv_;
    bool open_ = false;
    int entered_ = 0;
    int steps_ = 0;
};

// What a request on a worker thread came to. Workers store one and the test
// thread checks it after joining them: an assertion inside a worker thread would
// end the process (REQUIRE) or race with the report (CHECK).
struct Outcome {
    bool granted = false;
    std::error_code error;
    SimTime at{};
    std::uint64_t sequence = 0;
    static Outcome of(const Access& a)
    {
        return {static_cast<bool>(a), a.error(), a.granted_time(), a.sequence()};
    }
};

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
