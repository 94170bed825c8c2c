// simsync-bullet-host: a physics host as a user would write one.
//
// A Bullet world (100 boxes falling on a plane in four stacks) behind a
// SimSyncHandler with a 1 ms step, and four threads on its one simulated clock:
//   - a controller (lockstep, exclusive, 100 Hz) that pushes box_0 with an
//     impulse computed from where box_0 is (controller.hpp);
//   - three sensors (lockstep, shared, 200 / 30 / 10 Hz) that only read poses.
// The sensors are inline systems by default (--sensors inline, issue 11): their
// completions have no executor, so the thread that steps Bullet runs them right
// after the step, with no thread handoff; --sensors threads gives each its own
// thread instead. The hash is the same either way.
// At the end it prints a summary and one line `trajectory_hash=<16 hex digits>`:
// a hash of every body's exact state at each controller tick and at the end.
// The hash is the same whatever the thread timing (--jitter-us, --chaos), and the
// same as --no-threads, where this thread steps Bullet itself and applies the
// same controller at the same instants.
//
// The scenario (handler step, time scale, scene, pacer) comes from an embedded
// YAML file or from --config FILE (see sim_adapters/bullet/README.md). Unless
// --scale 0 (unpaced, as in simsync-demo), a RealTimePacer paces the run; it
// only holds time back, so the hash does not depend on it. An operator types pause, resume, step N,
// scale X, status, quit on stdin, as in simsync-demo (examples/support).
//
// Usage: simsync-bullet-host [--config FILE] [--duration DURATION] [--scale X]
//                            [--trace FILE] [--jitter-us N] [--seed S] [--chaos]
//                            [--host-steps] [--no-threads] [--sensors inline|threads]
//                            [--ros2-clock [DOMAIN]] [--ros2-network NET]
//                            [--web [HOST:]PORT [--web-cert FILE --web-key FILE | --web-insecure]]
//                            [--remote-controller spawn|wait ...]  (--help lists them)
//
// --web serves the live console in a browser: the bodies, the accessors, the
// timeline of grants, and the operator's controls (not with --no-threads).
//
// --remote-controller runs the controller in another process,
// simsync-remote-controller, over Cyclone DDS (remote_link.hpp): the host sends
// box_0's state with each of its grants and applies the impulse it sends back
// inside the same access, so the hash is the in-process one, bit for bit.

#include "chrome_trace.hpp"
#include "controller.hpp"
#include "command_line.hpp"
#include "operator_console.hpp"
#include "dds_security.hpp"
#include "pause_at_end.hpp"
#include "remote_link.hpp"
#include "ros2_clock.hpp"
#include "scenario_clock.hpp"
#include "stop_signals.hpp"
#include "web_options.hpp"

#include <simsync/asio.hpp>
#include <simsync/bullet/bullet.hpp>
#include <simsync/simsync.hpp>

#if SIMSYNC_EXAMPLES_WEB
#include "bullet_scene.hpp"

#include <simsync/web/web.hpp>
#endif

#include <algorithm>
#include <unistd.h>

#include <filesystem>
#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
namespace sb = simsync::bullet;
namespace bh = simsync::examples::bullet_host;
using bh::Controller;
using bh::kControllerHz;

namespace {

// The scenario without --config: 1 ms steps, paced at 1x, the default scene.
const char* const kDefaultScenario = R"(# simsync-bullet-host's embedded scenario
handler:
  step: 1ms
time:
  scale: 1.0
world:
  type: bullet
  preset: default   # 100 boxes (0.5 m, 1 kg) in four stacks on a ground plane
pacer:
  period: 10ms
  catch_up: bounded
  catch_up_limit: 100ms
clock:
  rate: 100         # the clock publisher: 100 Hz of simulated time
  sinks:
    - udp: 127.0.0.1:15555
)";

struct Options {
    std::string config_file;
    std::string trace_file;
    simsync::SimDuration duration = std::chrono::seconds(5);
    std::int64_t jitter_us = 0;
    std::optional<std::uint64_t> seed;
    simsync::examples::po::variables_map values; // --scale is applied from here
    bool no_threads = false;
    bool chaos = false;
    bool host_steps = false;
    bool inline_sensors = true; // --sensors inline (default) or threads
    // Test hook (--no-threads only): apply the push of this controller tick one
    // step late, to show that the hash notices a single-step slip.
    std::optional<std::int64_t> slip_tick;
    // --remote-controller: the controller in another process (remote_link.hpp).
    std::optional<bh::RemoteControllerOptions> remote;
};

