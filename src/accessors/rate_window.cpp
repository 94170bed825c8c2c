#include <simsync/accessors/rate_window.hpp>
#include <simsync/core/error.hpp>

#include <algorithm>
#include <chrono>
#include <string>

namespace simsync {

namespace {

std::string ns_text(WallClock::duration d)
{
    return std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count()) + " ns";
}

} // namespace

RealTimeFactorWindow::RealTimeFactorWindow(WallClock::duration window, std::size_t max_samples)
    : window_(window), max_samples_(max_samples)
{
    if (window <= WallClock::duration::zero()) {
        throw Error(errc::invalid_argument, "PacerConfig.rate_window must be > 0, got " + ns_text(window));
    }
    if (max_samples < 2) {
        throw Error(errc::invalid_argument,
                    "RealTimeFactorWindow max_samples must be >= 2, got " + std::to_string(max_samples));
    }
}

void RealTimeFactorWindow::add(WallTime wall, SimTime sim)
{
    if (!samples_.empty() && wall < samples_.back().wall) {
        throw Error(errc::invalid_argument, "RealTimeFactorWindow::add: wall time went back by " +
                                                ns_text(samples_.back().wall - wall));
    }
    samples_.push_back({wall, sim});
    while (samples_.front().wall < wall - window_) samples_.pop_front();
    while (samples_.size() > max_samples_) samples_.pop_front();
}

std::optional<double> RealTimeFactorWindow::factor(WallTime now) const noexcept
{
    const WallTime from = now - window_;
    auto base = std::find_if(samples_.begin(), samples_.end(), [&](const Sample& s) { return s.wall >= from; });
    if (base == samples_.end()) return std::nullopt;
    const Sample& head = samples_.back();
    if (head.wall <= base->wall) return std::nullopt;
    return static_cast<double>((head.sim - base->sim).count()) / static_cast<double>((head.wall - base->wall).count());
}

} // namespace simsync
