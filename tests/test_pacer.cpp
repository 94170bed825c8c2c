// RealTimePacer: the pacing maths table-driven on plain values (no clock, no
// threads), then the pacer on a real handler with a ManualWallClock (deterministic,
// no sleeping), then stop paths. The wall-clock test is in test_pacer_wallclock.cpp.

#include <doctest/doctest.h>

#include <simsync/accessors/pacer.hpp>
#include <simsync/clock/event_loop.hpp>
#include <simsync/clock/time_scale.hpp>
#include <simsync/clock/wall_clock.hpp>
#include <simsync/core/handler.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using simsync::CatchUp;
using simsync::PacingEvent;
using simsync::PacingInput;
using simsync::PacingSchedule;
using simsync::SimTime;
using simsync::WallClock;
using simsync::WallTime;

namespace {

// Wall instants as offsets from an arbitrary origin; sim instants from 0.
WallTime wall(WallClock::duration d) { return WallTime{} + 1000s + d; }
SimTime sim(simsync::SimDuration d) { return SimTime{d}; }

PacingInput at(SimTime granted, WallTime now, double scale = 1.0, std::uint64_t run_generation = 0,
               std::uint64_t scale_generation = 0, bool running = true)
{
    return PacingInput{granted, now, run_generation, running, scale_generation, scale};
}

// Polls a condition the code under test will make true (not a sleep that hides a
// race: it waits for a state, bounded so a bug fails instead of hanging). It
// sleeps between polls (20 us doubling to 1 ms): a spinning poller would take a
// core from the pacer it waits for.
template <class F>
bool eventually(F condition, WallClock::duration limit = 10s)
{
    const WallTime end = WallClock::now() + limit;
    auto pause = std::chrono::microseconds(20);
    while (!condition()) {
        if (WallClock::now() > end) return false;
        std::this_thread::sleep_for(pause);
        pause = std::min<std::chrono::microseconds>(pause * 2, 1ms);
    }
    return true;
}

bool pacer_waits_in_request(const simsync::SimSyncHandler& handler)
{
    const auto snap = handler.snapshot();
    for (const auto& a : snap.accessors) {
        if (a.name == "pacer") return a.activity == simsync::AccessorStatus::Activity::waiting;
    }
    return false;
}

WallTime real_deadline(WallClock::duration d = 20s) { return WallClock::now() + d; }

} // namespace

// ------------------------------------------------------------------- deadlines

TEST_CASE("Pacer.Deadline.Scales")
{
    struct Row {
        double scale;
        SimTime anchor_sim;
        WallClock::duration anchor_wall;
        SimTime granted;
        WallClock::duration expected; // deadline, as offset
    };
    const std::vector<Row> rows{
        {1.0, sim(0ms), 0ms, sim(10ms), 10ms},
        {1.0, sim(0ms), 0ms, sim(1s), 1s},
        {0.5, sim(0ms), 0ms, sim(10ms), 20ms},
        {0.5, sim(0ms), 0ms, sim(1s), 2s},
        {2.0, sim(0ms), 0ms, sim(10ms), 5ms},
        {2.0, sim(0ms), 0ms, sim(1ns), 1ns},          // 0.5 ns rounds up: never early
        {3.0, sim(0ms), 0ms, sim(10ms), 3'333'334ns}, // 3.333... ms rounds up
        {1.0, sim(500ms), 7s, sim(510ms), 7010ms},    // anchor not at zero
        {0.5, sim(500ms), 7s, sim(510ms), 7020ms},
        {2.0, sim(500ms), 7s, sim(510ms), 7005ms},
        {1.0, sim(3600s), 3600s, sim(3600s + 10ms), 3600s + 10ms}, // exact after an hour
    };
    for (const Row& r : rows) {
        CAPTURE(r.scale);
        CAPTURE(r.granted.time_since_epoch().count());
        PacingSchedule schedule(CatchUp::full);
        // The first grant anchors at (granted, now) and is released at once.
        const auto first = schedule.on_grant(at(r.anchor_sim, wall(r.anchor_wall), r.scale));
        CHECK_FALSE(first.sleep);
        CHECK(first.event == PacingEvent::anchored);
        CHECK(first.deadline == wall(r.anchor_wall));
        CHECK(schedule.deadline(r.granted) == wall(r.expected));
        // A grant that arrives on time sleeps until exactly that deadline.
        const auto d = schedule.on_grant(at(r.granted, wall(r.anchor_wall), r.scale));
        CHECK(d.sleep);
        CHECK(d.deadline == wall(r.expected));
        CHECK(d.lateness == 0ns);
        CHECK(d.event == PacingEvent::none);
    }
}

TEST_CASE("Pacer.Deadline.UnanchoredThrows")
{
    PacingSchedule schedule;
    CHECK_THROWS_AS((void)schedule.deadline(sim(10ms)), simsync::Error);
    CHECK_THROWS_AS(schedule.on_grant(at(sim(0ms), wall(0ms), 0.0)), simsync::Error);
    CHECK_THROWS_AS(PacingSchedule(CatchUp::bounded, -1ms), simsync::Error);
}

// -------------------------------------------------------------------- lateness

