#include "arm_controller.hpp"

#include <algorithm>
#include <cmath>

namespace simsync::examples::mujoco_host {

void control(const mjModel& m, mjData& d)
{
    constexpr double kTwoPi = 6.283185307179586;
    constexpr double kP = 30.0; // N m / rad
    constexpr double kD = 3.0;  // N m s / rad
    for (int i = 0; i < m.nu; ++i) {
        const double target = std::sin(kTwoPi * 0.25 * (i + 1) * d.time);
        double u = target;
        const int joint = m.actuator_trnid[2 * i];
        if (m.actuator_trntype[i] == mjTRN_JOINT &&
            (m.jnt_type[joint] == mjJNT_HINGE || m.jnt_type[joint] == mjJNT_SLIDE)) {
            u = kP * (target - d.qpos[m.jnt_qposadr[joint]]) - kD * d.qvel[m.jnt_dofadr[joint]];
        }
        const bool limited = m.actuator_ctrllimited[i] != 0;
        d.ctrl[i] = std::clamp(u, limited ? m.actuator_ctrlrange[2 * i] : -1.0,
                               limited ? m.actuator_ctrlrange[2 * i + 1] : 1.0);
    }
}

} // namespace simsync::examples::mujoco_host
