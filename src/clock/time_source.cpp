#include <simsync/clock/time_source.hpp>
#include <simsync/core/error.hpp>
#include <simsync/core/handler.hpp>

#include <algorithm>
#include <limits>

namespace simsync {

namespace {

constexpr std::int64_t kNsPerSecond = 1'000'000'000;

std::string describe(SourceTime t) { return format_seconds(SimDuration{t.time_since_epoch().count()}) + " s"; }

SourceTime from_ns(std::int64_t ns) noexcept { return SourceTime{SourceClock::duration{ns}}; }
std::int64_t ns_of(SourceTime t) noexcept { return t.time_since_epoch().count(); }

} // namespace

// ----------------------------------------------------------------- RosTime split

RosTime to_ros_time(SourceTime t) noexcept
{
    const std::int64_t ns = ns_of(t);
    // Floor division: C++ truncates towards zero, ROS wants nanosec in [0, 1e9).
    std::int64_t sec = ns / kNsPerSecond;
    std::int64_t rem = ns % kNsPerSecond;
    if (rem < 0) {
        rem += kNsPerSecond;
        --sec;
    }
    constexpr std::int64_t kMin = std::numeric_limits<std::int32_t>::min();
    constexpr std::int64_t kMax = std::numeric_limits<std::int32_t>::max();
    if (sec < kMin) return RosTime{static_cast<std::int32_t>(kMin), 0};
    if (sec > kMax) return RosTime{static_cast<std::int32_t>(kMax), static_cast<std::uint32_t>(kNsPerSecond - 1)};
    return RosTime{static_cast<std::int32_t>(sec), static_cast<std::uint32_t>(rem)};
}

SourceTime from_ros_time(RosTime t) noexcept
{
    return from_ns(static_cast<std::int64_t>(t.sec) * kNsPerSecond + static_cast<std::int64_t>(t.nanosec));
}

RosTime to_ros_time_checked(SourceTime t)
{
    constexpr std::int64_t kMaxNs = std::int64_t{std::numeric_limits<std::int32_t>::max()} * kNsPerSecond +
                                    (kNsPerSecond - 1);
    const std::int64_t ns = ns_of(t);
    if (ns < 0 || ns > kMaxNs) {
        throw Error(errc::invalid_argument,
                    "time " + describe(t) + " cannot be a ROS 2 time: builtin_interfaces/Time holds 0 s to " +
                        describe(from_ns(kMaxNs)) + (ns < 0 ? " (ROS 2 refuses negative times)"
                                                            : " (int32 seconds; for UNIX times, January 2038)"));
    }
    return to_ros_time(t);
}

// ------------------------------------------------------------------ TimeSource

SourceTime TimeSource::now() const noexcept
{
    const std::int64_t reading = ns_of(read());
    if (!clamp_) return from_ns(reading);
    // Atomic maximum: publish our reading only if it is ahead of every reading
    // returned so far; otherwise return the latest, so no caller ever sees time
    // go back, even across threads.
    std::int64_t latest = latest_ns_.load(std::memory_order_acquire);
    while (reading > latest) {
        if (latest_ns_.compare_exchange_weak(latest, reading, std::memory_order_acq_rel,
                                             std::memory_order_acquire)) {
            return from_ns(reading);
        }
    }
    return from_ns(latest);
}

SourceTime SimTimeSource::read() const noexcept { return from_ns(handler_.now().time_since_epoch().count()); }

// Monotonic by construction: TimeScale::scaled_elapsed never runs backwards
// (its clock's steady time does not, and its readings are ordered against scale
// changes); the system-time origin is a constant taken once.
ScaledWallTimeSource::ScaledWallTimeSource(const TimeScale& scale, Origin origin) noexcept
    : TimeSource(Monotonic::by_construction),
      scale_(scale),
      origin_(origin),
      start_(origin == Origin::zero ? SourceTime{}
                                    : SourceTime{std::chrono::duration_cast<SourceClock::duration>(
                                          scale.clock().system_now().time_since_epoch())}),
      scaled_start_(scale.scaled_elapsed())
{
}

SourceTime ScaledWallTimeSource::read() const noexcept
{
    // Saturates at the largest SourceTime (the scaled time itself saturates):
    // a `system` source at scale 1e6 would otherwise wrap after about 2 h.
    std::int64_t t = 0;
    if (__builtin_add_overflow(ns_of(start_), (scale_.scaled_elapsed() - scaled_start_).count(), &t)) {
        return from_ns(std::numeric_limits<std::int64_t>::max());
    }
    return from_ns(t);
}

SourceTime RosTimeSource::read() const noexcept
{
    return SourceTime{std::chrono::duration_cast<SourceClock::duration>(clock_.system_now().time_since_epoch())};
}

// Monotonic by construction: set() refuses a time before the last one.
ExternalTimeSource::ExternalTimeSource(SourceTime initial) noexcept
    : TimeSource(Monotonic::by_construction), value_ns_(ns_of(initial))
{
}

void ExternalTimeSource::set(SourceTime t)
{
    const std::int64_t wanted = ns_of(t);
    std::int64_t last = value_ns_.load(std::memory_order_acquire);
    for (;;) {
        if (wanted < last) {
            throw Error(errc::invalid_argument, "ExternalTimeSource::set: time " + describe(t) +
                                                    " is earlier than the last time set, " +
                                                    describe(from_ns(last)) + "; a time source never runs backwards");
        }
        if (value_ns_.compare_exchange_weak(last, wanted, std::memory_order_acq_rel, std::memory_order_acquire)) {
            return;
        }
    }
}

SourceTime ExternalTimeSource::read() const noexcept { return from_ns(value_ns_.load(std::memory_order_acquire)); }

ExternalTimeSource::Offer ExternalTimeSource::offer(SourceTime t) noexcept
{
    std::optional<TimeJump> jump;
    std::shared_ptr<const JumpHandler> handler;
    Offer result = Offer::unchanged;
    {
        std::lock_guard<std::mutex> guard(offer_mutex_);
        // Atomic maximum: a concurrent set() may move the value too.
        const std::int64_t wanted = ns_of(t);
        std::int64_t current = value_ns_.load(std::memory_order_acquire);
        while (wanted > current) {
            if (value_ns_.compare_exchange_weak(current, wanted, std::memory_order_acq_rel,
                                                std::memory_order_acquire)) {
                result = Offer::advanced;
                break;
            }
        }
        if (result != Offer::advanced) result = wanted == current ? Offer::unchanged : Offer::held;
        // A jump is the outside clock going back against its own previous
        // reading, not against the held time: one reset is counted once.
        if (last_offered_ && t < *last_offered_) {
            jump = TimeJump{*last_offered_, t, from_ns(value_ns_.load(std::memory_order_acquire))};
            last_jump_ = jump;
            backward_jumps_.fetch_add(1, std::memory_order_relaxed);
            handler = jump_handler_;
        }
        last_offered_ = t;
    }
    if (jump && handler && *handler) {
        try {
            (*handler)(*jump);
        } catch (...) {
            // offer() is noexcept: a feed thread must survive its host's handler.
        }
    }
    return result;
}

std::uint64_t ExternalTimeSource::backward_jumps() const noexcept
{
    return backward_jumps_.load(std::memory_order_relaxed);
}

std::optional<TimeJump> ExternalTimeSource::last_backward_jump() const
{
    std::lock_guard<std::mutex> guard(offer_mutex_);
    return last_jump_;
}

void ExternalTimeSource::on_backward_jump(JumpHandler handler)
{
    auto shared = handler ? std::make_shared<const JumpHandler>(std::move(handler)) : nullptr;
    std::lock_guard<std::mutex> guard(offer_mutex_);
    jump_handler_ = std::move(shared);
}

// ------------------------------------------------------------------- factory

namespace {

[[noreturn]] void missing(std::string_view name, const char* what)
{
    throw Error(errc::invalid_argument, "time source '" + std::string(name) + "' needs TimeSourceContext." + what +
                                            ", which is not set");
}

const TimeScale& need_scale(std::string_view name, const TimeSourceContext& c)
{
    if (c.time_scale == nullptr) missing(name, "time_scale");
    return *c.time_scale;
}

} // namespace

TimeSourceFactory::TimeSourceFactory()
{
    makers_.emplace("sim", [](const TimeSourceContext& c) -> std::unique_ptr<TimeSource> {
        if (c.handler == nullptr) missing("sim", "handler");
        return std::make_unique<SimTimeSource>(*c.handler);
    });
    makers_.emplace("simulation", [](const TimeSourceContext& c) -> std::unique_ptr<TimeSource> {
        return std::make_unique<ScaledWallTimeSource>(need_scale("simulation", c),
                                                      ScaledWallTimeSource::Origin::zero);
    });
    makers_.emplace("system", [](const TimeSourceContext& c) -> std::unique_ptr<TimeSource> {
        return std::make_unique<ScaledWallTimeSource>(need_scale("system", c),
                                                      ScaledWallTimeSource::Origin::system_time);
    });
    makers_.emplace("ros", [](const TimeSourceContext& c) -> std::unique_ptr<TimeSource> {
        const WallClockSource& clock = c.wall_clock != nullptr   ? *c.wall_clock
                                       : c.time_scale != nullptr ? c.time_scale->clock()
                                                                 : real_wall_clock();
        return std::make_unique<RosTimeSource>(clock);
    });
    makers_.emplace("external", [](const TimeSourceContext&) -> std::unique_ptr<TimeSource> {
        return std::make_unique<ExternalTimeSource>();
    });
}

void TimeSourceFactory::add(std::string name, Maker maker)
{
    if (name.empty()) throw Error(errc::invalid_argument, "TimeSourceFactory::add: the name must not be empty");
    if (!maker) {
        throw Error(errc::invalid_argument, "TimeSourceFactory::add: the maker of '" + name + "' is empty");
    }
    std::lock_guard<std::mutex> guard(mutex_);
    if (makers_.count(name) != 0) {
        throw Error(errc::duplicate_name, "TimeSourceFactory::add: a time source named '" + name +
                                              "' is already known");
    }
    makers_.emplace(std::move(name), std::move(maker));
}

std::unique_ptr<TimeSource> TimeSourceFactory::make(std::string_view name, const TimeSourceContext& context) const
{
    Maker maker;
    {
        std::lock_guard<std::mutex> guard(mutex_);
        const auto it = makers_.find(name);
        if (it == makers_.end()) {
            std::string known;
            for (const auto& [n, m] : makers_) known += (known.empty() ? "" : ", ") + n;
            throw Error(errc::invalid_argument,
                        "unknown time source '" + std::string(name) + "'; known: " + known);
        }
        maker = it->second;
    }
    // Outside the lock: a user's maker may itself use the factory.
    std::unique_ptr<TimeSource> source = maker(context);
    if (!source) {
        throw Error(errc::invalid_argument, "the maker of time source '" + std::string(name) + "' returned null");
    }
    return source;
}

bool TimeSourceFactory::contains(std::string_view name) const
{
    std::lock_guard<std::mutex> guard(mutex_);
    return makers_.find(name) != makers_.end();
}

std::vector<std::string> TimeSourceFactory::names() const
{
    std::lock_guard<std::mutex> guard(mutex_);
    std::vector<std::string> result;
    result.reserve(makers_.size());
    for (const auto& [name, maker] : makers_) result.push_back(name);
    return result;
}

std::unique_ptr<TimeSource> make_time_source(std::string_view name, const TimeSourceContext& context)
{
    const TimeSourceFactory factory;
    return factory.make(name, context);
}

} // namespace simsync