TEST_CASE("Pacer.Lateness.LateGrantsReportDelay")
{
    struct Row {
        SimTime granted;
        WallClock::duration now;
        bool sleep;
        WallClock::duration lateness;
    };
    // Anchored at (0, 0), scale 1, full catch-up so nothing is re-anchored.
    const std::vector<Row> rows{
        {sim(10ms), 9ms, true, 0ms},        // early: sleep
        {sim(20ms), 20ms, true, 0ms},       // exactly due: sleep for zero
        {sim(30ms), 30ms + 1ns, false, 1ns}, // late by a nanosecond
        {sim(40ms), 47ms, false, 7ms},
        {sim(50ms), 47ms, true, 0ms},       // back on schedule
    };
    PacingSchedule schedule(CatchUp::full);
    schedule.on_grant(at(sim(0ms), wall(0ms)));
    for (const Row& r : rows) {
        CAPTURE(r.granted.time_since_epoch().count());
        const auto d = schedule.on_grant(at(r.granted, wall(r.now)));
        CHECK(d.sleep == r.sleep);
        CHECK(d.lateness == r.lateness);
        CHECK(d.deadline == wall(r.granted.time_since_epoch()));
    }
}

TEST_CASE("Pacer.Lateness.HistogramSummary")
{
    simsync::LatenessHistogram h;
    CHECK(h.count() == 0);
    CHECK(h.percentile(0.5) == 0ns);

    // Small values are exact.
    for (int ns : {3, 1, 2, 5, 4}) h.record(std::chrono::nanoseconds(ns));
    CHECK(h.count() == 5);
    CHECK(h.percentile(0.5) == 3ns);
    CHECK(h.percentile(0.99) == 5ns);
    CHECK(h.percentile(0.0) == 1ns);
    CHECK(h.max() == 5ns);
    CHECK(h.mean() == 3ns);
    h.record(-5ns); // negative counts as zero
    CHECK(h.percentile(0.0) == 0ns);

    // 98 values of 100 us, one of 1 ms, one of 50 ms: p50 ~ 100 us, p99 ~ 1 ms.
    h.clear();
    for (int i = 0; i < 98; ++i) h.record(100us);
    h.record(1ms);
    h.record(50ms);
    const auto s = h.summary();
    CHECK(s.count == 100);
    CHECK(s.max == 50ms);
    CHECK(s.p50 >= 100us);
    CHECK(s.p50 <= 100us + 100'000ns / 16);
    CHECK(s.p99 >= 1ms);
    CHECK(s.p99 <= 1ms + 1000us / 16);
    CHECK(s.mean == std::chrono::nanoseconds((98 * 100'000LL + 1'000'000 + 50'000'000) / 100));

    // Display histogram: fixed 1-2-5 layout, every value in exactly one bucket.
    REQUIRE(s.histogram.size() == 23);
    CHECK(s.histogram.front().upper == 1us);
    CHECK(s.histogram[21].upper == 10s);
    CHECK(s.histogram.back().upper == WallClock::duration::max());
    std::uint64_t total = 0;
    for (const auto& b : s.histogram) total += b.count;
    CHECK(total == 100);
    // 100 us lies in [100 us, 200 us): bucket 7 (after 1, 2, 5, 10, 20, 50, 100 us).
    CHECK(s.histogram[7].upper == 200us);
    CHECK(s.histogram[7].count == 98);
    CHECK(s.histogram[10].upper == 2ms);
    CHECK(s.histogram[10].count == 1);
    CHECK(s.histogram[15].upper == 100ms);
    CHECK(s.histogram[15].count == 1);
}

// ------------------------------------------------------------ catch-up policies

TEST_CASE("Pacer.CatchUp.ScriptedLateGrants")
{
    struct Step {
        SimTime granted;
        WallClock::duration now;
        bool sleep;
        WallClock::duration deadline;
        WallClock::duration lateness;
        WallClock::duration dropped;
        PacingEvent event;
    };
    struct Script {
        CatchUp policy;
        std::vector<Step> steps;
    };
    // Scale 1, 10 ms period, max_catch_up 100 ms. A 170 ms stall before the grant
    // at 30 ms, then grants every 1 ms of wall time (the simulation can run 10x).
    const auto a = PacingEvent::anchored;
    const auto n = PacingEvent::none;
    const auto x = PacingEvent::dropped;
    const std::vector<Script> scripts{
        {CatchUp::none,
         {
             {sim(0ms), 0ms, false, 0ms, 0ms, 0ms, a},
             {sim(10ms), 1ms, true, 10ms, 0ms, 0ms, n},
             {sim(20ms), 10ms, true, 20ms, 0ms, 0ms, n},
             {sim(30ms), 200ms, false, 30ms, 170ms, 170ms, x}, // re-anchor at (30, 200)
             {sim(40ms), 201ms, true, 210ms, 0ms, 0ms, n},     // no burst
             {sim(50ms), 202ms, true, 220ms, 0ms, 0ms, n},
             {sim(1000ms), 300ms, true, 1170ms, 0ms, 0ms, n},
         }},
        {CatchUp::bounded,
         {
             {sim(0ms), 0ms, false, 0ms, 0ms, 0ms, a},
             {sim(10ms), 1ms, true, 10ms, 0ms, 0ms, n},
             {sim(20ms), 10ms, true, 20ms, 0ms, 0ms, n},
             {sim(30ms), 200ms, false, 30ms, 170ms, 70ms, x}, // keep 100 ms to catch up
             {sim(40ms), 201ms, false, 110ms, 91ms, 0ms, n},  // catching up
             {sim(50ms), 202ms, false, 120ms, 82ms, 0ms, n},
             {sim(140ms), 211ms, false, 210ms, 1ms, 0ms, n},
             {sim(150ms), 212ms, true, 220ms, 0ms, 0ms, n},   // caught up
             {sim(1000ms), 300ms, true, 1070ms, 0ms, 0ms, n},
         }},
        {CatchUp::full,
         {
             {sim(0ms), 0ms, false, 0ms, 0ms, 0ms, a},
             {sim(10ms), 1ms, true, 10ms, 0ms, 0ms, n},
             {sim(20ms), 10ms, true, 20ms, 0ms, 0ms, n},
             {sim(30ms), 200ms, false, 30ms, 170ms, 0ms, n}, // keep the schedule
             {sim(40ms), 201ms, false, 40ms, 161ms, 0ms, n},
             {sim(50ms), 202ms, false, 50ms, 152ms, 0ms, n},
             {sim(220ms), 219ms, true, 220ms, 0ms, 0ms, n},  // caught up after 190 ms of sim
             {sim(1000ms), 300ms, true, 1000ms, 0ms, 0ms, n},
         }},
    };
    for (const Script& script : scripts) {
        CAPTURE(simsync::to_string(script.policy));
        PacingSchedule schedule(script.policy, 100ms);
        for (const Step& s : script.steps) {
            CAPTURE(s.granted.time_since_epoch().count());
            const auto d = schedule.on_grant(at(s.granted, wall(s.now)));
            CHECK(d.sleep == s.sleep);
            CHECK(d.deadline == wall(s.deadline));
            CHECK(d.lateness == s.lateness);
            CHECK(d.dropped == s.dropped);
            CHECK(d.event == s.event);
        }
    }
}

TEST_CASE("Pacer.CatchUp.BoundedZeroEqualsNone")
{
    PacingSchedule none(CatchUp::none);
    PacingSchedule bounded0(CatchUp::bounded, 0ms);
    const std::vector<std::pair<SimTime, WallClock::duration>> grants{
        {sim(0ms), 0ms}, {sim(10ms), 50ms}, {sim(20ms), 51ms}, {sim(30ms), 95ms}, {sim(40ms), 96ms}};
    for (const auto& [t, now] : grants) {
        const auto a = none.on_grant(at(t, wall(now)));
        const auto b = bounded0.on_grant(at(t, wall(now)));
        CHECK(a.sleep == b.sleep);
        CHECK(a.deadline == b.deadline);
        CHECK(a.lateness == b.lateness);
        CHECK(a.dropped == b.dropped);
    }
}

// ------------------------------------------------------------------ re-anchoring

TEST_CASE("Pacer.Reanchor.PauseResume")
{
    // Full catch-up: the strictest policy; re-anchoring must still prevent a burst.
    PacingSchedule schedule(CatchUp::full);
    std::uint64_t gen = 0;
    schedule.on_grant(at(sim(0ms), wall(0ms), 1.0, gen));
    CHECK(schedule.on_grant(at(sim(10ms), wall(5ms), 1.0, gen)).sleep);

    // The handler is paused at the pacer's instant: released at once, anchor dropped.
    ++gen;
    auto d = schedule.on_grant(at(sim(20ms), wall(10ms), 1.0, gen, 0, false));
    CHECK_FALSE(d.sleep);
    CHECK(d.event == PacingEvent::paused);
    CHECK_FALSE(schedule.anchored());

    // Resumed 10 s later: the next grant anchors at the resume, no lateness.
    ++gen;
    d = schedule.on_grant(at(sim(30ms), wall(10s + 10ms), 1.0, gen));
    CHECK_FALSE(d.sleep);
    CHECK(d.event == PacingEvent::anchored);
    CHECK(d.lateness == 0ns);
    // Deadlines now count from the resume, not from the old anchor at (0, 0).
    d = schedule.on_grant(at(sim(40ms), wall(10s + 11ms), 1.0, gen));
    CHECK(d.sleep);
    CHECK(d.deadline == wall(10s + 20ms));
    CHECK(d.lateness == 0ns);
}

TEST_CASE("Pacer.Reanchor.GenerationOnly")
{
    // A pause and resume both between two grants: the handler is running again at
    // the grant, only run_generation tells. Without it the grant would be 10 s late.
    struct Row {
        std::uint64_t generation;
        bool expect_late;
    };
    for (const Row& r : std::vector<Row>{{0, true}, {2, false}}) {
        CAPTURE(r.generation);
        PacingSchedule schedule(CatchUp::full);
        schedule.on_grant(at(sim(0ms), wall(0ms)));
        const auto d = schedule.on_grant(at(sim(10ms), wall(10s), 1.0, r.generation));
        CHECK((d.lateness > 0ns) == r.expect_late);
        CHECK((d.event == PacingEvent::anchored) == !r.expect_late);
        const auto next = schedule.on_grant(at(sim(20ms), wall(10s + 1ms), 1.0, r.generation));
        CHECK(next.deadline == (r.expect_late ? wall(20ms) : wall(10s + 10ms)));
    }
}

TEST_CASE("Pacer.Reanchor.SingleSteps")
{
    // While paused, every grant (reached by single steps) is released at once,
    // however much wall time passes between steps: stepping never waits.
    PacingSchedule schedule(CatchUp::bounded, 100ms);
    std::uint64_t gen = 0;
    schedule.on_grant(at(sim(0ms), wall(0ms), 1.0, gen));
    for (int i = 1; i <= 5; ++i) {
        ++gen; // one step(n) per grant
        const auto d = schedule.on_grant(at(sim(i * 10ms), wall(i * 1ms), 1.0, gen, 0, false));
        CHECK_FALSE(d.sleep);
        CHECK(d.event == PacingEvent::paused);
        CHECK(d.lateness == 0ns);
    }
    // A step(n) spanning several periods runs: the first grant anchors, the next
    // ones are paced from there.
    ++gen;
    auto d = schedule.on_grant(at(sim(60ms), wall(7s), 1.0, gen));
    CHECK(d.event == PacingEvent::anchored);
    d = schedule.on_grant(at(sim(70ms), wall(7s), 1.0, gen));
    CHECK(d.sleep);
    CHECK(d.deadline == wall(7s + 10ms));
}

TEST_CASE("Pacer.Reanchor.ScaleChange")
{
    struct Row {
        double new_scale;
        WallClock::duration now; // of the grant at 10 ms (anchored at (0, 0), scale 1)
        WallClock::duration expected_deadline;
        simsync::SimDuration expected_anchor_sim;
        WallClock::duration expected_next; // deadline of the grant at 110 ms
    };
    const std::vector<Row> rows{
        // At 4 ms the old schedule had reached 4 ms: the last 6 ms run at the new scale.
        {2.0, 4ms, 4ms + 3ms, 4ms, 4ms + 53ms},
        {0.5, 4ms, 4ms + 12ms, 4ms, 4ms + 212ms},
        {1.0, 4ms, 10ms, 4ms, 110ms},           // same value, new generation: nothing moves
        {2.0, 0ms, 5ms, 0ms, 55ms},             // changed right at the anchor
        {0.5, 15ms, 15ms, 10ms, 15ms + 200ms},  // late at the change: forgiven, no burst, no stall
    };
    for (const Row& r : rows) {
        CAPTURE(r.new_scale);
        CAPTURE(r.now.count());
        PacingSchedule schedule(CatchUp::full);
        schedule.on_grant(at(sim(0ms), wall(0ms), 1.0, 0, 0));
        const auto d = schedule.on_grant(at(sim(10ms), wall(r.now), r.new_scale, 0, 1));
        CHECK(d.event == PacingEvent::rescaled);
        CHECK(d.sleep);
        CHECK(d.lateness == 0ns);
        CHECK(d.deadline == wall(r.expected_deadline));
        CHECK(schedule.anchor_sim() == sim(r.expected_anchor_sim));
        // Later grants follow the new scale from the new anchor.
        const auto next = schedule.on_grant(at(sim(110ms), wall(r.now), r.new_scale, 0, 1));
        CHECK(next.deadline == wall(r.expected_next));
    }
}

TEST_CASE("Pacer.Reanchor.WhileWaiting")
{
    PacingSchedule schedule(CatchUp::bounded, 100ms);
    schedule.on_grant(at(sim(0ms), wall(0ms), 1.0, 0, 0));
    auto d = schedule.on_grant(at(sim(100ms), wall(0ms), 1.0, 0, 0));
    REQUIRE(d.sleep);
    CHECK(d.deadline == wall(100ms));

    // Nothing changed: keep waiting for the same deadline.
    d = schedule.on_wake(at(sim(100ms), wall(20ms), 1.0, 0, 0));
    CHECK(d.sleep);
    CHECK(d.deadline == wall(100ms));
    // Scale halved at 40 ms: 40 ms reached, the remaining 60 ms take 120 ms.
    d = schedule.on_wake(at(sim(100ms), wall(40ms), 0.5, 0, 1));
    CHECK(d.sleep);
    CHECK(d.event == PacingEvent::rescaled);
    CHECK(d.deadline == wall(160ms));
    // A resume seen while waiting (running, new generation) keeps the deadline.
    d = schedule.on_wake(at(sim(100ms), wall(60ms), 0.5, 1, 1));
    CHECK(d.sleep);
    CHECK(d.deadline == wall(160ms));
    // Deadline reached.
    d = schedule.on_wake(at(sim(100ms), wall(160ms), 0.5, 1, 1));
    CHECK_FALSE(d.sleep);
    // Paused (or stopped) while waiting: release at once, drop the anchor.
    schedule.on_grant(at(sim(110ms), wall(161ms), 0.5, 1, 1));
    d = schedule.on_wake(at(sim(110ms), wall(165ms), 0.5, 2, 1, false));
    CHECK_FALSE(d.sleep);
    CHECK(d.event == PacingEvent::paused);
    CHECK_FALSE(schedule.anchored());
}

// --------------------------------------------------------------- the RTF window

TEST_CASE("Pacer.RateWindow.Formula")
{
    struct Sample {
        WallClock::duration wall;
        simsync::SimDuration sim;
    };
    struct Row {
        const char* what;
        WallClock::duration window;
        std::vector<Sample> samples;
        WallClock::duration now;
        std::optional<double> expected;
    };
    auto every = [](int count, WallClock::duration wall_step, simsync::SimDuration sim_step,
                    WallClock::duration wall0 = 0ms, simsync::SimDuration sim0 = 0ms) {
        std::vector<Sample> v;
        for (int i = 0; i < count; ++i) v.push_back({wall0 + i * wall_step, sim0 + i * sim_step});
        return v;
    };
    auto concat = [](std::vector<Sample> a, const std::vector<Sample>& b) {
        a.insert(a.end(), b.begin(), b.end());
        return a;
    };
    const std::vector<Row> rows{
        {"empty", 1s, {}, 0ms, std::nullopt},
        {"one sample", 1s, {{0ms, 0ms}}, 0ms, std::nullopt},
        {"real time", 1s, every(101, 10ms, 10ms), 1s, 1.0},
        {"twice real time", 1s, every(101, 10ms, 20ms), 1s, 2.0},
        {"half real time", 1s, every(101, 20ms, 10ms), 2s, 0.5},
        // 2 s at 1x then 1 s at 3x: the window only sees the last second.
        {"window forgets", 1s, concat(every(200, 10ms, 10ms), every(101, 10ms, 30ms, 2s, 2s)), 3s, 3.0},
        // 500 ms at 1x, a 490 ms pause, one more period: the pause counts.
        {"pause inside the window", 1s, concat(every(51, 10ms, 10ms), {{1000ms, 510ms}}), 1000ms, 0.51},
        // Samples older than the window are ignored at query time.
        {"all samples too old", 1s, every(10, 10ms, 10ms), 5s, std::nullopt},
        {"base is the oldest sample inside", 100ms, every(21, 10ms, 10ms), 150ms, 1.0},
    };
    for (const Row& r : rows) {
        CAPTURE(r.what);
        simsync::RealTimeFactorWindow window(r.window);
        for (const auto& s : r.samples) window.add(wall(s.wall), sim(s.sim));
        const auto f = window.factor(wall(r.now));
        REQUIRE(f.has_value() == r.expected.has_value());
        if (f) CHECK(*f == doctest::Approx(*r.expected).epsilon(1e-12));
    }
}

TEST_CASE("Pacer.RateWindow.Limits")
{
    CHECK_THROWS_AS(simsync::RealTimeFactorWindow(0s), simsync::Error);
    CHECK_THROWS_AS(simsync::RealTimeFactorWindow(1s, 1), simsync::Error);
    simsync::RealTimeFactorWindow window(10s, 3);
    window.add(wall(0ms), sim(0ms));
    CHECK_THROWS_AS(window.add(wall(-1ms), sim(0ms)), simsync::Error);
    // The sample cap drops the oldest: the effective window shrinks.
    window.add(wall(10ms), sim(10ms));
    window.add(wall(20ms), sim(30ms));
    window.add(wall(30ms), sim(50ms));
    CHECK(window.size() == 3);
    CHECK(*window.factor(wall(30ms)) == doctest::Approx(2.0));
}

// ----------------------------------------------------------------- config input

TEST_CASE("Pacer.Config.BadInputNamesTheField")
{
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world);
    simsync::ManualWallClock clock;
    simsync::TimeScale scale(1.0, clock);
    struct Row {
        simsync::PacerConfig config;
        const char* field;
    };
    const std::vector<Row> rows{
        {{.period = 0ms}, "PacerConfig.period"},
        {{.period = -10ms}, "PacerConfig.period"},
        {{.max_catch_up = -1ms}, "PacerConfig.max_catch_up"},
        {{.spin_tail = -1us}, "PacerConfig.spin_tail"},
        {{.rate_window = 0s}, "PacerConfig.rate_window"},
        {{.name = ""}, "PacerConfig.name"},
    };
    for (const Row& r : rows) {
        CAPTURE(r.field);
        try {
            simsync::RealTimePacer pacer(handler, scale, r.config);
            FAIL("no exception");
        } catch (const simsync::Error& e) {
            CHECK(e.code() == simsync::errc::invalid_argument);
            CHECK(std::string(e.what()).find(r.field) != std::string::npos);
        }
    }
    CHECK(simsync::parse_catch_up("bounded") == CatchUp::bounded);
    CHECK(simsync::parse_catch_up("none") == CatchUp::none);
    CHECK(simsync::parse_catch_up("full") == CatchUp::full);
    CHECK_THROWS_AS(simsync::parse_catch_up("fast"), simsync::Error);
    // A duplicate name is the handler's refusal.
    simsync::RealTimePacer pacer(handler, scale);
    CHECK_THROWS_AS(simsync::RealTimePacer(handler, scale), simsync::Error);
}

// ------------------------------------------------- the pacer on a manual clock

// The handler, a manual wall clock and the pacer: ManualWallClock::sleep_until
// jumps instead of sleeping, so the wall clock only moves when the pacer waits for
// a deadline, and every figure below is exact.
TEST_CASE("Pacer.Handler.ManualClockPauseResumeScale" * doctest::timeout(30))
{
    simsync::ManualWallClock clock;
    simsync::TimeScale scale(1.0, clock);
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms, .start_paused = true});
    simsync::RealTimePacer pacer(handler, scale, {.catch_up = CatchUp::full});
    const WallTime start = clock.steady_now();

    // Pause points between pacer instants: wait_until_paused does not wait for a
    // lockstep accessor that has yet to ask for the very instant time paused at.
    handler.run_until(sim(505ms));
    REQUIRE(handler.wait_until_paused(real_deadline()));
    CHECK(handler.now() == sim(505ms));
    // The grant at 0 may come before run_until (paused: the one at 10 anchors)
    // or after it (it anchors itself).
    const auto first = clock.steady_now() - start;
    CHECK((first == 490ms || first == 500ms));

    clock.advance(10s); // a long pause in wall time
    const WallTime resumed = clock.steady_now();

    // An operator doubles the scale from inside an access at 750 ms (ahead of the
    // pacer at that instant: the pacer has the lowest priority).
    simsync::Accessor op = handler.register_accessor("operator", {.first_request = sim(750ms)});
    bool operator_granted = false; // checked after the join
    std::thread operator_thread([&] {
        simsync::Access a = op.request_access(sim(750ms));
        operator_granted = static_cast<bool>(a);
        if (a) scale.set(2.0);
        a.release();
        op.deregister();
    });
    handler.run_until(sim(1005ms));
    REQUIRE(handler.wait_until_paused(real_deadline()));
    operator_thread.join();
    CHECK(operator_granted);

    // 510 anchors at the resume (no burst of 10 s of backlog under `full`), 520..740
    // take 230 ms, the change at 750 continues from 740 at scale 2: 260 ms of sim
    // (to 1000) in 130 ms.
    CHECK(clock.steady_now() - resumed == 360ms);
    const auto s = pacer.stats();
    CHECK(s.late == 0);
    CHECK(s.lateness.max == 0ns); // the manual clock never oversleeps
    CHECK(s.dropped == 0ns);
    CHECK(s.grants == 101);
    CHECK(s.last_release == sim(1000ms));
    CHECK(s.target_factor == 2.0);
    REQUIRE(s.achieved_factor);
    // The 1 s window holds the releases since the resume: 510 ms (at the resume)
    // to 1000 ms, over 360 ms.
    CHECK(*s.achieved_factor == doctest::Approx(490.0 / 360.0));
    CHECK(pacer.running());
}

TEST_CASE("Pacer.Handler.ManualClockStepsNeverWait" * doctest::timeout(30))
{
    simsync::ManualWallClock clock;
    simsync::TimeScale scale(1.0, clock);
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms, .start_paused = true});
    simsync::RealTimePacer pacer(handler, scale);
    REQUIRE(handler.wait_until_paused(real_deadline()));
    const WallTime before = clock.steady_now();
    for (int i = 0; i < 35; ++i) {
        handler.step(1);
        REQUIRE(handler.wait_until_paused(real_deadline()));
    }
    CHECK(handler.now() == sim(35ms));
    CHECK(clock.steady_now() == before); // the pacer never waited
    auto s = pacer.stats();
    CHECK(s.late == 0);
    CHECK(s.on_time == 0);
    CHECK(s.grants == 4); // 0, 10, 20, 30

    // Resume after a long while: paced from the resume, nothing late.
    clock.advance(1h);
    const WallTime resumed = clock.steady_now();
    handler.run_until(sim(135ms));
    REQUIRE(handler.wait_until_paused(real_deadline()));
    // 40 anchors, 50..130 wait 90 ms, 135 is not a pacer instant.
    CHECK(clock.steady_now() - resumed == 90ms);
    s = pacer.stats();
    CHECK(s.late == 0);
    CHECK(s.on_time == 9);
}

