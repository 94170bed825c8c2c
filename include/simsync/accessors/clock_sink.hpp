#pragma once
/// @file
/// What a clock publisher sends and where: ClockMessage, the ClockSink
/// interface and the sink that calls a function.

#include <simsync/clock/time_source.hpp>
#include <simsync/core/time.hpp>

#include <cstdint>
#include <functional>

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
/// one sink never concurrently and always in sequence order (one mutex of the
/// publisher is held around every delivery), but not always on the same thread:
///  - a tick on the thread that steps the world, right after the step (the
///    publisher is an inline system; with StepThread::host, the host thread);
///    a first tick due at once on the publisher's executor thread;
///  - a paused message on the publisher's executor thread (its EventLoop);
///  - the first call after ClockPublisher::add_sink (the last message, for a
///    late joiner) on the thread calling add_sink.
/// A sink that makes its own thread step (a paused message's sink that calls
/// step or resume) gets the ticks granted meanwhile right after it returns, on
/// that thread: never a nested call.
class ClockSink {
public:
    virtual ~ClockSink() = default;
    /// Delivers one message. Must not call the publisher's add_sink,
    /// add_callback or last_message (they would deadlock); stop() is fine (it
    /// only asks, see ClockPublisher::stop). Must not block: it runs on the
    /// stepping thread, so the simulation (every accessor, not only the
    /// clock) waits for it, and a lockstep clock holds simulated time at its
    /// next tick meanwhile. Non-blocking transports (UDP, a DDS write, a
    /// callback that queues) are the intended sinks. An exception escaping
    /// `publish` is caught and counted (ClockPublisher::sink_failures); the
    /// sink stays subscribed.
    virtual void publish(const ClockMessage& message) = 0;
};

/// A sink that calls a function, on the threads described at ClockSink (the
/// stepping thread for ticks, the executor's thread for paused messages, the
/// add_sink caller for a late joiner's first message).
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

} // namespace simsync
