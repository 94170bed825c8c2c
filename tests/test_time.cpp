#include <doctest/doctest.h>

#include <simsync/core/error.hpp>
#include <simsync/core/schedule.hpp>
#include <simsync/core/time.hpp>

#include <vector>

using namespace std::chrono_literals;
using simsync::Rounding;
using simsync::SimTime;
using simsync::sim_time;

namespace {
SimTime ns(std::int64_t n) { return SimTime{simsync::SimDuration{n}}; }
} // namespace

TEST_CASE("Time.Rounding.CameraAt30HzNearest")
{
    // dt = 1 ms; request n/30 s exactly (as the nearest nanosecond below).
    const std::vector<std::int64_t> expected_ms{0, 33, 67, 100, 133, 167, 200};
    for (std::size_t n = 0; n < expected_ms.size(); ++n) {
        const SimTime request = ns(static_cast<std::int64_t>(n) * 1'000'000'000 / 30);
        CAPTURE(n);
        CHECK(simsync::round_to_grid(request, 1ms) == sim_time(std::chrono::milliseconds(expected_ms[n])));
    }
}

TEST_CASE("Time.Rounding.Table")
{
    struct Row {
        std::int64_t t_ns;
        std::int64_t dt_ns;
        Rounding policy;
        std::int64_t expected_ns;
    };
    const std::vector<Row> rows{
        // on the grid: every policy keeps it
        {0, 1'000'000, Rounding::nearest, 0},
        {5'000'000, 1'000'000, Rounding::up, 5'000'000},
        {5'000'000, 1'000'000, Rounding::down, 5'000'000},
        // ties go up under nearest
        {500'000, 1'000'000, Rounding::nearest, 1'000'000},
        {1'500'000, 1'000'000, Rounding::nearest, 2'000'000},
        {499'999, 1'000'000, Rounding::nearest, 0},
        // up and down
        {1, 1'000'000, Rounding::up, 1'000'000},
        {999'999, 1'000'000, Rounding::down, 0},
        {33'333'333, 1'000'000, Rounding::up, 34'000'000},
        {66'666'667, 1'000'000, Rounding::down, 66'000'000},
        // negatives: the grid continues below zero, ties still go up (towards +inf)
        {-500'000, 1'000'000, Rounding::nearest, 0},
        {-600'000, 1'000'000, Rounding::nearest, -1'000'000},
        {-1, 1'000'000, Rounding::down, -1'000'000},
        {-1, 1'000'000, Rounding::up, 0},
        {-1'000'000, 1'000'000, Rounding::down, -1'000'000},
        // odd step: no exact tie exists; 1 of 3 rounds down, 2 of 3 up
        {1, 3, Rounding::nearest, 0},
        {2, 3, Rounding::nearest, 3},
        // large times stay exact
        {1'000'000'000'000'000'000, 1'000'000, Rounding::nearest, 1'000'000'000'000'000'000},
    };
    for (const Row& r : rows) {
        CAPTURE(r.t_ns);
        CAPTURE(r.dt_ns);
        CAPTURE(simsync::to_string(r.policy));
        CHECK(simsync::round_to_grid(ns(r.t_ns), simsync::SimDuration{r.dt_ns}, r.policy) == ns(r.expected_ns));
    }
}

TEST_CASE("Time.Rounding.RejectsNonPositiveStep")
{
    CHECK_THROWS_AS(simsync::round_to_grid(ns(5), simsync::SimDuration{0}), simsync::Error);
    CHECK_THROWS_AS(simsync::round_to_grid(ns(5), simsync::SimDuration{-1}), simsync::Error);
}

TEST_CASE("Time.Arithmetic.MillionMillisecondStepsAreExact")
{
    SimTime t = simsync::kSimStart;
    for (int i = 0; i < 1'000'000; ++i) t += 1ms;
    CHECK(t == sim_time(1000s));
}

TEST_CASE("Time.Format.Seconds")
{
    CHECK(simsync::format_seconds(sim_time(1033ms)) == "1.033000000");
    CHECK(simsync::format_seconds(ns(-1)) == "-0.000000001");
    CHECK(simsync::format_seconds(simsync::kSimStart) == "0.000000000");
}

TEST_CASE("Time.ParseRounding.NamesAndErrors")
{
    CHECK(simsync::parse_rounding("nearest") == Rounding::nearest);
    CHECK(simsync::parse_rounding("up") == Rounding::up);
    CHECK(simsync::parse_rounding("down") == Rounding::down);
    try {
        simsync::parse_rounding("closest");
        FAIL("expected an error");
    } catch (const simsync::Error& e) {
        CHECK(e.code() == simsync::errc::invalid_argument);
        CHECK(std::string(e.what()).find("closest") != std::string::npos);
    }
}

TEST_CASE("Time.Schedule.RatesKeepNoDrift")
{
    const auto camera = simsync::PeriodicSchedule::from_rate(30);
    CHECK(camera.at(0) == simsync::kSimStart);
    CHECK(camera.at(1) == ns(33'333'333));
    CHECK(camera.at(30) == sim_time(1s));
    CHECK(camera.at(30 * 3600) == sim_time(3600s)); // an hour: still exact
    const auto ntsc = simsync::PeriodicSchedule::from_rate(2997, 100, 1ms);
    CHECK(ntsc.at(2997) == sim_time(100s) + 1ms);
    CHECK(camera.first_index_at_or_after(ns(33'333'333)) == 1);
    CHECK(camera.first_index_at_or_after(ns(33'333'334)) == 2);
    CHECK(camera.first_index_at_or_after(ns(-5)) == 0);
    const auto timer = simsync::PeriodicSchedule::from_period(21ms, 5ms);
    CHECK(timer.at(4) == sim_time(89ms));
    CHECK(timer.first_index_at_or_after(sim_time(26ms)) == 1);
    CHECK_THROWS_AS(simsync::PeriodicSchedule::from_period(0ms), simsync::Error);
    CHECK_THROWS_AS(simsync::PeriodicSchedule::from_rate(0), simsync::Error);
}
