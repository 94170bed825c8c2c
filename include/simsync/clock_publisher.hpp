#pragma once
/// @file
/// The clock publisher: a lockstep accessor on its own thread that publishes the
/// selected time source at a fixed rate of simulated time, to any number of sinks.

#include <simsync/handler.hpp>
#include <simsync/time.hpp>
#include <simsync/time_source.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>

namespace simsync {

/// One published clock message.
struct ClockMessage {
    /// 0 for the first message of a publisher, +1 for each message after it.
    std::uint64_t sequence = 0;
    /// The selected time source's time.
    SourceTime time{};
    /// The handler's simulation time: the granted tick, or while paused the
    /// time the simulation is paused at.
    SimTime sim_time{};
    /// True if the simulation was paused when the message was made.
    bool paused = false;

    friend bool operator==(const ClockMessage&, const ClockMessage&) = default;
};

/// Where clock messages go. Implement it for a transport of your own.
///
/// Copy/move: an interface. Thread safety: a ClockPublisher calls `publish` for
/// one sink never concurrently and always in sequence order: on the clock
/// thread, except that the first call after ClockPublisher::add_sink (the last
/// message, for a late joiner) is made on the thread calling add_sink.
class ClockSink {
public:
    virtual ~ClockSink() = default;
    /// Delivers one message. Must not call the publisher's add_sink,
    /// add_callback or last_message (they would deadlock; stop is fine); should be quick: the clock thread waits for it, and a
    /// lockstep clock holds simulated time at its next tick meanwhile. An
    /// exception escaping `publish` is caught and counted
    /// (ClockPublisher::sink_failures); the sink stays subscribed.
    virtual void publish(const ClockMessage& message) = 0;
};

/// A sink that calls a function, on the threads described at ClockSink (the
/// clock thread; the add_sink caller for a late joiner's first message).
/// Copy/move: neither. Thread safety: as ClockSink.
class CallbackClockSink final : public ClockSink {
public:
    using Callback = std::function<void(const ClockMessage&)>;
    /// @throws simsync::Error (invalid_argument) if `callback` is empty.
    explicit CallbackClockSink(Callback callback);
    void publish(const ClockMessage& message) override;

private:
    Callback callback_;
};

/// Size in bytes of a clock datagram (see docs/clock_udp.md).
inline constexpr std::size_t kClockDatagramSize = 32;
/// Version written in bytes 4-5 of a clock datagram.
inline constexpr std::uint16_t kClockDatagramVersion = 1;
/// Bit 0 of the flags field: the simulation is paused.
inline constexpr std::uint16_t kClockFlagPaused = 0x0001;

using ClockDatagram = std::array<std::byte, kClockDatagramSize>;

/// Encodes a message as the 32-byte little-endian datagram of docs/clock_udp.md.
/// The source time is split as to_ros_time does (saturating outside the int32
/// range of seconds).
ClockDatagram encode_clock_datagram(const ClockMessage& message) noexcept;

/// Decodes a clock datagram.
/// @throws simsync::Error (invalid_argument) if the size is not 32 bytes, the
///         magic is not `SSCK`, the version is not 1 or the nanoseconds are not
///         below 1e9; the message names the offending value.
ClockMessage decode_clock_datagram(std::span<const std::byte> datagram);

/// A sink that sends each message as one UDP datagram (docs/clock_udp.md)
/// through Boost.Asio. Sending is synchronous and best effort: a failed send is
/// counted, never thrown on the clock thread.
/// Copy/move: neither. Thread safety: distinct objects: safe. Shared objects:
/// `publish` as ClockSink says; `sent` and `send_errors` from any thread.
class UdpClockSink final : public ClockSink {
public:
    /// Resolves `host` (a name or a numeric address, IPv4 or IPv6) and opens a socket.
    /// @throws simsync::Error (invalid_argument) if the host does not resolve
    ///         or the socket cannot be opened; the message names host and port.
    UdpClockSink(const std::string& host, std::uint16_t port);
    ~UdpClockSink() override;
    UdpClockSink(const UdpClockSink&) = delete;
    UdpClockSink& operator=(const UdpClockSink&) = delete;

    void publish(const ClockMessage& message) override;

