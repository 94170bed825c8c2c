// bench_pacing: how closely RealTimePacer holds a simulation to real time, and
// what that costs, against plain absolute sleeps of the same deadlines, all
// measured by the same outside observer (lateness.hpp: ReleaseObserver).
//
// Every variant paces 10 ms periods at 1x for the same wall duration:
//  - absolute sleep (baseline): a thread sleeping until t0 + k * 10 ms with
//    clock_nanosleep(TIMER_ABSTIME) and the default timer slack, publishing a
//    tick count after each wake-up: what a hand-written pacing loop does;
//  - sleep, slack 1 ns: the same with PR_SET_TIMERSLACK 1 ns;
//  - pacer (default config): a handler stepping a CountingWorld at 1 ms, paced by
//    RealTimePacer with its defaults (150 us spin tail, 1 ns slack);
//  - pacer, no spin tail: the same with spin_tail = 0 (sleep to the deadline).
// The observer watches what each publishes (the tick count; the handler's
// simulated time, which moves past a pacing point only once the pacer has
// released it) and stamps when it passes each point. Lateness = that stamp
// minus the deadline, reconstructed from the observed anchoring release. CPU =
// process user + system time (getrusage) over the variant minus the observer
// thread's own, as a share of one core. Each variant also reports its own
// lateness (the sleep loop after its wake-up, the pacer in PacerStats): shown
// apart, to compare with what the observer sees. Variants alternate over
// repetitions so that load from elsewhere hits them alike.
// --long adds drift: the pacer (defaults) for 60 s, the observer stamping every
// whole simulated second after the anchor; drift = wall elapsed minus simulated
// elapsed since the anchor. Without --long the drift goal is reported as not
// run, never as met or missed.

#include "lateness.hpp"
#include "report.hpp"

#include <simsync/simsync.hpp>

#include <sys/prctl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using simsync::WallClock;
using simsync::WallTime;
using simsync::bench::Compare;
using simsync::bench::format;
using simsync::bench::us;