TEST_CASE("Pacer.Handler.StepCoarserThanThePeriodPacesTheGrid" * doctest::timeout(30))
{
    // A 30 ms step with the default 10 ms period (issue 23 point 1): the pacer
    // asks for the grid's instants, not again and again for the one it was
    // granted (10 ms rounds to 0 on a 30 ms grid). Before the fix time stood at
    // 0 with millions of grants; now 0, 30, ..., 300 ms, each held to its
    // deadline: 300 ms of wall time on the manual clock.
    simsync::ManualWallClock clock;
    simsync::TimeScale scale(1.0, clock);
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 30ms, .start_paused = true});
    simsync::RealTimePacer pacer(handler, scale);
    REQUIRE(handler.wait_until_paused(real_deadline()));
    const WallTime start = clock.steady_now();
    handler.run_until(sim(300ms));
    const bool paused = handler.wait_until_paused(real_deadline(10s));
    const auto s = pacer.stats();
    CHECK(paused);
    CHECK(handler.now() == sim(300ms));
    CHECK(s.grants <= 11); // 0, 30, ..., 300 (the last may come after the pause)
    CHECK(s.grants >= 10);
    // 0 was granted while paused, 30 anchors, 60 .. 270 wait 30 ms each, and
    // 300 waits too unless it comes after the pause (handler.hpp: a lockstep
    // accessor bound at the pause instant may be granted after the wait ends).
    const auto waited = clock.steady_now() - start;
    CHECK((waited == 240ms || waited == 270ms));
    CHECK(s.late == 0);
}

