#pragma once
/// @file
/// A lateness distribution in constant memory: how long after their deadlines
/// the pacer's grants were released.

#include <simsync/core/time.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace simsync {

/// A summary of a lateness distribution.
struct LatenessSummary {
    std::uint64_t count = 0;
    WallClock::duration p50{};
    WallClock::duration p99{};
    WallClock::duration max{};
    WallClock::duration mean{};
    /// One bucket of the display histogram: `count` values in [previous upper, upper).
    struct Bucket {
        WallClock::duration upper{};
        std::uint64_t count = 0;
    };
    /// 1-2-5 buckets from 1 us to 10 s plus an overflow bucket (upper ==
    /// duration::max()); empty buckets included, so the layout is fixed.
    std::vector<Bucket> histogram;
};

/// Lateness values in a log-linear histogram: constant memory, O(1) record.
/// Percentiles are exact below 16 ns and otherwise within 1/16 (6.25%) above the
/// true value, never below it (each is the top of its bucket, capped at the
/// maximum); count, max and mean are exact. Negative values count as zero.
///
/// Copy/move: both. Thread safety: distinct objects: safe. Shared objects: unsafe.
class LatenessHistogram {
public:
    void record(WallClock::duration lateness) noexcept;
    std::uint64_t count() const noexcept { return count_; }
    WallClock::duration max() const noexcept { return WallClock::duration{max_ns_}; }
    WallClock::duration mean() const noexcept;
    /// The nearest-rank percentile, `p` in [0, 1]; zero when empty.
    WallClock::duration percentile(double p) const noexcept;
    LatenessSummary summary() const;
    void clear() noexcept;

private:
    static constexpr std::size_t kSubBuckets = 16;
    static constexpr std::size_t kBuckets = kSubBuckets + (64 - 4) * kSubBuckets;
    static constexpr std::size_t kDisplayBuckets = 23;
    static std::size_t index_of(std::uint64_t ns) noexcept;
    static std::uint64_t top_of(std::size_t index) noexcept;

    std::array<std::uint64_t, kBuckets> buckets_{};
    std::array<std::uint64_t, kDisplayBuckets> display_{};
    std::uint64_t count_ = 0;
    std::int64_t max_ns_ = 0;
    long double sum_ns_ = 0;
};

} // namespace simsync
