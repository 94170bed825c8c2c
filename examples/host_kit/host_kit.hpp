#pragma once
// What a physics host repeats whatever its engine, written once: the command
// line (the Bullet host's option names and meanings), the scenario (handler,
// time, pacer, clock), the participants (a controller at 100 Hz that writes, three
// sensors at 200 / 30 / 10 Hz that read, inline systems or threads), the
// no-threads reference loop, the pacer, the clock publisher, the operator
// (stdin, SIGINT/SIGTERM, --chaos), --trace, --web and the summary ending in
// `trajectory_hash=<16 hex digits>`. A host supplies its engine (HostEngine)
// and calls run_host from main; offer_remote_controller (remote_options.hpp)
// adds --remote-controller. Example code, not library API.
//
// The trajectory hash is the controller's: the world's exact state at each of
// its ticks and at the end. It is the same whatever the thread timing, and
// equal to --no-threads, where main's thread steps the world itself and calls
// the controller and the sensors at the instants the handler would grant them,
// in the handler's order at an instant.
//
// simsync-bullet-host and simsync-mujoco-host are built on it.

#include "command_line.hpp"

#include <simsync/simsync.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace simsync::web {
class SceneSource;
}

namespace simsync::examples::host {

// The controller's accessor: its rate in simulated time, name and priority
// (first at an instant: the sensors have 0). A remote controller announces the
// same, so the handler orders it the same.
inline constexpr int kControllerHz = 100;
inline constexpr const char* kControllerName = "controller_100hz";
inline constexpr int kControllerPriority = 1;

// The controller's n-th request: its n-th 100 Hz instant while before `end`,
// then `end` itself (where the final state is recorded), then kSimTimeMax
// (there is no further request). A remote controller follows it too.
SimTime controller_instant(std::int64_t n, SimTime end);

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

// A controller in another process (--remote-controller; remote_link.hpp is the
// one both hosts use, given by offer_remote_controller): made after the
// handler, it registers the controller's accessor itself and serves it; the
// kit then runs no controller of its own. Called on main's thread (finish:
// after the handler stopped).
class RemoteController {
public:
    virtual ~RemoteController() = default;
    // Before the participants start: blocks until the controller has joined.
    // @throws std::exception naming why it did not (the run fails, exit 1).
    virtual void wait_joined() = 0;
    // At the end: true once its final access was served; false if it cannot
    // come any more (the kit then stops the handler: the run was cut short).
    virtual bool wait_done() = 0;
    struct Outcome {
        std::uint64_t grants = 0;
        SimTime last_grant{};
        std::string summary; // a line for the summary ("" = none)
        std::string failure; // why the run is not the controller's ("" = it is)
    };
    // `failure`: the kit's own finding so far ("" or "it ended before the end
    // of the run"); `quit`: the operator quit.
    virtual Outcome finish(const std::string& failure, bool quit) = 0;
};

// The engine of a host. Its members are called by run_host on main's thread,
// except what runs inside accesses: make_controller's object (the controller's
// thread, or a remote link's), read_sensor (the stepping thread or a sensor's
// own, concurrently with itself from shared accesses: it must only read) and
// make_scene's picture (the web console's sampler, in a shared access).
struct HostEngine {
    std::string program;       // "simsync-mujoco-host"
    std::string summary;       // --help's lines under the usage line
    std::string synopsis_tail; // options of the engine, for the usage line
    // Options of this engine (e.g. --model), added to the common ones, and
    // their check (report a bad one with option_error).
    std::function<void(CommandLine&)> add_options;
    std::function<void(const po::variables_map&)> check_options;
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
    // A line printed before a threaded run (e.g. where the remote controller
    // runs); "" = none.
    std::function<std::string(const po::variables_map& options)> plan_line;
    // How the web console draws the world (with --web; empty: no picture).
    std::function<std::shared_ptr<const web::SceneSource>(const World& world)> make_scene;
    // Whether the options ask for a remote controller (empty: never), and the
    // link that serves it, made after the handler. `seed`: for its random
    // delays. @throws std::exception (exit 1).
    std::function<bool(const po::variables_map& options)> wants_remote;
    std::function<std::unique_ptr<RemoteController>(SimSyncHandler& handler, Controller& controller, SimTime end,
                                                    std::uint64_t seed, const po::variables_map& options)>
        make_remote;
};

// The part of the hosts' embedded scenarios that is not the engine's: paced at
// 1x (pacer every 10 ms, bounded catch-up) and the clock publisher at 100 Hz to
// UDP 127.0.0.1:15555. A host's default_scenario is its handler and world
// sections followed by this.
inline constexpr const char* kRunScenario = R"(time:
  scale: 1.0
pacer:
  period: 10ms
  catch_up: bounded
  catch_up_limit: 100ms
clock:
  rate: 100         # the clock publisher: 100 Hz of simulated time
  sinks:
    - udp: 127.0.0.1:15555
)";

// The program: parses argv, loads the scenario, runs, prints the summary.
// Returns main's exit status: 0 done, 1 a failure while running, 2 a bad option
// or scenario (named on stderr).
int run_host(const HostEngine& engine, int argc, char** argv);

} // namespace simsync::examples::host