namespace {

constexpr auto kPeriod = 10ms;

struct Run {
    std::vector<double> observed_us; // lateness seen by the observer
    std::size_t unobserved = 0;
    double anchor_correction_us = 0;
    double cpu_share = 0;            // of one core, the observer's own CPU excluded
    double observer_cpu_share = 0;
    double self_p50_us = 0;          // what the variant reports about itself
    double self_p99_us = 0;
    double dropped_us = 0;           // backlog the pacer forgave (CatchUp), if any
};

Run finish(const simsync::bench::ReleaseObserver::Result& seen, double cpu0, WallTime w0)
{
    if (!seen.complete) throw std::runtime_error("the observer gave up waiting for a release");
    const double wall = std::chrono::duration<double>(WallClock::now() - w0).count();
    Run run;
    run.observed_us = seen.lateness_us;
    run.unobserved = seen.unobserved;
    run.anchor_correction_us = seen.anchor_correction_us;
    run.cpu_share = (simsync::bench::process_cpu_seconds() - cpu0 - seen.cpu_seconds) / wall;
    run.observer_cpu_share = seen.cpu_seconds / wall;
    return run;
}

Run plain_sleep(std::size_t periods, bool tight_slack)
{
    std::atomic<std::int64_t> position{0}; // released past tick k: position > k
    std::vector<double> self;
    self.reserve(periods);
    const double cpu0 = simsync::bench::process_cpu_seconds();
    const WallTime w0 = WallClock::now();
    simsync::bench::ReleaseObserver observer({.position = [&] { return position.load(std::memory_order_acquire); },
                                              .anchor_point = 0,
                                              .point_step = 1,
                                              .period = kPeriod,
                                              .releases = periods});
    std::thread loop([&] {
        // The timer slack is per thread.
        if (tight_slack) (void)prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
        const WallTime t0 = WallClock::now();
        position.store(1, std::memory_order_release);
        for (std::size_t k = 1; k <= periods; ++k) {
            const WallTime deadline = t0 + static_cast<std::int64_t>(k) * kPeriod;
            simsync::bench::sleep_until_absolute(deadline);
            self.push_back(us(WallClock::now() - deadline));
            position.store(static_cast<std::int64_t>(k) + 1, std::memory_order_release);
        }
    });
    const auto seen = observer.join();
    loop.join();
    Run run = finish(seen, cpu0, w0);
    const simsync::bench::Distribution d = simsync::bench::distribution(self);
    run.self_p50_us = d.p50;
    run.self_p99_us = d.p99;
    return run;
}

// Until the pacer waits for its first paced instant (setup, outside the measurement).
void wait_for_pacer(const simsync::SimSyncHandler& handler, const std::string& name, simsync::SimTime at)
{
    const WallTime limit = WallClock::now() + 10s;
    for (;;) {
        for (const simsync::AccessorStatus& a : handler.snapshot().accessors) {
            if (a.name == name && a.activity == simsync::AccessorStatus::Activity::waiting && a.time == at) return;
        }
        if (WallClock::now() > limit) throw std::runtime_error("the pacer did not come to wait for its first instant");
        std::this_thread::sleep_for(1ms);
    }
}

// A paced handler observed for `releases` points `step` apart (simulated and
// wall, at 1x) after the pacer's anchoring instant.
struct Paced {
    Run run;
    simsync::LatenessSummary self;
};

Paced paced(std::size_t releases, simsync::SimDuration step, bool default_config,
            WallClock::duration margin = WallClock::duration::max())
{
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms, .start_paused = true});
    simsync::TimeScale scale(1.0);
    simsync::PacerConfig config{.period = kPeriod, .rate_window = 2s};
    if (!default_config) config.spin_tail = 0ns;
    simsync::RealTimePacer pacer(handler, scale, config);
    // Started paused, the pacer has its instant 0 at once (released unpaced) and
    // waits for the next; the first grant after run_until anchors its schedule
    // and is released at once (PacingSchedule, rule 2).
    const simsync::SimTime anchor{kPeriod};
    wait_for_pacer(handler, config.name, anchor);
    const double cpu0 = simsync::bench::process_cpu_seconds();
    const WallTime w0 = WallClock::now();
    simsync::bench::ReleaseObserver observer(
        {.position = [&] { return static_cast<std::int64_t>(handler.now().time_since_epoch().count()); },
         .anchor_point = anchor.time_since_epoch().count(),
         .point_step = step.count(),
         .period = std::chrono::duration_cast<WallClock::duration>(step),
         .releases = releases,
         .margin = margin});
    // Past the last observed point, so that the world is stepped beyond it.
    handler.run_until(anchor + static_cast<std::int64_t>(releases) * step + kPeriod);
    const auto seen = observer.join();
    const simsync::PacerStats stats = pacer.stats();
    Paced out{finish(seen, cpu0, w0), stats.lateness};
    out.run.self_p50_us = us(out.self.p50);
    out.run.self_p99_us = us(out.self.p99);
    out.run.dropped_us = us(stats.dropped);
    handler.stop();
    return out;
}

// Drift over `seconds` of paced simulation (see the file comment): the
// observed release of each whole second after the anchor, minus that second.
// The observer spins only from 100 ms before each second (a minute of spinning
// would take a core for nothing); a second it slept through leaves the run
// incomplete.
std::vector<std::pair<double, double>> drift(int seconds)
{
    const Paced p = paced(static_cast<std::size_t>(seconds), 1s, true, 100ms);
    std::vector<std::pair<double, double>> points{{0.0, p.run.anchor_correction_us}};
    for (std::size_t k = 0; k < p.run.observed_us.size(); ++k) points.emplace_back(k + 1, p.run.observed_us[k]);
    if (p.run.unobserved != 0) points.clear(); // a second the observer slept through: incomplete
    return points;
}

} // namespace

