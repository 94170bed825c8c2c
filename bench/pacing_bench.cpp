// bench_pacing: how closely RealTimePacer holds a simulation to real time, and
// what that costs, against plain absolute sleeps of the same deadlines.
//
// Every variant paces 10 ms periods at 1x for the same wall duration:
//  - sleep (baseline): std::this_thread::sleep_until(t0 + k * 10 ms) on a thread
//    with the default timer slack: what a hand-written pacing loop does;
//  - sleep, slack 1 ns: the same with PR_SET_TIMERSLACK 1 ns;
//  - pacer (default config): a handler stepping a CountingWorld at 1 ms, paced by
//    RealTimePacer with its defaults (150 us spin tail, 1 ns slack);
//  - pacer, no spin tail: the same with spin_tail = 0 (sleep to the deadline).
// Lateness = release (wake) time minus deadline; CPU = process user + system time
// (getrusage) over the variant, as a share of one core. Variants alternate over
// repetitions so that load from elsewhere hits them alike.
// --long adds drift: the pacer (defaults) for 60 s, a probe accessor recording
// the wall time of every whole simulated second; drift = wall elapsed minus
// simulated elapsed since the probe at 1 s (plotted signed, the goal on |drift|).
// Without --long the drift goal is reported as not run, never as met or missed.
//
// Usage: bench_pacing [--quick] [--long] [--json=PATH]

#include "lateness.hpp"
#include "report.hpp"

#include <simsync/simsync.hpp>

#include <sys/prctl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using simsync::WallClock;
using simsync::WallTime;
using simsync::bench::format;
using simsync::bench::us;

namespace {

constexpr auto kPeriod = 10ms;

struct Run {
    simsync::LatenessSummary lateness;
    double cpu_share = 0; // of one core
};

Run plain_sleep(std::chrono::duration<double> length, bool tight_slack)
{
    // On a thread of its own: the timer slack is per thread.
    Run run;
    std::thread([&] {
        if (tight_slack) (void)prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
        simsync::LatenessHistogram histogram;
        const double cpu0 = simsync::bench::process_cpu_seconds();
        const WallTime t0 = WallClock::now();
        const auto periods = static_cast<long>(length / kPeriod);
        for (long k = 1; k <= periods; ++k) {
            const WallTime deadline = t0 + k * kPeriod;
            std::this_thread::sleep_until(deadline);
            histogram.record(WallClock::now() - deadline);
        }
        const double wall = std::chrono::duration<double>(WallClock::now() - t0).count();
        run = {histogram.summary(), (simsync::bench::process_cpu_seconds() - cpu0) / wall};
    }).join();
    return run;
}

Run paced(std::chrono::duration<double> length, bool default_config)
{
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms, .start_paused = true});
    simsync::TimeScale scale(1.0);
    simsync::PacerConfig config{.period = kPeriod, .rate_window = 2s};
    if (!default_config) config.spin_tail = 0ns;
    simsync::RealTimePacer pacer(handler, scale, config);
    const double cpu0 = simsync::bench::process_cpu_seconds();
    const WallTime t0 = WallClock::now();
    const auto span = std::chrono::duration_cast<simsync::SimDuration>(length);
    handler.run_until(simsync::SimTime{span} + 5ms);
    handler.wait_until_paused(WallClock::now() + std::chrono::duration_cast<WallClock::duration>(length * 4) + 10s);
    const double wall = std::chrono::duration<double>(WallClock::now() - t0).count();
    return {pacer.stats().lateness, (simsync::bench::process_cpu_seconds() - cpu0) / wall};
}

// Drift over `seconds` of paced simulation (see the file comment).
std::vector<std::pair<double, double>> drift(int seconds)
{
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms, .start_paused = true});
    simsync::TimeScale scale(1.0);
    simsync::RealTimePacer pacer(handler, scale, {.period = kPeriod});
    // At 1 ms past each whole second: granted right after the pacer released the
    // second itself (the step to it is the next thing that happens).
    simsync::Accessor probe = handler.register_accessor(
        "probe", {.kind = simsync::AccessorKind::lockstep, .mode = simsync::AccessMode::shared,
                  .first_request = simsync::SimTime{1ms}});
    std::vector<std::pair<double, double>> points; // (simulated s, drift us)
    std::thread t([&] {
        // The reference is the probe at 1 s, not at 0: the first instants
        // include the threads' start-up (the probe at 0 came 0.4 ms late).
        WallTime wall0{};
        for (int s = 0; s <= seconds + 1; ++s) {
            simsync::Access a = probe.request_access(simsync::SimTime{std::chrono::seconds(s) + 1ms});
            if (!a) return;
            const WallTime now = WallClock::now();
            if (s == 1) wall0 = now;
            if (s >= 1) points.emplace_back(s - 1, us(now - wall0) - 1e6 * (s - 1));
            a.release(simsync::SimTime{std::chrono::seconds(s + 1) + 1ms});
        }
        probe.deregister();
    });
    handler.resume();
    t.join();
    handler.stop();
    return points;
}

} // namespace

