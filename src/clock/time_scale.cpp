#include <simsync/clock/time_scale.hpp>
#include <simsync/core/error.hpp>

#include <cmath>
#include <limits>
#include <string>

namespace simsync {

namespace {

__extension__ typedef __int128 Int128; // exact 64x64-bit products

std::int64_t to_ppb(double scale)
{
    if (!std::isfinite(scale) || scale < TimeScale::kMin || scale > TimeScale::kMax) {
        throw Error(errc::invalid_argument,
                    "time scale must be a finite value in [1e-06, 1e+06] (simulated seconds per wall "
                    "second), got " + std::to_string(scale));
    }
    return std::llround(scale * 1e9);
}

// Scaled time reached `wall_ns` after a segment that started at `scaled_start`:
// the 128-bit product is exact; the sum saturates at the largest std::int64_t
// (at scale 1e6 that is reached after about 2.5 h of wall time), so scaled time
// stops there instead of wrapping to a negative value and running backwards.
std::int64_t scaled_at(std::int64_t scaled_start, std::int64_t wall_ns, std::int64_t ppb) noexcept
{
    const Int128 t = static_cast<Int128>(scaled_start) + static_cast<Int128>(wall_ns > 0 ? wall_ns : 0) * ppb / 1'000'000'000;
    return t >= std::numeric_limits<std::int64_t>::max() ? std::numeric_limits<std::int64_t>::max()
                                                          : static_cast<std::int64_t>(t);
}

std::int64_t ns_of(WallTime t) noexcept { return t.time_since_epoch().count(); }

} // namespace

TimeScale::TimeScale(double initial, WallClockSource& clock) : clock_(clock)
{
    ppb_.store(to_ppb(initial));
    wall_start_ns_.store(ns_of(clock_.steady_now()));
}

TimeScale::Segment TimeScale::read() const noexcept
{
    for (;;) {
        const std::uint64_t before = seq_.load(std::memory_order_acquire);
        Segment s{wall_start_ns_.load(std::memory_order_acquire), scaled_start_ns_.load(std::memory_order_acquire),
                  ppb_.load(std::memory_order_acquire), generation_.load(std::memory_order_acquire)};
        if ((before & 1u) == 0 && seq_.load(std::memory_order_acquire) == before) return s;
    }
}

double TimeScale::value() const noexcept { return static_cast<double>(ppb_.load(std::memory_order_acquire)) / 1e9; }

std::uint64_t TimeScale::generation() const noexcept { return generation_.load(std::memory_order_acquire); }

void TimeScale::set(double scale)
{
    const std::int64_t ppb = to_ppb(scale);
    {
        std::lock_guard<std::mutex> guard(writer_);
        write(ppb);
    }
    std::lock_guard<std::recursive_mutex> guard(listeners_mutex_);
    const auto listeners = listeners_; // a listener may unsubscribe meanwhile
    for (const auto& entry : listeners) entry.second(scale);
}

ScaleSubscription TimeScale::subscribe(std::function<void(double)> listener) const
{
    if (!listener) throw Error(errc::invalid_argument, "TimeScale::subscribe: empty listener");
    std::lock_guard<std::recursive_mutex> guard(listeners_mutex_);
    listeners_.emplace_back(next_listener_, std::move(listener));
    return ScaleSubscription(this, next_listener_++);
}

void TimeScale::unsubscribe(std::uint64_t id) const noexcept
{
    std::lock_guard<std::recursive_mutex> guard(listeners_mutex_);
    std::erase_if(listeners_, [id](const auto& entry) { return entry.first == id; });
}

ScaleSubscription& ScaleSubscription::operator=(ScaleSubscription&& other) noexcept
{
    if (this != &other) {
        reset();
        scale_ = std::exchange(other.scale_, nullptr);
        id_ = std::exchange(other.id_, 0);
    }
    return *this;
}

void ScaleSubscription::reset() noexcept
{
    if (scale_ != nullptr) std::exchange(scale_, nullptr)->unsubscribe(id_);
}

void TimeScale::write(std::int64_t ppb)
{
    // Only writer (the mutex): the fields can be read directly. The instant of
    // the change is taken inside the write section, after the sequence turned
    // odd, so that scaled_elapsed() stays monotonic (see the header).
    seq_.fetch_add(1, std::memory_order_acq_rel);
    const std::int64_t now = ns_of(clock_.steady_now());
    const Segment old{wall_start_ns_.load(std::memory_order_relaxed), scaled_start_ns_.load(std::memory_order_relaxed),
                      ppb_.load(std::memory_order_relaxed), generation_.load(std::memory_order_relaxed)};
    const std::int64_t since = now - old.wall_start_ns;
    const std::int64_t reached = scaled_at(old.scaled_start_ns, since, old.ppb);
    wall_start_ns_.store(now, std::memory_order_release);
    scaled_start_ns_.store(reached, std::memory_order_release);
    ppb_.store(ppb, std::memory_order_release);
    generation_.store(old.generation + 1, std::memory_order_release);
    seq_.fetch_add(1, std::memory_order_acq_rel);
}

SimDuration TimeScale::scaled_elapsed() const noexcept
{
    // The clock is read between the two sequence loads (see the header): a
    // reading that overlaps a set() is retried, one that does not is wholly
    // before or after it.
    for (;;) {
        const std::uint64_t before = seq_.load(std::memory_order_acquire);
        if ((before & 1u) != 0) continue;
        const std::int64_t at = ns_of(clock_.steady_now());
        const std::int64_t wall_start = wall_start_ns_.load(std::memory_order_acquire);
        const std::int64_t scaled_start = scaled_start_ns_.load(std::memory_order_acquire);
        const std::int64_t ppb = ppb_.load(std::memory_order_acquire);
        if (seq_.load(std::memory_order_acquire) != before) continue;
        return SimDuration{scaled_at(scaled_start, at - wall_start, ppb)};
    }
}

SimDuration TimeScale::scaled_elapsed_at(WallTime at) const noexcept
{
    const Segment s = read();
    return SimDuration{scaled_at(s.scaled_start_ns, ns_of(at) - s.wall_start_ns, s.ppb)};
}

} // namespace simsync
