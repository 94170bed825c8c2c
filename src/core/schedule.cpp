#include <simsync/core/error.hpp>
#include <simsync/core/schedule.hpp>

#include <limits>
#include <numeric>

namespace simsync {

namespace {
__extension__ typedef __int128 Int128; // exact products of two 64-bit values
} // namespace

PeriodicSchedule PeriodicSchedule::from_period(SimDuration period, SimDuration offset)
{
    if (period <= SimDuration::zero()) {
        throw Error(errc::invalid_argument, "period must be > 0, got " + format_seconds(period) + " s");
    }
    if (offset < SimDuration::zero()) {
        throw Error(errc::invalid_argument, "offset must be >= 0, got " + format_seconds(offset) + " s");
    }
    return PeriodicSchedule(period.count(), 1, offset);
}

PeriodicSchedule PeriodicSchedule::from_rate(std::int64_t hz_num, std::int64_t hz_den, SimDuration offset)
{
    if (hz_num <= 0 || hz_den <= 0) {
        throw Error(errc::invalid_argument,
                    "rate must be > 0 Hz, got " + std::to_string(hz_num) + "/" + std::to_string(hz_den));
    }
    if (offset < SimDuration::zero()) {
        throw Error(errc::invalid_argument, "offset must be >= 0, got " + format_seconds(offset) + " s");
    }
    // period = 1e9 * den / num ns, reduced so later products stay small.
    std::int64_t num = 1'000'000'000;
    std::int64_t den = hz_num;
    const std::int64_t g1 = std::gcd(num, den);
    num /= g1;
    den /= g1;
    const std::int64_t g2 = std::gcd(hz_den, den);
    if (__builtin_mul_overflow(num, hz_den / g2, &num)) {
        throw Error(errc::invalid_argument, "rate " + std::to_string(hz_num) + "/" + std::to_string(hz_den) +
                                                " Hz is too slow: its period does not fit in 64-bit nanoseconds");
    }
    den /= g2;
    return PeriodicSchedule(num, den, offset);
}

SimTime PeriodicSchedule::at(std::int64_t n) const noexcept
{
    if (n < 0) n = 0;
    const Int128 ns = static_cast<Int128>(n) * period_num_ / period_den_ + offset_.count();
    if (ns >= std::numeric_limits<std::int64_t>::max()) return kSimTimeMax;
    return SimTime{SimDuration{static_cast<std::int64_t>(ns)}};
}

std::int64_t PeriodicSchedule::first_index_at_or_after(SimTime t) const noexcept
{
    const Int128 since = static_cast<Int128>(t.time_since_epoch().count()) - offset_.count();
    if (since <= 0) return 0;
    // Smallest n with floor(n * num / den) >= since, i.e. n * num >= since * den.
    const Int128 need = since * period_den_;
    const Int128 n = (need + period_num_ - 1) / period_num_;
    return n > std::numeric_limits<std::int64_t>::max() ? std::numeric_limits<std::int64_t>::max()
                                                          : static_cast<std::int64_t>(n);
}

std::string PeriodicSchedule::describe() const
{
    if (period_den_ == 1) return "every " + format_seconds(SimDuration{period_num_}) + " s";
    // Rates print as Hz with up to 3 decimals.
    const double hz = 1e9 * static_cast<double>(period_den_) / static_cast<double>(period_num_);
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.3f Hz", hz);
    return buf;
}

} // namespace simsync
