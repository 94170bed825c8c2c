#pragma once
// The payloads between simsync-bullet-host and simsync-remote-controller: the
// observation the host sends with each grant to the remote controller, and the
// command it sends back with the release. Free of DDS (the remote participants'
// transport carries them as opaque bytes: BridgeConfig::grant_payload /
// apply_release, RemoteAccess::payload / release).
//
// The frame is the host kit's (examples/host_kit/remote_wire.hpp: header,
// granted and end times, flags, then doubles, bit for bit); this file is what
// the Bullet host puts in it (kBulletWire):
//
//   observation (host -> controller), 144 bytes:
//    24  u8     flags        bit 0 final, bit 1 awake; other bits 0
//    32  f64    mass (kg)
//    40  f64[3] position (m)
//    64  f64[4] orientation (quaternion x, y, z, w)
//    96  f64[3] linear velocity (m/s)
//   120  f64[3] angular velocity (rad/s)
//
//   command (controller -> host), 40 bytes:
//    16  f64[3] impulse (N s), applied to the pushed body at that instant
//
// Refusals are the kit's named WireErrors. Example code, not library API.

#include "controller.hpp"
#include "remote_wire.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace simsync::examples::bullet_host {

using host::kWireVersion;
using host::to_string;
using host::WireDecoded;
using host::WireError;
using host::WireErrorCounts;
using host::kWireErrorCount;

inline constexpr std::array<std::uint8_t, 4> kWireMagic{'S', 'S', 'B', 'C'};
inline constexpr std::uint8_t kAwakeFlag = 0x02;
// 14 doubles out (mass, position, orientation, velocities), 3 back (the impulse).
inline constexpr host::WireFormat kBulletWire{kWireMagic, 14, 3, kAwakeFlag};
inline constexpr std::size_t kObservationSize = 144;
inline constexpr std::size_t kCommandSize = 40;
static_assert(kBulletWire.observation_size() == kObservationSize && kBulletWire.command_size() == kCommandSize);

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

// The observation's and the command's doubles, in the order above.
host::ObservationFrame to_frame(const Observation& observation);
Observation from_frame(const host::ObservationFrame& frame);

std::vector<std::uint8_t> encode(const Observation& observation);
std::vector<std::uint8_t> encode(const Command& command);
// Never throw (only std::bad_alloc), for any input.
WireDecoded<Observation> decode_observation(std::span<const std::uint8_t> bytes);
WireDecoded<Command> decode_command(std::span<const std::uint8_t> bytes);

} // namespace simsync::examples::bullet_host