simsync::examples::CommandLine command_line()
{
    namespace po = simsync::examples::po;
    simsync::examples::CommandLine cli;
    cli.program = "simsync-bullet-host";
    cli.synopsis = "[--config FILE] [--duration DURATION] [--scale X] [--trace FILE]\n"
                   "                           [--jitter-us N] [--seed S] [--chaos] [--host-steps] [--no-threads]\n"
                   "                           [--sensors inline|threads]\n"
                   "                           [--web [HOST:]PORT [--web-cert FILE --web-key FILE | --web-insecure]]\n"
                   "                           [--ros2-clock [DOMAIN]] [--ros2-network NET] [--ros2-security FILE]\n"
                   "                           [--remote-controller spawn|wait [--remote-domain ID] [--remote-network NET]\n"
                   "                            [--remote-tag TAG] [--remote-partition P] [--remote-delay-us MAX]\n"
                   "                            [--remote-program PATH] [--remote-join-timeout SECONDS]\n"
                   "                            [--remote-security FILE [--remote-controller-security FILE]]]";
    cli.summary = "A Bullet world behind a SimSyncHandler: a controller and three sensors on one simulated clock;\n"
                  "prints trajectory_hash=<16 hex digits>, the same for every thread timing.";
    cli.options.add_options()
        ("config", po::value<std::string>()->value_name("FILE"),
         "scenario YAML: handler, time, world (type bullet), pacer, clock (default: the embedded scenario)")
        ("duration",
         po::value<simsync::examples::DurationArgument>()
             ->value_name("DURATION")
             ->default_value(simsync::examples::DurationArgument{std::chrono::seconds(5)}, "5s"),
         (std::string("how long to run: ") + simsync::examples::kDurationHelp).c_str());
    simsync::examples::add_scale_option(cli.options);
    cli.options.add_options()
        ("trace", po::value<std::string>()->value_name("FILE"),
         "Chrome trace JSON of every access, its wait and its hold (Perfetto, chrome://tracing); the file is "
         "created at the start")
        ("jitter-us", po::value<std::int64_t>()->value_name("N")->default_value(0),
         "every accessor thread sleeps 0..N us before each request and inside each access")
        ("seed", po::value<std::string>()->value_name("S"),
         "seed of the jitter and chaos random numbers (default: fresh each run)")
        ("chaos", po::bool_switch(), "an operator thread pauses, steps, runs-until and resumes at random")
        ("host-steps", po::bool_switch(), "StepThread::host: only the main thread steps Bullet (handler.run())")
        ("no-threads", po::bool_switch(), "reference: step Bullet directly, same controller at the same instants")
        ("sensors", po::value<std::string>()->value_name("inline|threads")->default_value("inline"),
         "inline: the sensors run on the thread that steps, right after the step (no thread each);\n"
         "threads: one thread per sensor. The hash is the same either way");
    simsync::examples::add_web_options(cli.options);
    simsync::examples::add_ros2_clock_options(cli.options);
    po::options_description remote("remote controller (the controller in another process, over Cyclone DDS)");
    remote.add_options()
        ("remote-controller", po::value<std::string>()->value_name("spawn|wait"),
         "run the controller in a simsync-remote-controller process instead of a thread: spawn starts it as a "
         "child (its output goes to stderr); wait prints the command line to start it and waits for it. "
         "The hash is the in-process controller's")
        ("remote-domain", po::value<std::uint32_t>()->value_name("ID")->default_value(0),
         "DDS domain id of the remote controller, 0..232")
        ("remote-network", po::value<std::string>()->value_name("NET")->default_value("loopback"),
         "loopback (this machine only) or system (Cyclone's defaults: the network, multicast discovery)")
        ("remote-tag", po::value<std::string>()->value_name("TAG"),
         "Cyclone discovery tag shared with the controller (default: spawn: one unique to this run, so runs "
         "never meet; wait: none)")
        ("remote-partition", po::value<std::string>()->value_name("P")->default_value("simsync"),
         "DDS partition of the remote participants' topics")
        ("remote-delay-us", po::value<std::int64_t>()->value_name("MAX")->default_value(0),
         "spawn: the controller sleeps a random 0..MAX us before each request and inside each access "
         "(its --random-delay-us, seeded from --seed)")
        ("remote-program", po::value<std::string>()->value_name("PATH"),
         "spawn: the controller program (default: simsync-remote-controller beside this program)")
        ("remote-join-timeout", po::value<double>()->value_name("SECONDS")->default_value(30.0),
         "how long to wait for the controller to join");
    simsync::examples::add_dds_security_option(remote, "remote-security", "DDS Security for the host's Bridge");
    simsync::examples::add_dds_security_option(remote, "remote-controller-security",
                                               "spawn: DDS Security for the controller (its --security)");
    cli.options.add(remote);
    cli.hidden.add_options()("slip-tick", po::value<std::int64_t>(), "test hook of --no-threads");
    cli.hidden.add_options()("remote-xmit-loss", po::value<int>()->value_name("PER_MILLE"),
                             "fault test hook of --remote-controller: Cyclone DDS drops this many of every 1000 "
                             "packets that the host, and the controller it starts, send");
    cli.hidden.add_options()("remote-lease", po::value<double>()->value_name("SECONDS"),
                             "fault test hook of --remote-controller: the liveliness lease of the host and of the "
                             "controller it starts (default 1 s)");
    cli.epilogue = "stdin (one per line): pause, resume, step N, until T, scale X, revoke NAME, status, quit\n"
                   "Exit status: 0 done, 1 failure while running (with --remote-controller also: a command refused,\n"
                   "or the controller failed), 2 bad option or scenario.";
    return cli;
}

// --remote-* without --remote-controller, bad values, a build without the dds adapter.
void check_remote_options(const simsync::examples::po::variables_map& v)
{
    const bool remote = v.count("remote-controller") != 0;
    for (const char* name : {"remote-tag", "remote-program", "remote-xmit-loss", "remote-lease", "remote-security",
                             "remote-controller-security"}) {
        if (v.count(name) != 0 && !remote) simsync::examples::option_error(name, "only with --remote-controller");
    }
    for (const char* name : {"remote-domain", "remote-network", "remote-partition", "remote-delay-us",
                             "remote-join-timeout"}) {
        if (!v[name].defaulted() && !remote) simsync::examples::option_error(name, "only with --remote-controller");
    }
    if (!remote) return;
#if !SIMSYNC_BULLET_HOST_REMOTE
    simsync::examples::option_error("remote-controller", "this program was built without the dds adapter (Cyclone "
                                                         "DDS was not found at configure time; scripts/setup-deps "
                                                         "installs it)");
#endif
    const std::string& mode = v["remote-controller"].as<std::string>();
    if (mode != "spawn" && mode != "wait") {
        simsync::examples::option_error("remote-controller", "'" + mode + "' is neither 'spawn' nor 'wait'");
    }
    if (v["no-threads"].as<bool>()) simsync::examples::option_error("remote-controller", "not with --no-threads");
    if (v["remote-domain"].as<std::uint32_t>() > 232) simsync::examples::option_error("remote-domain", "expected 0..232");
    const std::string& net = v["remote-network"].as<std::string>();
    if (net != "loopback" && net != "system") {
        simsync::examples::option_error("remote-network", "expected loopback or system, got '" + net + "'");
    }
    if (v["remote-partition"].as<std::string>().empty()) simsync::examples::option_error("remote-partition", "empty");
    if (v["remote-delay-us"].as<std::int64_t>() < 0) simsync::examples::option_error("remote-delay-us", "must be >= 0");
    if (!v["remote-delay-us"].defaulted() && mode != "spawn") {
        simsync::examples::option_error("remote-delay-us", "only with --remote-controller spawn (else: the "
                                                           "controller's --random-delay-us)");
    }
    simsync::examples::check_dds_security_option(v, "remote-security");
    simsync::examples::check_dds_security_option(v, "remote-controller-security");
    if ((v.count("remote-security") != 0) != (v.count("remote-controller-security") != 0) && mode == "spawn") {
        simsync::examples::option_error(v.count("remote-security") != 0 ? "remote-security" : "remote-controller-security",
                                        "spawn needs both --remote-security and --remote-controller-security "
                                        "(a secured host matches only a secured controller)");
    }
    if (v.count("remote-controller-security") != 0 && mode != "spawn") {
        simsync::examples::option_error("remote-controller-security",
                                        "only with --remote-controller spawn (wait: give the controller its --security)");
    }
    if (v.count("remote-security") != 0 && v["remote-domain"].as<std::uint32_t>() > 230) {
        simsync::examples::option_error("remote-domain", "expected 0..230 with --remote-security");
    }
    if (v.count("remote-program") != 0 && mode != "spawn") {
        simsync::examples::option_error("remote-program", "only with --remote-controller spawn");
    }
    const double timeout = v["remote-join-timeout"].as<double>();
    if (!(timeout > 0 && timeout <= 86400)) simsync::examples::option_error("remote-join-timeout", "expected (0, 86400] s");
    if (v.count("remote-xmit-loss") != 0) {
        const int loss = v["remote-xmit-loss"].as<int>();
        if (loss < 0 || loss > 1000) simsync::examples::option_error("remote-xmit-loss", "expected 0..1000");
    }
    if (v.count("remote-lease") != 0) {
        const double lease = v["remote-lease"].as<double>();
        if (!(lease >= 0.01 && lease <= 86400)) simsync::examples::option_error("remote-lease", "expected [0.01, 86400] s");
    }
}

