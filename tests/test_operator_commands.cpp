// Operator commands (simsync/operator/operator_commands.hpp): the parser's table of good
// and bad lines, and each command's effect on a handler, written from the
// header's contract.

#include "support.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <string>

using namespace simsync;
using namespace simsync::test;

namespace {

using Kind = OperatorCommand::Kind;

std::string parse_error(const std::string& line)
{
    try {
        parse_operator_command(line);
    } catch (const Error& e) {
        CHECK(e.code() == errc::invalid_argument);
        return e.what();
    }
    return "";
}

} // namespace

TEST_CASE("OperatorCommands.Parse.GoodLines")
{
    struct Row {
        const char* line;
        Kind kind;
        std::uint64_t steps;
        std::int64_t until_ns;
        double scale;
        const char* name;
    };
    const Row rows[] = {
        {"pause", Kind::pause, 0, 0, 0, ""},
        {"  resume  ", Kind::resume, 0, 0, 0, ""},
        {"step", Kind::step, 1, 0, 0, ""},
        {"step 25", Kind::step, 25, 0, 0, ""},
        {"step\t1000000000", Kind::step, 1'000'000'000, 0, 0, ""},
        {"until 2.5", Kind::run_until, 0, 2'500'000'000, 0, ""},
        {"until 2.5s", Kind::run_until, 0, 2'500'000'000, 0, ""},
        {"run_until 0", Kind::run_until, 0, 0, 0, ""},
        {"scale 0.25", Kind::scale, 0, 0, 0.25, ""},
        {"scale 1e6", Kind::scale, 0, 0, 1e6, ""},
        {"revoke lidar", Kind::revoke, 0, 0, 0, "lidar"},
        {"revoke  front camera ", Kind::revoke, 0, 0, 0, "front camera"},
        {"status", Kind::status, 0, 0, 0, ""},
        {"quit\r", Kind::quit, 0, 0, 0, ""},
    };
    for (const Row& r : rows) {
        CAPTURE(r.line);
        const OperatorCommand c = parse_operator_command(r.line);
        CHECK(c.kind == r.kind);
        CHECK(c.steps == r.steps);
        CHECK(c.until.time_since_epoch().count() == r.until_ns);
        CHECK(c.scale == r.scale);
        CHECK(c.name == r.name);
    }
}

TEST_CASE("OperatorCommands.Parse.BadLinesNameTheCommandAndTheText")
{
    struct Row {
        const char* line;
        const char* expected; // a part of the message
    };
    const Row rows[] = {
        {"", "empty command"},
        {"   ", "empty command"},
        {"frobnicate", "unknown command 'frobnicate'"},
        {"PAUSE", "unknown command 'PAUSE'"},
        {"pause now", "pause: takes no argument, got 'now'"},
        {"step 0", "step: expected a whole number of steps from 1 to 1000000000, got '0'"},
        {"step -3", "got '-3'"},
        {"step +3", "got '+3'"},
        {"step 2.5", "got '2.5'"},
        {"step 10x", "got '10x'"},
        {"step 1000000001", "got '1000000001'"},
        {"step 99999999999999999999999", "got '99999999999999999999999'"},
        {"step 1 2", "step: expected only a number of steps, got '1 2'"},
        {"until", "until: expected a simulated time in seconds"},
        {"until -1", "until: expected a simulated time in seconds from 0 to 1e9, got '-1'"},
        {"until nan", "got 'nan'"},
        {"until inf", "got 'inf'"},
        {"until 1e10", "got '1e10'"},
        {"until 1ms", "got '1ms'"},
        {"scale", "scale: expected a time scale"},
        {"scale 0", "scale: expected a time scale from 1e-06 to 1e+06, got '0'"},
        {"scale -2", "got '-2'"},
        {"scale banana", "got 'banana'"},
        {"scale inf", "got 'inf'"},
        {"scale 2e6", "got '2e6'"},
        {"revoke", "revoke: expected the name of an accessor"},
    };
    for (const Row& r : rows) {
        CAPTURE(r.line);
        const std::string message = parse_error(r.line);
        CHECK(message.find(r.expected) != std::string::npos);
    }
}

TEST_CASE("OperatorCommands.Parse.QuotesAreShortAndPrintable")
{
    const std::string message = parse_error("step " + std::string(200, '9') + "\x01");
    CHECK(message.size() < 200);
    CHECK(message.find("...") != std::string::npos);
    CHECK(parse_error("scale 1\x07").find("'1?'") != std::string::npos);
}

TEST_CASE("OperatorCommands.Apply.PauseStepRunUntilResume" * doctest::timeout(60))
{
    CountingWorld world;
    SimSyncHandler handler(world, {.step = std::chrono::milliseconds(1), .start_paused = true});
    TimeScale scale(1.0);

    CHECK(apply_operator_command(parse_operator_command("step 7"), handler, &scale) == "stepping 7 steps");
    REQUIRE(handler.wait_until_paused(WallClock::now() + 10s));
    CHECK(handler.steps() == 7);
    CHECK(handler.state() == HandlerState::paused);

    CHECK(apply_operator_command(parse_operator_command("until 0.0205"), handler, &scale) ==
          "running until 0.020000000 s");
    REQUIRE(eventually([&] { return handler.steps() == 20 && handler.state() == HandlerState::paused; }));
    CHECK(handler.now() == ms(20));

    CHECK(apply_operator_command(parse_operator_command("resume"), handler, &scale).rfind("resumed at", 0) == 0);
    CHECK(handler.state() == HandlerState::running);
    CHECK(apply_operator_command(parse_operator_command("pause"), handler, &scale).rfind("paused at", 0) == 0);
    CHECK(handler.state() == HandlerState::paused);
}

TEST_CASE("OperatorCommands.Apply.RunUntilThePastChangesNothing" * doctest::timeout(60))
{
    CountingWorld world;
    SimSyncHandler handler(world, {.step = std::chrono::milliseconds(1), .start_paused = true});
    handler.step(5);
    REQUIRE(handler.wait_until_paused(WallClock::now() + 10s));
    const auto generation = handler.run_generation();
    for (const char* line : {"until 0.005", "until 0.001", "until 0"}) {
        CAPTURE(line);
        CHECK_THROWS_AS(apply_operator_command(parse_operator_command(line), handler, nullptr), Error);
    }
    CHECK(handler.run_generation() == generation);
    CHECK(handler.state() == HandlerState::paused);
    CHECK(handler.now() == ms(5));
}

TEST_CASE("OperatorCommands.Apply.ScaleSetsTheTimeScale")
{
    CountingWorld world;
    SimSyncHandler handler(world);
    TimeScale scale(1.0);
    CHECK(apply_operator_command(parse_operator_command("scale 0.25"), handler, &scale) == "time scale 0.25");
    CHECK(scale.value() == doctest::Approx(0.25));
    CHECK(scale.generation() == 1);
    try {
        apply_operator_command(parse_operator_command("scale 2"), handler, nullptr);
        FAIL("no exception");
    } catch (const Error& e) {
        CHECK(e.code() == errc::invalid_state);
    }
}

TEST_CASE("OperatorCommands.Apply.RevokeReleasesTheStuckAccessor" * doctest::timeout(60))
{
    CountingWorld world;
    SimSyncHandler handler(world);
    // Holds time at 0 and never asks: the stall an operator revokes.
    Accessor stuck = handler.register_accessor("stuck camera", {.kind = AccessorKind::lockstep});
    Accessor other = handler.register_accessor("other", {.kind = AccessorKind::free});
    CHECK_THROWS_AS(apply_operator_command(parse_operator_command("revoke nobody"), handler, nullptr), Error);
    CHECK(stuck.registered());
    CHECK(apply_operator_command(parse_operator_command("revoke stuck camera"), handler, nullptr) ==
          "revoked 'stuck camera'");
    CHECK_FALSE(stuck.registered());
    Access a = other.request_access_for(ms(50), 10s);
    REQUIRE(a);
    CHECK(a.granted_time() == ms(50));
}
