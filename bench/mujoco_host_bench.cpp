// bench_mujoco_host: what the handler costs around MuJoCo, in simsync-mujoco-host's
// shape (issue 26, point 4).
//
// Model: the host's arm (examples/mujoco_host/arm.xml: two motorised links, three
// boxes, a ball; 1 ms steps), or --model FILE. Participants as in the host: a
// controller (100 Hz, exclusive, the host's control law) and three shared
// sensors (200, 30, 10 Hz) reading body heights and contacts. Two ways, in the
// same run, alternating which goes first:
//   raw:     one thread runs a plain mj_step loop and calls the controller and
//            the sensor reads at the same instants;
//   handler: a SimSyncHandler (StepThread::any), the controller on a thread of
//            its own, the sensors inline systems (run by the stepping thread
//            right after the step): the host's default.
// No pacer and no clock publisher: the run is unpaced and measures what
// synchronising costs per step. Reports median / min / max wall time, the ratio
// of the medians and the handler's microseconds per step over the raw loop's;
// every run must give the same trajectory hash.
// Default: 20 simulated seconds, 5 repetitions; --quick: 2 s, 2 repetitions.

#include "arm_controller.hpp"
#include "embedded_model.hpp"
#include "report.hpp"

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
#include <string>
#include <thread>
#include <vector>

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

RunFigures run_handler(const std::string& model, simsync::SimTime end)
{
    const auto world = load(model);
    simsync::TrajectoryHash hash;
    simsync::SimSyncHandler handler(*world, {.step = world->timestep()});
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
    for (std::size_t i = 0; i < sensors.size(); ++i) request_inline(i, 0);
    control_thread.join();
    {
        std::unique_lock<std::mutex> lock(done_mutex);
        done_cv.wait(lock, [&] { return sensors_done == sensors.size(); });
    }
    RunFigures f;
    f.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    f.switches = simsync::bench::ContextSwitches::now() - cs0;
    f.grants = handler.snapshot().grants;
    handler.stop();
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

} // namespace

int main(int argc, char** argv)
{
    namespace po = boost::program_options;
    using simsync::bench::format;
    simsync::bench::CommandLine cli("bench_mujoco_host",
                                    "simsync-mujoco-host's participants through the handler against a plain mj_step loop.");
    simsync::bench::RepeatedRuns runs{.reps = 5, .seconds = 20, .quick_reps = 2, .quick_seconds = 2};
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
    std::printf("bench_mujoco_host: %s (%d bodies), dt %s s, %g simulated s, controller 100 Hz + 3 inline sensors, "
                "%d alternating repetitions, %u hardware threads\n",
                model_name.c_str(), probe->model().nbody - 1, simsync::format_seconds(step).c_str(), seconds, reps,
                std::thread::hardware_concurrency());
    probe.reset();

    std::vector<double> raw_wall, handler_wall;
    std::vector<RunFigures> handler_runs;
    std::string reference;
    bool same = true;
    std::printf("%4s %-34s %10s %10s %10s %10s  %s\n", "rep", "run", "wall s", "vol. csw", "invol. csw", "grants", "hash");
    for (int r = 0; r < reps; ++r) {
        for (int k = 0; k < 2; ++k) {
            const bool raw = (k + r) % 2 == 0; // rotate which goes first
            const RunFigures f = raw ? run_raw(model, end) : run_handler(model, end);
            (raw ? raw_wall : handler_wall).push_back(f.wall_s);
            if (!raw) handler_runs.push_back(f);
            if (reference.empty()) reference = f.hash;
            same = same && f.hash == reference;
            std::printf("%4d %-34s %10.3f %10ld %10ld %10llu  %s\n", r + 1,
                        raw ? "plain mj_step loop" : "handler, inline sensors", f.wall_s, f.switches.voluntary,
                        f.switches.involuntary, static_cast<unsigned long long>(f.grants), f.hash.c_str());
        }
    }
    std::printf("trajectory hashes %s\n", same ? "all equal" : "DIFFER");

    simsync::bench::Report report;
    report.id = "mujoco_host";
    report.title = "MuJoCo host overhead";
    report.quick = quick;
    report.description = format(
        "simsync-mujoco-host's participants on %s (mj_step at %s s) for %g simulated seconds: a controller at "
        "100 Hz (exclusive, writes ctrl by the host's PD law) and 3 shared sensors (200, 30, 10 Hz) reading body "
        "heights and contacts. **handler**: a SimSyncHandler with the controller on a thread and the sensors as "
        "inline systems (run by the stepping thread right after the step), the host's default; **plain mj_step "
        "loop** (baseline): one thread steps MuJoCo and does the same work at the same instants. No pacer, no "
        "clock publisher. %d repetitions, alternating which goes first; wall time median and min-max. Every run "
        "must produce the same trajectory hash.",
        model_name.c_str(), simsync::format_seconds(step).c_str(), seconds, reps);
    const Spread rs = spread_of(raw_wall);
    const Spread hs = spread_of(handler_wall);
    const double steps = static_cast<double>(end.time_since_epoch() / step);
    simsync::bench::Table table{"", {"run", "median wall s", "min", "max", "ratio to raw", "us per step", "grants"}, {}};
    table.rows.push_back({"plain mj_step loop (baseline)", format("%.3f", rs.median), format("%.3f", rs.min),
                          format("%.3f", rs.max), "1", format("%.2f", rs.median / steps * 1e6), "-"});
    table.rows.push_back({"through the handler, inline sensors, controller thread", format("%.3f", hs.median),
                          format("%.3f", hs.min), format("%.3f", hs.max), format("%.3f", hs.median / rs.median),
                          format("%.2f", hs.median / steps * 1e6),
                          format("%llu", static_cast<unsigned long long>(handler_runs.front().grants))});
    report.tables.push_back(std::move(table));
    report.notes.push_back(format("Synchronisation: %.2f us per step over the plain loop's %.2f us (%.0f controller "
                                  "handoffs per simulated second).",
                                  (hs.median - rs.median) / steps * 1e6, rs.median / steps * 1e6,
                                  static_cast<double>(kControllerHz)));
    report.notes.push_back(same ? "Trajectory hashes: all runs equal (the handler changes nothing in the physics)."
                                : "**Trajectory hashes differ between runs: a determinism bug.**");
    simsync::bench::publish(report, cli.args().json_path);
    return same ? 0 : 1;
}
