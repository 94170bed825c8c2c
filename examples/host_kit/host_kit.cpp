#include "host_kit.hpp"

#include "chrome_trace.hpp"
#include "operator_console.hpp"
#include "pause_at_end.hpp"
#include "ros2_clock.hpp"
#include "scenario_clock.hpp"
#include "stop_signals.hpp"
#include "web_options.hpp"

#include <simsync/core/asio.hpp>

#if SIMSYNC_EXAMPLES_WEB
#include <simsync/web/web.hpp>
#endif

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <optional>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

namespace simsync::examples::host {

namespace {

struct Options {
    std::string config_file;
    std::string trace_file;
    SimDuration duration = std::chrono::seconds(5);
    std::int64_t jitter_us = 0;
    std::optional<std::uint64_t> seed;
    po::variables_map values;
    bool no_threads = false;
    bool chaos = false;
    bool host_steps = false;
    bool inline_sensors = true;
    // Test hook (--no-threads only): this controller tick writes one step late,
    // to show that the hash notices a single-step slip.
    std::optional<std::int64_t> slip_tick;
};

CommandLine command_line(const HostEngine& engine)
{
    CommandLine cli;
    cli.program = engine.program;
    cli.synopsis = "[--config FILE] [--duration DURATION] [--scale X] [--trace FILE]\n"
                   "       [--jitter-us N] [--seed S] [--chaos] [--host-steps] [--no-threads]\n"
                   "       [--sensors inline|threads]\n"
                   "       [--web [HOST:]PORT [--web-cert FILE --web-key FILE | --web-insecure]]\n"
                   "       [--ros2-clock [DOMAIN]] [--ros2-network NET] [--ros2-security FILE]" +
                   engine.synopsis_tail;
    cli.summary = engine.summary;
    cli.options.add_options()
        ("config", po::value<std::string>()->value_name("FILE"),
         ("scenario YAML: handler, time, world (type " + engine.world_type + "), pacer, clock (default: the embedded "
          "scenario)").c_str())
        ("duration", po::value<DurationArgument>()->value_name("DURATION")->default_value(
                         DurationArgument{std::chrono::seconds(5)}, "5s"),
         (std::string("how long to run: ") + kDurationHelp).c_str());
    add_scale_option(cli.options);
    cli.options.add_options()
        ("trace", po::value<std::string>()->value_name("FILE"),
         "Chrome trace JSON of every access, its wait and its hold (Perfetto, chrome://tracing); the file is "
         "created at the start")
        ("jitter-us", po::value<std::int64_t>()->value_name("N")->default_value(0),
         "every accessor thread sleeps 0..N us before each request and inside each access")
        ("seed", po::value<std::string>()->value_name("S"),
         "seed of the jitter and chaos random numbers (default: fresh each run)")
        ("chaos", po::bool_switch(), "an operator thread pauses, steps, runs-until and resumes at random")
        ("host-steps", po::bool_switch(), "StepThread::host: only the main thread steps the world (handler.run())")
        ("no-threads", po::bool_switch(), "reference: step the world directly, same controller at the same instants")
        ("sensors", po::value<std::string>()->value_name("inline|threads")->default_value("inline"),
         "inline: the sensors run on the thread that steps, right after the step (no thread each);\n"
         "threads: one thread per sensor. The hash is the same either way");
    add_web_options(cli.options);
    add_ros2_clock_options(cli.options);
    cli.hidden.add_options()("slip-tick", po::value<std::int64_t>(), "test hook of --no-threads");
    if (engine.add_options) engine.add_options(cli);
    cli.epilogue = "stdin (one per line): pause, resume, step N, until T, scale X, revoke NAME, status, quit\n"
                   "Exit status: 0 done, 1 failure while running, 2 bad option or scenario.";
    return cli;
}

std::optional<Options> parse_options(const HostEngine& engine, int argc, char** argv, int& exit_code)
{
    Options o;
    auto values = parse_command_line(argc, argv, command_line(engine), exit_code, [&](const po::variables_map& v) {
        check_duration_option(v);
        check_scale_option(v);
        check_ros2_clock_options(v);
        if (v["jitter-us"].as<std::int64_t>() < 0) option_error("jitter-us", "must be >= 0");
        if (v.count("seed") != 0) o.seed = parse_unsigned_option("seed", v["seed"].as<std::string>());
        const std::string& sensors = v["sensors"].as<std::string>();
        if (sensors != "inline" && sensors != "threads") {
            option_error("sensors", "'" + sensors + "' is neither 'inline' nor 'threads'");
        }
        if (v.count("trace") != 0 && v["no-threads"].as<bool>()) {
            option_error("trace", "traces the accessors' threads: not with --no-threads");
        }
        if (v.count("slip-tick") != 0 && !v["no-threads"].as<bool>()) option_error("slip-tick", "a test hook of --no-threads");
        if (engine.check_options) engine.check_options(v);
        check_web_options(v, v.count("config") != 0);
        if (v.count("web") != 0 && v["no-threads"].as<bool>()) {
            option_error("web", "watches a handler: not with --no-threads");
        }
    });
    if (!values) return std::nullopt;
    const po::variables_map& v = *values;
    if (v.count("config") != 0) o.config_file = v["config"].as<std::string>();
    if (v.count("trace") != 0) o.trace_file = v["trace"].as<std::string>();
    o.duration = *duration_option(v, "duration");
    o.jitter_us = v["jitter-us"].as<std::int64_t>();
    o.no_threads = v["no-threads"].as<bool>();
    o.chaos = v["chaos"].as<bool>();
    o.host_steps = v["host-steps"].as<bool>();
    o.inline_sensors = v["sensors"].as<std::string>() == "inline";
    if (v.count("slip-tick") != 0) o.slip_tick = v["slip-tick"].as<std::int64_t>();
    o.values = v;
    return o;
}

// What the scenario and the options decide.
struct HostSetup {
    HandlerConfig handler;
    std::optional<ConfigNode> world; // the scenario's world section
    std::string world_line;          // HostEngine::describe of the world
    double scale = 1.0;
    bool paced = true;
    PacerSectionConfig pacer;
    ClockConfig clock;
    std::string time_source = "sim";
#if SIMSYNC_EXAMPLES_WEB
    std::optional<web::WebConsoleConfig> web; // --web and the scenario's web: section
#endif
};

// @throws simsync::Error (a ConfigError names file:line:column and key).
HostSetup load_setup(const HostEngine& engine, const Options& options)
{
    const ConfigNode root = options.config_file.empty() ? ConfigNode::parse(engine.default_scenario, "<embedded scenario>")
                                                        : ConfigNode::load_file(options.config_file);
    ScenarioExtensions extensions;
    extensions.add_world_type(engine.world_type, engine.validate_world);
    register_ros2_clock_sink(extensions);
    register_web_section(extensions); // web:
    const ScenarioConfig cfg = load_scenario(root, extensions);
    // The host runs its own controller and sensors (the reference loop must
    // know them), so a scenario that lists others would be silently ignored.
    if (auto n = root.find("accessors")) n->fail(engine.program + " runs its own controller and sensors; remove this");
    if (auto n = root.find("timers")) n->fail(engine.program + " runs no timers; remove this");
    HostSetup setup;
    setup.handler = cfg.handler;
    setup.world = cfg.world;
    // Built once here, so a world that cannot be built is reported before the run.
    const std::unique_ptr<World> world = engine.make_world(setup.world ? &*setup.world : nullptr, options.values);
    if (engine.world_step) {
        // A handler.step the world disagrees with is an error at its place in the file.
        std::optional<ConfigNode> step_node;
        if (auto h = root.find("handler")) step_node = h->find("step");
        std::optional<SimDuration> step;
        try {
            step = engine.world_step(*world, step_node ? std::optional<SimDuration>(cfg.handler.step) : std::nullopt);
        } catch (const Error& e) {
            if (!step_node) throw;
            step_node->fail(e.what());
        }
        if (step) setup.handler.step = *step;
    }
    setup.world_line = engine.describe(*world);
    setup.scale = cfg.time_scale;
    setup.paced = cfg.pacer.enabled;
    setup.pacer = cfg.pacer;
    setup.clock = cfg.clock;
    if (auto ros2 = ros2_clock_sink(options.values)) setup.clock.sinks.push_back(std::move(*ros2));
    setup.time_source = cfg.time_source;
    apply_scale_option(options.values, setup.paced, setup.scale);
    if (options.host_steps) setup.handler.step_thread = StepThread::host;
#if SIMSYNC_EXAMPLES_WEB
    setup.web = web_console_config(options.values, cfg, engine.program);
#endif
    return setup;
}

SimTime nth_instant(int rate_hz, std::int64_t n) { return SimTime{SimDuration{n * 1'000'000'000 / rate_hz}}; }

// A sensor's n-th request is its n-th instant (the run ends after the last one
// not beyond `end`). The controller's is its n-th 100 Hz instant while before
// `end`, then `end` itself (where it records the final state), then
// kSimTimeMax (no further request).
SimTime instant(int rate_hz, std::int64_t n, SimTime end, bool is_controller)
{
    const SimTime at = nth_instant(rate_hz, n);
    if (!is_controller || at < end) return at;
    return n > 0 && nth_instant(rate_hz, n - 1) >= end ? kSimTimeMax : end;
}

double seconds(SimTime t) { return std::chrono::duration<double>(t.time_since_epoch()).count(); }

struct Participant {
    std::string name;
    int rate_hz = 0;
    AccessMode mode = AccessMode::shared;
    int priority = 0;
    // Results, written by the participant's own thread (or inline completion),
    // read after the end.
    std::uint64_t grants = 0;
    SimTime last_grant{};
    WallClock::duration blocked{};
    std::string last_reading;
    std::vector<TraceSpan> trace; // with --trace only
#if SIMSYNC_EXAMPLES_WEB
    web::GrantTimeline::Track* track = nullptr; // with --web only
#endif
    bool is_controller() const { return mode == AccessMode::exclusive; }
};

std::vector<Participant> make_participants()
{
    std::vector<Participant> p(4);
    p[0].name = kControllerName, p[0].rate_hz = kControllerHz, p[0].mode = AccessMode::exclusive;
    p[0].priority = kControllerPriority;
    p[1].name = "lidar_200hz", p[1].rate_hz = 200;
    p[2].name = "camera_30hz", p[2].rate_hz = 30;
    p[3].name = "gps_10hz", p[3].rate_hz = 10;
    return p;
}

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

struct ChaosStats {
    std::uint64_t pauses = 0;
    std::uint64_t steps = 0;
    std::uint64_t run_untils = 0;
};

struct RunResult {
    std::string hash;
    std::string controller_summary;
    std::uint64_t steps = 0;           // world steps at the end (or when the run was cut short)
    std::uint64_t steps_after_end = 0; // by an operator's step(n) once nobody held time
    std::vector<Participant> participants;
    ChaosStats chaos;
    bool quit = false;
    int signal = 0;
    SimTime reached{};
    std::optional<PacerStats> pacer;
    std::uint64_t clock_messages = 0;
    WallClock::time_point wall_start{};
    std::string remote_summary; // with a remote controller: what it did
    std::string remote_failure; // ... and why the run is not its own ("" = it is)
};

std::uint64_t steps_to(SimTime end, SimDuration step) { return static_cast<std::uint64_t>((end - kSimStart) / step); }

// Reference: no handler, no threads. This thread steps the world and calls the
// controller and the sensors at the instants the handler would grant them, in
// the handler's order at one instant (controller first: priority 1).
RunResult run_without_threads(const HostEngine& engine, const Options& options, const HostSetup& setup, SimTime end)
{
    const SimDuration step = setup.handler.step;
    const std::unique_ptr<World> world = engine.make_world(setup.world ? &*setup.world : nullptr, options.values);
    const std::unique_ptr<Controller> controller = engine.make_controller(*world);
    std::vector<Participant> participants = make_participants(); // priority order
    std::vector<std::int64_t> next(participants.size(), 0);
    std::vector<bool> finished(participants.size(), false);
    SimTime slipped_write_at = kSimTimeMax;

    for (SimTime t = kSimStart;; t += step) {
        if (t == slipped_write_at) controller->act(*world);
        // A participant faster than the step asks several times at one instant;
        // the handler grants repeats in rounds (everybody's n-th grant at t
        // before anybody's (n+1)-th), so this loop does too.
        for (bool granted = true; granted;) {
            granted = false;
            for (std::size_t i = 0; i < participants.size(); ++i) {
                Participant& p = participants[i];
                if (finished[i]) continue;
                const SimTime at = instant(p.rate_hz, next[i], end, p.is_controller());
                if (at > end) {
                    finished[i] = true;
                    continue;
                }
                if (round_to_grid(at, step, setup.handler.rounding) != t) continue;
                if (p.is_controller()) {
                    if (t == end) {
                        controller->finish(*world);
                        finished[i] = true;
                    } else if (options.slip_tick && *options.slip_tick == next[i]) {
                        controller->record(*world);
                        slipped_write_at = t + step;
                    } else {
                        controller->tick(*world);
                    }
                } else {
                    p.last_reading = engine.read_sensor(*world);
                }
                ++p.grants;
                p.last_grant = t;
                ++next[i];
                granted = true;
            }
        }
        if (t >= end) break;
        world->step(step);
    }
    RunResult r;
    r.hash = controller->hash().hex();
    r.controller_summary = controller->summary();
    r.steps = steps_to(end, step);
    r.participants = std::move(participants);
    r.reached = end;
    return r;
}

// The host as a user writes it: every participant on the handler.
RunResult run_with_threads(const HostEngine& engine, const Options& options, const HostSetup& setup, SimTime end,
                           std::uint64_t seed)
{
    const SimDuration step = setup.handler.step;
    const std::unique_ptr<World> world = engine.make_world(setup.world ? &*setup.world : nullptr, options.values);
    const std::unique_ptr<Controller> controller = engine.make_controller(*world);
    SimSyncHandler handler(*world, setup.handler);
    TimeScale scale(setup.scale);
    const bool tracing = !options.trace_file.empty();

    std::vector<Participant> participants = make_participants();
    // A remote controller is registered by its own link when it joins, with the
    // same name, options and priority: no local accessor for it.
    const bool remote_asked = engine.wants_remote && engine.wants_remote(options.values);
    std::vector<Accessor> accessors;
    for (const Participant& p : participants) {
        accessors.push_back(remote_asked && p.is_controller()
                                ? Accessor{}
                                : handler.register_accessor(p.name, {.kind = AccessorKind::lockstep, .mode = p.mode,
                                                                     .priority = p.priority,
                                                                     .first_request = kSimStart}));
    }
    // Time stops at the end, so the pacer (or the clock publisher) cannot run the
    // world past it while the participants finish their last requests there.
    PauseAtEnd pause_at_end(handler, end, {});
    // The sensors, registered above with their first request at 0, hold time at
    // 0 until a remote controller has joined.
    std::unique_ptr<RemoteController> remote;
    if (remote_asked) remote = engine.make_remote(handler, *controller, end, mix_seed(seed, 99), options.values);
    std::string remote_failure; // why the remote controller's run is not the controller's

    // Real time is one more accessor: it only holds time back, never touches the
    // world, so the trajectory (and its hash) is the same paced or not. The pacer
    // and the clock publisher wait on wall time on one event loop.
    EventLoop wall_loop;
    std::optional<RealTimePacer> pacer;
    if (setup.paced) pacer.emplace(handler, scale, pacer_config(setup.pacer), wall_loop.executor());
    ClockSinkMakers sink_makers;
    add_ros2_clock_maker(sink_makers);
    ScenarioClock clock(handler, scale, setup.time_source, setup.clock, sink_makers, wall_loop.executor());

    std::atomic<bool> failed{false};
    std::atomic<bool> quitting{false};
    auto record_grant = [&](Participant& p, SimTime at, WallClock::time_point asked, WallClock::time_point granted_at,
                            const Access& access) {
        p.blocked += granted_at - asked;
        ++p.grants;
        p.last_grant = access.granted_time();
        if (tracing) p.trace.push_back({at, p.last_grant, asked, granted_at, WallClock::now()});
#if SIMSYNC_EXAMPLES_WEB
        if (p.track != nullptr) {
            p.track->record({.requested = at, .granted = p.last_grant, .asked = asked, .granted_at = granted_at,
                             .released = WallClock::now()});
        }
#endif
    };
    auto refused = [&](const Participant& p, SimTime at, const std::string& why) {
        std::fprintf(stderr, "%s: request at %s s refused: %s\n", p.name.c_str(), format_seconds(at).c_str(), why.c_str());
        failed = true;
    };

    auto participant_thread = [&](std::size_t index) {
        Participant& p = participants[index];
        Accessor& accessor = accessors[index];
        Jitter jitter(options.jitter_us, mix_seed(seed, index));
        for (std::int64_t n = 0;; ++n) {
            const SimTime at = instant(p.rate_hz, n, end, p.is_controller());
            if (at > end) break;
            jitter();
            const auto asked = WallClock::now();
            Access access = accessor.request_access(at);
            const auto granted_at = WallClock::now();
            if (!access && quitting.load()) break; // the operator quit: stopped
            if (!access) {
                refused(p, at, access.error().message());
                break;
            }
            jitter();
            const bool last = p.is_controller() && access.granted_time() >= end;
            if (!p.is_controller()) {
                p.last_reading = engine.read_sensor(access.world_as<const World>());
            } else if (!last) {
                controller->tick(access.world());
            } else {
                controller->finish(access.world());
            }
            if (!last) access.release(instant(p.rate_hz, n + 1, end, p.is_controller()));
            record_grant(p, at, asked, granted_at, access);
            if (last) break;
        }
        accessor.deregister(); // let the others finish without us
    };

    // Inline sensors: no thread each. A sensor's completion runs on whichever
    // thread steps the world, right after the step; it reads, releases with its
    // next instant and asks for that one from inside the completion (the handler
    // runs the next completion after this one returns: the stack stays flat).
    // Jitter is for threads and does not apply here.
    std::mutex sensors_mutex;
    std::condition_variable sensors_cv;
    std::size_t sensors_running = 0; // guarded by sensors_mutex
    std::function<void(std::size_t, std::int64_t)> request_inline = [&](std::size_t index, std::int64_t n) {
        const SimTime at = instant(participants[index].rate_hz, n, end, false);
        const auto asked = WallClock::now();
        accessors[index].async_request_access(at, run_inline([&, index, n, at, asked](std::error_code ec, Access access) {
            Participant& p = participants[index];
            const auto granted_at = WallClock::now();
            const SimTime next = instant(p.rate_hz, n + 1, end, false);
            if (!ec) {
                p.last_reading = engine.read_sensor(access.world_as<const World>());
                access.release(next);
                record_grant(p, at, asked, granted_at, access);
                if (next <= end) return request_inline(index, n + 1);
            } else if (!quitting.load()) {
                refused(p, at, ec.message());
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
    // the picture), fed the participants' grants for its timeline.
#if SIMSYNC_EXAMPLES_WEB
    std::optional<web::GrantTimeline> timeline;
    std::shared_ptr<const web::SceneSource> scene;
    std::optional<web::WebConsole> web;
    if (setup.web) {
        timeline.emplace();
        for (Participant& p : participants) p.track = &timeline->add_track(p.name, to_string(p.mode));
        if (engine.make_scene) scene = engine.make_scene(*world);
        web.emplace(handler,
                    web::WebConsoleSources{.scale = &scale,
                                           .pacer = pacer ? &*pacer : nullptr,
                                           .scene = scene.get(),
                                           .timeline = &*timeline},
                    *setup.web);
        print_web_console_url(web->url(), web->control_requires_token(), web->endpoint().host);
    }
#endif

    if (remote) remote->wait_joined();
    const auto wall_start = WallClock::now();
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < participants.size(); ++i) {
        if (participants[i].is_controller() && remote) continue; // in its own process
        if (!participants[i].is_controller() && options.inline_sensors) {
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
    // The human operator (stdin). `quit` stops the handler: every waiting request
    // returns `stopped`, the participants end, the run ends early. SIGINT and
    // SIGTERM do what `quit` does.
    SimTime quit_at{};
    bool operator_quit = false; // guarded by quit_mutex
    std::mutex quit_mutex;
    auto quit_now = [&] {
        std::lock_guard<std::mutex> g(quit_mutex);
        if (quitting.exchange(true)) return;
        operator_quit = true;
        quit_at = handler.now();
        handler.stop();
    };
    StopOnSignals signals([&](int) { quit_now(); });
#if SIMSYNC_EXAMPLES_WEB
    const bool web_console = setup.web.has_value();
#else
    const bool web_console = false;
#endif
    OperatorConsole console(handler, scale, quit_now,
                            {.program = engine.program,
                             .start_paused = setup.handler.start_paused,
                             .web_console = web_console});

    std::optional<PacerStats> pacer_stats;
    std::uint64_t clock_messages = 0;
    std::optional<RemoteController::Outcome> remote_outcome;
    auto finish = [&] {
        // The remote controller's final access at the end ends its part; if it
        // cannot come, stop the handler, so the sensors it holds back end too.
        if (remote && !remote->wait_done()) {
            std::lock_guard<std::mutex> g(quit_mutex);
            if (!quitting.exchange(true)) {
                remote_failure = "it ended before the end of the run";
                handler.stop();
            }
        }
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
        // Before the chaos thread is joined: if it resumed after the end, it may
        // be the thread stepping the clock publisher on, and only stop() ends that.
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
        if (remote) remote_outcome = remote->finish(remote_failure, operator_quit);
    };
    if (options.host_steps) {
        // The world is stepped on this thread only; another one waits for the end.
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
    RunResult r;
    r.hash = controller->hash().hex();
    r.controller_summary = controller->summary();
    // A remote controller that ended early cut the run short, as a quit does. An
    // operator's step(n) may move the world past the end (a step while paused
    // needs nobody's consent): reported, and outside the hash.
    const bool cut_short = quit || !remote_failure.empty();
    r.steps = cut_short ? handler.steps() : steps_to(end, step);
    r.steps_after_end = cut_short ? 0 : handler.steps() - steps_to(end, step);
    r.participants = std::move(participants);
    r.chaos = chaos;
    r.quit = quit;
    r.signal = signals.received();
    r.reached = quit ? quit_at : (cut_short ? handler.now() : end);
    if (remote_outcome) {
        Participant& p = r.participants.front(); // the controller
        p.grants = remote_outcome->grants;
        p.last_grant = remote_outcome->last_grant;
        r.remote_summary = remote_outcome->summary;
        r.remote_failure = remote_outcome->failure;
    }
    r.pacer = pacer_stats;
    r.clock_messages = clock_messages;
    r.wall_start = wall_start;
    return r;
}

void print_summary(const Options& options, const HostSetup& setup, const RunResult& result, double wall)
{
    std::printf("%-17s %-9s %5s %7s %13s %14s  %s\n", "accessor", "mode", "Hz", "grants", "last grant s",
                "in request ms", "reading at last grant");
    for (const Participant& p : result.participants) {
        std::printf("%-17s %-9s %5d %7llu %13s %14.1f  %s\n", p.name.c_str(), to_string(p.mode), p.rate_hz,
                    static_cast<unsigned long long>(p.grants), format_seconds(p.last_grant).c_str(),
                    std::chrono::duration<double, std::milli>(p.blocked).count(),
                    p.is_controller() ? result.controller_summary.c_str() : p.last_reading.c_str());
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
    if (result.pacer) std::printf("%s\n", pacer_summary(*result.pacer).c_str());
    if (setup.clock.enabled && !options.no_threads) {
        std::printf("%s\n", clock_summary_line(setup.clock, setup.time_source, result.clock_messages).c_str());
    }
}

} // namespace

SimTime controller_instant(std::int64_t n, SimTime end) { return instant(kControllerHz, n, end, true); }

int run_host(const HostEngine& engine, int argc, char** argv)
{
    const char* program = engine.program.c_str();
    int exit_code = 0;
    const std::optional<Options> parsed = parse_options(engine, argc, argv, exit_code);
    if (!parsed) return exit_code;
    const Options& options = *parsed;
    HostSetup setup;
    try {
        setup = load_setup(engine, options);
    } catch (const Error& e) { // ConfigError: file:line:column: key: what
        std::fprintf(stderr, "%s: %s\n", program, e.what());
        return 2;
    } catch (const std::invalid_argument& e) { // the web console off loopback without TLS
        std::fprintf(stderr, "%s: %s\n", program, e.what());
        return 2;
    }
    // Opened now: a path that cannot be written is refused before the run.
    std::optional<ChromeTraceFile> trace;
    if (!options.trace_file.empty()) {
        try {
            trace.emplace(options.trace_file);
        } catch (const std::runtime_error& e) {
            std::fprintf(stderr, "%s: --trace: %s\n", program, e.what());
            return 2;
        }
    }
    const SimDuration step = setup.handler.step;
    const SimTime end = round_to_grid(SimTime{options.duration}, step);
    if (end <= kSimStart) {
        std::fprintf(stderr, "%s: --duration: shorter than one step (%s s)\n", program, format_seconds(step).c_str());
        return 2;
    }
    std::random_device device;
    const std::uint64_t seed = options.seed ? *options.seed : (std::uint64_t{device()} << 32) | std::uint64_t{device()};

    std::printf("%s: %s, %s, dt %s s, %s s simulated, %s\n", program,
                options.no_threads ? "no threads (reference)" : (options.host_steps ? "host steps" : "any thread steps"),
                setup.world_line.c_str(), format_seconds(step).c_str(), format_seconds(end).c_str(),
                options.config_file.empty() ? "embedded scenario" : options.config_file.c_str());
    if (!options.no_threads) {
        std::printf("sensors %s, jitter 0..%lld us, seed %llu, chaos %s, ", options.inline_sensors ? "inline" : "on threads",
                    static_cast<long long>(options.jitter_us), static_cast<unsigned long long>(seed),
                    options.chaos ? "on" : "off");
        if (setup.paced) {
            std::printf("paced at %gx (pacer period %s s)\n", setup.scale, format_seconds(setup.pacer.period).c_str());
        } else {
            std::printf("unpaced\n");
        }
        std::printf("%s\n", clock_plan_line(setup.clock, setup.time_source).c_str());
        if (const auto warning = time_source_warning(setup.time_source, setup.clock)) {
            std::fprintf(stderr, "%s: warning: %s\n", program, warning->c_str());
        }
        if (engine.plan_line) {
            if (const std::string line = engine.plan_line(options.values); !line.empty()) std::printf("%s\n", line.c_str());
        }
    }
    std::fflush(stdout);

    const auto wall_start = std::chrono::steady_clock::now();
    RunResult result;
    try {
        result = options.no_threads ? run_without_threads(engine, options, setup, end)
                                    : run_with_threads(engine, options, setup, end, seed);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
    print_summary(options, setup, result, wall);
    if (trace) {
        std::vector<TraceTrack> tracks;
        for (const Participant& p : result.participants) tracks.push_back({p.name, to_string(p.mode), &p.trace});
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
                    result.signal != 0 ? (std::string("ended by ") + signal_name(result.signal)).c_str()
                                       : "quit by the operator",
                    format_seconds(result.reached).c_str());
    }
    if (!result.remote_summary.empty()) std::printf("%s\n", result.remote_summary.c_str());
    std::printf("trajectory_hash=%s\n", result.hash.c_str());
    if (!result.remote_failure.empty()) {
        std::fflush(stdout);
        std::fprintf(stderr, "%s: remote controller: %s\n", program, result.remote_failure.c_str());
        return 1;
    }
    return 0;
}

} // namespace simsync::examples::host
