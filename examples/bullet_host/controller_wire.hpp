#pragma once
// The payloads between simsync-bullet-host and simsync-remote-controller: the
// observation the host sends with each grant to the remote controller, and the
// command it sends back with the release. Free of DDS (the remote participants'
// transport carries them as opaque bytes: BridgeConfig::grant_payload /
// apply_release, RemoteAccess::payload / release).
//
// Encoding, version 1. Every field is little-endian; a double is its IEEE 754
// binary64 bit pattern (std::bit_cast to uint64), so a value crosses unchanged,
// bit for bit (-0.0, subnormals included): the remote controller computes
// exactly what the in-process one computes. Fixed sizes; a message of any other
// size is refused.
//
//   header (8 bytes), both messages:
//     0  u8[4]  magic "SSBC" (simsync bullet controller)
//     4  u16    version = 1
//     6  u16    type: 1 observation, 2 command
//
//   observation (host -> controller), 144 bytes:
//     8  i64    granted_ns   the access's granted time
//    16  i64    end_ns       the run's end: the controller's last access is at it
//    24  u8     flags        bit 0 final (the access at end_ns: record only, send
//                            no command), bit 1 awake; other bits 0
//    25  u8[7]  reserved, 0
//    32  f64    mass (kg)
//    40  f64[3] position (m)
//    64  f64[4] orientation (quaternion x, y, z, w)
//    96  f64[3] linear velocity (m/s)
//   120  f64[3] angular velocity (rad/s)
//
//   command (controller -> host), 40 bytes:
//     8  i64    granted_ns   the granted time of the access it answers
//    16  f64[3] impulse (N s), applied to the pushed body at that instant
//
// Decoding checks the size, magic, version, type, the reserved bits and that
// every double is finite, and refuses with a named WireError otherwise; what is
// refused is never applied. The host also refuses a command for another
// instant (stale_command), a command with the final access (unexpected_command)
// and an empty release at a tick (missing_command); the controller refuses an
// observation for another instant than its grant (stale_observation). Example code, not library API.

#include "controller.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace simsync::examples::bullet_host {

inline constexpr std::array<std::uint8_t, 4> kWireMagic{'S', 'S', 'B', 'C'};
inline constexpr std::uint16_t kWireVersion = 1;
inline constexpr std::size_t kObservationSize = 144;
inline constexpr std::size_t kCommandSize = 40;

enum class WireType : std::uint16_t { observation = 1, command = 2 };

// Why a payload was refused. Each is counted separately.
enum class WireError : std::uint8_t {
    wrong_size,          // not the size of its type (truncated, padded, empty)
    bad_magic,           // not "SSBC": not a payload of this protocol
    unsupported_version, // a version this build does not speak
    wrong_type,          // an observation where a command belongs, or an unknown type
    reserved_bits,       // unknown flags or nonzero reserved bytes
    not_finite,          // a NaN or an infinity
    stale_command,       // host: a command for another instant than the access's
    unexpected_command,  // host: a command with the final access (none is due)
    missing_command,     // host: an empty release where a command is due
    stale_observation,   // controller: an observation for another instant than the grant's
};
inline constexpr std::size_t kWireErrorCount = 10;
const char* to_string(WireError error) noexcept;

// Counts of refused payloads, by reason. A value type.
struct WireErrorCounts {
    std::array<std::uint64_t, kWireErrorCount> by_reason{};
    void add(WireError e) noexcept { ++by_reason[static_cast<std::size_t>(e)]; }
    std::uint64_t operator[](WireError e) const noexcept { return by_reason[static_cast<std::size_t>(e)]; }
    std::uint64_t total() const noexcept;
};

// The host's observation at one controller access.
struct Observation {
    SimTime granted{};
    SimTime end{};
    bool final = false; // the access at `end`: no command is due
    PushObservation body;
};

// The controller's answer to one observation.
struct Command {
    SimTime granted{}; // echoes Observation::granted
    sb::Vec3 impulse;
};

// A decoded payload or why not.
template <class T>
struct WireDecoded {
    std::optional<T> value;
    WireError error = WireError::wrong_size; // meaningful when !value
    explicit operator bool() const noexcept { return value.has_value(); }
};

std::vector<std::uint8_t> encode(const Observation& observation);
std::vector<std::uint8_t> encode(const Command& command);
// Never throw (only std::bad_alloc), for any input.
WireDecoded<Observation> decode_observation(std::span<const std::uint8_t> bytes);
WireDecoded<Command> decode_command(std::span<const std::uint8_t> bytes);

} // namespace simsync::examples::bullet_host
