// bench_shared_readers: what shared access buys two readers of the same instants.
//
// Two lockstep readers, each on its own thread, request every step (1 ms, no-op
// world) and do W microseconds of read work inside each access (a busy loop on
// the steady clock, standing in for a sensor reading the world), then release.
// Shared: both may hold the world at once. Exclusive (baseline): the same
// readers registered as exclusive, so they take turns. For W = 0, 5, 20 and
// 100 us: wall time per instant (both readers served), the ratio shared /
// exclusive, the overlap actually achieved (time both were inside their access
// at one instant, over the shorter of the two accesses), and voluntary context
// switches per grant. Repetitions interleave the variants.

#include "report.hpp"

#include <simsync/simsync.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using simsync::bench::format;

namespace {

void busy(std::chrono::nanoseconds work)
{
    const auto end = Clock::now() + work;
    while (Clock::now() < end) {
    }
}

struct Run {
    double ns_per_instant = 0;
    double overlap = 0; // mean over instants of (both inside) / W
    double vcsw_per_grant = 0;
};

Run run(simsync::AccessMode mode, std::chrono::nanoseconds work, std::int64_t steps)
{
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms, .start_paused = true});
    simsync::Accessor readers[2] = {
        handler.register_accessor("reader_a", {.kind = simsync::AccessorKind::lockstep, .mode = mode,
                                               .first_request = simsync::kSimStart}),
        handler.register_accessor("reader_b", {.kind = simsync::AccessorKind::lockstep, .mode = mode,
                                               .first_request = simsync::kSimStart})};
    // Entry and exit of each reader at each instant, for the overlap.
    std::vector<Clock::time_point> enter[2], leave[2];
    for (int r = 0; r < 2; ++r) {
        enter[r].resize(static_cast<std::size_t>(steps));
        leave[r].resize(static_cast<std::size_t>(steps));
    }
    std::vector<std::thread> threads;
    for (int r = 0; r < 2; ++r) {
        threads.emplace_back([&, r] {
            for (std::int64_t k = 0; k < steps; ++k) {
                simsync::Access a = readers[r].request_access(simsync::SimTime{k * 1ms});
                if (!a) break;
                enter[r][static_cast<std::size_t>(k)] = Clock::now();
                busy(work);
                leave[r][static_cast<std::size_t>(k)] = Clock::now();
                a.release(simsync::SimTime{(k + 1) * 1ms});
            }
            readers[r].deregister();
        });
    }
    const auto cs0 = simsync::bench::ContextSwitches::now();
    const auto t0 = Clock::now();
    handler.resume();
    for (auto& t : threads) t.join();
    const auto t1 = Clock::now();
    const auto cs = simsync::bench::ContextSwitches::now() - cs0;

    double overlap = 0;
    if (work > 0ns) {
        for (std::size_t k = 0; k < static_cast<std::size_t>(steps); ++k) {
            // Over the shorter of the two accesses (a busy loop overshoots W a little).
            const auto both = std::min(leave[0][k], leave[1][k]) - std::max(enter[0][k], enter[1][k]);
            const auto shorter = std::min(leave[0][k] - enter[0][k], leave[1][k] - enter[1][k]);
            overlap += std::max(0.0, std::chrono::duration<double>(both).count()) /
                       std::chrono::duration<double>(shorter).count();
        }
        overlap /= static_cast<double>(steps);
    }
    return {std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(steps), overlap,
            static_cast<double>(cs.voluntary) / static_cast<double>(2 * steps)};
}

} // namespace

