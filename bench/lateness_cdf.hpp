#pragma once
// The cumulative distribution of a LatenessSummary's display buckets, as plot
// points (bucket upper bound in us, fraction of samples at or below it), for the
// scenario benchmarks that plot lateness (pacing, timer).

#include <simsync/pacer.hpp>

#include <chrono>
#include <utility>
#include <vector>

namespace simsync::bench {

inline std::vector<std::pair<double, double>> lateness_cdf(const LatenessSummary& s)
{
    std::vector<std::pair<double, double>> points;
    std::uint64_t seen = 0;
    for (const auto& b : s.histogram) {
        seen += b.count;
        if (b.upper == WallClock::duration::max()) break;
        points.emplace_back(std::chrono::duration<double, std::micro>(b.upper).count(),
                            s.count ? static_cast<double>(seen) / static_cast<double>(s.count) : 0.0);
        if (seen == s.count) break; // the rest of the range is flat at 1
    }
    return points;
}

} // namespace simsync::bench
