#pragma once
/// @file
/// Time sources: where the clock publisher and any thread that stamps data read
/// "the time", selected by name (`sim`, `simulation`, `system`, `ros`,
/// `external`, or a user's own).

#include <simsync/time.hpp>
#include <simsync/time_scale.hpp>
#include <simsync/wall_clock.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace simsync {

class SimSyncHandler;

/// The clock a time source's readings are measured on. Like SimClock it has no
/// `now()`: each TimeSource is its own clock with its own epoch (0 for `sim`,
/// `simulation` and `external` until set; the UNIX epoch for `system` and
/// `ros`). A distinct type keeps source readings from being mixed up with
/// SimTime, steady_clock or system_clock values by accident.
struct SourceClock {
    using rep = std::int64_t;
    using period = std::nano;
    using duration = std::chrono::duration<rep, period>;
    using time_point = std::chrono::time_point<SourceClock, duration>;
    static constexpr bool is_steady = true;
};

/// A reading of a time source: integer nanoseconds since the source's epoch.
using SourceTime = SourceClock::time_point;

/// Makes a SourceTime from a duration since the source's epoch.
template <class Rep, class Period>
constexpr SourceTime source_time(std::chrono::duration<Rep, Period> since_epoch)
{
    return SourceTime{std::chrono::duration_cast<SourceClock::duration>(since_epoch)};
}

/// The ROS `builtin_interfaces/Time` split of a time: whole seconds and
/// nanoseconds in [0, 1e9), seconds rounded towards minus infinity, so -1.5 s is
/// {-2, 500000000}.
struct RosTime {
    std::int32_t sec = 0;
    std::uint32_t nanosec = 0;
    friend bool operator==(const RosTime&, const RosTime&) = default;
};

/// Splits `t` as ROS does (see RosTime). Times beyond the int32 range of seconds
/// (before 1901 or after January 2038 for UNIX times) saturate to the nearest
/// representable RosTime rather than wrap around.
RosTime to_ros_time(SourceTime t) noexcept;

/// Inverse of to_ros_time (exact for any RosTime).
SourceTime from_ros_time(RosTime t) noexcept;

/// A thread-safe source of the current time that never runs backwards.
///
/// Implementations supply `read()`; `now()` clamps it monotonically with an
/// atomic maximum, so a source never runs backwards for anybody, whatever its
/// underlying clock does (NTP stepping the system clock back, a buggy user
/// source). The clamp is lock-free: many threads may read at high rates and a
/// reader never waits for the world access, the clock thread or another reader.
/// A source whose reading cannot run backwards by construction (the built-in
/// sim, simulation, system and external sources) passes
/// `Monotonic::by_construction` and skips the clamp: its atomic maximum is a
/// write to one shared cache line on every read, which made two threads reading
/// one source slower than one (bench/time_source_bench.cpp).
///
/// Copy/move: neither (sources are shared by reference between threads).
/// Thread safety: distinct objects: safe. Shared objects: `now()` is safe from
/// any thread concurrently; other members are documented where they differ.
///
/// A user-defined source derives from TimeSource and implements `read()`:
/// @code
/// class GpsTime final : public simsync::TimeSource {
///     simsync::SourceTime read() const noexcept override { return receiver_.latest(); }
///     ...
/// };
/// @endcode
/// and may be offered by name through TimeSourceFactory::add.
class TimeSource {
public:
    TimeSource(const TimeSource&) = delete;
    TimeSource& operator=(const TimeSource&) = delete;
    virtual ~TimeSource() = default;

    /// The current time of this source: never less than any value it returned
    /// before (to any thread). Lock-free if `read()` is. Thread-safe.
    SourceTime now() const noexcept;

protected:
    /// Whether `read()` itself never runs backwards (to any thread); if it
    /// does not promise that, `now()` clamps.
    enum class Monotonic { clamp, by_construction };
    explicit TimeSource(Monotonic monotonic = Monotonic::clamp) noexcept : clamp_(monotonic == Monotonic::clamp) {}

    /// The underlying, unclamped reading. Called by `now()` on whichever thread
    /// calls `now()`, possibly from several threads at once; must be thread-safe,
    /// must not throw and should not block.
    virtual SourceTime read() const noexcept = 0;

private:
    static_assert(std::atomic<std::int64_t>::is_always_lock_free);
    const bool clamp_;
    mutable std::atomic<std::int64_t> latest_ns_{std::numeric_limits<std::int64_t>::min()};
};

/// `sim`: the handler's stepped simulation time, from 0. Changes only when the
/// world is stepped; frozen while paused. Reads SimSyncHandler::now(), which is
/// lock-free. The handler must outlive the source.
/// Copy/move: neither. Thread safety: distinct objects: safe. Shared objects:
/// `now()` is safe from any thread.
class SimTimeSource final : public TimeSource {
public:
    // Simulated time only moves forward.
    explicit SimTimeSource(const SimSyncHandler& handler) noexcept
        : TimeSource(Monotonic::by_construction), handler_(handler)
    {
    }

protected:
    SourceTime read() const noexcept override;

private:
    const SimSyncHandler& handler_;
};