// The remote controller's options (after check_remote_options); the seed is set later.
std::optional<bh::RemoteControllerOptions> remote_options(const simsync::examples::po::variables_map& v, const char* argv0)
{
    if (v.count("remote-controller") == 0) return std::nullopt;
    bh::RemoteControllerOptions r;
    r.mode = v["remote-controller"].as<std::string>() == "spawn" ? bh::RemoteControllerOptions::Mode::spawn
                                                                 : bh::RemoteControllerOptions::Mode::wait;
    r.domain = v["remote-domain"].as<std::uint32_t>();
    r.loopback = v["remote-network"].as<std::string>() == "loopback";
    r.partition = v["remote-partition"].as<std::string>();
    r.delay_us = v["remote-delay-us"].as<std::int64_t>();
    r.join_timeout_s = v["remote-join-timeout"].as<double>();
    if (v.count("remote-xmit-loss") != 0) r.xmit_loss_per_mille = v["remote-xmit-loss"].as<int>();
    if (v.count("remote-lease") != 0) r.lease_s = v["remote-lease"].as<double>();
    r.security = simsync::examples::dds_security_file(v, "remote-security");
    r.controller_security = simsync::examples::dds_security_file(v, "remote-controller-security");
    if (v.count("remote-tag") != 0) {
        r.tag = v["remote-tag"].as<std::string>();
    } else if (r.mode == bh::RemoteControllerOptions::Mode::spawn) {
        std::random_device device;
        r.tag = "simsync-bullet-host-" + std::to_string(::getpid()) + "-" + std::to_string(device());
    }
    if (v.count("remote-program") != 0) {
        r.program = v["remote-program"].as<std::string>();
    } else {
        // Beside this program (the build tree, or the install's bin/).
        std::error_code ec;
        std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
        if (ec) self = argv0;
        r.program = (self.parent_path() / "simsync-remote-controller").string();
    }
    return r;
}

// Returns the options, or nullopt with the exit code (0 after --help, 2 after an error).
std::optional<Options> parse_options(int argc, char** argv, int& exit_code)
{
    namespace po = simsync::examples::po;
    Options o;
    auto values = simsync::examples::parse_command_line(argc, argv, command_line(), exit_code, [&](const po::variables_map& v) {
        simsync::examples::check_duration_option(v);
        simsync::examples::check_scale_option(v);
        simsync::examples::check_ros2_clock_options(v);
        if (v["jitter-us"].as<std::int64_t>() < 0) simsync::examples::option_error("jitter-us", "must be >= 0");
        if (v.count("seed") != 0) o.seed = simsync::examples::parse_unsigned_option("seed", v["seed"].as<std::string>());
        const std::string& sensors = v["sensors"].as<std::string>();
        if (sensors != "inline" && sensors != "threads") {
            simsync::examples::option_error("sensors", "'" + sensors + "' is neither 'inline' nor 'threads'");
        }
        if (v.count("trace") != 0 && v["no-threads"].as<bool>()) {
            simsync::examples::option_error("trace", "traces the accessors' threads: not with --no-threads");
        }
        if (v.count("slip-tick") != 0 && !v["no-threads"].as<bool>()) {
            simsync::examples::option_error("slip-tick", "a test hook of --no-threads");
        }
        check_remote_options(v);
        simsync::examples::check_web_options(v, v.count("config") != 0);
        if (v.count("web") != 0 && v["no-threads"].as<bool>()) {
            simsync::examples::option_error("web", "watches a handler: not with --no-threads");
        }
    });
    if (!values) return std::nullopt;
    const po::variables_map& v = *values;
    if (v.count("config") != 0) o.config_file = v["config"].as<std::string>();
    if (v.count("trace") != 0) o.trace_file = v["trace"].as<std::string>();
    o.duration = *simsync::examples::duration_option(v, "duration");
    o.jitter_us = v["jitter-us"].as<std::int64_t>();
    o.no_threads = v["no-threads"].as<bool>();
    o.chaos = v["chaos"].as<bool>();
    o.host_steps = v["host-steps"].as<bool>();
    o.inline_sensors = v["sensors"].as<std::string>() == "inline";
    if (v.count("slip-tick") != 0) o.slip_tick = v["slip-tick"].as<std::int64_t>();
    o.remote = remote_options(v, argv[0]);
    o.values = v;
    return o;
}

// What the scenario file (or the embedded one) and the options decide.
struct HostSetup {
    simsync::HandlerConfig handler;
    sb::SceneDescription scene;
    double scale = 1.0;
    bool paced = true;
    simsync::PacerSectionConfig pacer;
    simsync::ClockConfig clock;
    std::string time_source = "sim";
#if SIMSYNC_EXAMPLES_WEB
    std::optional<simsync::web::WebConsoleConfig> web; // --web and the scenario's web: section
#endif
};

