// bench_clock_publisher: how evenly the clock publisher's messages leave at
// 1 kHz on a simulation paced at 1x, against plain absolute sleeps at 1 kHz.
//
// Jitter = wall interval between two consecutive messages (or wake-ups) minus
// the nominal 1 ms; the table gives |jitter| p50 / p99 / max. Variants:
//  - absolute sleep (baseline): a thread sleeping to t0 + k ms
//    (clock_nanosleep(TIMER_ABSTIME)), intervals between its wake-ups: the best
//    a plain loop on this machine does;
//  - clock publisher, pacing period 1 ms: handler step 1 ms, RealTimePacer
//    (default config) releasing every millisecond, ClockPublisher at 1 kHz with
//    a callback sink stamping the wall time of each message;
//  - clock publisher, pacing period 10 ms (the pacer's default): simulated time
//    is released in 10 ms slices, so the 1 kHz messages leave in bursts of ten:
//    jitter shows the pacing period, not the publisher.
// |jitter| percentiles are over every interval of every repetition. The
// pacer's own (self-reported) release lateness is given beside each publisher
// run, as the median over repetitions of each repetition's percentile.

#include "lateness.hpp"
#include "report.hpp"

#include <simsync/simsync.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using simsync::WallClock;
using simsync::WallTime;
using simsync::bench::format;

namespace {

struct Run {
    std::vector<double> jitter_us;  // |interval - 1 ms|, every interval
    simsync::LatenessSummary pacer; // pacer's self-reported release lateness (publisher runs)
    double cpu_share = 0;
};

std::vector<double> jitter_of(const std::vector<WallTime>& stamps)
{
    std::vector<double> jitter;
    for (std::size_t i = 1; i < stamps.size(); ++i) {
        const auto interval = stamps[i] - stamps[i - 1];
        jitter.push_back(simsync::bench::us(interval > 1ms ? interval - 1ms : 1ms - interval));
    }
    return jitter;
}

Run plain_sleep(std::chrono::duration<double> length)
{
    Run run;
    std::thread([&] {
        const auto n = static_cast<std::size_t>(length / 1ms);
        std::vector<WallTime> stamps;
        stamps.reserve(n);
        const double cpu0 = simsync::bench::process_cpu_seconds();
        const WallTime t0 = WallClock::now();
        for (std::size_t k = 1; k <= n; ++k) {
            simsync::bench::sleep_until_absolute(t0 + k * 1ms);
            stamps.push_back(WallClock::now());
        }
        const double wall = std::chrono::duration<double>(WallClock::now() - t0).count();
        run.jitter_us = jitter_of(stamps);
        run.cpu_share = (simsync::bench::process_cpu_seconds() - cpu0) / wall;
    }).join();
    return run;
}

Run published(std::chrono::duration<double> length, simsync::SimDuration pacing_period)
{
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms, .start_paused = true});
    simsync::TimeScale scale(1.0);
    simsync::RealTimePacer pacer(handler, scale, {.period = pacing_period});
    simsync::SimTimeSource source(handler);
    simsync::ClockPublisher clock(handler, source, {.schedule = simsync::PeriodicSchedule::from_period(1ms)});
    std::vector<WallTime> stamps;
    stamps.reserve(static_cast<std::size_t>(length / 1ms) + 16);
    // Runs on the stepping thread (the pacer's, mostly) or, for a paused
    // repeat, the publisher's loop: one call at a time; read after stop().
    clock.add_callback([&](const simsync::ClockMessage&) { stamps.push_back(WallClock::now()); });
    clock.start();
    const double cpu0 = simsync::bench::process_cpu_seconds();
    const WallTime t0 = WallClock::now();
    const auto span = std::chrono::duration_cast<simsync::SimDuration>(length);
    handler.run_until(simsync::SimTime{span});
    handler.wait_until_paused(WallClock::now() + std::chrono::duration_cast<WallClock::duration>(length * 4) + 10s);
    const double wall = std::chrono::duration<double>(WallClock::now() - t0).count();
    const double cpu = simsync::bench::process_cpu_seconds() - cpu0;
    clock.stop();
    // The first message is the one at the paused start (sent when the
    // publisher started): the intervals count from the first one after resume.
    if (stamps.size() > 1) stamps.erase(stamps.begin());
    return {jitter_of(stamps), pacer.stats().lateness, cpu / wall};
}

} // namespace

