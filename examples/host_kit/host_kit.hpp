#pragma once
// What a physics host repeats whatever its engine, written once: the command
// line (the Bullet host's option names and meanings), the scenario (handler,
// time, pacer, clock), the participants (a controller at 100 Hz that writes, three
// sensors at 200 / 30 / 10 Hz that read, inline systems or threads), the
// no-threads reference loop, the pacer, the clock publisher, the operator
// (stdin, SIGINT/SIGTERM, --chaos), --trace, --web and the summary ending in
// `trajectory_hash=<16 hex digits>`. A host supplies its engine (HostEngine)
// and calls run_host from main. Example code, not library API.
//
// The trajectory hash is the controller's: the world's exact state at each of
// its ticks and at the end. It is the same whatever the thread timing, and
// equal to --no-threads, where main's thread steps the world itself and calls
// the controller and the sensors at the instants the handler would grant them,
// in the handler's order at an instant.
//
// simsync-mujoco-host is built on it; simsync-bullet-host still has its own
// copy of these parts (with its remote controller), to move here next.

#include "command_line.hpp"

#include <simsync/simsync.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace simsync::web {
class SceneSource;
}

namespace simsync::examples::host {

// The host's controller, called inside its exclusive access (or by the
// reference loop): record() adds the world's state to the trajectory hash,
// act() writes the world, tick() is both; finish() records the state at the end.
// Copy/move: the engine's choice. Thread safety: none (one access at a time).
class Controller {
public:
    virtual ~Controller() = default;
    virtual void record(const World& world) = 0;
    virtual void act(World& world) = 0;
    void tick(World& world)
    {
        record(world);
        act(world);
    }
    virtual void finish(const World& world) = 0;
    virtual const TrajectoryHash& hash() const = 0;
    // What the summary prints in the controller's row (e.g. "pushes 500, ...").
    virtual std::string summary() const = 0;
};

// The engine of a host. Its members are called by run_host on main's thread,
// except make_controller's object and read_sensor, which run inside accesses
// (read_sensor concurrently with itself, from shared accesses: it must only read).
struct HostEngine {
    std::string program; // "simsync-mujoco-host"
    std::string summary; // --help's lines under the usage line
    // Options of this engine (e.g. --model), added to the common ones.
    std::function<void(po::options_description&)> add_options;
    // The scenario without --config; its world section (if any) is of `world_type`.
    std::string default_scenario;
    std::string world_type;
    // Checks a `world:` section of world_type at load (errors at file:line:column).
    ConfigValidator validate_world;
    // Builds the world of one run from the scenario's world section (null if it
    // has none) and the options; the world it returns lives for that run. It is
    // built once more at load, to report a bad world with exit 2.
    // @throws simsync::Error (a ConfigError names its place).
    std::function<std::unique_ptr<World>(const ConfigNode* world, const po::variables_map& options)> make_world;
    // The handler step the world needs, if it decides it (a MuJoCo model's
    // timestep); `configured` is the scenario's handler.step if it sets one.
    // @throws simsync::Error naming both if they disagree.
    std::function<std::optional<SimDuration>(const World& world, std::optional<SimDuration> configured)> world_step;
    std::function<std::unique_ptr<Controller>(const World& world)> make_controller;
    // A sensor's reading, as the summary prints it ("mean height 0.42 m").
    std::function<std::string(const World& world)> read_sensor;
    // One line about the world for the program's first line ("arm.xml: 2 actuators").
    std::function<std::string(const World& world)> describe;
    // How the web console draws the world (with --web; empty: no picture).
    std::function<std::shared_ptr<const web::SceneSource>(const World& world)> make_scene;
};

// The program: parses argv, loads the scenario, runs, prints the summary.
// Returns main's exit status: 0 done, 1 a failure while running, 2 a bad option
// or scenario (named on stderr).
int run_host(const HostEngine& engine, int argc, char** argv);

} // namespace simsync::examples::host
