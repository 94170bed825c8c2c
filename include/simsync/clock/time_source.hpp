#pragma once
/// @file
/// Time sources: where the clock publisher and any thread that stamps data read
/// "the time", selected by name (`sim`, `simulation`, `system`, `ros`,
/// `external`, or a user's own).

#include <simsync/clock/time_scale.hpp>
#include <simsync/clock/wall_clock.hpp>
#include <simsync/core/time.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
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

/// Splits `t` for a ROS 2 message (`builtin_interfaces/Time`), refusing what a
/// ROS 2 node cannot take instead of saturating: a time before 0 (rclcpp's Time
/// refuses negative times) or one whose seconds do not fit `int32 sec` (later
/// than 2147483647.999999999 s: January 2038 for UNIX times). A message with a
/// wrapped or saturated time would be a plausible but wrong clock to every
/// subscriber, so this is an error, never a quiet clamp.
/// @throws simsync::Error (invalid_argument) naming the time in seconds and the
///         representable range.
RosTime to_ros_time_checked(SourceTime t);

/// A thread-safe source of the current time that never runs backwards.
///
/// Implementations supply `read()`; `now()` clamps it monotonically with an
/// atomic maximum, so a source never runs backwards for anybody, whatever its
/// underlying clock does (NTP stepping the system clock back, a buggy user
/// source). The clamp is lock-free: many threads may read at high rates and a
/// reader never waits for the world access, the clock publisher or another reader.
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

/// A backward step of an outside clock, as ExternalTimeSource::offer saw it.
/// A value type.
struct TimeJump {
    SourceTime from; ///< the previous time offered
    SourceTime to;   ///< the time offered now, earlier than `from`
    SourceTime held; ///< the source's time, which it keeps (never below `from`)
    friend bool operator==(const TimeJump&, const TimeJump&) = default;
};

/// `external`: time set from outside, by an API call (a scenario runner that owns
/// time) or by a feed of another system's clock (a ROS 2 `/clock` subscriber,
/// simsync::dds::Ros2ClockFollower). Reads return the time last applied.
///
/// Two ways in, for two kinds of caller:
///  - `set` is for a caller that owns time and must never go back: a time
///    earlier than the current one is a bug of the caller, so it throws.
///  - `offer` is for an outside clock that may legitimately jump back (ROS
///    allows it: a simulator reset, a log replay that loops). It never throws.
///    The source still never runs backwards: it holds its time until the outside
///    clock passes it again, and reports the jump (see `offer`).
///
/// Copy/move: neither. Thread safety: distinct objects: safe. Shared objects:
/// `now()`, `set()`, `offer()` and the jump queries are safe from any thread;
/// concurrent `set` calls are linearised (a value earlier than the one that won
/// is refused); `offer` calls are serialised by a mutex of the source's that
/// `now()` never takes (reads stay lock-free).
class ExternalTimeSource final : public TimeSource {
public:
    explicit ExternalTimeSource(SourceTime initial = SourceTime{}) noexcept;

    /// Sets the time. Setting the same value again is allowed.
    /// @throws simsync::Error (invalid_argument, naming both values) if `t` is
    ///         earlier than the last value; the time is then unchanged.
    void set(SourceTime t);

    /// What `offer` did with a time.
    enum class Offer {
        advanced,  ///< `t` was after the source's time and is its time now
        unchanged, ///< `t` equals the source's time (a paused clock repeating itself)
        held,      ///< `t` is before the source's time, which is kept
    };

    /// Feeds one reading of an outside clock. A time at or after the source's
    /// time becomes its time. A time before it is not applied: the source holds
    /// its time (it never runs backwards) until the outside clock passes it
    /// again. An offer earlier than the previous offer is a backward jump of the
    /// outside clock: it is counted (`backward_jumps`), kept (`last_backward_jump`)
    /// and passed to the jump handler, once per jump; the offers after it, which
    /// go forward again but are still behind, are held without being counted.
    /// Never throws: a feed cannot refuse what the outside clock does.
    Offer offer(SourceTime t) noexcept;

    /// Number of backward jumps seen by `offer`.
    std::uint64_t backward_jumps() const noexcept;
    /// The last backward jump seen by `offer`, if any.
    std::optional<TimeJump> last_backward_jump() const;

    using JumpHandler = std::function<void(const TimeJump&)>;
    /// Calls `handler` for every later backward jump, on the thread calling
    /// `offer`, after the offer has taken effect (so the handler sees the held
    /// time) and outside the source's mutex (it may call any member, `offer`
    /// included). An empty handler removes it. Exceptions from the handler are
    /// caught and dropped: `offer` never throws. A host that must react to a
    /// reset of the outside clock (restart its simulation, make a new source)
    /// does it here.
    void on_backward_jump(JumpHandler handler);

protected:
    SourceTime read() const noexcept override;

private:
    std::atomic<std::int64_t> value_ns_;
    std::atomic<std::uint64_t> backward_jumps_{0};
    mutable std::mutex offer_mutex_; // last_offered_, last_jump_, jump_handler_
    std::optional<SourceTime> last_offered_;
    std::optional<TimeJump> last_jump_;
    std::shared_ptr<const JumpHandler> jump_handler_;
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
