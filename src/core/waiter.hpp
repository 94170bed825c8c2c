#pragma once
// A one-thread parking spot: the waker sets a sticky signal, the owner consumes it.
//
// Why not one condition variable for all waiters: a grant must wake exactly the
// thread it is for. Why spin first: on a machine with a spare core the grant
// usually arrives within microseconds (the previous holder releasing), and a
// futex sleep/wake pair costs ~10 us where a spin costs ~0.2 us. On one core
// spinning only delays the thread we are waiting for, so we block at once.
// Why the spin adapts: when the waker shares our CPU (a busy machine) or the
// grant is milliseconds away (a 30 Hz sensor), every spin is wasted, and a fixed
// 20 us spin made such a handoff cost ~27 us (bench_grant_throughput, pinned).
// A spin that catches the signal lengthens the next one; one that does not
// halves it, down to a short probe that still notices a ping-pong resuming.
// Blocking: on Linux, a futex on the state word itself (one syscall to sleep,
// one to wake, no mutex that a woken thread could find held by its waker: with
// both threads on one CPU, a Boost mutex + condition variable made each handoff
// cost ~2.6 context switches instead of 1). A boost::thread with interruption
// enabled blocks on a Boost condition variable instead, the one thing
// boost::thread::interrupt() can wake.

#include <boost/thread/condition_variable.hpp>
#include <boost/thread/mutex.hpp>

#include <simsync/time.hpp>

#include <sched.h>

#include <atomic>
#include <cstdint>

namespace simsync::detail {

class Waiter {
public:
    // Wakes the owner (or makes its next wait return at once). Any thread.
    void notify() noexcept
    {
        waker_cpu_.store(sched_getcpu(), std::memory_order_relaxed); // published by the exchange
        const std::uint32_t previous = state_.exchange(kSignaled, std::memory_order_acq_rel);
        if (previous == kSleeping) {
            boost::lock_guard<boost::mutex> guard(mutex_);
            cv_.notify_one();
        } else if (previous == kSleepingFutex) {
            futex_wake();
        }
    }

    // Blocks the owner until notified or `deadline`; consumes the signal.
    // Returns false on timeout. May throw boost::thread_interrupted.
    bool wait_until(WallTime deadline);

    // Discards a stale signal. Only the owner calls this.
    void reset() noexcept { state_.store(kIdle, std::memory_order_relaxed); }

    // Spinning is worth it only with a spare core; decided once per process.
    static bool spinning_enabled() noexcept;

private:
    static constexpr std::uint32_t kIdle = 0;
    static constexpr std::uint32_t kSignaled = 1;
    static constexpr std::uint32_t kSleeping = 2;      // on cv_ (interruptible)
    static constexpr std::uint32_t kSleepingFutex = 3; // on the futex of state_

    bool sleep_until(WallTime deadline);
    bool wait_futex(WallTime deadline) noexcept;
    bool wait_interruptible(WallTime deadline);
    void futex_wake() noexcept;

    // Owner-only: how long the next wait spins before it sleeps.
    std::int64_t spin_ns_ = kMaxSpinNs;
    static constexpr std::int64_t kMaxSpinNs = 20'000;
    static constexpr std::int64_t kMinSpinNs = 1'000;

    std::atomic<std::uint32_t> state_{kIdle};
    std::atomic<int> waker_cpu_{-1}; // CPU of the last notify, for the spin's adaptation
    boost::mutex mutex_;
    boost::condition_variable cv_;
};

} // namespace simsync::detail
