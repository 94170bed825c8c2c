#pragma once
// Lateness figures shared by the scenario benchmarks that measure wake-up or
// release times against deadlines (pacing, timer, clock publisher): microsecond
// conversion, the combination of several repetitions' summaries, and the
// cumulative distribution the page plots.

#include "report.hpp"

#include <simsync/pacer.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <utility>
#include <vector>

namespace simsync::bench {

inline double us(WallClock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

/// Several repetitions' LatenessSummary of one variant, as the tables show them:
/// p50 and p99 are the medians over the repetitions (one noisy repetition does
/// not move them), max the largest of all, count the sum.
struct LatenessOverRuns {
    double p50_us = 0;
    double p99_us = 0;
    double max_us = 0;
    std::uint64_t count = 0;
};

inline LatenessOverRuns over_runs(const std::vector<LatenessSummary>& runs)
{
    std::vector<double> p50, p99;
    LatenessOverRuns out;
    for (const LatenessSummary& r : runs) {
        p50.push_back(us(r.p50));
        p99.push_back(us(r.p99));
        out.max_us = std::max(out.max_us, us(r.max));
        out.count += r.count;
    }
    out.p50_us = median(std::move(p50));
    out.p99_us = median(std::move(p99));
    return out;
}

/// The cumulative distribution of a LatenessSummary's display buckets, as plot
/// points (bucket upper bound in us, fraction of samples at or below it).
inline std::vector<std::pair<double, double>> lateness_cdf(const LatenessSummary& s)
{
    std::vector<std::pair<double, double>> points;
    std::uint64_t seen = 0;
    for (const auto& b : s.histogram) {
        seen += b.count;
        if (b.upper == WallClock::duration::max()) break;
        points.emplace_back(us(b.upper), s.count ? static_cast<double>(seen) / static_cast<double>(s.count) : 0.0);
        if (seen == s.count) break; // the rest of the range is flat at 1
    }
    return points;
}

} // namespace simsync::bench
