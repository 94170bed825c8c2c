// The YAML scenario: a full file round-trips into the structs; each class of
// error names the right file:line:column and key.

#include <simsync/config.hpp>
#include <simsync/pacer.hpp>

#include <doctest/doctest.h>

#include <fstream>

using namespace simsync;
using namespace std::chrono_literals;

namespace {

const char* kFull = R"(handler:
  step: 1ms
  rounding: nearest
  start_paused: true
time:
  source: simulation
  scale: 0.5
world:
  type: bouncing_balls
  bodies: 3
accessors:
  - name: lidar
    rate: 200
    mode: shared
  - name: camera
    rate: 29.97Hz
    offset: 2.5ms
  - name: controller
    period: 10ms
    kind: lockstep
    mode: exclusive
    priority: 2
    role: controller
  - name: viewer
    rate: 60
    kind: free
clock:
  rate: 100
  sinks:
    - udp: 127.0.0.1:15555
pacer:
  period: 10ms
  catch_up: bounded
  catch_up_limit: 100ms
  spin_tail: 0s
timers:
  - name: heartbeat
    clock: real
    period: 200ms
    offset: 5ms
)";

// Loads `text` and returns the ConfigError it raises.
ConfigError error_of(const std::string& text)
{
    try {
        load_scenario_string(text, "scenario.yaml");
    } catch (const ConfigError& e) {
        return e;
    }
    FAIL("expected a ConfigError");
    throw;
}

} // namespace

TEST_CASE("Config.Load.FullScenario")
{
    const ScenarioConfig c = load_scenario_string(kFull, "full.yaml");
    CHECK(c.handler.step == 1ms);
    CHECK(c.handler.rounding == Rounding::nearest);
    CHECK(c.handler.start_paused);
    CHECK(c.time_source == "simulation");
    CHECK(c.time_scale == 0.5);
    CHECK(c.world_type == "bouncing_balls");
    REQUIRE(c.world);
    CHECK(c.world->at("bodies").as_int() == 3);
    REQUIRE(c.accessors.size() == 4);
    CHECK(c.accessors[0].name == "lidar");
    CHECK(c.accessors[0].schedule == PeriodicSchedule::from_rate(200));
    CHECK(c.accessors[0].mode == AccessMode::shared);
    CHECK(c.accessors[1].schedule == PeriodicSchedule::from_rate(2997, 100, 2500us));
    CHECK(c.accessors[2].schedule == PeriodicSchedule::from_period(10ms));
    CHECK(c.accessors[2].mode == AccessMode::exclusive);
    CHECK(c.accessors[2].priority == 2);
    CHECK(c.accessors[2].role == "controller");
    CHECK(c.accessors[3].kind == AccessorKind::free);
    CHECK(c.clock.schedule == PeriodicSchedule::from_rate(100));
    REQUIRE(c.clock.sinks.size() == 1);
    CHECK(c.clock.sinks[0].host == "127.0.0.1");
    CHECK(c.clock.sinks[0].port == 15555);
    CHECK(c.pacer.period == 10ms);
    CHECK(c.pacer.catch_up == "bounded");
    CHECK(c.pacer.catch_up_limit == 100ms);
    CHECK(c.pacer.spin_tail == 0ns);
    REQUIRE(c.timers.size() == 1);
    CHECK(c.timers[0].clock == "real");
    CHECK(c.timers[0].offset == 5ms);
}

TEST_CASE("Config.Pacer.SectionToPacerConfig")
{
    const ScenarioConfig c = load_scenario_string(kFull, "full.yaml");
    const simsync::PacerConfig p = simsync::pacer_config(c.pacer);
    CHECK(p.period == c.pacer.period);
    CHECK(p.catch_up == simsync::CatchUp::bounded);
    CHECK(p.max_catch_up == 100ms);
    CHECK(p.spin_tail == 0ns);
    // Not in the section: the pacer's own defaults.
    CHECK(p.name == simsync::PacerConfig{}.name);
    CHECK(p.tight_timer_slack == simsync::PacerConfig{}.tight_timer_slack);
    // An empty scenario paces with the pacer's defaults.
    const simsync::PacerConfig d = simsync::pacer_config(load_scenario_string("", "empty.yaml").pacer);
    CHECK(d.period == simsync::PacerConfig{}.period);
    CHECK(d.catch_up == simsync::PacerConfig{}.catch_up);
    CHECK(d.max_catch_up == simsync::PacerConfig{}.max_catch_up);
    CHECK(d.spin_tail == simsync::PacerConfig{}.spin_tail);
}

