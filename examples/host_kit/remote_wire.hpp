#pragma once
// The payloads between a host and its controller in another process (the host
// kit's --remote-controller): the observation the host sends with each grant
// and the command the controller sends back with the release. One frame for
// every engine; what an engine puts in it is its WireFormat (the Bullet host's:
// examples/bullet_host/controller_wire.hpp; the MuJoCo host's:
// examples/mujoco_host/arm_wire.hpp). Free of DDS (the remote participants'
// transport carries them as opaque bytes: BridgeConfig::grant_payload /
// apply_release, RemoteAccess::payload / release).
//
// Encoding, version 1. Every field is little-endian; a double is its IEEE 754
// binary64 bit pattern (std::bit_cast to uint64), so a value crosses unchanged,
// bit for bit (-0.0, subnormals included): the remote controller computes
// exactly what the in-process one computes. A format fixes the number of
// values of each message; a message of any other size is refused.
//
//   header (8 bytes), both messages:
//     0  u8[4]  magic, the engine's ("SSBC": Bullet, "SSMC": MuJoCo)
//     4  u16    version = 1
//     6  u16    type: 1 observation, 2 command
//
//   observation (host -> controller), 32 + 8 * observation_values bytes:
//     8  i64    granted_ns   the access's granted time
//    16  i64    end_ns       the run's end: the controller's last access is at it
//    24  u8     flags        bit 0 final (the access at end_ns: record only, send
//                            no command); the bits of the format's flag_mask are
//                            the engine's; other bits 0
//    25  u8[7]  reserved, 0
//    32  f64[observation_values]
//
//   command (controller -> host), 16 + 8 * command_values bytes:
//     8  i64    granted_ns   the granted time of the access it answers
//    16  f64[command_values]
//
// Decoding checks the size, magic, version, type, the reserved bits and that
// every double is finite, and refuses with a named WireError otherwise; what is
// refused is never applied. The host also refuses a command for another
// instant (stale_command), a command with the final access (unexpected_command)
// and an empty release at a tick (missing_command); the controller refuses an
// observation for another instant than its grant (stale_observation). Example
// code, not library API.

#include <simsync/core/time.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace simsync::examples::host {

inline constexpr std::uint16_t kWireVersion = 1;
inline constexpr std::size_t kObservationHeaderSize = 32; // bytes before the values
inline constexpr std::size_t kCommandHeaderSize = 16;
inline constexpr std::uint8_t kFinalFlag = 0x01;

enum class WireType : std::uint16_t { observation = 1, command = 2 };

// What an engine's messages hold: their magic, how many doubles each carries
// (a MuJoCo model's sizes decide them: both sides load the same model), and
// the observation flags of its own. A value type.
struct WireFormat {
    std::array<std::uint8_t, 4> magic{};
    std::size_t observation_values = 0;
    std::size_t command_values = 0;
    std::uint8_t flag_mask = 0; // engine flags (never bit 0)

    constexpr std::size_t observation_size() const noexcept { return kObservationHeaderSize + 8 * observation_values; }
    constexpr std::size_t command_size() const noexcept { return kCommandHeaderSize + 8 * command_values; }
};

// Why a payload was refused. Each is counted separately.
enum class WireError : std::uint8_t {
    wrong_size,          // not the size of its type (truncated, padded, empty, another model's)
    bad_magic,           // not this engine's magic: not a payload of this protocol
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
    // " wrong_size=1 stale_command=2" (the nonzero counts), "" if none.
    std::string text() const;
};

// The host's observation at one controller access.
struct ObservationFrame {
    SimTime granted{};
    SimTime end{};
    bool final = false;      // the access at `end`: no command is due
    std::uint8_t flags = 0;  // the engine's (within the format's flag_mask)
    std::vector<double> values;
};

// The controller's answer to one observation.
struct CommandFrame {
    SimTime granted{}; // echoes ObservationFrame::granted
    std::vector<double> values;
};

// A decoded payload or why not.
template <class T>
struct WireDecoded {
    std::optional<T> value;
    WireError error = WireError::wrong_size; // meaningful when !value
    explicit operator bool() const noexcept { return value.has_value(); }
};

// Precondition: the frame's values are as many as the format says.
std::vector<std::uint8_t> encode(const WireFormat& format, const ObservationFrame& observation);
std::vector<std::uint8_t> encode(const WireFormat& format, const CommandFrame& command);
// Never throw (only std::bad_alloc), for any input.
WireDecoded<ObservationFrame> decode_observation(const WireFormat& format, std::span<const std::uint8_t> bytes);
WireDecoded<CommandFrame> decode_command(const WireFormat& format, std::span<const std::uint8_t> bytes);

// The host's verdict on a release at the controller's access at `granted`
// (`final`: the access at the end, where none is due): the command to apply,
// or the refusal; neither for an empty final release.
struct CommandVerdict {
    std::optional<CommandFrame> command;
    std::optional<WireError> refused;
};
CommandVerdict accept_command(const WireFormat& format, SimTime granted, bool final,
                                         std::span<const std::uint8_t> bytes);

} // namespace simsync::examples::host
