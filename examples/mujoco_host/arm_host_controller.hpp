#pragma once
// simsync-mujoco-host's controller for the host kit: the control law
// (arm_controller.hpp) in the controller's exclusive access (ArmController),
// or in another process, simsync-mujoco-remote-controller, whose ctrl the host
// writes at the same instant (arm_remote_protocol, payloads: arm_wire.hpp).
// Example code, not library API.

#include "host_kit.hpp"
#include "remote_link.hpp"

#include <simsync/mujoco/mujoco.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace simsync::examples::mujoco_host {

// Hashes qpos, qvel and act at every tick and at the end (MujocoWorld::hash_state).
// Copy/move: value type. Thread safety: none (one access at a time).
class ArmController final : public host::Controller {
public:
    void record(const World& world) override;
    void act(World& world) override;
    // A remote controller's ctrl, written where act() writes its own.
    void apply(World& world, const std::vector<double>& ctrl);
    void finish(const World& world) override;
    const TrajectoryHash& hash() const override { return hash_; }
    std::string summary() const override;

private:
    TrajectoryHash hash_;
    std::uint64_t writes_ = 0;
    std::vector<double> last_ctrl_;
};

// The remote controller of the host: time, qpos and qvel out, ctrl back.
// `model_file`: the run's model file, "" for the arm compiled in, set once the
// world is made; a spawned controller is given it as --model.
host::RemoteProtocol arm_remote_protocol(std::shared_ptr<const std::string> model_file);

} // namespace simsync::examples::mujoco_host
