// bench_web_viewers: what the web console costs the simulation it watches.
//
// The Bullet host's scene (100 boxes, 1 ms steps) with a controller (100 Hz,
// exclusive, pushes box_0) and 10 shared sensors, one thread each, unpaced (as
// fast as the world steps), for S simulated seconds. Three ways, in the same
// run, in rotating order:
//   no console (baseline): the handler and its participants, nothing else;
//   console, no viewer:    plus a WebConsole (10 frames/s: snapshot, a picture
//                          of the 100 bodies read in a shared access, the
//                          participants' grant timeline, one JSON message);
//   console, 10 viewers:   plus ten WebSocket clients (one Asio thread of this
//                          process) that read every frame they are sent.
// Reports median / min / max wall time of each and the ratio to the baseline
// (goal: ten viewers <= 1.05x), the frames the viewers got and the console
// dropped. Every run must produce the same trajectory hash: the console only
// reads.
//
// Usage: bench_web_viewers [--quick] [--reps N] [--seconds S] [--json PATH] (--help)
//   default: 10 simulated seconds, 5 repetitions; --quick: 1 s, 2 repetitions.

#include "bullet_scene.hpp"
#include "bullet_workload.hpp"
#include "report.hpp"

#include <simsync/bullet/bullet.hpp>
#include <simsync/simsync.hpp>
#include <simsync/web/web.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/program_options.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
namespace sb = simsync::bullet;
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;

namespace {

constexpr simsync::SimDuration kStep = 1ms;
using namespace simsync::bench::bullet_workload;
constexpr int kViewers = 10;

// Ten WebSocket clients on one Asio thread, each reading every message.
class Viewers {
public:
    Viewers(std::uint16_t port, int count)
    {
        for (int i = 0; i < count; ++i) clients_.push_back(std::make_unique<Client>(ioc_));
        for (auto& c : clients_) c->start(port);
        thread_ = std::thread([this] { ioc_.run(); });
    }
    ~Viewers() { stop(); }

    // True once every client has had its first frame (bounded wait).
    bool wait_connected(std::chrono::seconds timeout) const
    {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        for (;;) {
            bool all = true;
            for (const auto& c : clients_) all = all && c->frames.load() > 0;
            if (all) return true;
            if (std::chrono::steady_clock::now() >= deadline) return false;
            std::this_thread::sleep_for(5ms); // polls the clients' counters until all have a frame
        }
    }
    std::vector<std::uint64_t> frames() const
    {
        std::vector<std::uint64_t> f;
        for (const auto& c : clients_) f.push_back(c->frames.load());
        return f;
    }
    bool failed() const
    {
        for (const auto& c : clients_) {
            if (c->failed.load()) return true;
        }
        return false;
    }
    void stop()
    {
        if (!thread_.joinable()) return;
        asio::post(ioc_, [this] {
            for (auto& c : clients_) {
                beast::error_code ignored;
                beast::get_lowest_layer(c->ws).socket().close(ignored);
            }
        });
        thread_.join();
    }

private:
    struct Client {
        explicit Client(asio::io_context& ioc) : ws(ioc) {}
        void start(std::uint16_t port)
        {
            beast::get_lowest_layer(ws).async_connect(
                asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), [this, port](beast::error_code ec) {
                    if (ec) return fail();
                    ws.read_message_max(64 << 20);
                    ws.async_handshake("127.0.0.1:" + std::to_string(port), "/ws", [this](beast::error_code ec2) {
                        if (ec2) return fail();
                        // The console sends nothing before a connection's hello.
                        ws.async_write(asio::buffer(kHello), [this](beast::error_code ec3, std::size_t) {
                            if (ec3) return fail();
                            read();
                        });
                    });
                });
        }
        void read()
        {
            ws.async_read(buffer, [this](beast::error_code ec, std::size_t) {
                if (ec) {
                    if (ec != asio::error::operation_aborted && ec != asio::error::bad_descriptor) failed = true;
                    return;
                }
                const std::string_view m(static_cast<const char*>(buffer.cdata().data()), buffer.size());
                if (m.find(R"("type":"frame")") != std::string_view::npos) ++frames;
                buffer.consume(buffer.size());
                read();
            });
        }
        void fail() { failed = true; }
        static constexpr std::string_view kHello = R"({"type":"hello"})";
        websocket::stream<beast::tcp_stream> ws;
        beast::flat_buffer buffer;
        std::atomic<std::uint64_t> frames{0};
        std::atomic<bool> failed{false};
    };
    asio::io_context ioc_;
    std::vector<std::unique_ptr<Client>> clients_;
    std::thread thread_;
};

enum class Variant { none, console, viewers };
const char* name_of(Variant v)
{
    switch (v) {
    case Variant::none: return "no console (baseline)";
    case Variant::console: return "console, no viewer";
    case Variant::viewers: return "console, 10 viewers";
    }
    return "?";
}

struct RunFigures {
    double wall_s = 0;
    std::string hash;
    std::uint64_t viewer_frames_min = 0; // frames the least served viewer got during the run
    std::uint64_t console_frames = 0;
    std::uint64_t dropped = 0;
    std::uint64_t scene_reads = 0;
    std::uint64_t scene_misses = 0;
    bool viewers_ok = true;
};

