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
// Reports median / min / max wall time of each and the ratio handler / raw as the
// median over repetitions of each run's wall time over the raw run's in the same
// repetition (with their spread; goals per style below), the same for the
// process's CPU time, and per handler run the context switches
// (getrusage, whole process) and the wall time spent by participants blocked in
// requests. Every run must produce the same trajectory hash.
// The handler side is one entry of `styles` (a thread per participant, or
// inline sensors with the controller on a thread), each with its own targets
// against the same raw loop.
// Default: 5 simulated seconds, 9 repetitions; --quick: 1 s, 2 repetitions
// (--seconds and --reps win over either).

#include "bullet_workload.hpp"
#include "report.hpp"
#include "wake_floor.hpp"

#include <simsync/bullet/bullet.hpp>
#include <simsync/core/asio.hpp>
#include <simsync/simsync.hpp>

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
namespace sb = simsync::bullet;

namespace {

constexpr simsync::SimDuration kStep = 1ms;
using namespace simsync::bench::bullet_workload;

struct RunFigures {
    double wall_s = 0;
    double cpu_s = 0; // the whole process's user + system time over the run
    std::string hash;
    long voluntary_switches = 0;
    long involuntary_switches = 0;
    double blocked_s = 0; // summed over participant threads (handler runs)
    std::uint64_t grants = 0;
};

// What a run costs from its construction on: wall time, the process's CPU time
// and its context switches, taken the same way for every variant.
struct RunMeter {
    simsync::bench::ContextSwitches cs0 = simsync::bench::ContextSwitches::now();
    double cpu0 = simsync::bench::process_cpu_seconds();
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();

    RunFigures figures() const
    {
        RunFigures f;
        f.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        f.cpu_s = simsync::bench::process_cpu_seconds() - cpu0;
        const auto cs = simsync::bench::ContextSwitches::now() - cs0;
        f.voluntary_switches = cs.voluntary;
        f.involuntary_switches = cs.involuntary;
        return f;
    }
};

RunFigures run_raw(simsync::SimTime end)
{
    sb::BulletWorld world(sb::default_scene());
    sb::TrajectoryHash hash;
    constexpr std::size_t kSensors = std::size(kSensorHz);
    std::vector<std::int64_t> next(kSensors, 0);
    std::int64_t next_control = 0;
    volatile double sink = 0;
    const RunMeter meter;
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
    RunFigures f = meter.figures();
    f.hash = hash.hex();
    return f;
}

// The floor of one thread per participant on this machine (wake_floor.hpp): every
// participant but the one whose thread steps sleeps between its instants, and the
// fewest wake-ups come from stepping on the most frequent participant's thread (the
// first 200 Hz sensor). So: the raw loop on that thread, which also does that
// sensor's reads; the controller and the other nine sensors each on a thread of its
// own that sleeps between its instants, woken by the stepping thread through a raw
// futex, which spins briefly for the reply. Same order at an instant as the handler:
// the controller (exclusive) first, then the sensors due, together (shared).
RunFigures run_raw_floor(simsync::SimTime end)
{
    sb::BulletWorld world(sb::default_scene());
    sb::TrajectoryHash hash;
    constexpr std::size_t kSensors = std::size(kSensorHz);
    const std::size_t stepping_sensor =
        static_cast<std::size_t>(std::max_element(std::begin(kSensorHz), std::end(kSensorHz)) - std::begin(kSensorHz));
    std::vector<double> sums(kSensors, 0.0);
    std::vector<std::unique_ptr<simsync::bench::SleepingReader>> readers;
    for (std::size_t i = 0; i < kSensors; ++i) {
        if (i == stepping_sensor) {
            readers.emplace_back();
            continue;
        }
        readers.push_back(std::make_unique<simsync::bench::SleepingReader>([&, i] { sums[i] += sense(world); }, "floor_sensor"));
    }
    simsync::bench::SleepingReader controller([&] { control(world, hash); }, "floor_control");
    std::vector<std::int64_t> next(kSensors, 0);
    std::int64_t next_control = 0;
    std::vector<std::size_t> due;
    const RunMeter meter;
    for (simsync::SimTime t = simsync::kSimStart;; t += kStep) {
        if (simsync::round_to_grid(instant(kControllerHz, next_control), kStep) == t) {
            if (t < end) {
                controller.post();
                controller.wait_replied();
            }
            ++next_control;
        }
        due.clear();
        for (std::size_t i = 0; i < kSensors; ++i) {
            if (simsync::round_to_grid(instant(kSensorHz[i], next[i]), kStep) == t) {
                ++next[i];
                if (i == stepping_sensor) {
                    sums[i] += sense(world);
                    continue;
                }
                readers[i]->post();
                due.push_back(i);
            }
        }
        for (const std::size_t i : due) readers[i]->wait_replied();
        if (t >= end) break;
        world.step(kStep);
    }
    world.hash_state(hash);
    RunFigures f = meter.figures();
    readers.clear();
    f.hash = hash.hex();
    return f;
}

// kInlineSensors: the sensors are inline systems (issue 11): completions with no
// executor, run by whichever thread steps Bullet, right after the step; only
// the controller and the clock publisher keep a thread.
template <bool kInlineSensors>
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
    simsync::ClockPublisher clock(handler, *source, {.schedule = simsync::PeriodicSchedule::from_rate(100)});
    std::uint64_t clock_bytes = 0; // a callback sink that does a little work per message
    clock.add_callback([&](const simsync::ClockMessage& m) { clock_bytes += simsync::encode_clock_datagram(m).size(); });

