// mujoco_raw_loop: simsync-mujoco-host's trajectory without simsync. MuJoCo's C
// API alone: mj_loadXML, then a loop of mj_step that calls the host's control
// law (arm_controller.hpp) at the controller's instants, 100 Hz of simulated
// time rounded to the nearest step (ties up, as the handler rounds), and hashes
// qpos, qvel and act before each call and at the end, as the host's controller
// does. The host's hash must equal this program's for every thread timing: the
// proof that the handler adds or loses nothing (MujocoHost.Hash.*).
//
// Usage: mujoco_raw_loop [--model FILE] [--duration DURATION]  (a test program)

#include "arm_controller.hpp"
#include "command_line.hpp"
#include "embedded_model.hpp"

#include <simsync/core/time.hpp>
#include <simsync/core/trajectory_hash.hpp>

#include <mujoco/mujoco.h>

#include <cmath>
#include <cstdio>
#include <cstring>

namespace {

namespace ex = simsync::examples;

void add_state(simsync::TrajectoryHash& hash, const mjModel* m, const mjData* d)
{
    hash.add_bytes(d->qpos, sizeof(mjtNum) * static_cast<std::size_t>(m->nq));
    hash.add_bytes(d->qvel, sizeof(mjtNum) * static_cast<std::size_t>(m->nv));
    hash.add_bytes(d->act, sizeof(mjtNum) * static_cast<std::size_t>(m->na));
}

mjModel* load(const ex::po::variables_map& v)
{
    char error[1000] = "";
    if (v.count("model") != 0) return mj_loadXML(v["model"].as<std::string>().c_str(), nullptr, error, sizeof error);
    mjVFS* vfs = new mjVFS;
    mj_defaultVFS(vfs);
    const std::size_t size = std::strlen(simsync::examples::mujoco_host::kEmbeddedModel);
    mj_makeEmptyFileVFS(vfs, "arm.xml", static_cast<int>(size));
    std::memcpy(vfs->filedata[mj_findFileVFS(vfs, "arm.xml")], simsync::examples::mujoco_host::kEmbeddedModel, size);
    mjModel* m = mj_loadXML("arm.xml", vfs, error, sizeof error);
    mj_deleteVFS(vfs);
    delete vfs;
    if (m == nullptr) std::fprintf(stderr, "mujoco_raw_loop: %s\n", error);
    return m;
}

} // namespace

int main(int argc, char** argv)
{
    ex::CommandLine cli;
    cli.program = "mujoco_raw_loop";
    cli.synopsis = "[--model FILE] [--duration DURATION]";
    cli.summary = "simsync-mujoco-host's controller on a plain mj_step loop; prints trajectory_hash=<16 hex digits>.";
    cli.options.add_options()("model", ex::po::value<std::string>()->value_name("FILE"),
                              "MJCF model (default: the host's arm)")(
        "duration", ex::po::value<ex::DurationArgument>()->value_name("DURATION")->default_value(
                        ex::DurationArgument{std::chrono::seconds(5)}, "5s"),
        ex::kDurationHelp);
    int exit_code = 0;
    const auto values = ex::parse_command_line(argc, argv, cli, exit_code, ex::check_duration_option);
    if (!values) return exit_code;
    mjModel* m = load(*values);
    if (m == nullptr) return 2;
    mjData* d = mj_makeData(m);

    // Integer nanoseconds, as in simsync: the step, the end and each tick's step.
    const std::int64_t dt = std::llround(m->opt.timestep * 1e9);
    const std::int64_t duration = ex::duration_option(*values, "duration")->count();
    const std::int64_t end_steps = (duration + dt / 2) / dt; // nearest, ties up
    auto tick_step = [dt](std::int64_t n) { return (n * 10'000'000 + dt / 2) / dt; };
    simsync::TrajectoryHash hash;
    std::int64_t n = 0; // the next controller tick
    for (std::int64_t k = 0;; ++k) {
        if (k == end_steps) {
            add_state(hash, m, d);
            break;
        }
        // Several ticks may round to one step (a step coarser than 10 ms).
        for (; tick_step(n) == k && n * 10'000'000 < end_steps * dt; ++n) {
            add_state(hash, m, d);
            simsync::examples::mujoco_host::control(*m, *d);
        }
        mj_step(m, d);
    }
    std::printf("steps %lld\ntrajectory_hash=%s\n", static_cast<long long>(end_steps), hash.hex().c_str());
    mj_deleteData(d);
    mj_deleteModel(m);
    return 0;
}
