#pragma once
// The payloads between simsync-mujoco-host and simsync-mujoco-remote-controller,
// in the host kit's frame (examples/host_kit/remote_wire.hpp), magic "SSMC".
// Their sizes are the model's, which both sides load (the host passes its
// --model FILE on to a controller it spawns; without one both run the arm
// compiled into them):
//
//   observation (host -> controller), 32 + 8 * (1 + nq + nv) bytes:
//    32  f64        MuJoCo's time (mjData::time: a sum of timesteps, not the
//                   granted time; the control law reads it)
//    40  f64[nq]    qpos
//        f64[nv]    qvel
//   command (controller -> host), 16 + 8 * nu bytes:
//    16  f64[nu]    ctrl, written to mjData::ctrl at the granted instant
//
// That is all control() reads and writes (arm_controller.hpp), so the remote
// command is the in-process one, bit for bit. A controller with a model of
// other sizes is refused (wrong_size); one of the same sizes but another model
// is not detected: the hash then differs from the reference. Example code,
// not library API.

#include "remote_wire.hpp"

#include <mujoco/mujoco.h>

#include <array>
#include <vector>

namespace simsync::examples::mujoco_host {

inline constexpr std::array<std::uint8_t, 4> kArmWireMagic{'S', 'S', 'M', 'C'};

// The format of `model`'s payloads.
host::WireFormat arm_wire(const mjModel& model);
// The observation's values: time, qpos, qvel.
std::vector<double> arm_observation(const mjModel& model, const mjData& data);
// The controller's side: puts the observation's values into `scratch` (an
// mjData of the same model) and returns the ctrl that control() writes there.
// Precondition: `values` has arm_wire(model).observation_values elements.
std::vector<double> arm_command(const mjModel& model, mjData& scratch, const std::vector<double>& values);
// The host's side: writes a command's values to ctrl.
void apply_arm_command(const mjModel& model, mjData& data, const std::vector<double>& ctrl);

} // namespace simsync::examples::mujoco_host
