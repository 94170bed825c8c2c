#pragma once
// The control law of simsync-mujoco-host, one function for every place it runs
// (the host's controller accessor, its no-threads reference, bench_mujoco_host's
// raw mj_step loop), so they all write the same bits at the same instants.
// Example code, not library API.

#include <mujoco/mujoco.h>

namespace simsync::examples::mujoco_host {

// Writes every actuator's ctrl from the state: an actuator on a hinge or slide
// joint tracks a sine of MuJoCo's time (1 rad, 0.25 Hz for the first actuator,
// 0.5 Hz for the second, ...) with a PD law; any other actuator gets the sine
// itself. Each value is clamped to the actuator's ctrlrange, or to [-1, 1] when
// it has none, so any model's commands stay bounded. Reads qpos, qvel and time,
// writes ctrl only; a pure function of them.
void control(const mjModel& model, mjData& data);

} // namespace simsync::examples::mujoco_host