TEST_CASE("Pacer.Handler.EveryRoundingPacesACoarseGrid" * doctest::timeout(30))
{
    // With rounding `down` every instant finer than the step rounds back to
    // the one granted; with `up` and `nearest` some do. The pacer moves on in
    // each case.
    for (const auto rounding : {simsync::Rounding::nearest, simsync::Rounding::up, simsync::Rounding::down}) {
        CAPTURE(simsync::to_string(rounding));
        simsync::ManualWallClock clock;
        simsync::TimeScale scale(1.0, clock);
        simsync::CountingWorld world;
        simsync::SimSyncHandler handler(world, {.step = 25ms, .rounding = rounding, .start_paused = true});
        simsync::RealTimePacer pacer(handler, scale, {.period = 10ms});
        handler.run_until(sim(250ms));
        CHECK(handler.wait_until_paused(real_deadline(10s)));
        CHECK(handler.now() == sim(250ms));
        CHECK(pacer.stats().grants <= 12);
    }
}

// ---------------------------------------------------------------------- stopping
// ---------------------------------------------------------------------- stopping

TEST_CASE("Pacer.Stop.WhileWaitingForLongDeadline" * doctest::timeout(30))
{
    // Scale 1e-3: one 10 ms period is 10 s of wall time.
    simsync::TimeScale scale(1e-3);
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms});
    simsync::RealTimePacer pacer(handler, scale);
    // The second grant (10 ms) waits for its deadline 10 s away, holding the access.
    REQUIRE(eventually([&] { return pacer.stats().grants >= 2; }));
    REQUIRE(handler.now() == sim(10ms));
    const WallTime t0 = WallClock::now();
    pacer.stop();
    // Well before the 10 s deadline it was waiting for (half of it: a margin that
    // holds under the sanitizers on a loaded machine; typically microseconds).
    CHECK(WallClock::now() - t0 < 5s);
    CHECK_FALSE(pacer.running());
    CHECK(pacer.failure() == nullptr);
    // Deregistered: time runs free again.
    handler.run_until(sim(1s));
    CHECK(handler.wait_until_paused(real_deadline()));
    CHECK(handler.now() == sim(1s));
}

