#include "waiter.hpp"

#include <boost/chrono/duration.hpp>
#include <boost/thread/thread.hpp>

#include <sched.h>

#include <algorithm>
#include <thread>
#include <type_traits>

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <ctime>
#define SIMSYNC_HAVE_FUTEX 1
#endif

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define SIMSYNC_CPU_RELAX() _mm_pause()
#else
#define SIMSYNC_CPU_RELAX() std::this_thread::yield()
#endif

namespace simsync::detail {

bool Waiter::spinning_enabled() noexcept
{
    static const bool enabled = std::thread::hardware_concurrency() > 1;
    return enabled;
}

bool Waiter::wait_until(WallTime deadline)
{
    if (!spinning_enabled()) return sleep_until(deadline);
    const WallTime start = WallClock::now();
    {
        const auto spin_end = std::min(deadline, start + std::chrono::nanoseconds(spin_ns_));
        for (unsigned i = 1;; ++i) {
            std::uint32_t expected = kSignaled;
            if (state_.compare_exchange_strong(expected, kIdle, std::memory_order_acq_rel)) {
                spin_ns_ = std::min(kMaxSpinNs, spin_ns_ * 2); // caught it: spin longer next time
                return true;
            }
            SIMSYNC_CPU_RELAX();
            if ((i & 15u) == 0 && WallClock::now() >= spin_end) {
                break;
            }
        }
        spin_ns_ = std::max(kMinSpinNs, spin_ns_ / 2); // wasted: spin less next time
    }
    const int cpu = sched_getcpu();
    const bool signalled = sleep_until(deadline);
    // A wait that ended soon after we slept, signalled from another CPU, would
    // have been caught by a full spin: the short spin was a vicious circle (the
    // partner slept too, so our wait included its wake-up, so our spin failed,
    // so we slept, so its wait included ours). From the same CPU it would not:
    // the waker could only run because we slept.
    if (signalled && WallClock::now() - start < std::chrono::nanoseconds(kMaxSpinNs) &&
        waker_cpu_.load(std::memory_order_relaxed) != cpu) {
        spin_ns_ = kMaxSpinNs;
    }
    return signalled;
}

bool Waiter::sleep_until(WallTime deadline)
{
#if SIMSYNC_HAVE_FUTEX
    // Only a boost::thread can be interrupted; interruption_enabled() is false
    // on any other thread (std::thread, main).
    if (!boost::this_thread::interruption_enabled()) return wait_futex(deadline);
#endif
    return wait_interruptible(deadline);
}

#if SIMSYNC_HAVE_FUTEX

namespace {

static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t) &&
                  std::atomic<std::uint32_t>::is_always_lock_free,
              "the futex word is the atomic's own storage");
// WallTime's epoch must be CLOCK_MONOTONIC's for the absolute futex timeout.
static_assert(std::is_same_v<WallClock, std::chrono::steady_clock>);

std::uint32_t* word(std::atomic<std::uint32_t>& a) noexcept { return reinterpret_cast<std::uint32_t*>(&a); }

} // namespace

void Waiter::futex_wake() noexcept
{
    // The owner may already have consumed the signal and returned; a wake on a
    // word nobody sleeps on is harmless (the core keeps the Waiter alive while
    // it notifies, so the word is never freed memory here).
    (void)syscall(SYS_futex, word(state_), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

bool Waiter::wait_futex(WallTime deadline) noexcept
{
    std::uint32_t expected = kIdle;
    if (!state_.compare_exchange_strong(expected, kSleepingFutex, std::memory_order_acq_rel)) {
        state_.store(kIdle, std::memory_order_relaxed); // already signalled
        return true;
    }
    for (;;) {
        timespec absolute{};
        timespec* timeout = nullptr;
        if (deadline != WallTime::max()) {
            const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline.time_since_epoch()).count();
            absolute.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
            absolute.tv_nsec = static_cast<long>(ns % 1'000'000'000);
            timeout = &absolute;
        }
        // FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC deadline (plain
        // FUTEX_WAIT a relative one, which a spurious wake-up would stretch).
        // Returns at once (EAGAIN) if the word is no longer kSleepingFutex.
        (void)syscall(SYS_futex, word(state_), FUTEX_WAIT_BITSET_PRIVATE, kSleepingFutex, timeout, nullptr,
                      FUTEX_BITSET_MATCH_ANY);
        if (state_.load(std::memory_order_acquire) == kSignaled) break;
        if (deadline != WallTime::max() && WallClock::now() >= deadline) {
            expected = kSleepingFutex;
            if (state_.compare_exchange_strong(expected, kIdle, std::memory_order_acq_rel)) return false;
            break; // a notify slipped in meanwhile
        }
    }
    state_.store(kIdle, std::memory_order_relaxed);
    return true;
}

#endif

bool Waiter::wait_interruptible(WallTime deadline)
{
    boost::this_thread::interruption_point();

    boost::unique_lock<boost::mutex> lock(mutex_);
    std::uint32_t expected = kIdle;
    if (!state_.compare_exchange_strong(expected, kSleeping, std::memory_order_acq_rel)) {
        // Already signalled (expected == kSignaled).
        state_.store(kIdle, std::memory_order_relaxed);
        return true;
    }
    // An interrupted boost::thread leaves the wait with an exception: leave the
    // state as if we had never gone to sleep, so the next wait starts clean.
    struct Unsleep {
        std::atomic<std::uint32_t>& state;
        ~Unsleep()
        {
            std::uint32_t sleeping = kSleeping;
            state.compare_exchange_strong(sleeping, kIdle, std::memory_order_acq_rel);
        }
    } unsleep{state_};
    while (state_.load(std::memory_order_acquire) != kSignaled) {
        if (deadline == WallTime::max()) {
            cv_.wait(lock);
            continue;
        }
        const auto now = WallClock::now();
        if (now >= deadline) {
            // Leave kSleeping -> kIdle unless a notify slipped in meanwhile.
            expected = kSleeping;
            if (state_.compare_exchange_strong(expected, kIdle, std::memory_order_acq_rel)) {
                return false;
            }
            break; // signalled
        }
        const auto remaining =
            std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - now).count();
        cv_.wait_for(lock, boost::chrono::nanoseconds(remaining));
    }
    state_.store(kIdle, std::memory_order_relaxed);
    return true;
}

} // namespace simsync::detail