    const RunMeter meter; // the clock publisher's start counts: it is part of the handler's run
    clock.start();
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
    // Inline sensors: each re-arms from its own completion; the last one to
    // finish says so (the run ends when every participant has).
    std::mutex done_mutex;
    std::condition_variable done_cv;
    std::size_t sensors_done = 0;
    volatile double inline_sink = 0;
    std::function<void(std::size_t, std::int64_t)> request_inline = [&](std::size_t i, std::int64_t n) {
        sensors[i].async_request_access(instant(kSensorHz[i], n), simsync::run_inline([&, i, n](std::error_code ec, simsync::Access a) {
            const simsync::SimTime next = instant(kSensorHz[i], n + 1);
            if (!ec) {
                inline_sink = inline_sink + sense(a.world_as<const sb::BulletWorld>());
                a.release(next);
                if (next <= end) return request_inline(i, n + 1);
            }
            std::lock_guard<std::mutex> g(done_mutex);
            if (++sensors_done == sensors.size()) done_cv.notify_all();
        }));
    };
    for (std::size_t i = 0; i < sensors.size(); ++i) {
        if constexpr (kInlineSensors) {
            request_inline(i, 0);
            continue;
        }
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
    if constexpr (kInlineSensors) {
        std::unique_lock<std::mutex> lock(done_mutex);
        done_cv.wait(lock, [&] { return sensors_done == sensors.size(); });
    }
    RunFigures f = meter.figures();
    clock.stop();
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
    using simsync::bench::Compare;
    simsync::bench::CommandLine cli("bench_bullet_host",
                                    "The Bullet host's scene through the handler against a raw Bullet loop.");
    simsync::bench::RepeatedRuns runs{.reps = 9, .seconds = 5, .quick_reps = 2, .quick_seconds = 1};
    runs.add_options(cli, "alternating which run goes first");
    if (const auto exit = cli.parse(argc, argv)) return *exit;
    runs.apply_quick(cli);
    const bool quick = cli.args().quick;
    const double seconds = runs.seconds;
    const int reps = runs.reps;

    const simsync::SimTime end = simsync::round_to_grid(simsync::sim_time(std::chrono::duration<double>(seconds)), kStep);
    if (end <= simsync::kSimStart) return cli.usage_error("--seconds is shorter than one step (1 ms)");
    std::printf("bench_bullet_host: 100 boxes, dt 1 ms, %g simulated s, controller 100 Hz + 10 shared sensors, "
                "%d alternating repetitions, %u hardware threads\n",
                seconds, reps, std::thread::hardware_concurrency());

    // Ways to run the participants through the handler, each against the same
    // raw loop, with its own targets per CPU budget (NaN: no goal).
    struct Style {
        std::string id; // names its goals
        std::string name;
        RunFigures (*run)(simsync::SimTime);
        double target_all_cpus;
        double target_one_cpu;
    };
    const double none = std::nan("");
    // Issue 11: inline sensors at most 1.02x the raw loop on all CPUs; sensor
    // threads keep the earlier goal (1.05x; issue 11 asks them to be no worse
    // than the 1.21x measured before the asynchronous engine: bullet_host.notes.md).
    // Issue 25 sets the thread-per-participant goal on all CPUs at 1.10x.
    const std::vector<Style> styles{{"threads", "one thread per participant", run_handler<false>, 1.10, 1.05},
                                    {"inline", "inline sensors, controller thread", run_handler<true>, 1.02, none}};

    // Two CPU budgets. "all CPUs" is what a user gets by default; "1 CPU" pins
    // the whole process (every thread inherits the mask) to one CPU, which is
    // the raw loop's own budget: it separates the cost of synchronising from the
    // cost of waking a thread on another, idle vCPU (an inter-processor
    // interrupt through the hypervisor) and of moving Bullet's data between
    // the cores' caches, both of which lie on the critical path of every step.
    struct Variant {
        const char* name;
        bool pinned;
        std::vector<double> raw_wall;
        std::vector<double> raw_cpu;
        std::vector<double> floor_wall;                       // the floor of a thread per participant
        std::vector<RunFigures> floor_runs;
        std::vector<std::vector<double>> style_wall;          // per style
        std::vector<std::vector<RunFigures>> style_runs;      // per style
    };
    Variant variants[] = {{"all CPUs", false, {}, {}, {}, {}, {}, {}}, {"pinned to 1 CPU", true, {}, {}, {}, {}, {}, {}}};
    for (Variant& v : variants) {
        v.style_wall.resize(styles.size());
        v.style_runs.resize(styles.size());
    }
    cpu_set_t all{};
    sched_getaffinity(0, sizeof all, &all);
    std::printf("%4s %-16s %-28s %10s %12s %12s %14s %10s  %s\n", "rep", "cpus", "run", "wall s", "vol. csw",
                "invol. csw", "blocked s", "grants", "hash");
    std::string reference;
    bool same = true;
    const std::size_t runs_per_rep = styles.size() + 2; // the raw loop is run 0, the floor the last
    for (int r = 0; r < reps; ++r) {
        for (Variant& v : variants) {
            if (v.pinned) {
                cpu_set_t one{};
                CPU_SET(first_cpu(all), &one);
                sched_setaffinity(0, sizeof one, &one);
            }
            // Rotate which goes first, so warm-up and drift hit every run alike.
            for (std::size_t k = 0; k < runs_per_rep; ++k) {
                const std::size_t which = (k + static_cast<std::size_t>(r)) % runs_per_rep;
                const bool raw = which == 0;
                const bool floor = which == runs_per_rep - 1;
                const RunFigures f = raw ? run_raw(end) : floor ? run_raw_floor(end) : styles[which - 1].run(end);
                if (raw) {
                    v.raw_wall.push_back(f.wall_s);
                    v.raw_cpu.push_back(f.cpu_s);
                } else if (floor) {
                    v.floor_wall.push_back(f.wall_s);
                    v.floor_runs.push_back(f);
                } else {
                    v.style_wall[which - 1].push_back(f.wall_s);
                    v.style_runs[which - 1].push_back(f);
                }
                if (reference.empty()) reference = f.hash;
                same = same && f.hash == reference;
                std::printf("%4d %-16s %-28s %10.3f %12ld %12ld %14.3f %10llu  %s\n", r + 1, v.name,
                            raw ? "raw" : floor ? "floor (sleeping threads)" : styles[which - 1].name.c_str(), f.wall_s,
                            f.voluntary_switches,
                            f.involuntary_switches, f.blocked_s, static_cast<unsigned long long>(f.grants),
                            f.hash.c_str());
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
        "30, 20, 10 Hz) reading every body. **handler**: a SimSyncHandler, either one thread per participant "
        "or the sensors as inline systems (run by the thread that steps, right after the step) with the "
        "controller on a thread, plus the clock publisher at 100 Hz; **raw** (baseline): one thread steps Bullet and does the same work "
        "inline at the same instants. %d repetitions, rotating which goes first; wall time median and "
        "min-max; each ratio is the median over the repetitions of the run's wall time over the raw run's in the "
        "same repetition, with their spread, and the same for the process's CPU time. Unpaced (as fast as possible): the overhead is what synchronising costs per step. Run on "
        "all CPUs (the default) and with the whole process pinned to one CPU (the raw loop's own budget). "
        "**floor of one thread per participant**: the raw loop run by a 200 Hz sensor's thread, the controller and "
        "the other sensors each on a thread of its own that sleeps between its instants, woken by the stepping "
        "thread through a raw futex (the stepping thread spins briefly for the reply): the least one thread per "
        "participant can cost on this machine, one wake-up of a sleeping thread per other participant's instant. "
        "Every run must produce the same trajectory hash.",
        seconds, reps);
    simsync::bench::Table table{"", {"CPUs", "run", "median wall s", "min", "max", "ratio to raw (median of pairs)",
                                     "pair ratios min-max", "us per step", "grants", "vol. cs/grant",
                                     "invol. cs/grant", "CPU time ratio (median of pairs, min-max)"}, {}};
    const double steps = static_cast<double>(end.time_since_epoch() / kStep);
    // The floor's wake-ups: every participant's instants but the most frequent sensor's.
    const double floor_wakes_per_step = [] {
        double per_s = kControllerHz;
        for (const int hz : kSensorHz) per_s += hz;
        per_s -= *std::max_element(std::begin(kSensorHz), std::end(kSensorHz));
        return per_s * std::chrono::duration<double>(kStep).count();
    }();
    for (Variant& v : variants) {
        const Stats rs = stats_of(v.raw_wall);
        table.rows.push_back({v.name, "raw Bullet loop (baseline)", format("%.3f", rs.median), format("%.3f", rs.min),
                              format("%.3f", rs.max), "1", "-", format("%.1f", rs.median / steps * 1e6), "-", "-", "-", "1"});
        // CPU time (user + system, the whole process) over the raw run's: blind to
        // waiting, but also to the other processes that preempt a run on a shared machine.
        // Paired ratios: each run over the raw run of the same repetition (seconds
        // apart: the machine's drift moves both alike), their median and spread.
        const auto pairs = [&](const std::vector<RunFigures>& of, bool cpu) {
            std::vector<double> r;
            for (std::size_t i = 0; i < of.size() && i < v.raw_wall.size(); ++i) {
                r.push_back(cpu ? of[i].cpu_s / v.raw_cpu[i] : of[i].wall_s / v.raw_wall[i]);
            }
            return stats_of(r);
        };
        const auto cpu_ratio = [&](const std::vector<RunFigures>& of) {
            const Stats c = pairs(of, true);
            return format("%.3f (%.3f-%.3f)", c.median, c.min, c.max);
        };
        const Stats fs = stats_of(v.floor_wall);
        const Stats fp = pairs(v.floor_runs, false);
        std::vector<double> floor_vcsw;
        for (const RunFigures& f : v.floor_runs) floor_vcsw.push_back(static_cast<double>(f.voluntary_switches) / steps);
        table.rows.push_back({v.name,
                              "floor of one thread per participant: the raw loop on a 200 Hz sensor's thread, the "
                              "controller and 9 sensors on threads sleeping between their instants (raw futex)",
                              format("%.3f", fs.median), format("%.3f", fs.min), format("%.3f", fs.max),
                              format("%.3f", fp.median), format("%.3f-%.3f", fp.min, fp.max),
                              format("%.1f", fs.median / steps * 1e6), "-",
                              format("%.2f per step", stats_of(floor_vcsw).median), "-", cpu_ratio(v.floor_runs)});
        report.notes.push_back(format(
            "%s: the floor of one thread per participant costs %.1f us per step over the raw loop (%.3fx), "
            "%.2f wake-ups per step: %.1f us per wake-up of a sleeping thread and its reply, in this run.",
            v.name, (fp.median - 1) * rs.median / steps * 1e6, fp.median, floor_wakes_per_step,
            (fp.median - 1) * rs.median / steps * 1e6 / floor_wakes_per_step));
        for (std::size_t s = 0; s < styles.size(); ++s) {
            const Style& style = styles[s];
            const Stats hs = stats_of(v.style_wall[s]);
            const Stats hp = pairs(v.style_runs[s], false);
            const double ratio = hp.median;
            const double target = v.pinned ? style.target_one_cpu : style.target_all_cpus;
            std::vector<double> vcsw, ivcsw;
            for (const RunFigures& f : v.style_runs[s]) {
                vcsw.push_back(static_cast<double>(f.voluntary_switches) / static_cast<double>(f.grants));
                ivcsw.push_back(static_cast<double>(f.involuntary_switches) / static_cast<double>(f.grants));
            }
            table.rows.push_back(
                {v.name, "through the handler, " + style.name, format("%.3f", hs.median), format("%.3f", hs.min),
                 format("%.3f", hs.max),
                 std::isnan(target) ? format("%.3f", ratio) : simsync::bench::decided(ratio, Compare::at_most, target, 3),
                 format("%.3f-%.3f", hp.min, hp.max), format("%.1f", hs.median / steps * 1e6),
                 format("%llu", static_cast<unsigned long long>(v.style_runs[s].front().grants)),
                 format("%.2f", stats_of(vcsw).median), format("%.2f", stats_of(ivcsw).median),
                 cpu_ratio(v.style_runs[s])});
            if (std::isnan(target)) continue;
            report.goals.push_back(simsync::bench::check_goal(
                "bullet_host_" + style.id + (v.pinned ? "_one_cpu" : "_all_cpus"),
                format("Bullet host through the handler (%s) at most %sx the raw Bullet loop (%s)", style.name.c_str(),
                       simsync::bench::number_text(target).c_str(), v.name),
                ratio, Compare::at_most, target, "x",
                format("median of %zu paired ratios, %.3f-%.3f; %.1f us of synchronisation per step",
                       v.style_runs[s].size(), hp.min, hp.max, (ratio - 1) * rs.median / steps * 1e6),
                3));
        }
    }
    report.tables.push_back(std::move(table));
    report.notes.push_back(same ? "Trajectory hashes: all runs equal (the handler changes nothing in the physics)."
                                : "**Trajectory hashes differ between runs: a determinism bug.**");
    simsync::bench::publish(report, cli.args().json_path);
    return same ? 0 : 1;
}
