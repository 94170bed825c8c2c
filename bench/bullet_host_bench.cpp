// bench_bullet_host: what the handler costs around a real physics engine.
//
// Scene: Bullet, 100 boxes (default_scene) at 1 kHz. Participants: a controller
// (100 Hz, exclusive, pushes box_0) and 10 shared sensors (200, 200, 100, 100,
// 50, 50, 30, 30, 20, 10 Hz) that read every body's state. Two ways, in the same
// run, alternating:
//   raw:     one thread steps Bullet and applies the controller and the sensor
//            reads inline at the same instants;
//   handler: a SimSyncHandler (StepThread::any), one thread per participant,
//            plus the clock publisher at 100 Hz (a callback sink) on its own.
// Reports median / min / max wall time of each and the ratio handler / raw of
// the medians (goal <= 1.05), and per handler run the context switches
// (getrusage, whole process) and the wall time spent by participants blocked in
// requests. Both runs must produce the same trajectory hash.
//
// Usage: bench_bullet_host [--quick] [--reps N] [--seconds S] [--json=PATH]
//   default: 10 simulated seconds, 5 repetitions; --quick: 1 s, 2 repetitions.

#include "report.hpp"

#include <simsync/bullet/bullet.hpp>
#include <simsync/simsync.hpp>

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
namespace sb = simsync::bullet;

