#pragma once
/// @file
/// ROS 2 `/clock` over Cyclone DDS, without a ROS 2 installation: a ClockSink that
/// publishes simsync's time to ROS 2 nodes, and a follower that makes simsync
/// follow the `/clock` of a ROS 2 simulation (Gazebo, CARLA, AWSIM).
///
/// On the wire, exactly what rmw_cyclonedds and rmw_fastrtps exchange: topic
/// `rt/clock`, type `rosgraph_msgs::msg::dds_::Clock_` holding
/// `builtin_interfaces::msg::dds_::Time_ { int32 sec; uint32 nanosec; }`, keyless,
/// final, plain CDR (XCDR1): 12 bytes per sample, a 4-byte encapsulation header
/// and two little-endian 32-bit integers.

#include <simsync/accessors/clock_publisher.hpp>
#include <simsync/clock/time_source.hpp>
#include <simsync/dds/domain.hpp>
#include <simsync/dds/qos.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace simsync::dds {

/// The DDS topic of ROS 2's `/clock` (ROS 2 prefixes topic names with "rt").
inline constexpr std::string_view kClockTopic = "rt/clock";
/// The DDS topic of a topic name as a user gives it: a ROS 2 name (it starts
/// with '/': "/clock", "/sim/clock") is mapped as ROS 2's middlewares map it
/// ("rt/clock", "rt/sim/clock"); any other name is a DDS topic name already
/// ("rt/clock") and is returned as it is. So `--topic /clock` and
/// `topic: /clock` mean ROS 2's /clock, not a DDS topic no ROS node reads.
/// @throws simsync::Error (invalid_argument) for "" and "/".
std::string dds_topic_name(std::string_view topic);

/// The DDS type name ROS 2 registers for `rosgraph_msgs/msg/Clock`.
inline constexpr std::string_view kClockTypeName = "rosgraph_msgs::msg::dds_::Clock_";

/// The sink's default writer QoS: reliable, transient local, keep last 1. The
/// most a writer can offer, so every `/clock` reader matches it whatever it asks
/// for (rclcpp's ClockQoS is best effort, volatile, keep last 1; other tools ask
/// for reliable or transient local), and a node that starts late gets the last
/// time at once instead of waiting for the next tick. Keep last 1 makes a slow
/// reader lose old times rather than hold the writer (see Ros2ClockSink).
inline constexpr Qos kClockWriterQos{Reliability::reliable, Durability::transient_local, 1, {}};
/// The follower's default reader QoS: rclcpp's ClockQoS (best effort, volatile,
/// keep last 1), which matches every `/clock` writer.
inline constexpr Qos kClockReaderQos{Reliability::best_effort, Durability::volatile_, 1, {}};

