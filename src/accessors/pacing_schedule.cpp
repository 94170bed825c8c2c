#include <simsync/accessors/pacing_schedule.hpp>
#include <simsync/clock/time_scale.hpp>
#include <simsync/core/error.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace simsync {

namespace {

__extension__ typedef __int128 Int128; // exact products of nanoseconds and ppb

constexpr std::int64_t kBillion = 1'000'000'000;

std::int64_t to_ppb(double scale)
{
    if (!std::isfinite(scale) || scale < TimeScale::kMin || scale > TimeScale::kMax) {
        throw Error(errc::invalid_argument,
                    "PacingInput.scale must be a finite value in [1e-06, 1e+06], got " + std::to_string(scale));
    }
    return std::llround(scale * 1e9);
}

std::int64_t clamp_to_int64(Int128 v) noexcept
{
    // Keeps WallTime arithmetic away from overflow for absurd inputs (a 292-year
    // simulated span at scale 1e-6); far beyond anything a run reaches.
    constexpr Int128 kLimit = std::numeric_limits<std::int64_t>::max() / 4;
    return static_cast<std::int64_t>(std::clamp<Int128>(v, -kLimit, kLimit));
}

std::string ns_text(WallClock::duration d)
{
    return std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count()) + " ns";
}

} // namespace

const char* to_string(CatchUp policy) noexcept
{
    switch (policy) {
    case CatchUp::none: return "none";
    case CatchUp::bounded: return "bounded";
    case CatchUp::full: return "full";
    }
    return "?";
}

CatchUp parse_catch_up(const std::string& name)
{
    if (name == "none") return CatchUp::none;
    if (name == "bounded") return CatchUp::bounded;
    if (name == "full") return CatchUp::full;
    throw Error(errc::invalid_argument, "catch-up policy must be 'none', 'bounded' or 'full', got '" + name + "'");
}

const char* to_string(PacingEvent event) noexcept
{
    switch (event) {
    case PacingEvent::none: return "none";
    case PacingEvent::anchored: return "anchored";
    case PacingEvent::paused: return "paused";
    case PacingEvent::rescaled: return "rescaled";
    case PacingEvent::dropped: return "dropped";
    }
    return "?";
}

// ------------------------------------------------------------- PacingSchedule

PacingSchedule::PacingSchedule(CatchUp policy, WallClock::duration max_catch_up)
    : policy_(policy), max_catch_up_(max_catch_up)
{
    if (max_catch_up < WallClock::duration::zero()) {
        throw Error(errc::invalid_argument, "PacerConfig.max_catch_up must be >= 0, got " + ns_text(max_catch_up));
    }
}

WallTime PacingSchedule::deadline(SimTime t) const
{
    if (!anchored_) throw Error(errc::invalid_state, "PacingSchedule::deadline called without an anchor");
    const Int128 num = static_cast<Int128>((t - anchor_sim_).count()) * kBillion;
    Int128 wall_ns = num / ppb_;
    if (num > 0 && num % ppb_ != 0) ++wall_ns; // round up: never release early
    return anchor_wall_ + WallClock::duration{clamp_to_int64(wall_ns)};
}

void PacingSchedule::anchor(SimTime sim, WallTime wall) noexcept
{
    anchored_ = true;
    anchor_sim_ = sim;
    anchor_wall_ = wall;
}

void PacingSchedule::observe(const PacingInput& in) noexcept
{
    observed_ = true;
    run_generation_ = in.run_generation;
    scale_generation_ = in.scale_generation;
}

// Continues the schedule from where the old scale had brought it at `now`, so the
// motion is continuous; never beyond the instant held (that would be a jump).
void PacingSchedule::rescale(std::int64_t ppb, WallTime now, SimTime held) noexcept
{
    if (anchored_) {
        const std::int64_t since = std::max<std::int64_t>(0, (now - anchor_wall_).count());
        const SimTime reached =
            anchor_sim_ + SimDuration{clamp_to_int64(static_cast<Int128>(since) * ppb_ / kBillion)};
        anchor(std::min(reached, held), now);
    } else {
        anchor(held, now);
    }
    ppb_ = ppb;
}

PacingDecision PacingSchedule::on_grant(const PacingInput& in)
{
    const std::int64_t ppb = to_ppb(in.scale);
    const bool run_changed = observed_ && in.run_generation != run_generation_;
    const bool scale_changed = observed_ && in.scale_generation != scale_generation_;
    observe(in);

    PacingDecision d;
    d.deadline = in.now;
    if (!in.running) {
        unanchor();
        ppb_ = ppb;
        d.event = PacingEvent::paused;
        return d;
    }
    if (!anchored_ || run_changed) {
        ppb_ = ppb;
        anchor(in.granted, in.now);
        d.event = PacingEvent::anchored;
        return d;
    }
    if (scale_changed) {
        rescale(ppb, in.now, in.granted);
        d.event = PacingEvent::rescaled;
    }
    d.deadline = deadline(in.granted);
    if (in.now <= d.deadline) {
        d.sleep = true;
        return d;
    }
    d.lateness = in.now - d.deadline;
    switch (policy_) {
    case CatchUp::none:
        d.dropped = d.lateness;
        anchor(in.granted, in.now);
        break;
    case CatchUp::bounded:
        if (d.lateness > max_catch_up_) {
            d.dropped = d.lateness - max_catch_up_;
            anchor(in.granted, in.now - max_catch_up_);
        }
        break;
    case CatchUp::full: break;
    }
    if (d.dropped > WallClock::duration::zero()) d.event = PacingEvent::dropped;
    return d;
}

PacingDecision PacingSchedule::on_wake(const PacingInput& in)
{
    const std::int64_t ppb = to_ppb(in.scale);
    const bool scale_changed = observed_ && in.scale_generation != scale_generation_;
    // A resume or run_until seen while waiting keeps the deadline: time was held
    // at `granted` all along, so nothing can have jumped.
    observe(in);

    PacingDecision d;
    d.deadline = in.now;
    if (!in.running) {
        unanchor();
        d.event = PacingEvent::paused;
        return d;
    }
    if (!anchored_) {
        ppb_ = ppb;
        anchor(in.granted, in.now);
        d.event = PacingEvent::anchored;
        return d;
    }
    if (scale_changed) {
        rescale(ppb, in.now, in.granted);
        d.event = PacingEvent::rescaled;
    }
    d.deadline = deadline(in.granted);
    d.sleep = in.now < d.deadline;
    return d;
}

} // namespace simsync
