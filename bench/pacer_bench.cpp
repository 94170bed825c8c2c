// Pacing accuracy and CPU cost of RealTimePacer against plain absolute sleeps of
// the same deadlines, in one run.
//
// Every variant paces 10 ms periods for the same wall duration:
//  - sleep:        std::this_thread::sleep_until(t0 + k * 10 ms) on one thread
//                  (default timer slack, then 1 ns: PR_SET_TIMERSLACK);
//  - sleep+spin:   sleep until 150 us before each deadline, then spin;
//  - pacer:        a handler stepping a CountingWorld at 1 ms, RealTimePacer at 1x
//                  (tight_timer_slack off, then on);
//  - pacer+spin:   the same with PacerConfig::spin_tail = 150 us.
// Lateness is wake (release) time minus deadline; CPU is user + system time of
// the process (getrusage) over the variant, as a share of one core.
//
// Usage: pacer_bench [SECONDS_PER_VARIANT]   (default 3)

#include <simsync/simsync.hpp>

#include <sys/prctl.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using simsync::WallClock;
using simsync::WallTime;

namespace {

constexpr auto kPeriod = 10ms;

double cpu_seconds()
{
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    auto seconds = [](const timeval& tv) { return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) * 1e-6; };
    return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

struct Result {
    std::string name;
    simsync::LatenessSummary lateness;
    double cpu_share = 0; // of one core
    std::string note;
};

Result plain_sleep_here(std::chrono::duration<double> length, WallClock::duration spin_tail)
{
    simsync::LatenessHistogram histogram;
    const double cpu0 = cpu_seconds();
    const WallTime t0 = WallClock::now();
    const auto periods = static_cast<long>(length / kPeriod);
    for (long k = 1; k <= periods; ++k) {
        const WallTime deadline = t0 + k * kPeriod;
        std::this_thread::sleep_until(deadline - spin_tail);
        while (WallClock::now() < deadline) {
        }
        histogram.record(WallClock::now() - deadline);
    }
    const double wall = std::chrono::duration<double>(WallClock::now() - t0).count();
    return {"", histogram.summary(), (cpu_seconds() - cpu0) / wall, ""};
}

Result plain_sleep(std::chrono::duration<double> length, WallClock::duration spin_tail, bool tight_slack)
{
    // On a thread of its own, since the timer slack is per thread.
    Result result;
    std::thread([&] {
        if (tight_slack) (void)prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
        result = plain_sleep_here(length, spin_tail);
    }).join();
    result.name = std::string(spin_tail > 0ns ? "sleep+spin 150us" : "sleep") + (tight_slack ? ", slack 1ns" : "");
    return result;
}

Result paced(std::chrono::duration<double> length, WallClock::duration spin_tail, bool tight_slack)
{
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms, .start_paused = true});
    simsync::TimeScale scale(1.0);
    simsync::RealTimePacer pacer(handler, scale, {.period = kPeriod, .spin_tail = spin_tail, .tight_timer_slack = tight_slack, .rate_window = 2s});
    const double cpu0 = cpu_seconds();
    const WallTime t0 = WallClock::now();
    const auto span = std::chrono::duration_cast<simsync::SimDuration>(length);
    handler.run_until(simsync::SimTime{span} + 5ms);
    handler.wait_until_paused(WallClock::now() + std::chrono::duration_cast<WallClock::duration>(length * 4) + 10s);
    const double wall = std::chrono::duration<double>(WallClock::now() - t0).count();
    const double cpu = cpu_seconds() - cpu0;
    const auto s = pacer.stats();
    char note[160];
    std::snprintf(note, sizeof note, "rtf %.4f, late %llu/%llu, spun %.0f ms",
                  s.achieved_factor ? *s.achieved_factor : -1.0, static_cast<unsigned long long>(s.late),
                  static_cast<unsigned long long>(s.grants), std::chrono::duration<double, std::milli>(s.spun).count());
    return {std::string(spin_tail > 0ns ? "pacer+spin 150us" : "pacer") + (tight_slack ? ", slack 1ns" : ""),
            s.lateness, cpu / wall, note};
}

double us(WallClock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

} // namespace

int main(int argc, char** argv)
{
    const double seconds = argc > 1 ? std::strtod(argv[1], nullptr) : 3.0;
    if (!(seconds > 0.1)) {
        std::fprintf(stderr, "usage: %s [SECONDS_PER_VARIANT > 0.1]\n", argv[0]);
        return 2;
    }
    const std::chrono::duration<double> length(seconds);
    std::vector<Result> results;
    results.push_back(plain_sleep(length, 0ns, false));
    results.push_back(plain_sleep(length, 0ns, true));
    results.push_back(plain_sleep(length, 150us, true));
    results.push_back(paced(length, 0ns, false));
    results.push_back(paced(length, 0ns, true));
    results.push_back(paced(length, 150us, true));

    const Result& base = results.front();
    std::printf("pacing 10 ms periods for %.1f s per variant; 1x; handler step 1 ms; %u hardware threads\n",
                seconds, std::thread::hardware_concurrency());
    std::printf("%-28s %6s %9s %9s %9s %7s  %7s %7s %7s  %s\n", "variant", "n", "p50 us", "p99 us", "max us",
                "cpu %", "p50 x", "p99 x", "cpu x", "notes");
    for (const Result& r : results) {
        auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
        std::printf("%-28s %6llu %9.1f %9.1f %9.1f %7.2f  %7.2f %7.2f %7.2f  %s\n", r.name.c_str(),
                    static_cast<unsigned long long>(r.lateness.count), us(r.lateness.p50), us(r.lateness.p99),
                    us(r.lateness.max), 100 * r.cpu_share, ratio(us(r.lateness.p50), us(base.lateness.p50)),
                    ratio(us(r.lateness.p99), us(base.lateness.p99)), ratio(r.cpu_share, base.cpu_share),
                    r.note.c_str());
    }
    std::printf("ratios (x) against the first row; percentiles within 6.25%% (LatenessHistogram buckets)\n");
    return 0;
}