int main(int argc, char** argv)
{
    const bool long_mode = simsync::bench::take_flag(argc, argv, "--long");
    const auto args = simsync::bench::take_scenario_args(argc, argv, "[--long]");
    if (!args) return 2;
    const bool quick = args->quick;
    // 10 s per variant in all, in repetitions of 2 s (quick: 1 x 1 s).
    const int reps = quick ? 1 : 5;
    const std::chrono::duration<double> length(quick ? 1.0 : 2.0);

    struct Variant {
        std::string name;
        std::function<Run()> run;
        std::vector<Run> runs;
    };
    std::vector<Variant> variants;
    variants.push_back({"sleep_until, default slack (baseline)", [&] { return plain_sleep(length, false); }, {}});
    variants.push_back({"sleep_until, slack 1 ns", [&] { return plain_sleep(length, true); }, {}});
    // The pacer spins only where there is a second hardware thread (pacer.hpp):
    // the row says which default this machine got.
    const bool spins = std::thread::hardware_concurrency() > 1;
    const std::string default_name =
        spins ? format("pacer, default config (%.0f us spin tail)", us(simsync::PacerConfig{}.spin_tail))
              : std::string("pacer, default config (one hardware thread: no spin tail)");
    variants.push_back({default_name, [&] { return paced(length, true); }, {}});
    variants.push_back({"pacer, no spin tail", [&] { return paced(length, false); }, {}});
    for (int r = 0; r < reps; ++r) {
        for (Variant& v : variants) v.runs.push_back(v.run());
    }

    simsync::bench::Report report;
    report.id = "pacing";
    report.title = "Real-time pacing";
    report.quick = quick;
    report.description = format(
        "RealTimePacer at 1x, handler step 1 ms, pacing period 10 ms, no-op world, against plain "
        "`std::this_thread::sleep_until` of the same absolute deadlines on a thread (baseline). Lateness = wall "
        "time of the release (or wake-up) minus its deadline. %d repetitions of %.0f s per variant, variants "
        "alternating; p50 and p99 are medians over the repetitions, max the largest. CPU = process CPU time "
        "over wall time, in %% of one core. Percentiles resolve to about 6 %% (LatenessHistogram buckets).",
        reps, length.count());
    simsync::bench::Table table{"", {"variant", "releases", "p50 us", "p99 us", "max us", "CPU %", "p50 ratio",
                                     "p99 ratio", "CPU ratio"}, {}};
    struct Fig {
        simsync::bench::LatenessOverRuns lateness;
        double cpu; // median over the repetitions, % of a core
    };
    std::vector<Fig> figs;
    for (const Variant& v : variants) {
        std::vector<simsync::LatenessSummary> lateness;
        std::vector<double> cpu;
        for (const Run& r : v.runs) {
            lateness.push_back(r.lateness);
            cpu.push_back(100 * r.cpu_share);
        }
        figs.push_back({simsync::bench::over_runs(lateness), simsync::bench::median(cpu)});
    }
    const Fig& base = figs.front();
    auto ratio = [](double a, double b) { return b > 0 ? format("%.3g", a / b) : std::string("-"); };
    for (std::size_t i = 0; i < variants.size(); ++i) {
        const Fig& f = figs[i];
        table.rows.push_back({variants[i].name, format("%llu", static_cast<unsigned long long>(f.lateness.count)),
                              format("%.1f", f.lateness.p50_us), format("%.1f", f.lateness.p99_us),
                              format("%.1f", f.lateness.max_us), format("%.2f", f.cpu),
                              ratio(f.lateness.p50_us, base.lateness.p50_us),
                              ratio(f.lateness.p99_us, base.lateness.p99_us), ratio(f.cpu, base.cpu)});
    }
    report.tables.push_back(std::move(table));

    const Fig& pacer = figs[2];
    report.goals.push_back({"pacer (default config): lateness p50 <= 5 us", "<= 5 us",
                            format("%.1f us", pacer.lateness.p50_us), pacer.lateness.p50_us <= 5});
    report.goals.push_back({"pacer (default config): lateness p99 <= 150 us", "<= 150 us",
                            format("%.1f us", pacer.lateness.p99_us), pacer.lateness.p99_us <= 150});
    report.goals.push_back({"pacer (default config): CPU <= 10 % of a core", "<= 10 %", format("%.2f %%", pacer.cpu),
                            pacer.cpu <= 10});

    simsync::bench::Plot plot{.file = "pacing_lateness.png",
                              .title = "Pacing lateness, cumulative (last repetition of each variant)",
                              .xlabel = "lateness (us, bucket upper bound)",
                              .ylabel = "fraction of releases",
                              .logx = true,
                              .logy = false,
                              .style = "steps",
                              .series = {}};
    for (const Variant& v : variants) plot.series.push_back({v.name, simsync::bench::lateness_cdf(v.runs.back().lateness)});
    report.plots.push_back(std::move(plot));

    if (long_mode) {
        const int seconds = 60;
        const auto points = drift(seconds);
        const double final_drift = points.empty() ? NAN : points.back().second;
        report.goals.push_back({format("pacer (default config): |drift| after %d s below 1 ms", seconds), "< 1000 us",
                                points.size() == static_cast<std::size_t>(seconds + 1)
                                    ? format("%.1f us (wall minus simulated: %+.1f us)", std::fabs(final_drift),
                                             final_drift)
                                    : std::string("run incomplete"),
                                points.size() == static_cast<std::size_t>(seconds + 1) && std::fabs(final_drift) < 1000});
        report.plots.push_back({.file = "pacing_drift.png",
                                .title = "Drift: wall time elapsed minus simulated time elapsed",
                                .xlabel = "simulated time (s)",
                                .ylabel = "drift (us)",
                                .logx = false,
                                .logy = false,
                                .style = "linespoints",
                                .series = {{"pacer, default config", points}}});
    } else {
        // Not measured is neither met nor missed: checked = false, and the page says so.
        report.goals.push_back({"pacer (default config): |drift| after 60 s below 1 ms", "< 1000 us",
                                "not run (needs --long)", false, false});
    }

    simsync::bench::publish(report, args->json_path);
    return 0;
}