TEST_CASE("Pacer.Stop.WhileBlockedInRequest" * doctest::timeout(30))
{
    simsync::TimeScale scale(1.0);
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms, .start_paused = true});
    simsync::RealTimePacer pacer(handler, scale);
    // Paused at 0: the pacer had its grant at 0 and now waits for 10 ms forever.
    REQUIRE(eventually([&] { return pacer.stats().grants >= 1 && pacer_waits_in_request(handler); }));
    const WallTime t0 = WallClock::now();
    pacer.stop(); // returns at all only if it ends the request; promptly:
    CHECK(WallClock::now() - t0 < 5s);
    CHECK_FALSE(pacer.running());
    // Withdrawn, then let go of: nothing of the pacer is left in the handler.
    for (const auto& a : handler.snapshot().accessors) CHECK(a.name != pacer.config().name);
    pacer.stop(); // idempotent
}

TEST_CASE("Pacer.Stop.HandlerStopEndsPacer" * doctest::timeout(30))
{
    simsync::TimeScale scale(1e-3); // 10 s per period
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms});
    simsync::RealTimePacer pacer(handler, scale);
    REQUIRE(eventually([&] { return pacer.stats().grants >= 2; }));
    const WallTime t0 = WallClock::now();
    handler.stop();
    // Noticed long before the 10 s deadline it was waiting for (today within its
    // 20 ms poll interval; the bound allows a loaded machine under a sanitizer).
    REQUIRE(eventually([&] { return !pacer.running(); }, 5s));
    CHECK(WallClock::now() - t0 < 5s);
}

