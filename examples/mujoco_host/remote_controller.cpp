// simsync-mujoco-remote-controller: simsync-mujoco-host's controller in a
// process of its own, the host kit's remote controller program
// (remote_participant.hpp) with the arm's control law (arm_controller.hpp): from
// the time, qpos and qvel the host sent, the ctrl that control() writes, sent
// back bit for bit (arm_wire.hpp). It loads the host's model: --model FILE, or
// the arm compiled in (the host's default); the host passes its own --model on
// to a controller it spawns.
//
// A program of its own rather than a mode of simsync-remote-controller: each
// links only its engine, so a build with one of Bullet or MuJoCo still has its
// host's remote controller.

#include "arm_wire.hpp"
#include "embedded_model.hpp"
#include "remote_participant.hpp"

#include <simsync/core/error.hpp>
#include <simsync/mujoco/mujoco.hpp>

#include <memory>

int main(int argc, char** argv)
{
    namespace ex = simsync::examples;
    namespace mh = simsync::examples::mujoco_host;
    using simsync::mujoco::MujocoWorld;
    // The model, loaded once the options are read; its mjData is the scratch
    // the control law reads and writes.
    auto world = std::make_shared<std::unique_ptr<MujocoWorld>>();
    ex::host::RemoteControllerProgram p;
    p.program = "simsync-mujoco-remote-controller";
    p.summary = "simsync-mujoco-host's controller (100 Hz, writes every actuator's ctrl) in a process of its own.";
    p.synopsis_tail = " [--model FILE]";
    p.add_options = [](ex::CommandLine& cli) {
        cli.options.add_options()("model", ex::po::value<std::string>()->value_name("FILE"),
                                  "the host's MJCF model (default: the arm compiled in, the host's default)");
    };
    p.prepare = [world](const ex::po::variables_map& v) {
        if (v.count("model") != 0) {
            try {
                *world = std::make_unique<MujocoWorld>(simsync::mujoco::MjcfFile{v["model"].as<std::string>()});
            } catch (const simsync::Error& e) {
                throw simsync::Error(simsync::errc::invalid_argument, std::string("--model: ") + e.what());
            }
        } else {
            *world = std::make_unique<MujocoWorld>(simsync::mujoco::MjcfText{mh::kEmbeddedModel, "arm.xml"});
        }
        return mh::arm_wire((*world)->model());
    };
    p.command = [world](const ex::host::ObservationFrame& frame) {
        return mh::arm_command((*world)->model(), (*world)->data(), frame.values);
    };
    return ex::host::run_remote_controller(p, argc, argv);
}