/// `simulation` and `system`: wall-clock time scaled by a TimeScale, counted from
/// the construction of the source. A change of scale applies from the moment of
/// the change (TimeScale::scaled_elapsed). The result is exact integer
/// nanoseconds: 1 s of wall time at scale 0.5 is 500000000 ns.
///
/// Both read the monotonic wall clock through the TimeScale, so stepping the
/// system clock after the start does not move them. At the end of the range
/// they saturate at the largest SourceTime and stay there (never wrap). The
/// TimeScale (and its wall clock) must outlive the source.
/// Copy/move: neither. Thread safety: distinct objects: safe. Shared objects:
/// `now()` is safe from any thread; lock-free when the TimeScale's wall clock is
/// (the RealWallClock is).
class ScaledWallTimeSource final : public TimeSource {
public:
    enum class Origin {
        zero,        ///< `simulation`: starts at 0
        system_time, ///< `system`: starts at the UNIX time of construction
    };

    ScaledWallTimeSource(const TimeScale& scale, Origin origin) noexcept;

    Origin origin() const noexcept { return origin_; }

protected:
    SourceTime read() const noexcept override;

private:
    const TimeScale& scale_;
    const Origin origin_;
    const SourceTime start_;         // reading at construction
    const SimDuration scaled_start_; // scale_.scaled_elapsed() at construction
};

/// `ros`: the system wall clock's UNIX time, not scaled (what a ROS 2 node uses
/// by default). If the system clock is stepped back, readings hold still until
/// it catches up again (TimeSource::now never runs backwards).
/// The wall clock must outlive the source.
/// Copy/move: neither. Thread safety: distinct objects: safe. Shared objects:
/// `now()` is safe from any thread.
class RosTimeSource final : public TimeSource {
public:
    explicit RosTimeSource(const WallClockSource& clock = real_wall_clock()) noexcept : clock_(clock) {}

protected:
    SourceTime read() const noexcept override;

private:
    const WallClockSource& clock_;
};

/// `external`: time set from outside (an API call now, the network later), for
/// example by a scenario runner that owns time. Reads return the last value set.
/// Copy/move: neither. Thread safety: distinct objects: safe. Shared objects:
/// `now()` and `set()` are safe from any thread; concurrent `set` calls are
/// linearised (a value earlier than the one that won is refused).
class ExternalTimeSource final : public TimeSource {
public:
    explicit ExternalTimeSource(SourceTime initial = SourceTime{}) noexcept;

    /// Sets the time. Setting the same value again is allowed.
    /// @throws simsync::Error (invalid_argument, naming both values) if `t` is
    ///         earlier than the last value; the time is then unchanged.
    void set(SourceTime t);

protected:
    SourceTime read() const noexcept override;

private:
    std::atomic<std::int64_t> value_ns_;
};

/// What a TimeSourceFactory may build a source from. The referenced objects must
/// outlive the sources made from them.
struct TimeSourceContext {
    /// Needed by `sim`.
    const SimSyncHandler* handler = nullptr;
    /// Needed by `simulation` and `system`.
    const TimeScale* time_scale = nullptr;
    /// Used by `ros`; unset: the time scale's clock if there is one, else the
    /// real wall clock.
    const WallClockSource* wall_clock = nullptr;
};

/// Selects a time source by name, as a configuration file does. It knows the
/// built-in names `sim`, `simulation`, `system`, `ros` and `external`; users add
/// their own. A source made for `external` is an ExternalTimeSource: set it
/// through `dynamic_cast<ExternalTimeSource&>`.
///
/// Copy/move: neither. Thread safety: distinct objects: safe. Shared objects:
/// safe, every member from any thread (serialised by a mutex of the factory's; making a source is not on any hot
/// path, and the sources it makes do not use that mutex).
///
/// @code
/// simsync::TimeSourceFactory factory;
/// factory.add("gps", [&](const simsync::TimeSourceContext&) { return std::make_unique<GpsTime>(rx); });
/// auto source = factory.make(config.time_source, {.handler = &handler, .time_scale = &scale});
/// @endcode
class TimeSourceFactory {
public:
    using Maker = std::function<std::unique_ptr<TimeSource>(const TimeSourceContext&)>;

    /// A factory with the built-in names.
    TimeSourceFactory();
    TimeSourceFactory(const TimeSourceFactory&) = delete;
    TimeSourceFactory& operator=(const TimeSourceFactory&) = delete;

    /// Offers a source under `name`.
    /// @throws simsync::Error: invalid_argument (empty name or empty maker),
    ///         duplicate_name (the name is taken, built-ins included).
    void add(std::string name, Maker maker);

    /// Makes the source called `name`.
    /// @throws simsync::Error (invalid_argument) if the name is unknown (the
    ///         message lists the known names), if the context lacks what that
    ///         source needs, or if a user's maker returns null.
    std::unique_ptr<TimeSource> make(std::string_view name, const TimeSourceContext& context) const;

    bool contains(std::string_view name) const;
    /// Known names, sorted.
    std::vector<std::string> names() const;

private:
    mutable std::mutex mutex_;
    std::map<std::string, Maker, std::less<>> makers_;
};

/// Makes one of the built-in sources by name (a default TimeSourceFactory).
/// @throws simsync::Error as TimeSourceFactory::make.
std::unique_ptr<TimeSource> make_time_source(std::string_view name, const TimeSourceContext& context);

} // namespace simsync
