// bench_mujoco_host: what the handler costs around MuJoCo, in simsync-mujoco-host's
// shape (issue 26, point 4).
//
// Model: the host's arm (examples/mujoco_host/arm.xml: two motorised links, three
// boxes, a ball; 1 ms steps), or --model FILE. Participants as in the host: a
// controller (100 Hz, exclusive, the host's control law) and three shared
// sensors (200, 30, 10 Hz) reading body heights and contacts. Three ways, in the
// same run, rotating which goes first:
//   raw:     one thread runs a plain mj_step loop and calls the controller and
//            the sensor reads at the same instants;
//   inline:  a SimSyncHandler (StepThread::any), the controller on a thread of
//            its own, the sensors inline systems (run by the stepping thread
//            right after the step): the host's default;
//   threads: the same with one thread per sensor (the host's --sensors threads),
//            each going from one access to the next with release_and_request.
// No pacer and no clock publisher: the run is unpaced and measures what
// synchronising costs per step. Two more ways bound the threads style: the plain
// loop with each sensor on a thread that sleeps between samples (wake_floor.hpp:
// the floor of a thread per sensor on this machine, in the same run), and the
// threads style with a host thread stepping (StepThread::host). Reports median /
// min / max wall time, the median over repetitions of each way's wall time over the
// raw run's in the same repetition (and the spread of those ratios), and the
// microseconds of synchronisation per step;
// every run must give the same trajectory hash. MuJoCo's own mujoco-testspeed on
// the same model and number of steps is a sanity line (no controller, no sensors).
// Default: 10 simulated seconds, 11 repetitions; --quick: 2 s, 3 repetitions.

#include "arm_controller.hpp"
#include "embedded_model.hpp"
#include "report.hpp"
#include "wake_floor.hpp"

#include <simsync/core/asio.hpp>
#include <simsync/mujoco/mujoco.hpp>
#include <simsync/simsync.hpp>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