TEST_CASE("Pacer.Stop.FromAnotherThread" * doctest::timeout(30))
{
    simsync::TimeScale scale(1e-3);
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms});
    simsync::RealTimePacer pacer(handler, scale);
    std::thread a([&] { pacer.stop(); });
    std::thread b([&] { pacer.stop(); });
    a.join();
    b.join();
    CHECK_FALSE(pacer.running());
}

// ------------------------------------------------------------ events, not polling

// On a loop whose manual clock only the test moves, the pacer's only way to
// learn of a pause or a scale change while it waits for a far deadline is the
// event: a pacer that polled would need the clock to move.
TEST_CASE("Pacer.Events.APauseReleasesTheWaitingGrantWithoutTheClockMoving" * doctest::timeout(30))
{
    simsync::ManualWallClock clock;
    simsync::EventLoop loop(clock); // advanced by the test only
    simsync::TimeScale scale(1e-3, clock); // one 10 ms period is 10 s of wall time
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms});
    simsync::RealTimePacer pacer(handler, scale, {}, loop.executor());
    // The grant at 0 anchors; the one at 10 ms waits for its deadline 10 s away.
    REQUIRE(eventually([&] { return pacer.stats().grants >= 2; }));
    const WallTime before = clock.steady_now();
    handler.pause();
    REQUIRE(handler.wait_until_paused(real_deadline()));
    const auto s = pacer.stats();
    CHECK(clock.steady_now() == before); // nobody moved the clock
    CHECK(clock.sleeps() == 0);
    CHECK(s.last_release == sim(10ms)); // released, cut short by the pause
    CHECK(s.on_time == 0);
    CHECK(s.unpaced == 2); // the anchoring grant and the one the pause cut short
    CHECK(handler.now() == sim(10ms));
    CHECK(pacer.running());
}

