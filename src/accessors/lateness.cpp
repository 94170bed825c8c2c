#include <simsync/accessors/lateness.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

namespace simsync {

std::size_t LatenessHistogram::index_of(std::uint64_t ns) noexcept
{
    if (ns < kSubBuckets) return static_cast<std::size_t>(ns);
    const int exponent = static_cast<int>(std::bit_width(ns)) - 1; // >= 4
    const std::uint64_t sub = (ns >> (exponent - 4)) - kSubBuckets;
    return kSubBuckets + static_cast<std::size_t>(exponent - 4) * kSubBuckets + static_cast<std::size_t>(sub);
}

std::uint64_t LatenessHistogram::top_of(std::size_t index) noexcept
{
    if (index < kSubBuckets) return index;
    const std::size_t k = index - kSubBuckets;
    const unsigned shift = static_cast<unsigned>(k / kSubBuckets);
    const std::uint64_t lower = (kSubBuckets + k % kSubBuckets) << shift;
    return lower + ((std::uint64_t{1} << shift) - 1);
}

namespace {
// 1, 2, 5 us ... 5 s, 10 s; the last display bucket is the overflow.
WallClock::duration display_upper(std::size_t i) noexcept
{
    constexpr std::int64_t kMantissa[3] = {1, 2, 5};
    std::int64_t decade = 1000; // 1 us in ns
    for (std::size_t k = 0; k < i / 3; ++k) decade *= 10;
    return WallClock::duration{kMantissa[i % 3] * decade};
}
} // namespace

void LatenessHistogram::record(WallClock::duration lateness) noexcept
{
    const std::int64_t ns = std::max<std::int64_t>(0, lateness.count());
    ++buckets_[index_of(static_cast<std::uint64_t>(ns))];
    std::size_t display = 0;
    while (display + 1 < kDisplayBuckets && WallClock::duration{ns} >= display_upper(display)) ++display;
    ++display_[display];
    ++count_;
    max_ns_ = std::max(max_ns_, ns);
    sum_ns_ += static_cast<long double>(ns);
}

WallClock::duration LatenessHistogram::mean() const noexcept
{
    if (count_ == 0) return {};
    return WallClock::duration{static_cast<std::int64_t>(sum_ns_ / static_cast<long double>(count_))};
}

WallClock::duration LatenessHistogram::percentile(double p) const noexcept
{
    if (count_ == 0) return {};
    p = std::clamp(std::isnan(p) ? 0.0 : p, 0.0, 1.0);
    const auto rank = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::ceil(p * static_cast<double>(count_))));
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < kBuckets; ++i) {
        seen += buckets_[i];
        if (seen >= rank) {
            return WallClock::duration{std::min<std::int64_t>(max_ns_, static_cast<std::int64_t>(top_of(i)))};
        }
    }
    return max();
}

LatenessSummary LatenessHistogram::summary() const
{
    LatenessSummary s;
    s.count = count_;
    s.p50 = percentile(0.50);
    s.p99 = percentile(0.99);
    s.max = max();
    s.mean = mean();
    s.histogram.reserve(kDisplayBuckets);
    for (std::size_t i = 0; i < kDisplayBuckets; ++i) {
        s.histogram.push_back({i + 1 < kDisplayBuckets ? display_upper(i) : WallClock::duration::max(), display_[i]});
    }
    return s;
}

void LatenessHistogram::clear() noexcept { *this = LatenessHistogram{}; }

} // namespace simsync