TEST_CASE("Config.Load.EmptyFileIsAnEmptyScenario")
{
    const ScenarioConfig c = load_scenario_string("", "empty.yaml");
    CHECK(c.accessors.empty());
    CHECK(c.handler.step == 1ms);
    CHECK(error_of("- a\n- b\n").key().empty()); // a list is not a scenario
}

TEST_CASE("Config.Load.FromFile")
{
    const std::string path = "simsync_test_config.yaml";
    {
        std::ofstream out(path);
        out << kFull;
    }
    CHECK(load_scenario_file(path).accessors.size() == 4);
    std::remove(path.c_str());
    try {
        load_scenario_file("does/not/exist.yaml");
        FAIL("expected an error");
    } catch (const ConfigError& e) {
        CHECK(e.file() == "does/not/exist.yaml");
        CHECK(std::string(e.what()).find("cannot open") != std::string::npos);
    }
}

TEST_CASE("Config.Durations.ExactUnits")
{
    struct Row {
        const char* text;
        std::int64_t ns;
    };
    for (const Row& r : {Row{"1ms", 1'000'000}, Row{"0.5 s", 500'000'000}, Row{"250us", 250'000},
                         Row{"33.333ms", 33'333'000}, Row{"100ns", 100}, Row{"2min", 120'000'000'000}, Row{"0", 0}}) {
        CAPTURE(r.text);
        CHECK(ConfigNode::parse(std::string("d: ") + r.text, "t.yaml").at("d").as_duration().count() == r.ns);
    }
}

TEST_CASE("Config.Errors.NameLineColumnAndKey")
{
    struct Row {
        const char* text;
        int line;
        int column;
        const char* key;
        const char* says;
    };
    const Row rows[] = {
        // unknown top-level key
        {"handler:\n  step: 1ms\nsensors: []\n", 3, 1, "sensors", "unknown key"},
        // unknown nested key, with the allowed ones listed
        {"handler:\n  stepsize: 1ms\n", 2, 3, "handler.stepsize", "expected one of: step"},
        // a duration without unit
        {"handler:\n  step: 5\n", 2, 9, "handler.step", "expected a duration with a unit"},
        // a bad choice
        {"handler:\n  rounding: closest\n", 2, 13, "handler.rounding", "nearest, up, down"},
        // a list element's bad value
        {"accessors:\n  - name: a\n    rate: 10\n  - name: b\n    rate: fast\n", 5, 11, "accessors[1].rate",
         "expected a rate in Hz"},
        // a missing required key names the parent's place
        {"accessors:\n  - rate: 10\n", 2, 5, "accessors[0].name", "required key is missing"},
        // duplicate accessor names
        {"accessors:\n  - name: a\n    rate: 10\n  - name: a\n    rate: 20\n", 4, 11, "accessors[1].name", "duplicate"},
        // a non-positive scale
        {"time:\n  scale: -1\n", 2, 10, "time.scale", "expected a time scale > 0"},
        // both rate and period
        {"accessors:\n  - name: a\n    rate: 10\n    period: 5ms\n", 3, 11, "accessors[0].rate", "either rate or period"},
        // a real-time timer with offset >= period
        {"timers:\n  - name: t\n    clock: real\n    period: 10ms\n    offset: 10ms\n", 5, 13, "timers[0].offset", "offset < period"},
        // a bad sink address
        {"clock:\n  sinks:\n    - udp: localhost\n", 3, 12, "clock.sinks[0].udp", "host:port"},
        {"clock:\n  sinks:\n    - udp: localhost:70000\n", 3, 12, "clock.sinks[0].udp", "1..65535"},
        // a syntax error
        {"handler:\n  step: [1ms\n", 3, 1, "", "YAML syntax error"},
        // a negative pacer spin tail
        {"pacer:\n  spin_tail: -1us\n", 2, 14, "pacer.spin_tail", "expected a duration with a unit"},
        // sub-nanosecond precision
        {"handler:\n  step: 0.5ns\n", 2, 9, "handler.step", "whole number of nanoseconds"},
    };
    for (const Row& r : rows) {
        CAPTURE(r.text);
        const ConfigError e = error_of(r.text);
        CHECK(e.file() == "scenario.yaml");
        CHECK(e.line() == r.line);
        CHECK(e.column() == r.column);
        CHECK(e.key() == r.key);
        CHECK(std::string(e.what()).find(r.says) != std::string::npos);
        CHECK(std::string(e.what()).rfind("scenario.yaml:" + std::to_string(r.line) + ":" + std::to_string(r.column) + ":", 0) == 0);
    }
}