TEST_CASE("Pacer.Events.AScaleChangeMovesTheWaitingDeadlineAtOnce" * doctest::timeout(30))
{
    simsync::ManualWallClock clock;
    simsync::EventLoop loop(clock);
    simsync::TimeScale scale(1e-3, clock);
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms});
    simsync::RealTimePacer pacer(handler, scale, {}, loop.executor());
    REQUIRE(eventually([&] { return pacer.stats().grants >= 2; }));
    REQUIRE(pacer.stats().last_release == sim(0ms));
    // Scale 1000: the schedule continues from the simulated time reached at
    // this wall instant (0, clamped), so 10 ms of simulated time are due 10 us
    // of wall time from now instead of 10 s.
    scale.set(1e3);
    loop.executor().sync([] {}); // the event, posted by set(), has been handled
    clock.advance(10us);
    REQUIRE(eventually([&] { return pacer.stats().last_release >= sim(10ms); }));
    const auto s = pacer.stats();
    CHECK(s.on_time == 1);
    CHECK(s.lateness.max == 0ns);
    CHECK(s.reanchors == 2); // the anchoring grant and the rescale
    CHECK(s.target_factor == 1e3);
}

TEST_CASE("Pacer.Events.ShareOneLoopWithAnotherPacer" * doctest::timeout(30))
{
    // Two handlers (two simulations) paced by one loop thread: both keep their
    // schedule, which a loop blocked in one pacer's wait could not.
    simsync::ManualWallClock clock;
    simsync::EventLoop loop(clock);
    const simsync::Executor ex = loop.executor();
    simsync::TimeScale scale(1.0, clock);
    simsync::CountingWorld world_a;
    simsync::CountingWorld world_b;
    simsync::SimSyncHandler a(world_a, {.step = 1ms, .start_paused = true});
    simsync::SimSyncHandler b(world_b, {.step = 1ms, .start_paused = true});
    simsync::RealTimePacer pacer_a(a, scale, {.period = 10ms}, ex);
    simsync::RealTimePacer pacer_b(b, scale, {.period = 20ms}, ex);
    a.run_until(sim(205ms));
    b.run_until(sim(205ms));
    // Wall time in 1 ms steps; between two, the loop settles (a fired timer's
    // release, the grant it lets through, the wait that grant arms).
    for (int i = 0; i < 205; ++i) {
        for (int j = 0; j < 4; ++j) ex.sync([] {});
        clock.advance(1ms);
    }
    REQUIRE(a.wait_until_paused(real_deadline()));
    REQUIRE(b.wait_until_paused(real_deadline()));
    CHECK(a.now() == sim(205ms));
    CHECK(b.now() == sim(205ms));
    const auto sa = pacer_a.stats();
    const auto sb = pacer_b.stats();
    CHECK(sa.late == 0);
    CHECK(sb.late == 0);
    // The grant at 0 anchors, or (when it came before run_until, paused) the
    // first one after it: 10 .. 200 or 20 .. 200 on time.
    CHECK((sa.on_time == 20 || sa.on_time == 19));
    CHECK((sb.on_time == 10 || sb.on_time == 9));
    CHECK(sa.on_time + sa.unpaced == sa.grants);
    CHECK(sb.on_time + sb.unpaced == sb.grants);
    CHECK(sa.lateness.max == 0ns);
    CHECK(sb.lateness.max == 0ns);
}

