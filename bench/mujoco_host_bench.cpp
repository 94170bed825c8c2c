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
// loop with each participant but the most frequent on a thread that sleeps between its instants (wake_floor.hpp:
// the floor of a thread per participant on this machine, in the same run), and the
// threads style with a host thread stepping (StepThread::host). Reports median /
// min / max wall time, the median over repetitions of each way's wall time over the
// raw run's in the same repetition (and the spread of those ratios), and the
// microseconds of synchronisation per step;
// every run must give the same trajectory hash. MuJoCo's own mujoco-testspeed on
// the same model and number of steps is a sanity line (no controller, no sensors).
// Default: 4 simulated seconds, 21 repetitions (short pairs, many of them: the
// ratio of two runs seconds apart drifts less than two medians do); --quick: 2 s, 3 repetitions.

#include "arm_controller.hpp"
#include "embedded_model.hpp"
#include "report.hpp"
#include "wake_floor.hpp"

#include <simsync/core/asio.hpp>
#include <simsync/mujoco/mujoco.hpp>
#include <simsync/simsync.hpp>

#include <algorithm>
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

#include <pthread.h>
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

// Names the calling thread (at most 15 characters), so that perf and /proc tell the
// participants apart.
void name_thread(const std::string& name) { pthread_setname_np(pthread_self(), name.substr(0, 15).c_str()); }

struct RunFigures {
    double wall_s = 0;
    double cpu_s = 0; // the whole process's user + system time over the run
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
    const double cpu0 = simsync::bench::process_cpu_seconds();
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
    f.cpu_s = simsync::bench::process_cpu_seconds() - cpu0;
    f.switches = simsync::bench::ContextSwitches::now() - cs0;
    f.hash = hash.hex();
    return f;
}

