#pragma once
/// @file
/// The clock on UDP: the 32-byte datagram of docs/clock_udp.md and the sink
/// that sends it.

#include <simsync/accessors/clock_sink.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace simsync {

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
/// through Boost.Asio. Sending is synchronous (a UDP send does not wait for the
/// receiver) and best effort: a failed send is counted, never thrown on the
/// stepping thread.
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

} // namespace simsync