TEST_CASE("Pacer.Stress.OperatorScaleAndStopFromManyThreads" * doctest::timeout(120))
{
    // Every path into the pacer at once, on the real clock: grants on the loop,
    // handler events and scale events posted from the operator threads, a
    // reader of the statistics, a shared-mode accessor beside it, and the stop
    // racing all of them. Results are collected and checked after the joins.
    for (int round = 0; round < 20; ++round) {
        simsync::TimeScale scale(50.0); // 10 ms of simulated time per 200 us
        simsync::CountingWorld world;
        simsync::SimSyncHandler handler(world, {.step = 1ms});
        simsync::EventLoop loop;
        auto pacer = std::make_unique<simsync::RealTimePacer>(handler, scale, simsync::PacerConfig{.period = 5ms},
                                                              loop.executor());
        std::vector<std::thread> threads;
        threads.emplace_back([&] { // operator
            for (int i = 0; i < 60; ++i) {
                switch (i % 4) {
                case 0: handler.pause(); break;
                case 1: handler.step(3); break;
                case 2: handler.run_until(handler.now() + 20ms); break;
                default: handler.resume(); break;
                }
            }
        });
        threads.emplace_back([&] { // scale
            for (int i = 0; i < 200; ++i) scale.set(i % 2 == 0 ? 200.0 : 20.0);
        });
        std::uint64_t max_grants_seen = 0;
        threads.emplace_back([&] { // statistics
            for (int i = 0; i < 200; ++i) max_grants_seen = std::max(max_grants_seen, pacer->stats().grants);
        });
        threads.emplace_back([&] { // an accessor of its own
            simsync::Accessor sensor = handler.register_accessor("sensor", {.mode = simsync::AccessMode::shared});
            for (int i = 1; i <= 100; ++i) {
                simsync::Access a = sensor.request_access_until(sim(i * 2ms), real_deadline(2s));
                (void)a; // granted or timed out: either is fine beside the races
            }
        });
        if (round % 2 == 0) pacer->stop(); // early, while everything runs
        for (auto& thread : threads) thread.join();
        if (round % 4 == 1) handler.stop(); // the handler ends it
        pacer->stop();
        const auto s = pacer->stats();
        CHECK_FALSE(pacer->running());
        CHECK(pacer->failure() == nullptr);
        CHECK(s.on_time + s.late + s.unpaced <= s.grants);
        CHECK(max_grants_seen <= s.grants);
        pacer.reset(); // destroyed before the loop it runs on
        handler.resume();
        // Deregistered: nothing holds time back any more.
        if (handler.state() != simsync::HandlerState::stopped) {
            handler.run_until(handler.now() + 1s);
            CHECK(handler.wait_until_paused(real_deadline()));
        }
    }
}