RunFigures run(Variant variant, simsync::SimTime end)
{
    const sb::SceneDescription description = sb::default_scene();
    sb::BulletWorld world(description);
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
    // The host's part with --web: every participant records its grants.
    simsync::web::GrantTimeline timeline;
    const bool with_console = variant != Variant::none;
    simsync::web::GrantTimeline::Track* controller_track =
        with_console ? &timeline.add_track("controller", "exclusive") : nullptr;
    std::vector<simsync::web::GrantTimeline::Track*> sensor_tracks;
    for (std::size_t i = 0; i < sensors.size(); ++i) {
        sensor_tracks.push_back(with_console ? &timeline.add_track("sensor_" + std::to_string(i), "shared") : nullptr);
    }
    simsync::TimeScale scale(1.0);
    simsync::examples::BulletScene scene(description, {0});
    std::optional<simsync::web::WebConsole> console;
    std::optional<Viewers> viewers;
    if (with_console) {
        // Ten viewers from one address, connecting at once: more than the
        // default cap on one address's unfinished connections.
        simsync::web::WebConsoleConfig web_config;
        web_config.max_per_address = kViewers + 2;
        console.emplace(handler, simsync::web::WebConsoleSources{.scale = &scale, .scene = &scene, .timeline = &timeline},
                        web_config);
        if (variant == Variant::viewers) {
            viewers.emplace(console->endpoint().port, kViewers);
            if (!viewers->wait_connected(30s)) std::fprintf(stderr, "bench_web_viewers: viewers did not connect\n");
        }
    }
    const auto before = viewers ? viewers->frames() : std::vector<std::uint64_t>{};
    const auto console_before = console ? console->stats() : simsync::web::WebConsoleStats{};

    auto record = [](simsync::web::GrantTimeline::Track* track, simsync::SimTime want, const simsync::Access& a,
                     simsync::WallTime asked, simsync::WallTime granted) {
        if (track != nullptr) {
            track->record({.requested = want, .granted = a.granted_time(), .asked = asked, .granted_at = granted,
                           .released = simsync::WallClock::now()});
        }
    };
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> threads;
    threads.emplace_back([&] {
        for (std::int64_t n = 0;; ++n) {
            const simsync::SimTime at = std::min(instant(kControllerHz, n), end);
            const auto asked = simsync::WallClock::now();
            simsync::Access a = controller.request_access(at);
            if (!a) break;
            const auto granted = simsync::WallClock::now();
            auto& w = a.world_as<sb::BulletWorld>();
            if (a.granted_time() >= end) {
                w.hash_state(hash);
                break;
            }
            control(w, hash);
            a.release(std::min(instant(kControllerHz, n + 1), end));
            record(controller_track, at, a, asked, granted);
        }
        controller.deregister();
    });
    for (std::size_t i = 0; i < sensors.size(); ++i) {
        threads.emplace_back([&, i] {
            volatile double sink = 0;
            for (std::int64_t n = 0;; ++n) {
                const simsync::SimTime at = instant(kSensorHz[i], n);
                if (at > end) break;
                const auto asked = simsync::WallClock::now();
                simsync::Access a = sensors[i].request_access(at);
                if (!a) break;
                const auto granted = simsync::WallClock::now();
                sink = sink + sense(a.world_as<const sb::BulletWorld>());
                a.release(instant(kSensorHz[i], n + 1));
                record(sensor_tracks[i], at, a, asked, granted);
            }
            sensors[i].deregister();
        });
    }
    for (auto& t : threads) t.join();
    RunFigures f;
    f.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    f.hash = hash.hex();
    if (console) {
        const auto s = console->stats();
        f.console_frames = s.frames - console_before.frames;
        f.dropped = s.frames_dropped - console_before.frames_dropped;
        f.scene_reads = s.scene_reads - console_before.scene_reads;
        f.scene_misses = s.scene_misses - console_before.scene_misses;
    }
    if (viewers) {
        const auto after = viewers->frames();
        f.viewer_frames_min = UINT64_MAX;
        for (std::size_t i = 0; i < after.size(); ++i) f.viewer_frames_min = std::min(f.viewer_frames_min, after[i] - before[i]);
        f.viewers_ok = !viewers->failed();
    }
    handler.stop();
    viewers.reset();
    console.reset();
    return f;
}

struct Stats {
    double median, min, max;
};
Stats stats_of(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return {simsync::bench::median(v), v.front(), v.back()};
}

} // namespace