    std::uint64_t sent() const noexcept;
    std::uint64_t send_errors() const noexcept;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

/// Configuration of a ClockPublisher.
struct ClockPublisherConfig {
    /// The accessor's name (unique in the handler).
    std::string name = "clock";
    /// Publish period in simulated time (100 Hz). Ticks are at `n * period`
    /// (n >= 0), each rounded to the step grid by the handler. Must be > 0.
    SimDuration period = std::chrono::milliseconds(10);
    /// Priority of the clock accessor at an instant shared with other accessors.
    int priority = 0;
    /// While the simulation is paused, the wall-clock period of the paused
    /// messages. Zero: `period` read as wall time. Must be >= 0.
    WallClock::duration paused_period{0};
};

/// Publishes the time of a TimeSource at a fixed rate of simulated time, to any
/// number of sinks: the AWSIM ClockPublisher, built on the handler's public API.
///
/// It is a lockstep, shared-mode accessor (named "clock" by default) on a thread
/// of its own. For each tick `n * period` it requests access, reads the time
/// source during the access, releases naming the next tick (one atomic call, so
/// simulated time cannot slip past a tick unpublished), and then publishes to
/// every sink. So in a lockstep run every tick is published exactly once, in
/// order, with consecutive sequence numbers; the rate is independent of the
/// physics step. If `period` is shorter than the step, several consecutive ticks
/// round to the same grid instant and carry the same simulation time.
///
/// While the simulation is paused (and its next tick is not reachable) it keeps
/// publishing at `paused_period` of wall time, with the paused flag and the
/// frozen time: the source time and simulation time read when it noticed the
/// pause (re-read after a single step or any other operator action). Subscribers
/// see a pause rather than silence; sources that follow the wall clock
/// (`simulation`, `system`, `ros`) show the time that passed once it resumes.
///
/// Copy/move: neither. Thread safety: distinct objects: safe. Shared objects:
/// safe, every member from any thread.
/// Sinks: see ClockSink for which thread calls them. The handler, the time
/// source and the publisher's sinks must outlive the publisher (its destructor
/// stops the thread).
///
/// @code
/// simsync::SimTimeSource source(handler);
/// simsync::ClockPublisher clock(handler, source, {.period = 10ms});
/// clock.add_callback([](const simsync::ClockMessage& m) { ... }); // clock thread
/// clock.add_sink(std::make_unique<simsync::UdpClockSink>("127.0.0.1", 9870));
/// clock.start();
/// ...
/// clock.stop();
/// @endcode
class ClockPublisher {
public:
    /// @throws simsync::Error (invalid_argument) if `period <= 0` or
    ///         `paused_period < 0` (naming the value).
    ClockPublisher(SimSyncHandler& handler, const TimeSource& source, ClockPublisherConfig config = {});
    /// Stops the thread (as stop()). Not from one of its own sinks.
    ~ClockPublisher();
    ClockPublisher(const ClockPublisher&) = delete;
    ClockPublisher& operator=(const ClockPublisher&) = delete;

    /// Adds a sink, also while running. If a message was published already, the
    /// new sink gets the last one at once, on the calling thread, before this
    /// returns; then every later message.
    /// @throws simsync::Error (invalid_argument) if `sink` is null.
    void add_sink(std::unique_ptr<ClockSink> sink);
    /// Adds a CallbackClockSink.
    void add_callback(CallbackClockSink::Callback callback);

    /// Registers the clock accessor (it holds simulated time from now on) and
    /// starts the clock thread. The first tick is the first `n * period` at or
    /// after the handler's current time.
    /// @throws simsync::Error: invalid_state if started or stopped before;
    ///         duplicate_name if the name is taken in the handler.
    void start();
    /// Stops the clock thread and deregisters the accessor: prompt even while it
    /// waits for a tick or a pause; returns once the thread has ended (called
    /// from a sink, it only asks: the thread ends when the sink returns).
    /// Idempotent; also fine if never started. The thread also ends by itself
    /// when the handler stops.
    void stop();
    /// True from start() until the thread has ended (stop, handler stop).
    bool running() const noexcept;

    /// The last message published, if any.
    std::optional<ClockMessage> last_message() const;
    /// Number of messages published.
    std::uint64_t published() const noexcept;
    /// Number of exceptions caught from sinks.
    std::uint64_t sink_failures() const noexcept;
    const ClockPublisherConfig& config() const noexcept;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace simsync
