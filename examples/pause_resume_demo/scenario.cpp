#include "scenario.hpp"

#include "balls_world.hpp"
#include "chrome_trace.hpp"
#include "embedded_scenario.hpp" // scenario.yaml, generated at configure time
#include "operator_console.hpp"
#include "pause_at_end.hpp"
#include "ros2_clock.hpp"
#include "scenario_clock.hpp"
#include "stop_signals.hpp"

#include <simsync/simsync.hpp>

#if SIMSYNC_EXAMPLES_WEB
#include "balls_scene.hpp"

#include <simsync/web/web.hpp>
#endif

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace demo {

const char* const kDefaultScenario = kEmbeddedScenario;

namespace {

using simsync::SimTime;
using simsync::WallClock;

using simsync::examples::TraceSpan;

// Per-accessor figures, written by its own thread only, read after it joined.
struct Stats {
    std::uint64_t grants = 0;
    std::uint64_t refused = 0; // time_passed: a free accessor that fell behind
    WallClock::duration total_wait{};
    WallClock::duration max_wait{};
    simsync::SimDuration total_rounding{}; // |granted - requested|
    std::vector<TraceSpan> trace;
};

struct Participant {
    simsync::AccessorConfig config;
    simsync::Accessor accessor;
    Stats stats;
#if SIMSYNC_EXAMPLES_WEB
    simsync::web::GrantTimeline::Track* track = nullptr; // the web console's timeline, with --web
#endif
};

constexpr const char* kWorldType = "bouncing_balls";

struct BallsSettings {
    std::int64_t bodies = 3;
    double restitution = 0.9;
};

// @throws simsync::ConfigError naming the key.
BallsSettings read_balls(const simsync::ConfigNode& w)
{
    BallsSettings b;
    w.allow_only({"type", "bodies", "restitution"});
    if (auto n = w.find("bodies")) {
        b.bodies = n->as_int();
        if (b.bodies < 1 || b.bodies > 10000) n->fail("expected 1..10000 bodies, got " + std::to_string(b.bodies));
    }
    if (auto n = w.find("restitution")) {
        b.restitution = n->as_double();
        if (b.restitution < 0 || b.restitution > 1) n->fail("expected a restitution in [0, 1], got " + n->as_string());
    }
    return b;
}

std::unique_ptr<BallsWorld> make_world(const simsync::ScenarioConfig& config)
{
    // Checked at load (scenario_extensions): reading it again cannot fail.
    const BallsSettings b = config.world ? read_balls(*config.world) : BallsSettings{};
    return std::make_unique<BallsWorld>(static_cast<std::size_t>(b.bodies), b.restitution);
}

void write_trace(simsync::examples::ChromeTraceFile& file, const std::vector<std::unique_ptr<Participant>>& participants,
                 WallClock::time_point origin)
{
    std::vector<simsync::examples::TraceTrack> tracks;
    for (const auto& p : participants) {
        tracks.push_back({p->config.name, simsync::to_string(p->config.mode), &p->stats.trace});
    }
    file.write(tracks, origin);
}

void accessor_loop(Participant& p, simsync::SimSyncHandler& handler, const std::optional<SimTime>& end,
                   bool tracing)
{
    const bool controller = p.config.role == "controller";
    const bool lockstep = p.config.kind == simsync::AccessorKind::lockstep;
    for (std::int64_t n = 0;;) {
        const SimTime want = p.config.schedule.at(n);
        if (end && want > *end) break;
        const auto wall_start = WallClock::now();
        simsync::Access access = p.accessor.request_access(want);
        if (!access) {
            if (access.error() != simsync::errc::time_passed) break; // stopped
            ++p.stats.refused;
            n = p.config.schedule.first_index_at_or_after(handler.now());
            continue;
        }
        const auto granted_at = WallClock::now();
        auto& world = access.world_as<BallsWorld>();
        if (controller) {
            // Keep the balls bouncing: kick the lowest one upwards when it is slow.
            const auto& balls = world.balls();
            const auto lowest = static_cast<std::size_t>(
                std::min_element(balls.begin(), balls.end(),
                                 [](const Ball& a, const Ball& b) { return a.height_m < b.height_m; }) -
                balls.begin());
            if (balls[lowest].height_m < 0.05 && std::abs(balls[lowest].velocity_mps) < 1.0) world.kick(lowest, 4.0);
        } else {
            volatile double sum = 0; // a sensor reads the world
            for (const Ball& b : world.balls()) sum = sum + b.height_m;
        }
        Stats& s = p.stats;
        ++s.grants;
        const auto wait = granted_at - wall_start;
        s.total_wait += wait;
        s.max_wait = std::max(s.max_wait, wait);
        s.total_rounding += access.granted_time() > want ? access.granted_time() - want : want - access.granted_time();
        ++n;
        if (lockstep) {
            access.release(p.config.schedule.at(n));
        } else {
            access.release();
        }
        if (tracing) s.trace.push_back({want, access.granted_time(), wall_start, granted_at, WallClock::now()});
#if SIMSYNC_EXAMPLES_WEB
        if (p.track != nullptr) {
            p.track->record({.requested = want, .granted = access.granted_time(), .asked = wall_start,
                             .granted_at = granted_at, .released = WallClock::now()});
        }
#endif
    }
    p.accessor.deregister(); // let the others run on without us
}

void print_summary(const std::vector<std::unique_ptr<Participant>>& participants, SimTime sim_elapsed,
                   WallClock::duration wall_elapsed)
{
    std::printf("\n%-12s %-9s %-9s %8s %8s %12s %12s %14s\n", "accessor", "kind", "mode", "grants", "refused",
                "mean wait", "max wait", "mean rounding");
    for (const auto& pp : participants) {
        const auto& p = *pp;
        const double n = static_cast<double>(std::max<std::uint64_t>(p.stats.grants, 1));
        std::printf("%-12s %-9s %-9s %8llu %8llu %9.1f us %9.1f us %11.1f us\n", p.config.name.c_str(),
                    simsync::to_string(p.config.kind), simsync::to_string(p.config.mode),
                    static_cast<unsigned long long>(p.stats.grants),
                    static_cast<unsigned long long>(p.stats.refused),
                    std::chrono::duration<double, std::micro>(p.stats.total_wait).count() / n,
                    std::chrono::duration<double, std::micro>(p.stats.max_wait).count(),
                    std::chrono::duration<double, std::micro>(p.stats.total_rounding).count() / n);
    }
    const double wall = std::chrono::duration<double>(wall_elapsed).count();
    const double sim = std::chrono::duration<double>(sim_elapsed.time_since_epoch()).count();
    std::printf("simulated %.3f s in %.3f s of wall time: achieved real-time factor %.3f\n", sim, wall,
                wall > 0 ? sim / wall : 0.0);
}

} // namespace

simsync::ScenarioExtensions scenario_extensions()
{
    simsync::ScenarioExtensions extensions;
    extensions.add_world_type(kWorldType, [](const simsync::ConfigNode& world) { read_balls(world); });
    simsync::examples::register_ros2_clock_sink(extensions); // clock.sinks[i].ros2
    simsync::examples::register_web_section(extensions);     // web:
    return extensions;
}

void check_scenario(const simsync::ScenarioConfig& config)
{
    for (const auto& a : config.accessors) {
        // The place of a key the scenario gave, or of the accessor for a default.
        auto fail = [&](const char* key, const std::string& message) {
            if (!a.node) throw std::invalid_argument("accessor '" + a.name + "': " + message);
            if (auto n = a.node->find(key)) n->fail(message);
            a.node->fail(message);
        };
        if (a.name == simsync::examples::PauseAtEnd::kName) {
            fail("name", std::string("the name '") + a.name + "' is taken by the end marker of --duration");
        }
        if (a.role != "controller" && a.role != "sensor") {
            fail("role", "expected a role of sensor or controller, got '" + a.role + "'");
        }
        if (a.role == "controller" && a.mode != simsync::AccessMode::exclusive) {
            fail("mode", "a controller writes, so it needs mode: exclusive");
        }
    }
}

int run_scenario(const simsync::ScenarioConfig& config, const RunOptions& options)
{
    const auto world = make_world(config);
    simsync::SimSyncHandler handler(*world, config.handler);
    simsync::TimeScale scale(config.time_scale);

    std::vector<std::unique_ptr<Participant>> participants;
    for (const auto& a : config.accessors) {
        auto p = std::make_unique<Participant>();
        p->config = a;
        p->accessor = handler.register_accessor(
            a.name, {.kind = a.kind, .mode = a.mode, .priority = a.priority, .first_request = a.schedule.at(0)});
        participants.push_back(std::move(p));
    }

    // The run ends on `quit`, on SIGINT / SIGTERM, or, with --duration, once
    // time has reached the end and every accessor has made its last request.
    bool quit = false; // guarded by quit_mutex
    std::mutex quit_mutex;
    std::condition_variable quit_cv;
    auto request_quit = [&] {
        {
            std::lock_guard<std::mutex> g(quit_mutex);
            quit = true;
        }
        quit_cv.notify_all();
    };
    simsync::examples::StopOnSignals signals([&](int) { request_quit(); });
    // With --duration: the parts that must be done first (every accessor
    // thread, and time reaching the end), counted down.
    struct EndParts {
        std::atomic<std::size_t> left;
        std::function<void()> at_zero;
        void done()
        {
            if (--left == 0) at_zero();
        }
    } end_parts{participants.size() + 1, request_quit};
    // Time stops at the end, without holding anybody's last requests there back.
    std::optional<simsync::examples::PauseAtEnd> pause_at_end;
    if (options.end) pause_at_end.emplace(handler, *options.end, [&] { end_parts.done(); });

    // One event loop (one thread) for everything that waits on wall time: the
    // pacer's deadlines, the clock publisher's paused messages, real-time timers.
    simsync::EventLoop wall_loop;

    // Real time is not special: the pacing view is one more accessor.
    std::optional<simsync::RealTimePacer> pacer;
    if (config.pacer.enabled) {
        pacer.emplace(handler, scale, simsync::pacer_config(config.pacer), wall_loop.executor());
    }

    // The clock publisher is another accessor: it reads the selected time source
    // inside its access and publishes after releasing.
    simsync::examples::ClockSinkMakers sink_makers;
    simsync::examples::add_ros2_clock_maker(sink_makers);
    simsync::examples::ScenarioClock clock(handler, scale, config.time_source, config.clock, sink_makers,
                                           wall_loop.executor());

    // Periodic timers (the CPM Lab semantics): simulated ones are lockstep
    // accessors too; real ones fire at UNIX-epoch instants. All of them wait
    // and run on the wall loop: one thread, however many timers.
    simsync::StartStopSignal timer_signal; // fired once every thread is up
    std::vector<std::unique_ptr<simsync::PeriodicTimer>> timers;
    std::vector<std::unique_ptr<std::atomic<std::uint64_t>>> timer_calls;
    for (const simsync::TimerConfig& t : config.timers) {
        simsync::PeriodicTimerConfig timer_config;
        timer_config.name = t.name;
        timer_config.period = t.period;
        timer_config.offset = t.offset;
        timer_config.clock = t.clock;
        timer_config.wait_for_start = t.wait_for_start;
        timers.push_back(std::make_unique<simsync::PeriodicTimer>(
            timer_config, simsync::TimerContext{.handler = &handler, .signal = &timer_signal,
                                                .executor = wall_loop.executor()}));
        timer_calls.push_back(std::make_unique<std::atomic<std::uint64_t>>(0));
        timers.back()->start_async([calls = timer_calls.back().get()](const simsync::TimerTick&) { ++*calls; });
    }

    // The web console: one more observer of the handler (a free, shared accessor
    // for the picture), fed the participants' grants for its timeline.
#if SIMSYNC_EXAMPLES_WEB
    std::optional<simsync::web::GrantTimeline> timeline;
    BallsScene scene;
    std::optional<simsync::web::WebConsole> web;
    if (options.web) {
        timeline.emplace();
        for (auto& p : participants) {
            p->track = &timeline->add_track(p->config.name, simsync::to_string(p->config.mode));
        }
        web.emplace(handler,
                    simsync::web::WebConsoleSources{.scale = &scale,
                                                    .pacer = pacer ? &*pacer : nullptr,
                                                    .scene = &scene,
                                                    .timeline = &*timeline},
                    *options.web);
        simsync::examples::print_web_console_url(web->url(), web->control_requires_token(), web->endpoint().host);
    }
#endif

    if (config.pacer.enabled) {
        std::printf("simsync-demo: %zu accessors, dt %s s, paced at %gx (pacer period %s s)\n", config.accessors.size(),
                    simsync::format_seconds(config.handler.step).c_str(), config.time_scale,
                    simsync::format_seconds(config.pacer.period).c_str());
    } else {
        std::printf("simsync-demo: %zu accessors, dt %s s, unpaced (as fast as possible)\n", config.accessors.size(),
                    simsync::format_seconds(config.handler.step).c_str());
    }
    std::printf("%s\n", simsync::examples::clock_plan_line(config.clock, config.time_source).c_str());
    std::fflush(stdout);
    if (const auto warning = simsync::examples::time_source_warning(config.time_source, config.clock)) {
        std::fprintf(stderr, "simsync-demo: warning: %s\n", warning->c_str());
    }

    const auto wall_start = WallClock::now();
    std::vector<std::thread> threads;
    for (auto& p : participants) {
        threads.emplace_back([&, raw = p.get()] {
            accessor_loop(*raw, handler, options.end, options.trace != nullptr);
            if (options.end) end_parts.done();
        });
    }
    timer_signal.fire_start();

    // The operator's commands. The end of input is not a quit: a run without a
    // terminal (nohup, systemd, docker, a launch file) goes on until its
    // --duration, a `quit`, or SIGINT / SIGTERM.
#if SIMSYNC_EXAMPLES_WEB
    const bool web_console = options.web.has_value();
#else
    const bool web_console = false;
#endif
    simsync::examples::OperatorConsole console(
        handler, scale, request_quit,
        {.program = "simsync-demo", .start_paused = config.handler.start_paused, .web_console = web_console});

    {
        std::unique_lock<std::mutex> lock(quit_mutex);
        quit_cv.wait(lock, [&] { return quit; });
    }
    const SimTime reached = handler.now();
    std::optional<simsync::PacerStats> pacer_stats;
    if (pacer) pacer_stats = pacer->stats();
    handler.stop();
    for (auto& t : threads) t.join();
    console.stop();
    pause_at_end.reset();
#if SIMSYNC_EXAMPLES_WEB
    web.reset(); // before the pacer it reads
#endif
    pacer.reset();
    for (auto& t : timers) t->stop();
    clock.stop();
    const std::uint64_t clock_messages = clock.published();
    const auto wall_elapsed = WallClock::now() - wall_start;
    if (console.terminal()) std::printf("\n");
    if (const int number = signals.received()) {
        std::printf("ended by %s at %s s\n", simsync::examples::signal_name(number),
                    simsync::format_seconds(reached).c_str());
    }
    print_summary(participants, reached, wall_elapsed);
    if (pacer_stats) std::printf("%s\n", simsync::examples::pacer_summary(*pacer_stats).c_str());
    for (std::size_t i = 0; i < timers.size(); ++i) {
        std::printf("timer %s (%s, every %s s): %llu calls\n", config.timers[i].name.c_str(),
                    simsync::to_string(config.timers[i].clock), simsync::format_seconds(config.timers[i].period).c_str(),
                    static_cast<unsigned long long>(timer_calls[i]->load()));
    }
    if (config.clock.enabled) {
        std::printf("%s\n", simsync::examples::clock_summary_line(config.clock, config.time_source, clock_messages).c_str());
    }
    if (options.trace != nullptr) {
        write_trace(*options.trace, participants, wall_start);
        std::printf("trace written to %s\n", options.trace->path().c_str());
    }
    return 0;
}

} // namespace demo
