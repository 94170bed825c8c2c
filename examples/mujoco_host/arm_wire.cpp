#include "arm_wire.hpp"

#include "arm_controller.hpp"

#include <algorithm>

namespace simsync::examples::mujoco_host {

host::WireFormat arm_wire(const mjModel& m)
{
    return {kArmWireMagic, static_cast<std::size_t>(1 + m.nq + m.nv), static_cast<std::size_t>(m.nu), 0};
}

std::vector<double> arm_observation(const mjModel& m, const mjData& d)
{
    std::vector<double> v;
    v.reserve(static_cast<std::size_t>(1 + m.nq + m.nv));
    v.push_back(d.time);
    v.insert(v.end(), d.qpos, d.qpos + m.nq);
    v.insert(v.end(), d.qvel, d.qvel + m.nv);
    return v;
}

std::vector<double> arm_command(const mjModel& m, mjData& d, const std::vector<double>& values)
{
    d.time = values[0];
    std::copy_n(values.begin() + 1, m.nq, d.qpos);
    std::copy_n(values.begin() + 1 + m.nq, m.nv, d.qvel);
    control(m, d);
    return {d.ctrl, d.ctrl + m.nu};
}

void apply_arm_command(const mjModel& m, mjData& d, const std::vector<double>& ctrl)
{
    std::copy_n(ctrl.begin(), m.nu, d.ctrl);
}

} // namespace simsync::examples::mujoco_host