// @throws simsync::ConfigError naming file:line:column and key.
HostSetup load_setup(const Options& options)
{
    const simsync::ConfigNode root = options.config_file.empty()
                                         ? simsync::ConfigNode::parse(kDefaultScenario, "<embedded scenario>")
                                         : simsync::ConfigNode::load_file(options.config_file);
    // The Bullet adapter's world type: a bad scene fails here, at its place.
    simsync::ScenarioExtensions extensions;
    sb::register_world_type(extensions);
    simsync::examples::register_ros2_clock_sink(extensions); // clock.sinks[i].ros2
    simsync::examples::register_web_section(extensions);     // web:
    const simsync::ScenarioConfig cfg = simsync::load_scenario(root, extensions);
    // This host runs its own controller and sensors (the reference loop must
    // know them), so a scenario that lists others would be silently ignored.
    if (auto n = root.find("accessors")) n->fail("simsync-bullet-host runs its own controller and sensors; remove this");
    if (auto n = root.find("timers")) n->fail("simsync-bullet-host runs no timers; remove this");
    HostSetup setup;
    setup.handler = cfg.handler;
    setup.scene = cfg.world ? sb::scene_from_config(*cfg.world) : sb::default_scene();
    if (setup.scene.bodies.empty() || !setup.scene.bodies.front().mass) {
        // The controller pushes the first body; a static or missing one cannot be pushed.
        (cfg.world ? *cfg.world : root).fail("the controller pushes the first body: the scene needs a dynamic one");
    }
    setup.scale = cfg.time_scale;
    setup.paced = cfg.pacer.enabled;
    setup.pacer = cfg.pacer;
    setup.clock = cfg.clock;
    if (auto ros2 = simsync::examples::ros2_clock_sink(options.values)) setup.clock.sinks.push_back(std::move(*ros2));
    setup.time_source = cfg.time_source;
    simsync::examples::apply_scale_option(options.values, setup.paced, setup.scale);
    if (options.host_steps) setup.handler.step_thread = simsync::StepThread::host;
#if SIMSYNC_EXAMPLES_WEB
    setup.web = simsync::examples::web_console_config(options.values, cfg, "simsync-bullet-host");
#endif
    return setup;
}

// A sensor's n-th request: its n-th instant (the run ends after the last one not
// beyond `end`). The controller's: controller_instant (controller.hpp), whose
// last access is at `end` itself, where it records the final state.
simsync::SimTime controller_or_sensor_instant(int rate_hz, std::int64_t n, simsync::SimTime end, bool is_controller)
{
    return is_controller ? bh::controller_instant(n, end) : bh::nth_instant(rate_hz, n);
}

double seconds(simsync::SimTime t) { return std::chrono::duration<double>(t.time_since_epoch()).count(); }

// What a sensor reads: poses only (const API), so it cannot perturb the world.
struct SensorReading {
    double mean_height = 0;
    std::size_t awake = 0;
};

SensorReading read_sensor(const sb::BulletWorld& world)
{
    SensorReading r;
    for (sb::BodyIndex i = 0; i < world.body_count(); ++i) {
        const sb::BodyState s = world.state(i);
        r.mean_height += s.pose.position.z;
        r.awake += s.awake ? 1 : 0;
    }
    r.mean_height /= static_cast<double>(world.body_count());
    return r;
}

struct Participant {
    std::string name;
    int rate_hz = 0;
    simsync::AccessMode mode = simsync::AccessMode::shared;
    int priority = 0;
    // Results, written by the participant's own thread, read after it joined.
    std::uint64_t grants = 0;
    simsync::SimTime last_grant{};
    simsync::WallClock::duration blocked{};
    SensorReading last_reading;
    std::vector<simsync::examples::TraceSpan> trace; // with --trace only
#if SIMSYNC_EXAMPLES_WEB
    simsync::web::GrantTimeline::Track* track = nullptr; // with --web only
#endif
};

// Sleeps a random 0..max_us microseconds; one per thread.
class Jitter {
public:
    Jitter(std::int64_t max_us, std::uint64_t seed) : max_us_(max_us), rng_(seed) {}
    void operator()()
    {
        if (max_us_ <= 0) return;
        std::uniform_int_distribution<std::int64_t> us(0, max_us_);
        std::this_thread::sleep_for(std::chrono::microseconds(us(rng_)));
    }

private:
    std::int64_t max_us_;
    std::mt19937_64 rng_;
};