namespace {

constexpr simsync::SimDuration kStep = 1ms;
constexpr int kControllerHz = 100;
constexpr int kSensorHz[] = {200, 200, 100, 100, 50, 50, 30, 30, 20, 10};

simsync::SimTime instant(int hz, std::int64_t n)
{
    return simsync::SimTime{simsync::SimDuration{n * 1'000'000'000 / hz}};
}

// The controller: records the state and pushes box_0 round a circle (state
// dependent, so a push at the wrong instant changes the hash).
void control(sb::BulletWorld& w, sb::TrajectoryHash& hash)
{
    w.hash_state(hash);
    const sb::BodyState s = w.state(0);
    const double r = std::hypot(s.pose.position.x, s.pose.position.y);
    const double ux = r > 1e-9 ? s.pose.position.x / r : 1.0;
    const double uy = r > 1e-9 ? s.pose.position.y / r : 0.0;
    const double jx = 0.3 * (-uy * 1.5 + ux * (2.0 - r) - s.linear_velocity.x);
    const double jy = 0.3 * (ux * 1.5 + uy * (2.0 - r) - s.linear_velocity.y);
    const double n = std::hypot(jx, jy);
    const double k = n > 0.5 ? 0.5 / n : 1.0;
    w.apply_central_impulse(0, {k * jx, k * jy, 0.0});
}

double sense(const sb::BulletWorld& w)
{
    double sum = 0;
    for (sb::BodyIndex i = 0; i < w.body_count(); ++i) sum += w.state(i).pose.position.z;
    return sum;
}

struct RunFigures {
    double wall_s = 0;
    std::string hash;
    long voluntary_switches = 0;
    long involuntary_switches = 0;
    double blocked_s = 0; // summed over participant threads (handler runs)
    std::uint64_t grants = 0;
};

RunFigures run_raw(simsync::SimTime end)
{
    sb::BulletWorld world(sb::default_scene());
    sb::TrajectoryHash hash;
    constexpr std::size_t kSensors = std::size(kSensorHz);
    std::vector<std::int64_t> next(kSensors, 0);
    std::int64_t next_control = 0;
    volatile double sink = 0;
    const auto cs0 = simsync::bench::ContextSwitches::now();
    const auto start = std::chrono::steady_clock::now();
    for (simsync::SimTime t = simsync::kSimStart;; t += kStep) {
        // Same order as the handler at one instant: the controller (priority 1)
        // first, then the sensors.
        if (simsync::round_to_grid(instant(kControllerHz, next_control), kStep) == t) {
            if (t < end) control(world, hash);
            ++next_control;
        }
        for (std::size_t i = 0; i < kSensors; ++i) {
            if (simsync::round_to_grid(instant(kSensorHz[i], next[i]), kStep) == t) {
                sink = sink + sense(world);
                ++next[i];
            }
        }
        if (t >= end) break;
        world.step(kStep);
    }
    world.hash_state(hash);
    RunFigures f;
    f.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const auto cs = simsync::bench::ContextSwitches::now() - cs0;
    f.voluntary_switches = cs.voluntary;
    f.involuntary_switches = cs.involuntary;
    f.hash = hash.hex();
    return f;
}

RunFigures run_handler(simsync::SimTime end)
{
    sb::BulletWorld world(sb::default_scene());
    sb::TrajectoryHash hash;
    simsync::SimSyncHandler handler(world, {.step = kStep});
    simsync::Accessor controller = handler.register_accessor(
        "controller", {.kind = simsync::AccessorKind::lockstep, .mode = simsync::AccessMode::exclusive,
                       .priority = 1, .first_request = simsync::kSimStart});
    std::vector<simsync::Accessor> sensors;
    for (std::size_t i = 0; i < std::size(kSensorHz); ++i) {
        sensors.push_back(handler.register_accessor(
            "sensor_" + std::to_string(i),
            {.kind = simsync::AccessorKind::lockstep, .mode = simsync::AccessMode::shared,
             .first_request = simsync::kSimStart}));
    }
    std::vector<double> blocked(sensors.size() + 1, 0.0);
    // The clock publisher at 100 Hz, as in the host; a keeper holds time at the
    // end so that the clock alone cannot step Bullet past it.
    simsync::Accessor keeper = handler.register_accessor(
        "end", {.kind = simsync::AccessorKind::lockstep, .priority = INT_MIN, .first_request = end});
    const std::unique_ptr<simsync::TimeSource> source = simsync::make_time_source("sim", {.handler = &handler});
    simsync::ClockPublisher clock(handler, *source, {.period = std::chrono::milliseconds(10)});
    std::uint64_t clock_bytes = 0; // a callback sink that does a little work per message
    clock.add_callback([&](const simsync::ClockMessage& m) { clock_bytes += simsync::encode_clock_datagram(m).size(); });

    const auto cs0 = simsync::bench::ContextSwitches::now();
    clock.start();
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> threads;
    threads.emplace_back([&] {
        for (std::int64_t n = 0;; ++n) {
            const simsync::SimTime at = std::min(instant(kControllerHz, n), end);
            const auto asked = std::chrono::steady_clock::now();
            simsync::Access a = controller.request_access(at);
            blocked[0] += std::chrono::duration<double>(std::chrono::steady_clock::now() - asked).count();
            if (!a) break;
            auto& w = a.world_as<sb::BulletWorld>();
            if (a.granted_time() >= end) {
                w.hash_state(hash);
                break;
            }
            control(w, hash);
            a.release(std::min(instant(kControllerHz, n + 1), end));
        }
        controller.deregister();
    });
    for (std::size_t i = 0; i < sensors.size(); ++i) {
        threads.emplace_back([&, i] {
            volatile double sink = 0;
            for (std::int64_t n = 0;; ++n) {
                const simsync::SimTime at = instant(kSensorHz[i], n);
                if (at > end) break;
                const auto asked = std::chrono::steady_clock::now();
                simsync::Access a = sensors[i].request_access(at);
                blocked[i + 1] += std::chrono::duration<double>(std::chrono::steady_clock::now() - asked).count();
                if (!a) break;
                sink = sink + sense(a.world_as<const sb::BulletWorld>());
                a.release(instant(kSensorHz[i], n + 1));
            }
            sensors[i].deregister();
        });
    }
    for (auto& t : threads) t.join();
    RunFigures f;
    f.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    clock.stop();
    const auto cs = simsync::bench::ContextSwitches::now() - cs0;
    f.voluntary_switches = cs.voluntary;
    f.involuntary_switches = cs.involuntary;
    f.grants = handler.snapshot().grants;
    handler.stop();
    for (double b : blocked) f.blocked_s += b;
    f.hash = hash.hex();
    return f;
}

int first_cpu(const cpu_set_t& set)
{
    for (int c = 0; c < CPU_SETSIZE; ++c) {
        if (CPU_ISSET(c, &set)) return c;
    }
    return 0;
}

struct Stats {
    double median, min, max;
};
Stats stats_of(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    const double median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    return {median, v.front(), v.back()};
}

} // namespace

int main(int argc, char** argv)
{
    const std::string json_path = simsync::bench::take_json_flag(argc, argv);
    bool quick = false;
    double seconds = 10;
    int reps = 5;
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        if (a == "--quick") {
            quick = true;
            seconds = 1;
            reps = 2;
        } else if (a == "--reps" && i + 1 < argc) {
            reps = std::atoi(argv[++i]);
        } else if (a == "--seconds" && i + 1 < argc) {
            seconds = std::atof(argv[++i]);
        } else {
            std::fprintf(stderr, "usage: %s [--quick] [--reps N] [--seconds S] [--json=PATH]\n", argv[0]);
            return 2;
        }
    }
    if (reps < 1 || !(seconds > 0)) {
        std::fprintf(stderr, "--reps must be >= 1 and --seconds > 0\n");
        return 2;
    }
    const simsync::SimTime end = simsync::round_to_grid(simsync::sim_time(std::chrono::duration<double>(seconds)), kStep);
    std::printf("bench_bullet_host: 100 boxes, dt 1 ms, %g simulated s, controller 100 Hz + 10 shared sensors, "
                "%d alternating repetitions, %u hardware threads\n",
                seconds, reps, std::thread::hardware_concurrency());

    // Two CPU budgets. "all CPUs" is what a user gets by default; "1 CPU" pins
    // the whole process (every thread inherits the mask) to one CPU, which is
    // the raw loop's own budget: it separates the cost of synchronising from the
    // cost of waking a thread on another, idle vCPU (an inter-processor
    // interrupt through the hypervisor) and of moving Bullet's data between
    // the cores' caches, both of which lie on the critical path of every step.
    struct Variant {
        const char* name;
        bool pinned;
        std::vector<double> raw_wall, handler_wall;
        std::vector<RunFigures> handler_runs;
    };
    Variant variants[] = {{"all CPUs", false, {}, {}, {}}, {"pinned to 1 CPU", true, {}, {}, {}}};
    cpu_set_t all{};
    sched_getaffinity(0, sizeof all, &all);
    std::printf("%4s %-16s %-8s %10s %12s %12s %14s %10s  %s\n", "rep", "cpus", "run", "wall s", "vol. csw",
                "invol. csw", "blocked s", "grants", "hash");
    std::string reference;
    bool same = true;
    for (int r = 0; r < reps; ++r) {
        for (Variant& v : variants) {
            if (v.pinned) {
                cpu_set_t one{};
                CPU_SET(first_cpu(all), &one);
                sched_setaffinity(0, sizeof one, &one);
            }
            // Alternate which goes first, so warm-up and drift hit both alike.
            for (int k = 0; k < 2; ++k) {
                const bool raw = (k == 0) == (r % 2 == 0);
                const RunFigures f = raw ? run_raw(end) : run_handler(end);
                (raw ? v.raw_wall : v.handler_wall).push_back(f.wall_s);
                if (!raw) v.handler_runs.push_back(f);
                if (reference.empty()) reference = f.hash;
                same = same && f.hash == reference;
                std::printf("%4d %-16s %-8s %10.3f %12ld %12ld %14.3f %10llu  %s\n", r + 1, v.name,
                            raw ? "raw" : "handler", f.wall_s, f.voluntary_switches, f.involuntary_switches,
                            f.blocked_s, static_cast<unsigned long long>(f.grants), f.hash.c_str());
            }
            sched_setaffinity(0, sizeof all, &all);
        }
    }
    std::printf("trajectory hashes %s\n", same ? "all equal" : "DIFFER");

    using simsync::bench::format;
    simsync::bench::Report report;
    report.id = "bullet_host";
    report.title = "Bullet host overhead";
    report.quick = quick;
    report.description = format(
        "The Bullet host's scene (100 boxes, `stepSimulation` at 1 kHz) for %g simulated seconds, with a "
        "controller at 100 Hz (exclusive, pushes a box) and 10 shared sensors (200, 200, 100, 100, 50, 50, 30, "
        "30, 20, 10 Hz) reading every body. **handler**: a SimSyncHandler, one thread per participant, plus "
        "the clock publisher at 100 Hz; **raw** (baseline): one thread steps Bullet and does the same work "
        "inline at the same instants. %d repetitions, alternating which goes first; wall time median and "
        "min-max. Unpaced (as fast as possible): the overhead is what synchronising costs per step. Run on "
        "all CPUs (the default) and with the whole process pinned to one CPU (the raw loop's own budget). "
        "Every run must produce the same trajectory hash.",
        seconds, reps);
    simsync::bench::Table table{"", {"CPUs", "run", "median wall s", "min", "max", "ratio to raw", "us per step",
                                     "grants", "vol. cs/grant", "invol. cs/grant"}, {}};
    const double steps = seconds * 1000;
    for (Variant& v : variants) {
        const Stats rs = stats_of(v.raw_wall);
        const Stats hs = stats_of(v.handler_wall);
        const double ratio = hs.median / rs.median;
        std::vector<double> vcsw, ivcsw;
        for (const RunFigures& f : v.handler_runs) {
            vcsw.push_back(static_cast<double>(f.voluntary_switches) / static_cast<double>(f.grants));
            ivcsw.push_back(static_cast<double>(f.involuntary_switches) / static_cast<double>(f.grants));
        }
        table.rows.push_back({v.name, "raw Bullet loop (baseline)", format("%.3f", rs.median), format("%.3f", rs.min),
                              format("%.3f", rs.max), "1.00", format("%.1f", rs.median / steps * 1e6), "-", "-", "-"});
        table.rows.push_back({v.name, "through the handler", format("%.3f", hs.median), format("%.3f", hs.min),
                              format("%.3f", hs.max), format("%.3f", ratio), format("%.1f", hs.median / steps * 1e6),
                              format("%llu", static_cast<unsigned long long>(v.handler_runs.front().grants)),
                              format("%.2f", stats_of(vcsw).median), format("%.2f", stats_of(ivcsw).median)});
        report.goals.push_back({format("Bullet host through the handler at most 1.05x the raw Bullet loop (%s)", v.name),
                                "<= 1.05x",
                                format("%.3fx (%.1f us of synchronisation per step)", ratio,
                                       (hs.median - rs.median) / steps * 1e6),
                                ratio <= 1.05});
    }
    report.tables.push_back(std::move(table));
    report.notes.push_back(same ? "Trajectory hashes: all runs equal (the handler changes nothing in the physics)."
                                : "**Trajectory hashes differ between runs: a determinism bug.**");
    simsync::bench::publish(report, json_path);
    return same ? 0 : 1;
}