int main(int argc, char** argv)
{
    simsync::bench::CommandLine cli("bench_web_viewers",
                                    "The Bullet host with no web console, a console, and ten connected viewers.");
    simsync::bench::RepeatedRuns runs{.reps = 5, .seconds = 10, .quick_reps = 2, .quick_seconds = 1};
    runs.add_options(cli, "in rotating order");
    if (const auto exit = cli.parse(argc, argv)) return *exit;
    runs.apply_quick(cli);
    const bool quick = cli.args().quick;
    const double seconds = runs.seconds;
    const int reps = runs.reps;
    const simsync::SimTime end = simsync::round_to_grid(simsync::sim_time(std::chrono::duration<double>(seconds)), kStep);
    if (end <= simsync::kSimStart) return cli.usage_error("--seconds is shorter than one step (1 ms)");
    std::printf("bench_web_viewers: 100 boxes, dt 1 ms, %g simulated s unpaced, controller 100 Hz + 10 shared sensors, "
                "%d repetitions in rotating order, %u hardware threads\n",
                seconds, reps, std::thread::hardware_concurrency());

    const Variant variants[] = {Variant::none, Variant::console, Variant::viewers};
    std::vector<double> wall[3];
    std::vector<RunFigures> figures[3];
    std::string reference;
    bool same = true;
    bool viewers_ok = true;
    std::printf("%4s %-24s %9s %9s %12s %9s %13s  %s\n", "rep", "run", "wall s", "frames", "viewer min", "dropped",
                "scene miss", "hash");
    for (int r = 0; r < reps; ++r) {
        for (int k = 0; k < 3; ++k) {
            const int v = (k + r) % 3; // rotate which goes first: warm-up and drift hit all alike
            const RunFigures f = run(variants[v], end);
            wall[v].push_back(f.wall_s);
            figures[v].push_back(f);
            if (reference.empty()) reference = f.hash;
            same = same && f.hash == reference;
            viewers_ok = viewers_ok && f.viewers_ok;
            std::printf("%4d %-24s %9.3f %9llu %12llu %9llu %13llu  %s\n", r + 1, name_of(variants[v]), f.wall_s,
                        static_cast<unsigned long long>(f.console_frames),
                        static_cast<unsigned long long>(f.viewer_frames_min),
                        static_cast<unsigned long long>(f.dropped), static_cast<unsigned long long>(f.scene_misses),
                        f.hash.c_str());
        }
    }

    using simsync::bench::format;
    simsync::bench::Report report;
    report.id = "web_viewers";
    report.title = "Web console viewers";
    report.quick = quick;
    report.description = format(
        "What the web console costs the simulation it watches. The Bullet host's scene (100 boxes, 1 ms steps) "
        "with a controller at 100 Hz (exclusive) and 10 shared sensors, one thread each, **unpaced** (as fast as "
        "the world steps), for %g simulated seconds. **no console** (baseline): the handler and its participants; "
        "**console, no viewer**: plus a `WebConsole` at 10 frames/s (snapshot, a picture of the 100 bodies read in a "
        "shared access, the participants' grant timeline, one JSON message per frame); **console, 10 viewers**: "
        "plus ten WebSocket clients (one Asio thread of this process) reading every frame. %d repetitions in "
        "rotating order; wall time median and min-max. Every run must produce the same trajectory hash.",
        seconds, reps);
    simsync::bench::Table table{"", {"run", "median wall s", "min", "max", "ratio to baseline", "frames sent",
                                     "frames per viewer (min)", "frames dropped", "pictures missed"}, {}};
    const double base = stats_of(wall[0]).median;
    for (int v = 0; v < 3; ++v) {
        const Stats s = stats_of(wall[v]);
        std::vector<double> frames, per_viewer, dropped, misses;
        for (const RunFigures& f : figures[v]) {
            frames.push_back(static_cast<double>(f.console_frames));
            per_viewer.push_back(static_cast<double>(f.viewer_frames_min));
            dropped.push_back(static_cast<double>(f.dropped));
            misses.push_back(static_cast<double>(f.scene_misses));
        }
        const bool console = variants[v] != Variant::none;
        const bool viewers = variants[v] == Variant::viewers;
        table.rows.push_back({name_of(variants[v]), format("%.3f", s.median), format("%.3f", s.min),
                              format("%.3f", s.max), v == 0 ? "1.00" : format("%.3f", s.median / base),
                              console ? format("%.0f", simsync::bench::median(frames)) : "-",
                              viewers ? format("%.0f", simsync::bench::median(per_viewer)) : "-",
                              viewers ? format("%.0f", simsync::bench::median(dropped)) : "-",
                              console ? format("%.0f", simsync::bench::median(misses)) : "-"});
    }
    report.tables.push_back(std::move(table));
    const double ratio = stats_of(wall[2]).median / base;
    report.goals.push_back(simsync::bench::check_goal(
        "web_ten_viewers", "Bullet host with ten connected viewers at most 1.05x the same host without a console", ratio,
        simsync::bench::Compare::at_most, 1.05, "x",
        format("%.3f s vs %.3f s, medians", stats_of(wall[2]).median, base), 3));
    report.notes.push_back(same ? "Trajectory hashes: all runs equal (the console only reads)."
                                : "**Trajectory hashes differ between runs: the console changed the simulation.**");
    if (!viewers_ok) report.notes.push_back("**A viewer's connection failed during a run.**");
    simsync::bench::publish(report, cli.args().json_path);
    return same && viewers_ok ? 0 : 1;
}
