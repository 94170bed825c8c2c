#pragma once
// A one-thread parking spot: the waker sets a sticky signal, the owner consumes it.
//
// Why not one condition variable for all waiters: a grant must wake exactly the
// thread it is for. Why spin first: on a machine with a spare core the grant
// usually arrives within microseconds (the previous holder releasing), and a
// futex sleep/wake pair costs ~10 us where a spin costs ~0.2 us. On one core
// spinning only delays the thread we are waiting for, so we block at once.
// Why the spin adapts: when the waker shares our CPU (a busy machine) or the
// grant is milliseconds away (a 30 Hz sensor), every spin is wasted. A spin that
// catches the signal lengthens the next one; one that does not halves it, down
// to a short probe that still notices a ping-pong resuming.
// Blocking: on Linux, a futex on the state word itself (one syscall to sleep,
// one to wake, no mutex that a woken thread could find held by its waker).
// Elsewhere a mutex and condition variable.
// Why a cache line of its own: the owner spins reading the state word while
// other threads write whatever sits next to it (a neighbour's reference count,
// the core's set hooks); every such write would pull the line away from the
// spinner on the handoff's critical path.

#include <simsync/core/time.hpp>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace simsync::detail {

class alignas(64) Waiter {
public:
    // Wakes the owner (or makes its next wait return at once). Any thread.
    void notify() noexcept;

    // Signals the owner if it is not asleep (spinning, or not yet waiting) and
    // returns true; returns false, changing nothing, if it sleeps: the caller
    // then notify()s later (a FUTEX_WAKE is a syscall, not for under a lock).
    // One atomic compare-exchange: cheap enough to run where the grant is made.
    bool notify_if_awake() noexcept;

    // Blocks the owner until notified or `deadline`; consumes the signal.
    // Returns false on timeout.
    bool wait_until(WallTime deadline) noexcept;

    // Discards a stale signal. Only the owner calls this.
    void reset() noexcept { state_.store(kIdle, std::memory_order_relaxed); }

    // Spinning is worth it only with a spare core; decided once per process.
    static bool spinning_enabled() noexcept;

private:
    static constexpr std::uint32_t kIdle = 0;
    static constexpr std::uint32_t kSignaled = 1;
    static constexpr std::uint32_t kSleeping = 2;

    bool sleep_until(WallTime deadline) noexcept;

    // Owner-only: how long the next wait spins before it sleeps.
    std::int64_t spin_ns_ = kMaxSpinNs;
    static constexpr std::int64_t kMaxSpinNs = 20'000;
    static constexpr std::int64_t kMinSpinNs = 1'000;

    std::atomic<std::uint32_t> state_{kIdle};
    std::atomic<int> waker_cpu_{-1}; // CPU of the last notify, for the spin's adaptation
#if !defined(__linux__)
    std::mutex mutex_;
    std::condition_variable cv_;
#endif
};

} // namespace simsync::detail