// The floor of the threads style (wake_floor.hpp). One thread per participant
// means that every participant but the one whose thread steps sleeps between its
// instants; the fewest wake-ups come from stepping on the thread of the most
// frequent participant (the 200 Hz sensor: 0.14 wake-ups per step instead of 0.24
// with the controller's thread stepping). So: the plain loop on the stepping thread,
// which also does the 200 Hz sensor's reads; the controller and the other sensors
// each on a thread of its own that sleeps between its instants, woken by the stepping
// thread, which waits for the reply. Same order as the handler's: the controller
// (exclusive) first, then the sensors due at that instant together (shared).
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
    const std::size_t stepping_sensor = static_cast<std::size_t>(
        std::max_element(std::begin(kSensorHz), std::end(kSensorHz)) - std::begin(kSensorHz));
    static_assert(*std::max_element(std::begin(kSensorHz), std::end(kSensorHz)) >= kControllerHz,
                  "the floor's stepping thread is the most frequent sensor's");
    std::vector<std::unique_ptr<simsync::bench::SleepingReader>> readers;
    for (std::size_t i = 0; i < std::size(kSensorHz); ++i) {
        if (i == stepping_sensor) {
            readers.emplace_back();
            continue;
        }
        readers.push_back(std::make_unique<simsync::bench::SleepingReader>([&, i] { sums[i] += sense(*m, *d); }, "floor_sensor"));
    }
    simsync::bench::SleepingReader controller(
        [&] {
            world->hash_state(hash);
            mh::control(*m, *d);
        },
        "floor_control");
    std::vector<std::size_t> due;
    const auto cs0 = simsync::bench::ContextSwitches::now();
    const double cpu0 = simsync::bench::process_cpu_seconds();
    const auto start = std::chrono::steady_clock::now();
    for (simsync::SimTime t = simsync::kSimStart;; t += step) {
        for (; simsync::round_to_grid(instant(kControllerHz, next_control), step) == t && t < end; ++next_control) {
            controller.post();
            controller.wait_replied();
        }
        due.clear();
        for (std::size_t i = 0; i < next.size(); ++i) {
            for (; simsync::round_to_grid(instant(kSensorHz[i], next[i]), step) == t; ++next[i]) {
                if (i == stepping_sensor) {
                    sums[i] += sense(*m, *d);
                    continue;
                }
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
    f.cpu_s = simsync::bench::process_cpu_seconds() - cpu0;
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
    const double cpu0 = simsync::bench::process_cpu_seconds();
    const auto start = std::chrono::steady_clock::now();
    std::thread stepper;
    if (host_steps) {
        stepper = std::thread([&] {
            name_thread("stepper");
            handler.run();
        });
    }
    std::thread control_thread([&] {
        name_thread("controller");
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
                name_thread("sensor_" + std::to_string(kSensorHz[i]) + "Hz");
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
    f.cpu_s = simsync::bench::process_cpu_seconds() - cpu0;
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
    simsync::bench::RepeatedRuns runs{.reps = 21, .seconds = 4, .quick_reps = 3, .quick_seconds = 2};
    std::string model;
    runs.add_options(cli, "alternating which run goes first");
    cli.add()("model", po::value(&model)->value_name("FILE"), "MJCF model (default: the host's arm.xml)");
    std::string only;
    cli.add()("only", po::value(&only)->value_name("WAY"),
              "run the plain loop and this way only (inline, threads, floor, host-steps), e.g. under perf record");
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
    // threads, 3 the raw loop with sleeping participant threads (the floor of 2), 4 sensor
    // threads with a host thread stepping. A ratio is taken within each repetition
    // (each way against the raw run of the same repetition, a few seconds apart) and
    // the page shows the median of those ratios and their spread: the machine's
    // drift over a run (other sessions' builds) moves both runs of a pair alike.
    constexpr int kWays = 5;
    constexpr const char* kRunName[kWays] = {"plain mj_step loop", "handler, inline sensors", "handler, sensor threads",
                                             "floor: plain loop, sleeping threads", "handler, sensor threads, host steps"};
    constexpr const char* kWayName[kWays] = {"raw", "inline", "threads", "floor", "host-steps"};
    bool run_way[kWays] = {true, true, true, true, true};
    if (!only.empty()) {
        bool known = false;
        for (int w = 1; w < kWays; ++w) known = known || only == kWayName[w];
        if (!known) return cli.usage_error("--only: '" + only + "' is none of inline, threads, floor, host-steps");
        for (int w = 1; w < kWays; ++w) run_way[w] = only == kWayName[w];
    }
    std::vector<double> wall[kWays];
    std::vector<simsync::bench::ContextSwitches> switches[kWays];
    std::vector<double> cpu[kWays];
    std::uint64_t grants[kWays] = {};
    std::string reference;
    bool same = true;
    std::printf("%4s %-36s %10s %10s %10s %10s %10s  %s\n", "rep", "run", "wall s", "cpu s", "vol. csw", "invol. csw",
                "grants", "hash");
    for (int r = 0; r < reps; ++r) {
        for (int k = 0; k < kWays; ++k) {
            const int way = (k + r) % kWays;
            if (!run_way[way]) continue;
            const RunFigures f = way == 0   ? run_raw(model, end)
                                 : way == 3 ? run_raw_sleeping_sensors(model, end)
                                            : run_handler(model, end, way != 1, way == 4);
            wall[way].push_back(f.wall_s);
            switches[way].push_back(f.switches);
            cpu[way].push_back(f.cpu_s);
            grants[way] = f.grants;
            if (reference.empty()) reference = f.hash;
            same = same && f.hash == reference;
            std::printf("%4d %-36s %10.3f %10.3f %10ld %10ld %10llu  %s\n", r + 1, kRunName[way], f.wall_s, f.cpu_s,
                        f.switches.voluntary, f.switches.involuntary, static_cast<unsigned long long>(f.grants),
                        f.hash.c_str());
        }
    }
    std::printf("trajectory hashes %s\n", same ? "all equal" : "DIFFER");
    if (!only.empty()) return same ? 0 : 1; // a profiling run: no report
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
        "instants; **floor of one thread per participant**: the plain loop run by the most frequent "
        "participant's thread (the 200 Hz sensor's), the controller and the other sensors each on a thread of its own "
        "that sleeps between its instants, woken by the stepping thread through a raw futex, which spins briefly for "
        "the reply (the least a thread per participant can cost on this machine: one wake-up of a sleeping thread "
        "per other participant's instant on the critical path). No pacer, no clock publisher. %d repetitions, rotating which goes first; wall time "
        "median and min-max; each ratio is the median over the repetitions of the run's wall time over the plain "
        "loop's in the same repetition, with the spread of those ratios, and the same for the process's CPU time "
        "(user + system: blind to waiting, but also to other processes' preemptions). Every run must produce the same trajectory "
        "hash. MuJoCo's own `mujoco-testspeed` "
        "on the same model and number of steps (no controller, no sensors) is a sanity line.",
        model_name.c_str(), simsync::format_seconds(step).c_str(), seconds, reps);
    Spread sp[kWays];
    Spread ratio[kWays];     // per-repetition ratios to the raw run of the same repetition
    Spread cpu_ratio[kWays]; // the same for the process's CPU time
    double vcsw_per_step[kWays] = {};
    for (int w = 0; w < kWays; ++w) {
        sp[w] = spread_of(wall[w]);
        std::vector<double> r, v, c;
        for (std::size_t i = 0; i < wall[w].size(); ++i) {
            r.push_back(wall[w][i] / wall[0][i]);
            c.push_back(cpu[w][i] / cpu[0][i]);
            v.push_back(static_cast<double>(switches[w][i].voluntary) / steps);
        }
        ratio[w] = spread_of(r);
        cpu_ratio[w] = spread_of(c);
        vcsw_per_step[w] = simsync::bench::median(v);
    }
    // Synchronisation per step: the median ratio's excess over the raw step.
    const double raw_us = sp[0].median / steps * 1e6;
    const auto sync_us = [&](int w) { return (ratio[w].median - 1) * raw_us; };
    simsync::bench::Table table{"",
                                {"run", "median wall s", "min", "max", "ratio to raw (median of pairs)", "pair ratios min-max",
                                 "CPU time ratio (median of pairs)", "us per step", "vol. cs per step", "grants"},
                                {}};
    table.rows.push_back({"plain mj_step loop (baseline)", format("%.3f", sp[0].median), format("%.3f", sp[0].min),
                          format("%.3f", sp[0].max), "1", "-", "1", format("%.2f", raw_us),
                          format("%.3f", vcsw_per_step[0]), "-"});
    constexpr const char* kRowName[kWays] = {
        "", "through the handler, inline sensors, controller thread",
        "through the handler, one thread per sensor and the controller",
        "floor of one thread per participant: the plain loop on the 200 Hz sensor's thread, the controller and the "
        "other sensors each on a thread that sleeps between its instants, woken through a raw futex",
        "through the handler, one thread per sensor and the controller, a host thread steps (StepThread::host)"};
    for (const int w : {3, 1, 2, 4}) {
        const double target = w == 1 ? 1.02 : w == 2 ? 1.10 : std::nan("");
        table.rows.push_back({kRowName[w], format("%.3f", sp[w].median), format("%.3f", sp[w].min), format("%.3f", sp[w].max),
                              std::isnan(target) ? format("%.3f", ratio[w].median)
                                                 : simsync::bench::decided(ratio[w].median, simsync::bench::Compare::at_most,
                                                                           target, 3),
                              format("%.3f-%.3f", ratio[w].min, ratio[w].max),
                              format("%.3f (%.3f-%.3f)", cpu_ratio[w].median, cpu_ratio[w].min, cpu_ratio[w].max),
                              format("%.2f", sp[w].median / steps * 1e6),
                              format("%.3f", vcsw_per_step[w]),
                              w == 3 ? "-" : format("%llu", static_cast<unsigned long long>(grants[w]))});
    }
    report.tables.push_back(std::move(table));
    using simsync::bench::Compare;
    report.goals.push_back(simsync::bench::check_goal(
        "inline_vs_raw", "MuJoCo host through the handler (inline sensors, controller thread) at most 1.02x a plain mj_step loop",
        ratio[1].median, Compare::at_most, 1.02, "x",
        format("median of %d paired ratios, %.3f-%.3f; %.2f us of synchronisation per step; CPU time %.3fx", reps,
               ratio[1].min, ratio[1].max, sync_us(1), cpu_ratio[1].median),
        3));
    report.goals.push_back(simsync::bench::check_goal(
        "threads_vs_raw", "MuJoCo host through the handler (one thread per participant) at most 1.10x a plain mj_step loop",
        ratio[2].median, Compare::at_most, 1.10, "x",
        format("median of %d paired ratios, %.3f-%.3f; %.2f us of synchronisation per step; this machine's floor for "
               "a thread per participant, same run: %.3fx",
               reps, ratio[2].min, ratio[2].max, sync_us(2), ratio[3].median),
        3));
    // The floor's wake-ups: every participant's instants but the most frequent sensor's.
    const double wakes_per_step = [&] {
        double per_s = kControllerHz;
        for (const int hz : kSensorHz) per_s += hz;
        per_s -= *std::max_element(std::begin(kSensorHz), std::end(kSensorHz));
        return per_s * std::chrono::duration<double>(step).count();
    }();
    report.notes.push_back(format(
        "Synchronisation per step over the plain loop's %.2f us (median paired ratio - 1, times the raw step): inline "
        "sensors %.2f us, sensor threads %.2f us, sensor threads with a host thread stepping %.2f us; the floor, "
        "participants on sleeping threads woken by the plain loop, %.2f us, i.e. %.1f us per wake-up (%.3f per "
        "step): the cost of waking a sleeping thread on this machine and getting its reply, on the critical path.",
        raw_us, sync_us(1), sync_us(2), sync_us(4), sync_us(3), sync_us(3) / wakes_per_step, wakes_per_step));
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
