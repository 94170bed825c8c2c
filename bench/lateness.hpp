#pragma once
// Lateness as the scenario benchmarks measure it (pacing, timer, clock
// publisher): microsecond conversion, and the ReleaseObserver, which measures a
// schedule's releases from outside it, the same way whatever runs the schedule.
//
// Why an outside observer: a component that reports its own lateness measures
// where its own wait ends, before the work that makes its effect visible (the
// pacer's release, the step that follows it); a plain sleep loop measured by its
// caller includes its wake-up. Compared with each other, the two figures compare
// different things. The observer sees both schedules only through what they
// publish (a lock-free position: the handler's simulated time, a tick count)
// and stamps when that position passes each point of the schedule, with the
// same code for both.

#include "report.hpp"

#include <simsync/clock/wall_clock.hpp>

#include <sys/prctl.h>
#include <time.h>

#include <cerrno>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace simsync::bench {

inline double us(WallClock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

/// An absolute sleep: clock_nanosleep(TIMER_ABSTIME) until `deadline` on the
/// clock `clock_id` (CLOCK_MONOTONIC for steady_clock, CLOCK_REALTIME for
/// system_clock, as libstdc++ reads them). The baselines use it rather than
/// std::this_thread::sleep_until, which libstdc++ (12) implements as now() and a
/// relative nanosleep: a thread preempted between the two sleeps that much longer.
template <class Clock, class Duration>
void sleep_until_absolute(clockid_t clock_id, std::chrono::time_point<Clock, Duration> deadline)
{
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline.time_since_epoch()).count();
    if (ns <= 0) return;
    const timespec ts{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
    while (clock_nanosleep(clock_id, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
    }
}

inline void sleep_until_absolute(WallTime deadline) { sleep_until_absolute(CLOCK_MONOTONIC, deadline); }

/// Watches, from a thread of its own, a position that a schedule publishes as it
/// releases (the handler's simulated time for a pacer, a tick count for a sleep
/// loop) and stamps, on the steady clock, the moment the position passes each
/// point of the schedule.
///
/// The schedule: it reads its own clock to anchor (t_a), releases its anchoring
/// point at once, then releases point k at or after t_a + k * period, never
/// before. The observer cannot see t_a. It knows two upper bounds of it: the
/// moment it saw the anchoring point released (both kinds of schedule release it
/// right after reading their clock), and, since no release is early, each
/// release's stamp minus k * period. It takes the smaller of all of them: the
/// latest anchor consistent with what it saw. Lateness of release k = its stamp
/// - (that anchor + k * period): what an outside reader of the position sees,
/// including everything between the end of the schedule's wait and the position
/// moving (a release, a step). It is never negative, and it errs on the side of
/// too little lateness by at most the quickest publication it saw (a fraction
/// of a microsecond for a tick count or a release on a quiet machine), alike
/// for every schedule.
///
/// With `margin` shorter than the period, the observer sleeps between releases
/// and spins from `margin` before each deadline, to cost less than a core; a
/// release that happened while it slept (its own wake-up came later than the
/// margin allows) has no stamp: it is counted in `unobserved`, never guessed.
/// Since its own wake-ups are late when the machine is busy, which is also when
/// releases are late, unobserved releases would bias the figures; a margin of
/// at least the period makes it spin throughout (the default), so that it
/// sleeps through nothing. Preempted, it stamps late: that counts against the
/// schedule observed, whichever it is.
///
/// Copy/move: neither (owns a thread). Thread safety: construct, join() and
/// destroy from one thread; `position` is called on the observer's thread.
class ReleaseObserver {
public:
    struct Schedule {
        /// A lock-free read of the published position; must not decrease.
        std::function<std::int64_t()> position;
        /// The schedule has released its anchoring point when position > anchor_point.
        std::int64_t anchor_point = 0;
        /// Point k = anchor_point + k * point_step, released when position > point k.
        std::int64_t point_step = 1;
        /// Deadline of point k = anchor stamp + k * period.
        WallClock::duration period{};
        /// Points 1 .. releases are observed.
        std::size_t releases = 0;
        /// Spin from this long before each deadline; >= period: always.
        WallClock::duration margin = WallClock::duration::max();
        /// How long after a deadline (or, for the anchor, after the start) to
        /// wait for its release before giving up (the result is then incomplete).
        WallClock::duration give_up = std::chrono::seconds(10);
    };

    struct Result {
        /// Lateness of each observed release, in microseconds (>= 0).
        std::vector<double> lateness_us;
        /// How much earlier than the stamp of the anchoring release the anchor
        /// was placed (see the class comment), in microseconds (>= 0).
        double anchor_correction_us = 0;
        /// Releases that happened while the observer slept.
        std::size_t unobserved = 0;
        /// False if the observer gave up waiting for a release.
        bool complete = true;
        /// The observer thread's own CPU time (to subtract from process CPU time).
        double cpu_seconds = 0;
        /// The anchor used (the stamp of the anchoring release minus the correction).
        WallTime anchor{};
    };

    /// Starts the observer and returns once it is watching for the anchor:
    /// start the schedule after this.
    /// @throws std::invalid_argument if the position has already passed the anchoring point.
    explicit ReleaseObserver(Schedule schedule) : schedule_(std::move(schedule))
    {
        if (schedule_.position() > schedule_.anchor_point) {
            throw std::invalid_argument("ReleaseObserver: the schedule has already released its anchoring point");
        }
        thread_ = std::thread([this] { run(); });
        while (!watching_.load(std::memory_order_acquire)) std::this_thread::yield();
    }
    ReleaseObserver(const ReleaseObserver&) = delete;
    ReleaseObserver& operator=(const ReleaseObserver&) = delete;
    ~ReleaseObserver()
    {
        stop_.store(true, std::memory_order_relaxed);
        if (thread_.joinable()) thread_.join();
    }

    /// Waits until every release has been observed (or the observer gave up).
    Result join()
    {
        if (thread_.joinable()) thread_.join();
        return std::move(result_);
    }

private:
    static void relax() noexcept
    {
#if defined(__x86_64__) || defined(__i386__)
        _mm_pause();
#else
        std::this_thread::yield();
#endif
    }

    // Spins until position > point; false if `limit` passed first (or stopped).
    bool spin_past(std::int64_t point, WallTime limit) const
    {
        for (std::uint32_t n = 1; schedule_.position() <= point; ++n) {
            relax();
            if (n % 256 == 0 && (stop_.load(std::memory_order_relaxed) || WallClock::now() > limit)) return false;
        }
        return true;
    }

    void run()
    {
        // Its own wake-ups as prompt as the kernel allows (timer slack is per thread).
        (void)prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
        const double cpu0 = thread_cpu_seconds();
        watching_.store(true, std::memory_order_release);
        if (!spin_past(schedule_.anchor_point, WallClock::now() + schedule_.give_up)) {
            result_.complete = false;
        } else {
            const WallTime anchor = WallClock::now();
            result_.anchor = anchor;
            result_.lateness_us.reserve(schedule_.releases);
            const bool always = schedule_.margin >= schedule_.period;
            const WallClock::duration margin = always ? schedule_.period : schedule_.margin;
            bool spinning = true;
            for (std::size_t k = 1; k <= schedule_.releases; ++k) {
                const std::int64_t point = schedule_.anchor_point + static_cast<std::int64_t>(k) * schedule_.point_step;
                const WallTime deadline = anchor + static_cast<std::int64_t>(k) * schedule_.period;
                if (!spinning) {
                    std::this_thread::sleep_until(deadline - margin);
                    if (schedule_.position() > point) {
                        ++result_.unobserved;
                        continue;
                    }
                    spinning = true;
                }
                if (!spin_past(point, deadline + schedule_.give_up)) {
                    result_.complete = false;
                    break;
                }
                const WallTime stamp = WallClock::now();
                result_.lateness_us.push_back(us(stamp - deadline));
                // Keep spinning if the next window is already open (a late
                // release, or a catch-up burst).
                spinning = always || anchor + static_cast<std::int64_t>(k + 1) * schedule_.period - margin <= stamp;
            }
            // No release is early: if one came sooner after the observed anchor
            // than its k periods, the anchor was earlier than observed.
            double earliest = 0;
            for (double v : result_.lateness_us) earliest = std::min(earliest, v);
            for (double& v : result_.lateness_us) v -= earliest;
            result_.anchor_correction_us = -earliest;
            result_.anchor = anchor - std::chrono::duration_cast<WallClock::duration>(
                                          std::chrono::duration<double, std::micro>(-earliest));
        }
        result_.cpu_seconds = thread_cpu_seconds() - cpu0;
    }

    Schedule schedule_;
    Result result_;
    std::atomic<bool> watching_{false};
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

} // namespace simsync::bench
