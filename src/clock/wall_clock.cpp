#include <simsync/clock/wall_clock.hpp>
#include <simsync/core/error.hpp>

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
    bool moved = false;
    {
        std::lock_guard<std::mutex> guard(mutex_);
        ++sleeps_;
        if (deadline > steady_) {
            system_ += std::chrono::duration_cast<SystemClock::duration>(deadline - steady_);
            steady_ = deadline;
            moved = true;
        }
    }
    if (moved) notify_moved();
}

void ManualWallClock::advance(WallClock::duration d)
{
    if (d < WallClock::duration::zero()) {
        throw Error(errc::invalid_argument, "ManualWallClock::advance: duration must be >= 0");
    }
    {
        std::lock_guard<std::mutex> guard(mutex_);
        steady_ += d;
        system_ += std::chrono::duration_cast<SystemClock::duration>(d);
    }
    notify_moved();
}

std::uint64_t ManualWallClock::add_listener(std::function<void()> listener)
{
    if (!listener) throw Error(errc::invalid_argument, "ManualWallClock::add_listener: empty listener");
    std::lock_guard<std::recursive_mutex> guard(listeners_mutex_);
    listeners_.emplace_back(next_listener_, std::move(listener));
    return next_listener_++;
}

void ManualWallClock::remove_listener(std::uint64_t id)
{
    std::lock_guard<std::recursive_mutex> guard(listeners_mutex_);
    std::erase_if(listeners_, [id](const auto& entry) { return entry.first == id; });
}

std::size_t ManualWallClock::listener_count() const
{
    std::lock_guard<std::recursive_mutex> guard(listeners_mutex_);
    return listeners_.size();
}

void ManualWallClock::notify_moved()
{
    // Held while the listeners run, so that remove_listener waits for a call in
    // progress; recursive, so that a listener may remove itself. A copy, so that
    // a listener removed meanwhile is still safe to finish.
    std::lock_guard<std::recursive_mutex> guard(listeners_mutex_);
    const auto listeners = listeners_;
    for (const auto& entry : listeners) entry.second();
}

std::uint64_t ManualWallClock::sleeps() const noexcept
{
    std::lock_guard<std::mutex> guard(mutex_);
    return sleeps_;
}

} // namespace simsync