int main(int argc, char** argv)
{
    simsync::bench::CommandLine cli("bench_pacing",
                                    "RealTimePacer's lateness and CPU cost against plain absolute sleeps, "
                                    "all seen by one outside observer.");
    bool long_mode = false;
    cli.add()("long", boost::program_options::bool_switch(&long_mode), "also the 60 s drift run");
    if (const auto exit = cli.parse(argc, argv)) return *exit;
    const bool quick = cli.args().quick;
    // 10 s per variant in all, in repetitions of 2 s (quick: 1 x 1 s).
    const int reps = quick ? 1 : 5;
    const std::chrono::duration<double> length(quick ? 1.0 : 2.0);
    const auto periods = static_cast<std::size_t>(length / kPeriod);

    struct Variant {
        std::string name;
        std::function<Run()> run;
        std::vector<Run> runs;
        bool pacer;
    };
    std::vector<Variant> variants;
    variants.push_back({"absolute sleep, default slack (baseline)", [&] { return plain_sleep(periods, false); }, {}, false});
    variants.push_back({"absolute sleep, slack 1 ns", [&] { return plain_sleep(periods, true); }, {}, false});
    // The pacer spins only where there is a second hardware thread (pacer.hpp):
    // the row says which default this machine got.
    const bool spins = std::thread::hardware_concurrency() > 1;
    const std::string default_name =
        spins ? format("pacer, default config (%.0f us spin tail)", us(simsync::PacerConfig{}.spin_tail))
              : std::string("pacer, default config (one hardware thread: no spin tail)");
    variants.push_back({default_name, [&] { return paced(periods, kPeriod, true).run; }, {}, true});
    variants.push_back({"pacer, no spin tail", [&] { return paced(periods, kPeriod, false).run; }, {}, true});
    for (int r = 0; r < reps; ++r) {
        for (Variant& v : variants) v.runs.push_back(v.run());
    }

    simsync::bench::Report report;
    report.id = "pacing";
    report.title = "Real-time pacing";
    report.quick = quick;
    report.description = format(
        "RealTimePacer at 1x, handler step 1 ms, pacing period 10 ms, no-op world, against a thread sleeping "
        "to absolute deadlines 10 ms apart (`clock_nanosleep(TIMER_ABSTIME)`; baseline). **One outside observer "
        "for all variants**: a thread that watches what each publishes (the sleep loop a tick count after each "
        "wake-up; the handler its simulated time, which passes a pacing point only after the pacer released it "
        "and the world was stepped) and stamps when it passes each point; lateness = that stamp minus the "
        "point's deadline, anchor + k x 10 ms. The anchor is the schedule's own clock reading, which the observer "
        "cannot see: it takes the latest instant consistent with what it saw (no later than when it saw the "
        "anchoring point released, which both schedules do right after reading their clock, nor than any "
        "release's stamp minus its k periods, since no release is early), the same way for every variant. "
        "The observer spins throughout, so that it sleeps through no release (a late wake-up of "
        "its own would hide exactly the late releases); preempted, it stamps late, which counts against the "
        "variant it watches. %d repetitions of %.0f s per variant, variants alternating; p50, p99 "
        "and max over every observed release of every repetition (exact, nearest rank). CPU = process CPU "
        "time over wall time without the observer's thread, in %% of one core.",
        reps, length.count());

    simsync::bench::Table table{"", {"variant", "releases observed", "unobserved", "p50 us", "p99 us", "max us",
                                     "CPU %", "p50 ratio", "p99 ratio", "CPU ratio"}, {}};
    simsync::bench::Table self{"What each variant reports about itself (the sleep loop after its wake-up, the pacer "
                               "in `PacerStats::lateness`, measured where its wait ends): per-repetition p50 and "
                               "p99, median and range over the repetitions, to compare with the observer's figures "
                               "above",
                               {"variant", "self-reported p50 us (median of repetitions)", "range",
                                "self-reported p99 us (median of repetitions)", "range"}, {}};
    struct Fig {
        simsync::bench::Distribution lateness;
        std::size_t unobserved = 0;
        double cpu = 0;          // median over the repetitions, % of a core
        double observer_cpu = 0; // the same for the observer
        std::vector<double> all;
    };
    std::vector<Fig> figs;
    for (const Variant& v : variants) {
        Fig f;
        std::vector<double> cpu, observer_cpu, p50, p99;
        for (const Run& r : v.runs) {
            f.all.insert(f.all.end(), r.observed_us.begin(), r.observed_us.end());
            f.unobserved += r.unobserved;
            cpu.push_back(100 * r.cpu_share);
            observer_cpu.push_back(100 * r.observer_cpu_share);
            p50.push_back(r.self_p50_us);
            p99.push_back(r.self_p99_us);
        }
        f.lateness = simsync::bench::distribution(f.all);
        f.cpu = simsync::bench::median(cpu);
        f.observer_cpu = simsync::bench::median(observer_cpu);
        figs.push_back(std::move(f));
        self.rows.push_back({v.name, format("%.1f", simsync::bench::median(p50)),
                             format("%.1f-%.1f", *std::min_element(p50.begin(), p50.end()),
                                    *std::max_element(p50.begin(), p50.end())),
                             format("%.1f", simsync::bench::median(p99)),
                             format("%.1f-%.1f", *std::min_element(p99.begin(), p99.end()),
                                    *std::max_element(p99.begin(), p99.end()))});
    }
    const Fig& base = figs.front();
    auto ratio = [](double a, double b) { return b > 0 ? format("%.3g", a / b) : std::string("-"); };
    for (std::size_t i = 0; i < variants.size(); ++i) {
        const Fig& f = figs[i];
        table.rows.push_back({variants[i].name, format("%zu", f.lateness.count), format("%zu", f.unobserved),
                              format("%.1f", f.lateness.p50), format("%.1f", f.lateness.p99),
                              format("%.1f", f.lateness.max), format("%.2f", f.cpu),
                              ratio(f.lateness.p50, base.lateness.p50), ratio(f.lateness.p99, base.lateness.p99),
                              ratio(f.cpu, base.cpu)});
    }
    report.tables.push_back(std::move(table));
    report.tables.push_back(std::move(self));

    const Fig& pacer = figs[2];
    report.goals.push_back(simsync::bench::check_goal("pacer_lateness_p50", "pacer (default config): observed lateness p50 <= 5 us",
                                                      pacer.lateness.p50, Compare::at_most, 5, " us", {}, 1));
    report.goals.push_back(simsync::bench::check_goal("pacer_lateness_p99", "pacer (default config): observed lateness p99 <= 150 us",
                                                      pacer.lateness.p99, Compare::at_most, 150, " us", {}, 1));
    report.goals.push_back(simsync::bench::check_goal("pacer_cpu", "pacer (default config): CPU <= 10 % of a core",
                                                      pacer.cpu, Compare::at_most, 10, " %"));

    std::size_t unobserved = 0, observed = 0;
    double observer_cpu = 0, correction = 0;
    for (const Fig& f : figs) {
        unobserved += f.unobserved;
        observed += f.lateness.count;
        observer_cpu = std::max(observer_cpu, f.observer_cpu);
    }
    double dropped = 0;
    for (const Variant& v : variants) {
        for (const Run& r : v.runs) {
            correction = std::max(correction, r.anchor_correction_us);
            dropped += r.dropped_us;
        }
    }
    report.notes.push_back(format("The observer stamped %zu releases (slept through %zu); its own thread, spinning, "
                                  "took %.0f %% of a core (median over repetitions, most of any variant), left out "
                                  "of the CPU column. Its anchor lay at most %.1f us before the stamp of an "
                                  "anchoring release (the anchor correction: that release published later than "
                                  "the quickest one after it).",
                                  observed, unobserved, observer_cpu, correction));
    if (dropped > 0) {
        // After a drop the pacer paces from a new anchor; the observer keeps the
        // first, so every later sample of that run includes the forgiven backlog.
        report.notes.push_back(format("**The pacer forgave %.0f us of backlog in this run (CatchUp::bounded, more "
                                      "than 100 ms behind)**: from then on its schedule is not the one the "
                                      "observer measures against, and that run's later samples include the "
                                      "forgiven time.",
                                      dropped));
    }

    simsync::bench::Plot plot{.file = "pacing_lateness.png",
                              .title = "Pacing lateness seen by the observer, cumulative (every release of every repetition)",
                              .xlabel = "lateness (us; releases at or before the deadline are left of the plot)",
                              .ylabel = "fraction of releases",
                              .logx = true,
                              .logy = false,
                              .style = "steps",
                              .series = {}};
    for (std::size_t i = 0; i < variants.size(); ++i) {
        plot.series.push_back({variants[i].name, simsync::bench::cumulative(figs[i].all)});
    }
    report.plots.push_back(std::move(plot));

    const std::string drift_goal = "pacer (default config): observed drift after 60 s below 1 ms";
    if (long_mode) {
        const int seconds = 60;
        const auto points = drift(seconds);
        const bool complete = points.size() == static_cast<std::size_t>(seconds + 1);
        const double final_drift = complete ? points.back().second : std::nan("");
        report.goals.push_back(simsync::bench::check_goal("pacer_drift_60s", drift_goal, final_drift, Compare::below,
                                                          1000, " us", "wall minus simulated time since the anchor", 1));
        report.plots.push_back({.file = "pacing_drift.png",
                                .title = "Drift seen by the observer: wall time elapsed minus simulated time elapsed",
                                .xlabel = "simulated time since the anchor (s)",
                                .ylabel = "drift (us)",
                                .logx = false,
                                .logy = false,
                                .style = "linespoints",
                                .series = {{"pacer, default config", points}}});
    } else {
        // Not measured is neither met nor missed: checked = false, and the page says so.
        report.goals.push_back(simsync::bench::unchecked_goal("pacer_drift_60s", drift_goal, Compare::below, 1000,
                                                              " us", "not run (needs --long)"));
    }

    simsync::bench::publish(report, cli.args().json_path);
    return 0;
}
