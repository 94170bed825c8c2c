#include "waiter.hpp"

#include <boost/chrono/duration.hpp>
#include <boost/thread/thread.hpp>

#include <algorithm>
#include <thread>

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
    if (spinning_enabled()) {
        const auto spin_end = std::min(deadline, WallClock::now() + std::chrono::nanoseconds(spin_ns_));
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
