#include "arm_host_controller.hpp"

#include "arm_controller.hpp"
#include "arm_wire.hpp"

#include <cstdio>

namespace simsync::examples::mujoco_host {

using mujoco::MujocoWorld;

namespace {
const MujocoWorld& as_mujoco(const World& world) { return dynamic_cast<const MujocoWorld&>(world); }
MujocoWorld& as_mujoco(World& world) { return dynamic_cast<MujocoWorld&>(world); }
} // namespace

void ArmController::record(const World& world) { as_mujoco(world).hash_state(hash_); }

void ArmController::act(World& world)
{
    MujocoWorld& w = as_mujoco(world);
    control(w.model(), w.data());
    ++writes_;
}

void ArmController::apply(World& world, const std::vector<double>& ctrl)
{
    MujocoWorld& w = as_mujoco(world);
    apply_arm_command(w.model(), w.data(), ctrl);
    ++writes_;
}

void ArmController::finish(const World& world)
{
    record(world);
    const mjData& d = as_mujoco(world).data();
    last_ctrl_.assign(d.ctrl, d.ctrl + as_mujoco(world).model().nu);
}

std::string ArmController::summary() const
{
    std::string s = "ctrl writes " + std::to_string(writes_) + ", last ctrl (";
    char value[32];
    for (std::size_t i = 0; i < last_ctrl_.size() && i < 4; ++i) {
        std::snprintf(value, sizeof value, "%s%.3f", i == 0 ? "" : ", ", last_ctrl_[i]);
        s += value;
    }
    return s + (last_ctrl_.size() > 4 ? ", ...)" : ")");
}

host::RemoteProtocol arm_remote_protocol(std::shared_ptr<const std::string> model_file)
{
    host::RemoteProtocol p;
    p.host_program = "simsync-mujoco-host";
    p.controller_program = "simsync-mujoco-remote-controller";
    p.format = [](const World& world) { return arm_wire(as_mujoco(world).model()); };
    p.observe = [](const host::Controller&, const World& world, host::ObservationFrame& frame) {
        frame.values = arm_observation(as_mujoco(world).model(), as_mujoco(world).data());
    };
    p.apply = [](host::Controller& c, World& world, const std::vector<double>& ctrl) {
        dynamic_cast<ArmController&>(c).apply(world, ctrl);
    };
    p.controller_args = [model_file] {
        return model_file->empty() ? std::vector<std::string>{} : std::vector<std::string>{"--model", *model_file};
    };
    return p;
}

} // namespace simsync::examples::mujoco_host