std::uint64_t mix_seed(std::uint64_t seed, std::uint64_t stream)
{
    // splitmix64 step: independent-looking streams per thread from one seed.
    std::uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (stream + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

std::vector<Participant> make_participants()
{
    std::vector<Participant> p(4);
    p[0].name = bh::kControllerName, p[0].rate_hz = kControllerHz, p[0].mode = simsync::AccessMode::exclusive;
    p[0].priority = bh::kControllerPriority;
    p[1].name = "lidar_200hz", p[1].rate_hz = 200;
    p[2].name = "camera_30hz", p[2].rate_hz = 30;
    p[3].name = "gps_10hz", p[3].rate_hz = 10;
    return p;
}

struct ChaosStats {
    std::uint64_t pauses = 0;
    std::uint64_t steps = 0;
    std::uint64_t run_untils = 0;
};

struct RunResult {
    std::string hash;
    std::uint64_t steps = 0; // world steps when the controller recorded the end
    std::uint64_t steps_after_end = 0; // by an operator's step(n) once nobody held time
    std::uint64_t pushes = 0;
    sb::Vec3 pushed_position;
    std::vector<Participant> participants;
    ChaosStats chaos;
    bool quit = false;                         // the operator quit before the end
    int signal = 0;                            // ... by SIGINT or SIGTERM (its number), or 0
    simsync::SimTime reached{};                // simulated time when the run ended
    std::optional<simsync::PacerStats> pacer;  // if paced
    std::uint64_t clock_messages = 0;          // published by the clock publisher
    simsync::WallClock::time_point wall_start{};
    std::string remote_summary; // --remote-controller: what it sent, applied, refused
    std::string remote_failure; // --remote-controller: why the run is not the controller's ("" = it is)
};

// Reference: no handler, no threads. This thread steps Bullet and calls the
// controller and the sensors at the instants the handler would grant them, in the
// handler's order at one instant (controller first: priority 1).
RunResult run_without_threads(const Options& options, const HostSetup& setup, simsync::SimTime end)
{
    const simsync::SimDuration step = setup.handler.step;
    sb::BulletWorld world(setup.scene);
    Controller controller;
    std::vector<Participant> participants = make_participants(); // controller first: priority order
    std::vector<std::int64_t> next(participants.size(), 0);
    std::vector<bool> finished(participants.size(), false);
    simsync::SimTime slipped_push_at = simsync::kSimTimeMax;

    for (simsync::SimTime t = simsync::kSimStart;; t += step) {
        if (t == slipped_push_at) controller.push(world);
        // A participant faster than the step asks several times at one instant;
        // the handler grants repeats in rounds (everybody's n-th grant at t
        // before anybody's (n+1)-th), so this loop does too.
        for (bool granted = true; granted;) {
            granted = false;
            for (std::size_t i = 0; i < participants.size(); ++i) {
                Participant& p = participants[i];
                if (finished[i]) continue;
                const bool is_controller = p.mode == simsync::AccessMode::exclusive;
                const simsync::SimTime at = controller_or_sensor_instant(p.rate_hz, next[i], end, is_controller);
                if (at > end) {
                    finished[i] = true;
                    continue;
                }
                if (simsync::round_to_grid(at, step, setup.handler.rounding) != t) continue;
                if (is_controller) {
                    if (t == end) {
                        controller.finish(world);
                        finished[i] = true;
                    } else if (options.slip_tick && *options.slip_tick == next[i]) {
                        controller.record(world);
                        slipped_push_at = t + step;
                    } else {
                        controller.tick(world);
                    }
                } else {
                    p.last_reading = read_sensor(world);
                }
                ++p.grants;
                p.last_grant = t;
                ++next[i];
                granted = true;
            }
        }
        if (t >= end) break;
        world.step(step);
    }
    RunResult r;
    r.hash = controller.hash().hex();
    r.steps = controller.steps_at_end();
    r.pushes = controller.pushes();
    r.pushed_position = controller.last_position();
    r.participants = std::move(participants);
    r.reached = end;
    return r;
}

// The host as a user writes it: one thread per participant, all on the handler.
RunResult run_with_threads(const Options& options, const HostSetup& setup, simsync::SimTime end, std::uint64_t seed)
{
    const simsync::SimDuration step = setup.handler.step;
    sb::BulletWorld world(setup.scene); // must outlive the handler
    Controller controller;
    simsync::SimSyncHandler handler(world, setup.handler);
    simsync::TimeScale scale(setup.scale);
    const bool tracing = !options.trace_file.empty();

    std::vector<Participant> participants = make_participants();
    std::vector<simsync::Accessor> accessors;
    for (const Participant& p : participants) {
        // A remote controller is registered by the Bridge when it joins, with
        // the same name, options and priority: no local accessor for it.
        const bool remote_controller = options.remote && p.mode == simsync::AccessMode::exclusive;
        accessors.push_back(remote_controller
                                ? simsync::Accessor{}
                                : handler.register_accessor(p.name, {.kind = simsync::AccessorKind::lockstep,
                                                                     .mode = p.mode, .priority = p.priority,
                                                                     .first_request = simsync::kSimStart}));
    }
    // Time stops at the end, so the pacer (or the clock publisher) cannot run
    // the world past it while the participants finish their last requests
    // there (served while paused: a sensor that asks twice at the end is not
    // held back).
    simsync::examples::PauseAtEnd pause_at_end(handler, end, {});

    // The controller in another process: the Bridge serves it inside this
    // handler's accesses (remote_link.hpp). The sensors, registered above with
    // their first request at 0, hold time at 0 until it has joined.
#if SIMSYNC_BULLET_HOST_REMOTE
    std::optional<bh::RemoteControllerLink> remote;
    if (options.remote) {
        bh::RemoteControllerOptions ro = *options.remote;
        ro.seed = mix_seed(seed, 99);
        remote.emplace(handler, controller, end, ro);
        if (ro.mode == bh::RemoteControllerOptions::Mode::wait) {
            std::string command;
            for (const std::string& a : bh::remote_controller_command(ro)) command += (command.empty() ? "" : " ") + a;
            std::printf("waiting up to %g s for the remote controller: %s\n", ro.join_timeout_s, command.c_str());
            std::fflush(stdout);
        }
    }
#endif
    std::string remote_failure; // why the remote controller's run is not the controller's

    // Real time is one more accessor: it only holds time back, never touches the
    // world, so the trajectory (and its hash) is the same paced or not.
    // Both wait on wall time (deadlines, paused messages) on one event loop.
    simsync::EventLoop wall_loop;
    std::optional<simsync::RealTimePacer> pacer;
    if (setup.paced) {
        pacer.emplace(handler, scale, simsync::pacer_config(setup.pacer), wall_loop.executor());
    }

    // The clock publisher: one more lockstep accessor, an inline system run on
    // the stepping thread. It reads time only (shared access), so the
    // trajectory and its hash stay the same.
    simsync::examples::ClockSinkMakers sink_makers;
    simsync::examples::add_ros2_clock_maker(sink_makers);
    simsync::examples::ScenarioClock clock(handler, scale, setup.time_source, setup.clock, sink_makers,
                                           wall_loop.executor());

    std::atomic<bool> failed{false};
    std::atomic<bool> quitting{false};
    auto participant_thread = [&](std::size_t index) {
        Participant& p = participants[index];
        simsync::Accessor& accessor = accessors[index];
        Jitter jitter(options.jitter_us, mix_seed(seed, index));
        const bool is_controller = p.mode == simsync::AccessMode::exclusive;
        for (std::int64_t n = 0;; ++n) {
            const simsync::SimTime at = controller_or_sensor_instant(p.rate_hz, n, end, is_controller);
            if (at > end) break;
            jitter();
            const auto asked = std::chrono::steady_clock::now();
            simsync::Access access = accessor.request_access(at);
            const auto granted_at = std::chrono::steady_clock::now();
            p.blocked += granted_at - asked;
            if (!access && quitting.load()) break; // the operator quit: stopped
            if (!access) {
                std::fprintf(stderr, "%s: request at %s s refused: %s\n", p.name.c_str(),
                             simsync::format_seconds(at).c_str(), access.error().message().c_str());
                failed = true;
                break;
            }
            jitter();
            if (is_controller) {
                auto& w = access.world_as<sb::BulletWorld>();
                if (access.granted_time() < end) {
                    controller.tick(w);
                } else {
                    controller.finish(w);
                }
            } else {
                p.last_reading = read_sensor(access.world_as<const sb::BulletWorld>());
            }
            ++p.grants;
            p.last_grant = access.granted_time();
            const bool last = is_controller && access.granted_time() >= end;
            if (!last) access.release(controller_or_sensor_instant(p.rate_hz, n + 1, end, is_controller));
            if (tracing) p.trace.push_back({at, p.last_grant, asked, granted_at, std::chrono::steady_clock::now()});
#if SIMSYNC_EXAMPLES_WEB
            if (p.track != nullptr) {
                p.track->record({.requested = at, .granted = p.last_grant, .asked = asked, .granted_at = granted_at,
                                 .released = std::chrono::steady_clock::now()});
            }
#endif
            if (last) break;
        }
        accessor.deregister(); // let the others finish without us
    };

    // Inline sensors: no thread each. A sensor's completion runs on whichever
    // thread steps Bullet, right after the step; it reads, releases with its
    // next instant and asks for that one from inside the completion (the handler
    // runs the next completion after this one returns: the stack stays flat).
    // Jitter is for threads and does not apply here. The last sensor to finish
    // says so; finish() waits for that as it joins the threads.
    std::mutex sensors_mutex;
    std::condition_variable sensors_cv;
    std::size_t sensors_running = 0; // guarded by sensors_mutex
    std::function<void(std::size_t, std::int64_t)> request_inline = [&](std::size_t index, std::int64_t n) {
        Participant& p = participants[index];
        const simsync::SimTime at = controller_or_sensor_instant(p.rate_hz, n, end, false);
        const auto asked = std::chrono::steady_clock::now();
        accessors[index].async_request_access(at, simsync::run_inline([&, index, n, at, asked](std::error_code ec,
                                                                                               simsync::Access access) {
            Participant& q = participants[index];
            const auto granted_at = std::chrono::steady_clock::now();
            q.blocked += granted_at - asked;
            const simsync::SimTime next = controller_or_sensor_instant(q.rate_hz, n + 1, end, false);
            if (!ec) {
                q.last_reading = read_sensor(access.world_as<const sb::BulletWorld>());
                ++q.grants;
                q.last_grant = access.granted_time();
                access.release(next);
                if (tracing) {
                    q.trace.push_back({at, q.last_grant, asked, granted_at, std::chrono::steady_clock::now()});
                }
#if SIMSYNC_EXAMPLES_WEB
                if (q.track != nullptr) {
                    q.track->record({.requested = at, .granted = q.last_grant, .asked = asked,
                                     .granted_at = granted_at, .released = std::chrono::steady_clock::now()});
                }
#endif
                if (next <= end) return request_inline(index, n + 1);
            } else if (!quitting.load()) {
                std::fprintf(stderr, "%s: request at %s s refused: %s\n", q.name.c_str(),
                             simsync::format_seconds(at).c_str(), ec.message().c_str());
                failed = true;
            }
            std::lock_guard<std::mutex> g(sensors_mutex);
            if (--sensors_running == 0) sensors_cv.notify_all();
        }));
    };

    std::atomic<bool> done{false};
    ChaosStats chaos;
    // The operator: random pause, step(n), run_until and resume from outside,
    // without any accessor's cooperation. Always ends a round with resume(), so
    // the accessors can finish once it stops.
    auto chaos_thread = [&] {
        std::mt19937_64 rng(mix_seed(seed, 1000));
        std::uniform_int_distribution<int> wait_us(0, 3000);
        std::uniform_int_distribution<int> action(0, 2);
        std::uniform_int_distribution<int> count(1, 20);
        while (!done.load()) {
            std::this_thread::sleep_for(std::chrono::microseconds(wait_us(rng)));
            handler.pause();
            ++chaos.pauses;
            std::this_thread::sleep_for(std::chrono::microseconds(wait_us(rng)));
            switch (action(rng)) {
            case 0:
                handler.step(static_cast<std::uint64_t>(count(rng)));
                ++chaos.steps;
                break;
            case 1:
                handler.run_until(handler.now() + count(rng) * step);
                ++chaos.run_untils;
                break;
            default: break;
            }
            std::this_thread::sleep_for(std::chrono::microseconds(wait_us(rng)));
            handler.resume();
        }
    };

    // The web console: an observer of the handler (a free, shared accessor for
    // the picture, which never touches the world outside its access), fed the
    // participants' grants for its timeline.
#if SIMSYNC_EXAMPLES_WEB
    std::optional<simsync::web::GrantTimeline> timeline;
    std::optional<simsync::examples::BulletScene> scene;
    std::optional<simsync::web::WebConsole> web;
    if (setup.web) {
        timeline.emplace();
        for (Participant& p : participants) p.track = &timeline->add_track(p.name, simsync::to_string(p.mode));
        scene.emplace(setup.scene, std::vector<sb::BodyIndex>{0}); // the controller pushes the first body
        web.emplace(handler,
                    simsync::web::WebConsoleSources{.scale = &scale,
                                                    .pacer = pacer ? &*pacer : nullptr,
                                                    .scene = &*scene,
                                                    .timeline = &*timeline},
                    *setup.web);
        simsync::examples::print_web_console_url(web->url(), web->control_requires_token(), web->endpoint().host);
    }
#endif

#if SIMSYNC_BULLET_HOST_REMOTE
    if (remote) {
        remote->wait_joined();
        std::printf("remote controller joined\n");
        std::fflush(stdout);
    }
#endif
    const auto wall_start = simsync::WallClock::now();
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < participants.size(); ++i) {
        const bool is_sensor = participants[i].mode != simsync::AccessMode::exclusive;
        if (!is_sensor && options.remote) continue; // in its own process
        if (is_sensor && options.inline_sensors) {
            {
                std::lock_guard<std::mutex> g(sensors_mutex);
                ++sensors_running;
            }
            request_inline(i, 0);
        } else {
            threads.emplace_back(participant_thread, i);
        }
    }
    std::thread operator_thread;
    if (options.chaos) operator_thread = std::thread(chaos_thread);
    // The human operator (stdin). `quit` stops the handler: every waiting
    // request returns `stopped`, the participants end, the run ends early.
    // SIGINT and SIGTERM do what `quit` does.
    simsync::SimTime quit_at{};
    bool operator_quit = false; // guarded by quit_mutex
    std::mutex quit_mutex;
    auto quit_now = [&] {
        std::lock_guard<std::mutex> g(quit_mutex);
        if (quitting.exchange(true)) return;
        operator_quit = true;
        quit_at = handler.now();
        handler.stop();
    };
    simsync::examples::StopOnSignals signals([&](int) { quit_now(); });
    // The end of input is no quit: the run ends at --duration.
#if SIMSYNC_EXAMPLES_WEB
    const bool web_console = setup.web.has_value();
#else
    const bool web_console = false;
#endif
    simsync::examples::OperatorConsole console(handler, scale, quit_now,
                                               {.program = "simsync-bullet-host",
                                                .start_paused = setup.handler.start_paused,
                                                .web_console = web_console});

    std::optional<simsync::PacerStats> pacer_stats;
    std::uint64_t clock_messages = 0;
    std::optional<bh::RemoteControllerStats> remote_stats;
    auto finish = [&] {
#if SIMSYNC_BULLET_HOST_REMOTE
        // The remote controller's final access at the end ends its part; if it
        // cannot come (the child died, the controller left), stop the handler,
        // so the sensors it holds back end too.
        if (remote && !remote->wait_done()) {
            std::lock_guard<std::mutex> g(quit_mutex);
            if (!quitting.exchange(true)) {
                remote_failure = "it ended before the end of the run";
                handler.stop();
            }
        }
#endif
        for (auto& t : threads) t.join();
        {
            std::unique_lock<std::mutex> lock(sensors_mutex);
            sensors_cv.wait(lock, [&] { return sensors_running == 0; });
        }
        done = true;
        {
            std::lock_guard<std::mutex> g(quit_mutex);
            quitting = true; // a late `quit` from here on changes nothing
        }
        // Before the chaos thread is joined: if it resumed after the end, it
        // may be the thread stepping the clock publisher on (unpaced, nobody
        // else bounds time), and only stop() ends that.
        handler.stop();
        if (operator_thread.joinable()) operator_thread.join();
        if (pacer) pacer_stats = pacer->stats();
        console.stop();
#if SIMSYNC_EXAMPLES_WEB
        web.reset(); // before the pacer it reads
#endif
        pacer.reset();
        clock.stop();
        clock_messages = clock.published();
#if SIMSYNC_BULLET_HOST_REMOTE
        if (remote) remote_stats = remote->finish();
#endif
    };
    if (options.host_steps) {
        // Bullet is stepped on this thread only; another one waits for the end.
        std::thread finisher(finish);
        handler.run();
        finisher.join();
    } else {
        finish();
    }
    if (console.terminal()) std::printf("\n");
    if (auto failure = handler.failure()) std::rethrow_exception(failure);
    if (failed) throw std::runtime_error("an accessor's request was refused");
    const bool quit = operator_quit;
    // An operator's step(n) may move the world past the end (a step while paused
    // needs nobody's consent): reported, and outside the hash.
    RunResult r;
    r.hash = controller.hash().hex();
    // A remote controller that ended early cut the run short, as a quit does.
    const bool cut_short = quit || !remote_failure.empty();
    r.steps = cut_short ? world.steps() : controller.steps_at_end();
    r.steps_after_end = cut_short ? 0 : world.steps() - controller.steps_at_end();
    r.pushes = controller.pushes();
    r.pushed_position = controller.last_position();
    r.participants = std::move(participants);
    r.chaos = chaos;
    r.quit = quit;
    r.signal = signals.received();
    r.reached = quit ? quit_at : (cut_short ? handler.now() : end);
    r.pacer = pacer_stats;
    r.clock_messages = clock_messages;
    r.wall_start = wall_start;
    if (remote_stats) {
        const bh::RemoteControllerStats& rs = *remote_stats;
        Participant& p = r.participants.front(); // the controller
        p.grants = rs.grants;
        p.last_grant = rs.last_grant;
        if (!remote_failure.empty() && rs.child_status) {
            const int st = *rs.child_status;
            remote_failure = "simsync-remote-controller " +
                             (st > 128 ? "was killed by signal " + std::to_string(st - 128)
                                       : "exited with status " + std::to_string(st)) +
                             " before the end of the run";
        }
        if (remote_failure.empty() && rs.refused.total() > 0) {
            remote_failure = std::to_string(rs.refused.total()) + " command(s) refused, the first " + rs.first_refusal;
        }
        if (remote_failure.empty() && !quit && rs.child_status && *rs.child_status != 0) {
            remote_failure = "simsync-remote-controller exited with status " + std::to_string(*rs.child_status);
        }
        char line[160];
        std::snprintf(line, sizeof line, "remote controller: %llu observations sent, %llu commands applied, %llu refused",
                      static_cast<unsigned long long>(rs.grants), static_cast<unsigned long long>(rs.commands),
                      static_cast<unsigned long long>(rs.refused.total()));
        r.remote_summary = line;
        for (std::size_t i = 0; i < bh::kWireErrorCount; ++i) {
            if (rs.refused.by_reason[i] == 0) continue;
            r.remote_summary += std::string(" ") + bh::to_string(static_cast<bh::WireError>(i)) + "=" +
                                std::to_string(rs.refused.by_reason[i]);
        }
        if (rs.bridge_rejected > 0) {
            r.remote_summary += ", " + std::to_string(rs.bridge_rejected) + " samples dropped by the Bridge";
        }
    }
    r.remote_failure = remote_failure;
    return r;
}

} // namespace

