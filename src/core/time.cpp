#include <simsync/core/error.hpp>
#include <simsync/core/time.hpp>

#include <cstdio>
#include <cstdlib>
#include <limits>

namespace simsync {

namespace {
__extension__ typedef __int128 Int128; // exact products of two 64-bit values

// Floor division for a positive divisor, correct for negative dividends.
std::int64_t floor_div(std::int64_t a, std::int64_t b) noexcept
{
    std::int64_t q = a / b;
    if ((a % b) != 0 && a < 0) --q;
    return q;
}
} // namespace

SimTime round_to_grid(SimTime t, SimDuration dt, Rounding policy)
{
    if (dt <= SimDuration::zero()) {
        throw Error(errc::invalid_argument,
                    "round_to_grid: step must be > 0, got " + std::to_string(dt.count()) + " ns");
    }
    if (t == kSimTimeMax || t == kSimTimeMin) return t;
    const std::int64_t ns = t.time_since_epoch().count();
    const std::int64_t step = dt.count();
    std::int64_t q = floor_div(ns, step);
    // 0 <= r < step; computed as ns - q * step in 128 bits, since q * step alone
    // can lie below the range (the grid point under a time near kSimTimeMin).
    const auto r = static_cast<std::int64_t>(static_cast<Int128>(ns) - static_cast<Int128>(q) * step);
    switch (policy) {
    case Rounding::down: break;
    case Rounding::up:
        if (r != 0) ++q;
        break;
    case Rounding::nearest:
        // r >= step / 2 without the truncation of an odd step: ties go up.
        if (r >= step - r) ++q;
        break;
    }
    const Int128 point = static_cast<Int128>(q) * step;
    if (point > std::numeric_limits<std::int64_t>::max()) return kSimTimeMax;
    if (point < std::numeric_limits<std::int64_t>::min()) return kSimTimeMin;
    return SimTime{SimDuration{static_cast<std::int64_t>(point)}};
}

WallTime deadline_after(WallClock::duration timeout) noexcept
{
    const WallTime now = WallClock::now();
    return timeout >= WallTime::max() - now ? WallTime::max() : now + timeout;
}

SimTime saturating_add(SimTime t, SimDuration d) noexcept
{
    if (t == kSimTimeMax) return t;
    std::int64_t sum = 0;
    if (__builtin_add_overflow(t.time_since_epoch().count(), d.count(), &sum)) {
        return d > SimDuration::zero() ? kSimTimeMax : kSimTimeMin;
    }
    return SimTime{SimDuration{sum}};
}

SimTime next_instant_after(SimTime granted, SimTime wanted, SimDuration dt, Rounding policy)
{
    if (round_to_grid(wanted, dt, policy) > granted) return wanted;
    return saturating_add(granted, dt);
}

Rounding parse_rounding(const std::string& name)
{
    if (name == "nearest") return Rounding::nearest;
    if (name == "up") return Rounding::up;
    if (name == "down") return Rounding::down;
    throw Error(errc::invalid_argument,
                "rounding must be one of nearest, up, down; got '" + name + "'");
}

const char* to_string(Rounding policy) noexcept
{
    switch (policy) {
    case Rounding::nearest: return "nearest";
    case Rounding::up: return "up";
    case Rounding::down: return "down";
    }
    return "?";
}

std::string format_seconds(SimDuration d)
{
    const std::int64_t ns = d.count();
    const bool negative = ns < 0;
    // Magnitude via unsigned arithmetic so INT64_MIN does not overflow.
    const std::uint64_t mag = negative ? 0 - static_cast<std::uint64_t>(ns) : static_cast<std::uint64_t>(ns);
    char buf[40];
    std::snprintf(buf, sizeof buf, "%s%llu.%09llu", negative ? "-" : "",
                  static_cast<unsigned long long>(mag / 1'000'000'000ULL),
                  static_cast<unsigned long long>(mag % 1'000'000'000ULL));
    return buf;
}

std::string format_seconds(SimTime t) { return format_seconds(t.time_since_epoch()); }

} // namespace simsync