/// Whether `t` is a time a ROS 2 node accepts: seconds >= 0 (rclcpp refuses
/// negative times) and nanoseconds below 1e9.
constexpr bool valid_ros2_time(RosTime t) noexcept { return t.sec >= 0 && t.nanosec < 1'000'000'000u; }

/// Configuration of a Ros2ClockSink. A value type.
struct Ros2ClockSinkConfig {
    /// The DDS topic; "rt/<namespace>/clock" for a namespaced clock.
    std::string topic{kClockTopic};
    Qos qos = kClockWriterQos;
    /// While the simulation is paused the ClockPublisher repeats the frozen time
    /// at its paused period. true (the default): every repeat is written, so a ROS
    /// node keeps receiving `/clock` with a time that stands still, as it does from
    /// a paused Gazebo; tools that watch the rate (`ros2 topic hz`) see the clock
    /// alive. false: a paused message whose time equals the last one written is
    /// skipped (counted in `repeats_skipped`); the node then sees `/clock` stop,
    /// and one that joins during the pause still gets the time if the durability
    /// is transient local.
    bool repeat_while_paused = true;
};

/// A ClockSink that publishes ClockPublisher messages as ROS 2 `/clock` on a DDS
/// domain: the time source's time, split into `sec` and `nanosec`.
///
/// What a ROS 2 node sees: with `use_sim_time` its clock is this time. The
/// message has no paused flag; while simsync is paused the node sees the frozen
/// time repeated (see Ros2ClockSinkConfig::repeat_while_paused): its `now()`
/// stands still, timers on the ROS clock do not fire, and time continues from
/// the frozen value on resume (with the `sim` source; wall-clock sources such as
/// `simulation` show the time that passed during the pause as one step).
///
/// Cost of `publish`, on the caller's thread (for a ClockPublisher: the thread
/// that steps the world for ticks, the publisher's event loop for paused
/// messages, the add_sink caller for a late joiner's first message): the time
/// conversion and one `dds_write` of 12 bytes, in which Cyclone serialises the
/// sample and sends one UDP datagram per matched remote reader (and copies it
/// into matched readers of this process). It never waits on a reader: with the
/// default keep-last-1 history the writer's cache holds one sample, so a slow or
/// stopped reliable reader cannot fill it (Cyclone replaces the unacknowledged
/// sample; that reader misses a time, as a best-effort one would), and the
/// writer's max_blocking_time is 0, so with a deeper history a full cache drops
/// the sample (counted in `dropped`) instead of blocking.
///
/// Errors: a time before 0 or beyond `int32 sec` (to_ros_time_checked) is never
/// wrapped: `publish` throws simsync::Error naming the time and writes nothing
/// (ClockPublisher counts it in sink_failures; here in `out_of_range`). A write
/// that Cyclone refuses is counted in `dropped` and described by `last_error`,
/// not thrown: the publisher (and the stepping thread it runs on) goes on.
///
/// Copy/move: neither. Thread safety: distinct objects: safe. Shared objects:
/// `publish` and `write` from one thread at a time (ClockPublisher guarantees
/// this); counters, `matched_readers`, `wait_for_readers` and `last_error` from
/// any thread.
class Ros2ClockSink final : public ClockSink {
public:
    /// Creates the topic and writer in `participant`.
    /// @throws simsync::Error: invalid_argument if `participant` is null, the
    ///         topic is empty or the QoS is invalid; invalid_state if Cyclone
    ///         cannot create the topic or writer (naming the topic and reason).
    explicit Ros2ClockSink(std::shared_ptr<Participant> participant, Ros2ClockSinkConfig config = {});
    ~Ros2ClockSink() override;
    Ros2ClockSink(const Ros2ClockSink&) = delete;
    Ros2ClockSink& operator=(const Ros2ClockSink&) = delete;

    /// Writes `message.time` (see the class comment for pauses and errors).
    void publish(const ClockMessage& message) override;
    /// Writes one time, outside any ClockPublisher (a host that publishes its own
    /// time; tests). @throws simsync::Error as `publish` for a time out of range.
    void write(SourceTime t);

    const Ros2ClockSinkConfig& config() const noexcept;
    /// Samples handed to Cyclone successfully.
    std::uint64_t written() const noexcept;
    /// Writes Cyclone refused (see last_error).
    std::uint64_t dropped() const noexcept;
    /// Times refused for being out of ROS 2's range.
    std::uint64_t out_of_range() const noexcept;
    /// Paused repeats skipped (repeat_while_paused = false).
    std::uint64_t repeats_skipped() const noexcept;
    /// The last refusal (out of range or Cyclone's), empty if none.
    std::string last_error() const;

    /// Readers currently matched (in any process).
    std::size_t matched_readers() const;
    /// Blocks until at least `count` readers are matched or `timeout` passes.
    /// @return whether they are.
    bool wait_for_readers(std::size_t count, WallClock::duration timeout) const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

/// One `/clock` sample as the follower received it. A value type.
struct ClockSample {
    RosTime time;
    /// Steady wall time at which the follower took it from DDS.
    WallTime received;
    /// What the target time source did with it.
    ExternalTimeSource::Offer offer = ExternalTimeSource::Offer::advanced;
};

/// Configuration of a Ros2ClockFollower. A value type.
struct Ros2ClockFollowerConfig {
    std::string topic{kClockTopic};
    Qos qos = kClockReaderQos;
    /// Called for every valid sample, on the follower's thread, after the target
    /// source has been offered it and before the sample counts in `received()`
    /// (so a thread that waited for the count also sees what the callback did).
    /// Must not call `stop` or destroy the follower. Optional.
    std::function<void(const ClockSample&)> on_sample{};
};

/// Follows an outside ROS 2 clock: subscribes to `/clock` and offers every
/// sample's time to an ExternalTimeSource, so a simsync host (its clock
/// publisher, its stamps, anything reading that source) follows the time of a
/// ROS 2 simulation instead of leading it.
///
/// Monotonic: the source never runs backwards. When the outside clock jumps back
/// (ROS allows it: a simulator reset, a looping bag), the source holds its time
/// until the outside clock passes it again; the jump is counted and reported by
/// the source (ExternalTimeSource::backward_jumps, last_backward_jump,
/// on_backward_jump), which is where a host reacts to a reset.
/// A sample that is not a valid ROS 2 time (negative seconds, nanoseconds >= 1e9)
/// is ignored and counted in `invalid`.
///
/// It runs one thread of its own, which waits on a Cyclone waitset and takes the
/// samples; `on_sample` runs there.
///
/// Copy/move: neither. Thread safety: distinct objects: safe. Shared objects:
/// every member from any thread except `stop` and the destructor from
/// `on_sample`.
class Ros2ClockFollower {
public:
    /// Subscribes in `participant` and starts the thread. `target` must outlive
    /// the follower.
    /// @throws simsync::Error: invalid_argument if `participant` is null or the
    ///         topic is empty; invalid_state if Cyclone cannot create the reader.
    Ros2ClockFollower(std::shared_ptr<Participant> participant, ExternalTimeSource& target,
                      Ros2ClockFollowerConfig config = {});
    /// Stops (as stop()).
    ~Ros2ClockFollower();
    Ros2ClockFollower(const Ros2ClockFollower&) = delete;
    Ros2ClockFollower& operator=(const Ros2ClockFollower&) = delete;

    /// Stops following: the thread ends, no sample is taken or offered any more,
    /// waits for samples return. The reader itself is deleted with the follower.
    /// Idempotent.
    void stop();

    const Ros2ClockFollowerConfig& config() const noexcept;
    /// Valid samples received (and offered to the target).
    std::uint64_t received() const noexcept;
    /// Samples ignored as invalid ROS 2 times.
    std::uint64_t invalid() const noexcept;
    /// The last valid sample, if any.
    std::optional<ClockSample> last_sample() const;

    /// Writers currently matched.
    std::size_t matched_writers() const;
    /// Blocks until at least `count` writers are matched or `timeout` passes.
    bool wait_for_writers(std::size_t count, WallClock::duration timeout) const;
    /// Blocks until `received() >= count` or `timeout` passes (or stop()).
    bool wait_for_samples(std::uint64_t count, WallClock::duration timeout) const;
    /// Blocks until the last valid sample's time is at least `t` or `timeout`
    /// passes (or stop()).
    bool wait_for_time(SourceTime t, WallClock::duration timeout) const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace simsync::dds