int main(int argc, char** argv)
{
    simsync::bench::CommandLine cli("bench_shared_readers",
                                    "Two readers of the same instants, shared against exclusive.");
    if (const auto exit = cli.parse(argc, argv)) return *exit;
    const bool quick = cli.args().quick;
    const int reps = quick ? 1 : 7;
    const std::chrono::nanoseconds works[] = {0us, 5us, 20us, 100us};

    struct Cell {
        std::vector<double> ns, overlap, vcsw;
    };
    std::vector<Cell> shared(std::size(works)), exclusive(std::size(works));
    for (int r = 0; r < reps; ++r) {
        for (std::size_t w = 0; w < std::size(works); ++w) {
            // About 0.2 s per run (quick: 0.02 s), at least 200 instants.
            const auto per_instant = std::max<std::chrono::nanoseconds>(works[w], 5us) * 2;
            const std::int64_t steps = std::max<std::int64_t>(200, (quick ? 20ms : 200ms) / per_instant);
            for (auto mode : {simsync::AccessMode::shared, simsync::AccessMode::exclusive}) {
                const Run x = run(mode, works[w], steps);
                Cell& c = (mode == simsync::AccessMode::shared ? shared : exclusive)[w];
                c.ns.push_back(x.ns_per_instant);
                c.overlap.push_back(x.overlap);
                c.vcsw.push_back(x.vcsw_per_grant);
            }
        }
    }

    simsync::bench::Report report;
    report.id = "shared_readers";
    report.title = "Shared readers";
    report.quick = quick;
    report.description = format(
        "Two lockstep readers on two threads request every 1 ms step of a no-op world and do W us of read work "
        "inside each access (a busy loop). **shared**: both may hold the world at once; **exclusive** "
        "(baseline): the same readers registered as exclusive, taking turns. Wall time per instant (both "
        "readers served), median and min-max over %d interleaved repetitions; overlap = time both were inside "
        "their access at an instant, over the shorter access (1 = fully parallel), measured inside the accesses; voluntary "
        "context switches per grant (process-wide).",
        reps);
    simsync::bench::Table table{"", {"work W", "shared us/instant", "min", "max", "exclusive us/instant", "min",
                                     "max", "ratio shared/exclusive", "overlap shared", "overlap exclusive",
                                     "vol. cs/grant shared", "vol. cs/grant exclusive"}, {}};
    simsync::bench::Plot plot{.file = "shared_readers.png",
                              .title = "Two readers of the same instants: wall time per instant",
                              .xlabel = "read work per access W (us)",
                              .ylabel = "us per instant",
                              .logx = false,
                              .logy = false,
                              .style = "linespoints",
                              .series = {{"shared", {}}, {"exclusive (baseline)", {}}}};
    for (std::size_t w = 0; w < std::size(works); ++w) {
        const Cell& s = shared[w];
        const Cell& e = exclusive[w];
        const double wus = std::chrono::duration<double, std::micro>(works[w]).count();
        auto us = [](double ns) { return format("%.2f", ns / 1000); };
        table.rows.push_back({format("%.0f us", wus), us(simsync::bench::median(s.ns)), us(*std::min_element(s.ns.begin(), s.ns.end())),
                              us(*std::max_element(s.ns.begin(), s.ns.end())), us(simsync::bench::median(e.ns)),
                              us(*std::min_element(e.ns.begin(), e.ns.end())), us(*std::max_element(e.ns.begin(), e.ns.end())),
                              format("%.2f", simsync::bench::median(s.ns) / simsync::bench::median(e.ns)),
                              works[w] > 0ns ? format("%.2f", simsync::bench::median(s.overlap)) : std::string("-"),
                              works[w] > 0ns ? format("%.2f", simsync::bench::median(e.overlap)) : std::string("-"),
                              format("%.2f", simsync::bench::median(s.vcsw)), format("%.2f", simsync::bench::median(e.vcsw))});
        plot.series[0].points.emplace_back(wus, simsync::bench::median(s.ns) / 1000);
        plot.series[1].points.emplace_back(wus, simsync::bench::median(e.ns) / 1000);
    }
    report.tables.push_back(std::move(table));
    report.plots.push_back(std::move(plot));
    report.notes.push_back("The issue sets no goal here. With two free cores, shared readers should approach "
                           "half the exclusive time per instant once W dominates the grant overhead; the "
                           "overlap column says how much of the work actually ran in parallel.");

    simsync::bench::publish(report, cli.args().json_path);
    return 0;
}
