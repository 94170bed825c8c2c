#include <simsync/error.hpp>
#include <simsync/time.hpp>

#include <cstdio>
#include <cstdlib>

namespace simsync {

namespace {
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
    const std::int64_t ns = t.time_since_epoch().count();
    const std::int64_t step = dt.count();
    std::int64_t q = floor_div(ns, step);
    const std::int64_t r = ns - q * step; // 0 <= r < step
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
    return SimTime{SimDuration{q * step}};
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