int main(int argc, char** argv)
{
    simsync::bench::CommandLine cli("bench_clock_publisher",
                                    "The clock publisher's 1 kHz message jitter on a paced handler against plain "
                                    "absolute sleeps.");
    if (const auto exit = cli.parse(argc, argv)) return *exit;
    const bool quick = cli.args().quick;
    const int reps = quick ? 1 : 5;
    // 10 s per variant in all, in repetitions of 2 s (quick: 1 x 1 s).
    const std::chrono::duration<double> length(quick ? 1.0 : 2.0);

    struct Variant {
        const char* name;
        int kind; // 0 sleep, 1 publisher paced at 1 ms, 2 at 10 ms
        std::vector<Run> runs;
    };
    std::vector<Variant> variants{{"absolute sleep at 1 kHz (baseline)", 0, {}},
                                  {"clock publisher 1 kHz, pacing period 1 ms", 1, {}},
                                  {"clock publisher 1 kHz, pacing period 10 ms", 2, {}}};
    for (int r = 0; r < reps; ++r) {
        for (Variant& v : variants) {
            v.runs.push_back(v.kind == 0 ? plain_sleep(length) : published(length, v.kind == 1 ? 1ms : 10ms));
        }
    }

    simsync::bench::Report report;
    report.id = "clock_publisher";
    report.title = "Clock publisher at 1 kHz";
    report.quick = quick;
    report.description = format(
        "ClockPublisher at 1 kHz (simulated period 1 ms, callback sink stamping each message's wall time) on a "
        "handler with a 1 ms step paced at 1x by RealTimePacer (default config), with pacing periods of 1 ms "
        "and 10 ms. Jitter = wall interval between consecutive messages minus 1 ms, as |jitter|. Baseline: a "
        "thread sleeping to t0 + k ms (`clock_nanosleep(TIMER_ABSTIME)`), jitter of its wake-up intervals. %d repetitions of %.1f s per "
        "variant, alternating; |jitter| p50, p99 and max over every interval of every repetition (exact, nearest "
        "rank). The pacer's lateness columns are what the pacer reports about itself (`PacerStats`, measured "
        "where its wait ends; Real-time pacing measures it from outside): each repetition's p50 or p99, median "
        "over the repetitions.",
        reps, length.count());
    simsync::bench::Table table{"", {"variant", "intervals", "|jitter| p50 us", "|jitter| p99 us", "|jitter| max us",
                                     "pacer self-reported p50 us (median of repetitions)",
                                     "pacer self-reported p99 us (median of repetitions)", "CPU %", "p50 ratio",
                                     "p99 ratio"}, {}};
    double base50 = 0, base99 = 0;
    simsync::bench::Plot plot{.file = "clock_publisher_jitter.png",
                              .title = "Publish interval |jitter| at 1 kHz, cumulative (every interval of every repetition)",
                              .xlabel = "|interval - 1 ms| (us)",
                              .ylabel = "fraction of intervals",
                              .logx = true,
                              .logy = false,
                              .style = "steps",
                              .series = {}};
    for (const Variant& v : variants) {
        std::vector<double> jitter, pacer50, pacer99, cpu;
        for (const Run& r : v.runs) {
            jitter.insert(jitter.end(), r.jitter_us.begin(), r.jitter_us.end());
            pacer50.push_back(simsync::bench::us(r.pacer.p50));
            pacer99.push_back(simsync::bench::us(r.pacer.p99));
            cpu.push_back(100 * r.cpu_share);
        }
        const simsync::bench::Distribution j = simsync::bench::distribution(jitter);
        plot.series.push_back({v.name, simsync::bench::cumulative(std::move(jitter))});
        if (v.kind == 0) {
            base50 = j.p50;
            base99 = j.p99;
        }
        table.rows.push_back({v.name, format("%zu", j.count), format("%.1f", j.p50), format("%.1f", j.p99),
                              format("%.1f", j.max),
                              v.kind == 0 ? std::string("-") : format("%.1f", simsync::bench::median(pacer50)),
                              v.kind == 0 ? std::string("-") : format("%.1f", simsync::bench::median(pacer99)),
                              format("%.2f", simsync::bench::median(cpu)), format("%.3g", j.p50 / base50),
                              format("%.3g", j.p99 / base99)});
    }
    report.tables.push_back(std::move(table));
    report.plots.push_back(std::move(plot));
    report.notes.push_back("The issue sets no numeric goal here; with a 10 ms pacing period the messages "
                           "leave in bursts of ten (|jitter| near 1 ms for most intervals, by design: simulated "
                           "time is released 10 ms at a time). Pace with a period equal to the publish period for "
                           "an even wall-clock rate.");

    simsync::bench::publish(report, cli.args().json_path);
    return 0;
}
