// What the example programs share (examples/support) and can be checked
// without running a program: the status line's "waiting_for" and the programs'
// words for where the clock goes.

#include "operator_console.hpp"
#include "ros2_clock.hpp"

#include <doctest/doctest.h>

#include <simsync/simsync.hpp>

#include <chrono>
#include <string>

using namespace std::chrono_literals;

TEST_CASE("Support.StatusLine.NamesWhoTimeWaitsForOnlyWhenStalled")
{
    // Before: "waiting_for=pacer (0.0 s)" on every redraw of a healthy run (the
    // pacer holds time at each pacing point), while the README said it appears
    // when time is stalled.
    struct Row {
        std::vector<std::string> waiting_for;
        simsync::WallClock::duration for_how_long;
        const char* text;
    };
    const Row rows[] = {
        {{"pacer"}, 0ms, ""},
        {{"pacer"}, 9ms, ""},
        {{"pacer"}, 999ms, ""},
        {{"pacer"}, 1000ms, " waiting_for=pacer (1.0 s)"},
        {{"camera", "controller"}, 12300ms, " waiting_for=camera,controller (12.3 s)"},
        {{}, 60s, ""}, // nobody: time is free to move, or paused
    };
    for (const Row& row : rows) {
        simsync::Snapshot snap;
        snap.waiting_for = row.waiting_for;
        snap.waiting_for_how_long = row.for_how_long;
        CAPTURE(row.for_how_long.count());
        CHECK(simsync::examples::stalled_text(snap) == row.text);
    }
}

TEST_CASE("Support.Clock.SaysWhereMessagesGo")
{
    simsync::ClockConfig clock;
    CHECK(simsync::examples::clock_plan_line(clock, "sim") ==
          "clock: time source 'sim', every 0.010000000 s of simulated time, to no sink (clock.sinks is empty)");
    CHECK(simsync::examples::clock_summary_line(clock, "sim", 7) ==
          "clock: 7 ticks, sent nowhere (no sink: clock.sinks is empty)");
    clock.sinks.push_back(simsync::UdpSinkConfig{"127.0.0.1", 15555});
    CHECK(simsync::examples::clock_summary_line(clock, "simulation", 7) ==
          "clock: 7 messages from time source 'simulation' to udp 127.0.0.1:15555");
    clock.enabled = false;
    CHECK(simsync::examples::clock_plan_line(clock, "sim") == "clock: off (clock.enabled: false)");
}