int main(int argc, char** argv)
{
    int exit_code = 0;
    const std::optional<Options> parsed = parse_options(argc, argv, exit_code);
    if (!parsed) return exit_code;
    const Options& options = *parsed;
    HostSetup setup;
    try {
        setup = load_setup(options);
    } catch (const simsync::Error& e) { // ConfigError: file:line:column: key: what
        std::fprintf(stderr, "simsync-bullet-host: %s\n", e.what());
        return 2;
    } catch (const std::invalid_argument& e) { // the web console off loopback without TLS
        std::fprintf(stderr, "simsync-bullet-host: %s\n", e.what());
        return 2;
    }
    // Opened now: a path that cannot be written is refused before the run.
    std::optional<simsync::examples::ChromeTraceFile> trace;
    if (!options.trace_file.empty()) {
        try {
            trace.emplace(options.trace_file);
        } catch (const std::runtime_error& e) {
            std::fprintf(stderr, "simsync-bullet-host: --trace: %s\n", e.what());
            return 2;
        }
    }
    const simsync::SimDuration step = setup.handler.step;
    const simsync::SimTime end =
        simsync::round_to_grid(simsync::SimTime{options.duration}, step);
    if (end <= simsync::kSimStart) {
        std::fprintf(stderr, "simsync-bullet-host: --duration: shorter than one step (%s s)\n",
                     simsync::format_seconds(step).c_str());
        return 2;
    }
    std::random_device device;
    const std::uint64_t seed =
        options.seed ? *options.seed : (std::uint64_t{device()} << 32) | std::uint64_t{device()};

    std::printf("simsync-bullet-host: %s, %zu bodies, dt %s s, %s s simulated, Bullet %s precision, %s\n",
                options.no_threads ? "no threads (reference)"
                                   : (options.host_steps ? "host steps" : "any thread steps"),
                setup.scene.bodies.size(), simsync::format_seconds(simsync::SimTime{step}).c_str(),
                simsync::format_seconds(end).c_str(), sb::BulletWorld::double_precision() ? "double" : "float",
                options.config_file.empty() ? "embedded scenario" : options.config_file.c_str());
    if (!options.no_threads) {
        std::printf("sensors %s, jitter 0..%lld us, seed %llu, chaos %s, ",
                    options.inline_sensors ? "inline" : "on threads", static_cast<long long>(options.jitter_us),
                    static_cast<unsigned long long>(seed), options.chaos ? "on" : "off");
        if (setup.paced) {
            std::printf("paced at %gx (pacer period %s s)\n", setup.scale,
                        simsync::format_seconds(simsync::SimTime{setup.pacer.period}).c_str());
        } else {
            std::printf("unpaced\n");
        }
        std::printf("%s\n", simsync::examples::clock_plan_line(setup.clock, setup.time_source).c_str());
        if (const auto warning = simsync::examples::time_source_warning(setup.time_source, setup.clock)) {
            std::fprintf(stderr, "simsync-bullet-host: warning: %s\n", warning->c_str());
        }
        if (options.remote) {
            const bh::RemoteControllerOptions& ro = *options.remote;
            std::printf("controller in another process (%s): DDS domain %u, %s, partition %s, tag '%s'",
                        ro.mode == bh::RemoteControllerOptions::Mode::spawn ? "spawn" : "wait", ro.domain,
                        ro.loopback ? "loopback" : "system network", ro.partition.c_str(), ro.tag.c_str());
            if (ro.mode == bh::RemoteControllerOptions::Mode::spawn) {
                std::printf(", random delay 0..%lld us", static_cast<long long>(ro.delay_us));
            }
            std::printf("\n");
        }
        std::fflush(stdout);
    }

    const auto wall_start = std::chrono::steady_clock::now();
    RunResult result;
    try {
        result = options.no_threads ? run_without_threads(options, setup, end)
                                    : run_with_threads(options, setup, end, seed);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();

    std::printf("%-17s %-9s %5s %7s %13s %14s  %s\n", "accessor", "mode", "Hz", "grants", "last grant s",
                "in request ms", "reading at last grant");
    for (const Participant& p : result.participants) {
        char reading[96];
        if (p.mode == simsync::AccessMode::exclusive) {
            std::snprintf(reading, sizeof reading, "pushes %llu, box_0 at (%.3f, %.3f, %.3f)",
                          static_cast<unsigned long long>(result.pushes), result.pushed_position.x,
                          result.pushed_position.y, result.pushed_position.z);
        } else {
            std::snprintf(reading, sizeof reading, "mean height %.4f m, %zu awake", p.last_reading.mean_height,
                          p.last_reading.awake);
        }
        std::printf("%-17s %-9s %5d %7llu %13s %14.1f  %s\n", p.name.c_str(), simsync::to_string(p.mode), p.rate_hz,
                    static_cast<unsigned long long>(p.grants), simsync::format_seconds(p.last_grant).c_str(),
                    std::chrono::duration<double, std::milli>(p.blocked).count(), reading);
    }
    if (options.chaos) {
        std::printf("chaos: %llu pauses, %llu step(n), %llu run_until\n",
                    static_cast<unsigned long long>(result.chaos.pauses),
                    static_cast<unsigned long long>(result.chaos.steps),
                    static_cast<unsigned long long>(result.chaos.run_untils));
    }
    std::printf("steps %llu", static_cast<unsigned long long>(result.steps));
    if (result.steps_after_end > 0) {
        std::printf(" (+%llu by the operator after the end)", static_cast<unsigned long long>(result.steps_after_end));
    }
    std::printf(", wall %.3f s, real-time factor %.2f\n", wall, seconds(result.reached) / wall);
    if (result.pacer) std::printf("%s\n", simsync::examples::pacer_summary(*result.pacer).c_str());
    if (setup.clock.enabled && !options.no_threads) {
        std::printf("%s\n",
                    simsync::examples::clock_summary_line(setup.clock, setup.time_source, result.clock_messages).c_str());
    }
    if (trace) {
        std::vector<simsync::examples::TraceTrack> tracks;
        for (const Participant& p : result.participants) {
            tracks.push_back({p.name, simsync::to_string(p.mode), &p.trace});
        }
        try {
            trace->write(tracks, result.wall_start);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "error: %s\n", e.what());
            return 1;
        }
        std::printf("trace written to %s\n", trace->path().c_str());
    }
    if (result.quit) {
        std::printf("%s at %s s: the hash covers the run up to there only\n",
                    result.signal != 0 ? (std::string("ended by ") + simsync::examples::signal_name(result.signal)).c_str()
                                       : "quit by the operator",
                    simsync::format_seconds(result.reached).c_str());
    }
    if (!result.remote_summary.empty()) std::printf("%s\n", result.remote_summary.c_str());
    std::printf("trajectory_hash=%s\n", result.hash.c_str());
    if (!result.remote_failure.empty()) {
        std::fflush(stdout);
        std::fprintf(stderr, "simsync-bullet-host: remote controller: %s\n", result.remote_failure.c_str());
        return 1;
    }
    return 0;
}