namespace {

namespace sm = simsync::mujoco;
namespace mh = simsync::examples::mujoco_host;

constexpr int kControllerHz = 100;
constexpr int kSensorHz[] = {200, 30, 10};

simsync::SimTime instant(int rate_hz, std::int64_t n) { return simsync::SimTime{simsync::SimDuration{n * 1'000'000'000 / rate_hz}}; }

// A sensor's work: what the host's sensors read.
double sense(const mjModel& m, const mjData& d)
{
    double height = 0;
    for (int b = 1; b < m.nbody; ++b) height += d.xpos[3 * b + 2];
    return height + d.ncon;
}

std::unique_ptr<sm::MujocoWorld> load(const std::string& model)
{
    if (model.empty()) return std::make_unique<sm::MujocoWorld>(sm::MjcfText{mh::kEmbeddedModel, "arm.xml"});
    return std::make_unique<sm::MujocoWorld>(sm::MjcfFile{model});
}

struct RunFigures {
    double wall_s = 0;
    std::string hash;
    std::uint64_t grants = 0;
    simsync::bench::ContextSwitches switches;
};

RunFigures run_raw(const std::string& model, simsync::SimTime end)
{
    const auto world = load(model);
    const mjModel* m = &world->model();
    mjData* d = &world->data();
    const simsync::SimDuration step = world->timestep();
    simsync::TrajectoryHash hash;
    std::int64_t next_control = 0;
    std::vector<std::int64_t> next(std::size(kSensorHz), 0);
    volatile double sink = 0;
    const auto cs0 = simsync::bench::ContextSwitches::now();
    const auto start = std::chrono::steady_clock::now();
    for (simsync::SimTime t = simsync::kSimStart;; t += step) {
        // The handler's order at an instant: the controller (priority 1) first.
        for (; simsync::round_to_grid(instant(kControllerHz, next_control), step) == t && t < end; ++next_control) {
            world->hash_state(hash);
            mh::control(*m, *d);
        }
        for (std::size_t i = 0; i < next.size(); ++i) {
            for (; simsync::round_to_grid(instant(kSensorHz[i], next[i]), step) == t; ++next[i]) sink = sink + sense(*m, *d);
        }
        if (t >= end) break;
        mj_step(m, d); // plain MuJoCo: no adapter between the loop and the engine
    }
    world->hash_state(hash);
    RunFigures f;
    f.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    f.switches = simsync::bench::ContextSwitches::now() - cs0;
    f.hash = hash.hex();
    return f;
}

// The floor of the threads style (wake_floor.hpp): the plain loop, the controller
// on the stepping thread as in raw, each sensor read by a thread of its own that
// sleeps between its samples and is woken by the stepping thread, which waits for
// its reply. Sensors due at one instant read together (shared), as the handler
// grants them.
RunFigures run_raw_sleeping_sensors(const std::string& model, simsync::SimTime end)
{
    const auto world = load(model);
    const mjModel* m = &world->model();
    mjData* d = &world->data();
    const simsync::SimDuration step = world->timestep();
    simsync::TrajectoryHash hash;
    std::int64_t next_control = 0;
    std::vector<std::int64_t> next(std::size(kSensorHz), 0);
    std::vector<double> sums(std::size(kSensorHz), 0.0);
    std::vector<std::unique_ptr<simsync::bench::SleepingReader>> readers;
    for (std::size_t i = 0; i < std::size(kSensorHz); ++i) {
        readers.push_back(std::make_unique<simsync::bench::SleepingReader>([&, i] { sums[i] += sense(*m, *d); }));
    }
    std::vector<std::size_t> due;
    const auto cs0 = simsync::bench::ContextSwitches::now();
    const auto start = std::chrono::steady_clock::now();
    for (simsync::SimTime t = simsync::kSimStart;; t += step) {
        for (; simsync::round_to_grid(instant(kControllerHz, next_control), step) == t && t < end; ++next_control) {
            world->hash_state(hash);
            mh::control(*m, *d);
        }
        due.clear();
        for (std::size_t i = 0; i < next.size(); ++i) {
            for (; simsync::round_to_grid(instant(kSensorHz[i], next[i]), step) == t; ++next[i]) {
                readers[i]->post();
                due.push_back(i);
            }
        }
        for (const std::size_t i : due) readers[i]->wait_replied();
        if (t >= end) break;
        mj_step(m, d);
    }
    world->hash_state(hash);
    RunFigures f;
    f.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    f.switches = simsync::bench::ContextSwitches::now() - cs0;
    readers.clear();
    f.hash = hash.hex();
    return f;
}

// host_steps (threads only): StepThread::host, one thread of its own steps MuJoCo
// (handler.run()), as the host's --host-steps: the stepping stays on one thread
// and every grant wakes its participant.
RunFigures run_handler(const std::string& model, simsync::SimTime end, bool sensor_threads, bool host_steps = false)
{
    const auto world = load(model);
    simsync::TrajectoryHash hash;
    simsync::SimSyncHandler handler(
        *world, {.step = world->timestep(), .step_thread = host_steps ? simsync::StepThread::host : simsync::StepThread::any});
    simsync::Accessor controller = handler.register_accessor(
        "controller", {.kind = simsync::AccessorKind::lockstep, .mode = simsync::AccessMode::exclusive, .priority = 1,
                       .first_request = simsync::kSimStart});
    std::vector<simsync::Accessor> sensors;
    for (std::size_t i = 0; i < std::size(kSensorHz); ++i) {
        sensors.push_back(handler.register_accessor("sensor_" + std::to_string(i),
                                                    {.kind = simsync::AccessorKind::lockstep,
                                                     .mode = simsync::AccessMode::shared,
                                                     .first_request = simsync::kSimStart}));
    }
    std::mutex done_mutex;
    std::condition_variable done_cv;
    std::size_t sensors_done = 0;
    volatile double sink = 0;
    // Each inline sensor re-arms from its own completion, on the stepping thread.
    std::function<void(std::size_t, std::int64_t)> request_inline = [&](std::size_t i, std::int64_t n) {
        sensors[i].async_request_access(instant(kSensorHz[i], n), simsync::run_inline([&, i, n](std::error_code ec,
                                                                                                 simsync::Access a) {
            const simsync::SimTime next = instant(kSensorHz[i], n + 1);
            if (!ec) {
                const sm::MujocoWorld& w = sm::view(a);
                sink = sink + sense(w.model(), w.data());
                a.release(next);
                if (next <= end) return request_inline(i, n + 1);
            }
            std::lock_guard<std::mutex> g(done_mutex);
            if (++sensors_done == sensors.size()) done_cv.notify_all();
        }));
    };
    const auto cs0 = simsync::bench::ContextSwitches::now();
    const auto start = std::chrono::steady_clock::now();
    std::thread stepper;
    if (host_steps) stepper = std::thread([&] { handler.run(); });
    std::thread control_thread([&] {
        for (std::int64_t n = 0;; ++n) {
            const simsync::SimTime at = std::min(instant(kControllerHz, n), end);
            simsync::Access a = controller.request_access(at);
            if (!a) break;
            sm::MujocoWorld& w = sm::edit(a);
            w.hash_state(hash);
            if (a.granted_time() >= end) break;
            mh::control(w.model(), w.data());
            a.release(std::min(instant(kControllerHz, n + 1), end));
        }
        controller.deregister();
    });
    std::vector<std::thread> threads;
    std::vector<double> sums(sensors.size(), 0.0); // one per sensor thread: no shared write
    if (sensor_threads) {
        for (std::size_t i = 0; i < sensors.size(); ++i) {
            threads.emplace_back([&, i] {
                double local = 0;
                simsync::Access a = sensors[i].request_access(instant(kSensorHz[i], 0));
                for (std::int64_t n = 0; a; ++n) {
                    const sm::MujocoWorld& w = sm::view(a);
                    local += sense(w.model(), w.data());
                    const simsync::SimTime next = instant(kSensorHz[i], n + 1);
                    if (next > end) break;
                    a = sensors[i].release_and_request(std::move(a), next);
                }
                if (a) a.release();
                sensors[i].deregister();
                sums[i] = local;
            });
        }
    } else {
        for (std::size_t i = 0; i < sensors.size(); ++i) request_inline(i, 0);
    }
    control_thread.join();
    if (sensor_threads) {
        for (std::thread& t : threads) t.join();
        for (const double v : sums) sink = sink + v;
    } else {
        std::unique_lock<std::mutex> lock(done_mutex);
        done_cv.wait(lock, [&] { return sensors_done == sensors.size(); });
    }
    RunFigures f;
    f.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    f.switches = simsync::bench::ContextSwitches::now() - cs0;
    f.grants = handler.snapshot().grants;
    handler.stop();
    if (stepper.joinable()) stepper.join();
    f.hash = hash.hex();
    return f;
}

struct Spread {
    double median, min, max;
};
Spread spread_of(const std::vector<double>& v)
{
    const simsync::bench::Distribution d = simsync::bench::distribution(v);
    return {simsync::bench::median(v), d.min, d.max};
}

// MuJoCo's own speed test on the same model: "Time per step : 0.0386 ms".
// The embedded model goes through a temporary file, as testspeed reads files.
std::optional<double> testspeed_us_per_step(const std::string& model, long steps)
{
    std::string path = model;
    std::string temp;
    if (path.empty()) {
        char name[] = "/tmp/bench_mujoco_host_XXXXXX.xml";
        const int fd = mkstemps(name, 4);
        if (fd < 0) return std::nullopt;
        const std::string_view text = mh::kEmbeddedModel;
        const bool written = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
        close(fd);
        temp = path = name;
        if (!written) {
            std::remove(temp.c_str());
            return std::nullopt;
        }
    }
    const std::string command = "mujoco-testspeed '" + path + "' " + std::to_string(steps) + " 1 2>/dev/null";
    std::optional<double> us;
    if (FILE* out = popen(command.c_str(), "r")) {
        char line[256];
        while (std::fgets(line, sizeof line, out)) {
            double ms = 0;
            if (std::sscanf(line, " Time per step : %lf ms", &ms) == 1) us = ms * 1000;
        }
        if (pclose(out) != 0) us.reset();
    }
    if (!temp.empty()) std::remove(temp.c_str());
    return us;
}

} // namespace

int main(int argc, char** argv)
{
    namespace po = boost::program_options;
    using simsync::bench::format;
    simsync::bench::CommandLine cli("bench_mujoco_host",
                                    "simsync-mujoco-host's participants through the handler against a plain mj_step loop.");
    simsync::bench::RepeatedRuns runs{.reps = 11, .seconds = 10, .quick_reps = 3, .quick_seconds = 2};
    std::string model;
    runs.add_options(cli, "alternating which run goes first");
    cli.add()("model", po::value(&model)->value_name("FILE"), "MJCF model (default: the host's arm.xml)");
    if (const auto exit = cli.parse(argc, argv)) return *exit;
    runs.apply_quick(cli);
    const bool quick = cli.args().quick;
    const double seconds = runs.seconds;
    const int reps = runs.reps;

    std::unique_ptr<sm::MujocoWorld> probe;
    try {
        probe = load(model);
    } catch (const simsync::Error& e) {
        return cli.usage_error(std::string("--model: ") + e.what());
    }
    const simsync::SimDuration step = probe->timestep();
    const simsync::SimTime end = simsync::round_to_grid(simsync::sim_time(std::chrono::duration<double>(seconds)), step);
    if (end <= simsync::kSimStart) return cli.usage_error("--seconds is shorter than one step");
    const std::string model_name = probe->source();
    std::printf("bench_mujoco_host: %s (%d bodies), dt %s s, %g simulated s, controller 100 Hz + 3 sensors, "
                "%d alternating repetitions, %u hardware threads\n",
                model_name.c_str(), probe->model().nbody - 1, simsync::format_seconds(step).c_str(), seconds, reps,
                std::thread::hardware_concurrency());
    probe.reset();

    // Five ways, rotating which goes first: 0 raw, 1 inline sensors, 2 sensor
    // threads, 3 the raw loop with sleeping sensor threads (the floor of 2), 4 sensor
    // threads with a host thread stepping. A ratio is taken within each repetition
    // (each way against the raw run of the same repetition, a few seconds apart) and
    // the page shows the median of those ratios and their spread: the machine's
    // drift over a run (other sessions' builds) moves both runs of a pair alike.
    constexpr int kWays = 5;
    constexpr const char* kRunName[kWays] = {"plain mj_step loop", "handler, inline sensors", "handler, sensor threads",
                                             "plain loop, sleeping sensor threads", "handler, sensor threads, host steps"};
    std::vector<double> wall[kWays];
    std::vector<simsync::bench::ContextSwitches> switches[kWays];
    std::uint64_t grants[kWays] = {};
    std::string reference;
    bool same = true;
    std::printf("%4s %-36s %10s %10s %10s %10s  %s\n", "rep", "run", "wall s", "vol. csw", "invol. csw", "grants", "hash");
    for (int r = 0; r < reps; ++r) {
        for (int k = 0; k < kWays; ++k) {
            const int way = (k + r) % kWays;
            const RunFigures f = way == 0   ? run_raw(model, end)
                                 : way == 3 ? run_raw_sleeping_sensors(model, end)
                                            : run_handler(model, end, way != 1, way == 4);
            wall[way].push_back(f.wall_s);
            switches[way].push_back(f.switches);
            grants[way] = f.grants;
            if (reference.empty()) reference = f.hash;
            same = same && f.hash == reference;
            std::printf("%4d %-36s %10.3f %10ld %10ld %10llu  %s\n", r + 1, kRunName[way], f.wall_s,
                        f.switches.voluntary, f.switches.involuntary, static_cast<unsigned long long>(f.grants),
                        f.hash.c_str());
        }
    }
    std::printf("trajectory hashes %s\n", same ? "all equal" : "DIFFER");
    const double steps = static_cast<double>(end.time_since_epoch() / step);
    const std::optional<double> testspeed_us = testspeed_us_per_step(model, static_cast<long>(steps));

    simsync::bench::Report report;
    report.id = "mujoco_host";
    report.title = "MuJoCo host overhead";
    report.quick = quick;
    report.description = format(
        "simsync-mujoco-host's participants on %s (mj_step at %s s) for %g simulated seconds: a controller at "
        "100 Hz (exclusive, writes ctrl by the host's PD law) and 3 shared sensors (200, 30, 10 Hz) reading body "
        "heights and contacts. **inline sensors**: a SimSyncHandler with the controller on a thread and the sensors "
        "as inline systems (run by the stepping thread right after the step), the host's default; **sensor "
        "threads**: one thread per sensor, each going from one access to the next with release_and_request (the "
        "host's --sensors threads), and the same with a host thread stepping (StepThread::host, the host's "
        "--host-steps); **plain mj_step loop** (baseline): one thread steps MuJoCo and does the same work at the same "
        "instants; **floor of one thread per sensor**: the plain loop with each sensor read by a thread of its own "
        "that sleeps between samples, woken by the stepping thread through a raw futex, which spins briefly for the "
        "reply (the least a thread per sensor can cost on this machine: one wake-up of a sleeping thread per sample "
        "on the critical path). No pacer, no clock publisher. %d repetitions, rotating which goes first; wall time "
        "median and min-max; each ratio is the median over the repetitions of the run's wall time over the plain "
        "loop's in the same repetition, with the spread of those ratios. Every run must produce the same trajectory "
        "hash. MuJoCo's own `mujoco-testspeed` "
        "on the same model and number of steps (no controller, no sensors) is a sanity line.",
        model_name.c_str(), simsync::format_seconds(step).c_str(), seconds, reps);
    Spread sp[kWays];
    Spread ratio[kWays]; // per-repetition ratios to the raw run of the same repetition
    double vcsw_per_step[kWays] = {};
    for (int w = 0; w < kWays; ++w) {
        sp[w] = spread_of(wall[w]);
        std::vector<double> r, v;
        for (std::size_t i = 0; i < wall[w].size(); ++i) {
            r.push_back(wall[w][i] / wall[0][i]);
            v.push_back(static_cast<double>(switches[w][i].voluntary) / steps);
        }
        ratio[w] = spread_of(r);
        vcsw_per_step[w] = simsync::bench::median(v);
    }
    // Synchronisation per step: the median ratio's excess over the raw step.
    const double raw_us = sp[0].median / steps * 1e6;
    const auto sync_us = [&](int w) { return (ratio[w].median - 1) * raw_us; };
    simsync::bench::Table table{"",
                                {"run", "median wall s", "min", "max", "ratio to raw (median of pairs)", "pair ratios min-max",
                                 "us per step", "vol. cs per step", "grants"},
                                {}};
    table.rows.push_back({"plain mj_step loop (baseline)", format("%.3f", sp[0].median), format("%.3f", sp[0].min),
                          format("%.3f", sp[0].max), "1", "-", format("%.2f", raw_us),
                          format("%.3f", vcsw_per_step[0]), "-"});
    constexpr const char* kRowName[kWays] = {
        "", "through the handler, inline sensors, controller thread",
        "through the handler, one thread per sensor and the controller",
        "floor of one thread per sensor: the plain loop, each sensor on a thread that sleeps between samples, woken by "
        "the stepping thread (atomic notify, reply awaited by atomic wait)",
        "through the handler, one thread per sensor and the controller, a host thread steps (StepThread::host)"};
    for (const int w : {3, 1, 2, 4}) {
        const double target = w == 1 ? 1.02 : w == 2 ? 1.10 : std::nan("");
        table.rows.push_back({kRowName[w], format("%.3f", sp[w].median), format("%.3f", sp[w].min), format("%.3f", sp[w].max),
                              std::isnan(target) ? format("%.3f", ratio[w].median)
                                                 : simsync::bench::decided(ratio[w].median, simsync::bench::Compare::at_most,
                                                                           target, 3),
                              format("%.3f-%.3f", ratio[w].min, ratio[w].max), format("%.2f", sp[w].median / steps * 1e6),
                              format("%.3f", vcsw_per_step[w]),
                              w == 3 ? "-" : format("%llu", static_cast<unsigned long long>(grants[w]))});
    }
    report.tables.push_back(std::move(table));
    using simsync::bench::Compare;
    report.goals.push_back(simsync::bench::check_goal(
        "inline_vs_raw", "MuJoCo host through the handler (inline sensors, controller thread) at most 1.02x a plain mj_step loop",
        ratio[1].median, Compare::at_most, 1.02, "x",
        format("median of %d paired ratios, %.3f-%.3f; %.2f us of synchronisation per step", reps, ratio[1].min,
               ratio[1].max, sync_us(1)),
        3));
    report.goals.push_back(simsync::bench::check_goal(
        "threads_vs_raw", "MuJoCo host through the handler (one thread per participant) at most 1.10x a plain mj_step loop",
        ratio[2].median, Compare::at_most, 1.10, "x",
        format("median of %d paired ratios, %.3f-%.3f; %.2f us of synchronisation per step; this machine's floor for "
               "a thread per sensor, same run: %.3fx",
               reps, ratio[2].min, ratio[2].max, sync_us(2), ratio[3].median),
        3));
    const double samples_per_step = [&] {
        double per_s = 0;
        for (const int hz : kSensorHz) per_s += hz;
        return per_s * std::chrono::duration<double>(step).count();
    }();
    report.notes.push_back(format(
        "Synchronisation per step over the plain loop's %.2f us (median paired ratio - 1, times the raw step): inline "
        "sensors %.2f us, sensor threads %.2f us, sensor threads with a host thread stepping %.2f us; the floor, "
        "sleeping sensor threads woken by the plain loop, %.2f us, i.e. %.1f us per sensor sample (%.3f samples per "
        "step): the cost of waking a sleeping thread on this machine and getting its reply, on the critical path.",
        raw_us, sync_us(1), sync_us(2), sync_us(4), sync_us(3), sync_us(3) / samples_per_step, samples_per_step));
    report.notes.push_back(testspeed_us
                               ? format("Sanity line: `mujoco-testspeed` on the same model, %.0f steps, one thread, "
                                        "no controller: %.2f us per step (the plain loop here: %.2f us with the "
                                        "controller and sensors).",
                                        steps, *testspeed_us, sp[0].median / steps * 1e6)
                               : std::string("Sanity line: `mujoco-testspeed` did not run (not installed: Debian's "
                                             "libmujoco-samples brings it)."));
    report.notes.push_back(same ? "Trajectory hashes: all runs equal (the handler changes nothing in the physics)."
                                : "**Trajectory hashes differ between runs: a determinism bug.**");
    simsync::bench::publish(report, cli.args().json_path);
    return same ? 0 : 1;
}
