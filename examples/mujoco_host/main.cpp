// simsync-mujoco-host: a MuJoCo model behind a SimSyncHandler, with the roles
// and the options of simsync-bullet-host (examples/host_kit): a controller
// (lockstep, exclusive, 100 Hz) writes every actuator's ctrl from the state
// (arm_controller.hpp), three sensors (lockstep, shared, 200 / 30 / 10 Hz) read
// body heights and contacts, inline on the stepping thread or on threads of
// their own. It prints `trajectory_hash=<16 hex digits>`, a hash of qpos, qvel
// and act at every controller tick and at the end: the same for every thread
// timing, and the same as --no-threads, a plain mj_step loop that calls the
// same controller at the same instants.
//
// The model: the arm shipped beside this file (arm.xml, compiled in), the
// scenario's `world: {type: mujoco, model: FILE}`, or --model FILE. The
// handler's step is the model's opt.timestep; a scenario whose handler.step
// differs is refused, naming both.
// --help lists every option; they mean what they mean for simsync-bullet-host.
//
// --remote-controller runs the controller in another process,
// simsync-mujoco-remote-controller, over Cyclone DDS (the host kit's
// remote_link.hpp): the host sends MuJoCo's time, qpos and qvel with each of
// its grants and writes the ctrl it sends back inside the same access
// (arm_wire.hpp), so the hash is the in-process one, bit for bit.

#include "arm_host_controller.hpp"
#include "embedded_model.hpp"
#include "host_kit.hpp"
#include "remote_options.hpp"

#include <simsync/mujoco/mujoco.hpp>

#if SIMSYNC_EXAMPLES_WEB
#include "mujoco_scene.hpp"
#endif

#include <cstdio>
#include <filesystem>

namespace {
namespace host = simsync::examples::host;
namespace mh = simsync::examples::mujoco_host;
namespace po = simsync::examples::po;
using simsync::mujoco::MujocoWorld;

// What a sensor reads (const: it may not write): the mean height of the bodies
// other than the world, and the number of contacts, as mj_step computed them
// (of the state before its last integration: MujocoWorld's header says why).
std::string read_sensor(const simsync::World& world)
{
    const auto& w = dynamic_cast<const MujocoWorld&>(world);
    double height = 0;
    for (int b = 1; b < w.model().nbody; ++b) height += w.data().xpos[3 * b + 2];
    char text[64];
    std::snprintf(text, sizeof text, "mean height %.4f m, %d contacts",
                  w.model().nbody > 1 ? height / (w.model().nbody - 1) : 0.0, w.data().ncon);
    return text;
}

// The model file of the run ("" = the arm compiled in), which a spawned remote
// controller loads too.
std::unique_ptr<simsync::World> make_world(const simsync::ConfigNode* world, const po::variables_map& options,
                                           std::string& model_file)
{
    model_file.clear();
    if (options.count("model") != 0) {
        model_file = options["model"].as<std::string>();
        try {
            return std::make_unique<MujocoWorld>(simsync::mujoco::MjcfFile{options["model"].as<std::string>()});
        } catch (const simsync::Error& e) {
            throw simsync::Error(simsync::errc::invalid_argument, std::string("--model: ") + e.what());
        }
    }
    if (world && world->find("model")) {
        // Relative to the scenario file, as a user reading the file expects.
        const simsync::ConfigNode node = world->at("model");
        const std::filesystem::path path =
            std::filesystem::path(node.file()).parent_path() / std::filesystem::path(node.as_string());
        model_file = path.lexically_normal().string();
        try {
            return std::make_unique<MujocoWorld>(simsync::mujoco::MjcfFile{model_file});
        } catch (const simsync::Error& e) {
            node.fail(e.what());
        }
    }
    return std::make_unique<MujocoWorld>(simsync::mujoco::MjcfText{mh::kEmbeddedModel, "arm.xml"});
}

host::HostEngine engine()
{
    auto model_file = std::make_shared<std::string>();
    host::HostEngine e;
    e.program = "simsync-mujoco-host";
    e.summary = "A MuJoCo model behind a SimSyncHandler: a controller and three sensors on one simulated clock;\n"
                "prints trajectory_hash=<16 hex digits>, the same for every thread timing.";
    e.synopsis_tail = " [--model FILE]";
    e.add_options = [](simsync::examples::CommandLine& cli) {
        cli.options.add_options()("model", po::value<std::string>()->value_name("FILE"),
                                  "MJCF model (default: the scenario's world.model, else the arm shipped with this "
                                  "program); the handler's step is its opt.timestep");
    };
    e.default_scenario = host::kRunScenario; // no handler.step: the model's timestep
    e.world_type = "mujoco";
    e.validate_world = [](const simsync::ConfigNode& world) {
        world.allow_only({"type", "model"});
        if (auto model = world.find("model"); model && model->as_string().empty()) model->fail("an empty path");
    };
    e.make_world = [model_file](const simsync::ConfigNode* world, const po::variables_map& options) {
        return make_world(world, options, *model_file);
    };
    e.world_step = [](const simsync::World& world, std::optional<simsync::SimDuration> configured) {
        const auto& w = dynamic_cast<const MujocoWorld&>(world);
        if (configured) w.check_step(*configured);
        return std::optional<simsync::SimDuration>(w.timestep());
    };
    e.make_controller = [](const simsync::World&) { return std::make_unique<mh::ArmController>(); };
    e.read_sensor = read_sensor;
    e.describe = [](const simsync::World& world) {
        const auto& w = dynamic_cast<const MujocoWorld&>(world);
        return w.source() + ": " + std::to_string(w.model().nbody - 1) + " bodies, " + std::to_string(w.model().nu) +
               " actuators, MuJoCo " + simsync::mujoco::version();
    };
#if SIMSYNC_EXAMPLES_WEB
    e.make_scene = [](const simsync::World& world) {
        return std::make_shared<const mh::MujocoScene>(dynamic_cast<const MujocoWorld&>(world).model());
    };
#endif
    host::offer_remote_controller(e, mh::arm_remote_protocol(model_file));
    return e;
}

} // namespace

int main(int argc, char** argv) { return host::run_host(engine(), argc, argv); }
