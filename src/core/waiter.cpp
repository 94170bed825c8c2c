#include "waiter.hpp"

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

bool Waiter::wait_until(WallTime deadline) noexcept
{
    if (!spinning_enabled()) return sleep_until(deadline);
    // The last notify came from this CPU: the waker shares it with us (both
    // pinned to one CPU, or placed together by the scheduler), so it cannot run
    // while we spin, and every spin would only delay it. hardware_concurrency()
    // above counts the machine's CPUs, not the ones this thread may use.
    const int cpu = sched_getcpu();
    if (cpu >= 0 && waker_cpu_.load(std::memory_order_relaxed) == cpu) return sleep_until(deadline);
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

#if SIMSYNC_HAVE_FUTEX

namespace {

static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t) &&
                  std::atomic<std::uint32_t>::is_always_lock_free,
              "the futex word is the atomic's own storage");
// WallTime's epoch must be CLOCK_MONOTONIC's for the absolute futex timeout.
static_assert(std::is_same_v<WallClock, std::chrono::steady_clock>);

std::uint32_t* word(std::atomic<std::uint32_t>& a) noexcept { return reinterpret_cast<std::uint32_t*>(&a); }

} // namespace

void Waiter::notify() noexcept
{
    waker_cpu_.store(sched_getcpu(), std::memory_order_relaxed); // published by the exchange
    if (state_.exchange(kSignaled, std::memory_order_acq_rel) == kSleeping) {
        // The owner may already have consumed the signal and returned; a wake on
        // a word nobody sleeps on is harmless (the core keeps the Waiter alive
        // while it notifies, so the word is never freed memory here).
        (void)syscall(SYS_futex, word(state_), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
    }
}

bool Waiter::notify_if_awake() noexcept
{
    waker_cpu_.store(sched_getcpu(), std::memory_order_relaxed); // published by the exchange
    std::uint32_t expected = kIdle;
    if (state_.compare_exchange_strong(expected, kSignaled, std::memory_order_acq_rel)) return true;
    return expected == kSignaled; // a sticky signal is there already: it will be consumed
}

bool Waiter::sleep_until(WallTime deadline) noexcept
{
    std::uint32_t expected = kIdle;
    if (!state_.compare_exchange_strong(expected, kSleeping, std::memory_order_acq_rel)) {
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
        // Returns at once (EAGAIN) if the word is no longer kSleeping.
        (void)syscall(SYS_futex, word(state_), FUTEX_WAIT_BITSET_PRIVATE, kSleeping, timeout, nullptr,
                      FUTEX_BITSET_MATCH_ANY);
        if (state_.load(std::memory_order_acquire) == kSignaled) break;
        if (deadline != WallTime::max() && WallClock::now() >= deadline) {
            expected = kSleeping;
            if (state_.compare_exchange_strong(expected, kIdle, std::memory_order_acq_rel)) return false;
            break; // a notify slipped in meanwhile
        }
    }
    state_.store(kIdle, std::memory_order_relaxed);
    return true;
}

#else

bool Waiter::notify_if_awake() noexcept
{
    std::uint32_t expected = kIdle;
    if (state_.compare_exchange_strong(expected, kSignaled, std::memory_order_acq_rel)) return true;
    return expected == kSignaled;
}

void Waiter::notify() noexcept
{
    if (state_.exchange(kSignaled, std::memory_order_acq_rel) == kSleeping) {
        std::lock_guard<std::mutex> guard(mutex_);
        cv_.notify_one();
    }
}

bool Waiter::sleep_until(WallTime deadline) noexcept
{
    std::unique_lock<std::mutex> lock(mutex_);
    std::uint32_t expected = kIdle;
    if (!state_.compare_exchange_strong(expected, kSleeping, std::memory_order_acq_rel)) {
        state_.store(kIdle, std::memory_order_relaxed);
        return true;
    }
    while (state_.load(std::memory_order_acquire) != kSignaled) {
        if (deadline == WallTime::max()) {
            cv_.wait(lock);
        } else if (cv_.wait_until(lock, deadline) == std::cv_status::timeout) {
            expected = kSleeping;
            if (state_.compare_exchange_strong(expected, kIdle, std::memory_order_acq_rel)) return false;
        }
    }
    state_.store(kIdle, std::memory_order_relaxed);
    return true;
}

#endif

} // namespace simsync::detail
