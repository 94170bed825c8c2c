#include <simsync/error.hpp>
#include <simsync/wall_clock.hpp>

#include <thread>

namespace simsync {

void RealWallClock::sleep_until(WallTime deadline) { std::this_thread::sleep_until(deadline); }

WallClockSource& real_wall_clock() noexcept
{
    static RealWallClock clock;
    return clock;
}

WallTime ManualWallClock::steady_now() const noexcept
{
    std::lock_guard<std::mutex> guard(mutex_);
    return steady_;
}

SystemTime ManualWallClock::system_now() const noexcept
{
    std::lock_guard<std::mutex> guard(mutex_);
    return system_;
}

void ManualWallClock::sleep_until(WallTime deadline)
{
    std::lock_guard<std::mutex> guard(mutex_);
    ++sleeps_;
    if (deadline > steady_) {
        system_ += std::chrono::duration_cast<SystemClock::duration>(deadline - steady_);
        steady_ = deadline;
    }
}

void ManualWallClock::advance(WallClock::duration d)
{
    if (d < WallClock::duration::zero()) {
        throw Error(errc::invalid_argument, "ManualWallClock::advance: duration must be >= 0");
    }
    std::lock_guard<std::mutex> guard(mutex_);
    steady_ += d;
    system_ += std::chrono::duration_cast<SystemClock::duration>(d);
}

std::uint64_t ManualWallClock::sleeps() const noexcept
{
    std::lock_guard<std::mutex> guard(mutex_);
    return sleeps_;
}

} // namespace simsync
