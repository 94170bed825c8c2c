#pragma once
// Runs a ScenarioConfig: the demo's world, its accessor threads, the operator's
// commands, the status line and the final summary.

#include "chrome_trace.hpp"
#include "web_options.hpp"

#include <simsync/config/config.hpp>

#include <optional>
#include <string>

namespace demo {

// The scenario `simsync-demo` runs without --config: the text of
// examples/pause_resume_demo/scenario.yaml, compiled in.
extern const char* const kDefaultScenario;
inline constexpr const char* kDefaultScenarioName = "examples/pause_resume_demo/scenario.yaml (embedded)";

// The demo's part of the scenario format: the `bouncing_balls` world type
// (keys `bodies`, 1..10000, and `restitution`, 0..1), the `ros2` clock sink
// (sim_adapters/dds) and the `web:` section (sim_adapters/web), checked at load.
simsync::ScenarioExtensions scenario_extensions();

// What the format leaves to the program, checked right after loading: every
// accessor's role is sensor or controller, a controller (it writes) is
// exclusive, and no accessor takes the name of the --duration end marker
// ("--duration", PauseAtEnd). @throws simsync::ConfigError at the offending key.
void check_scenario(const simsync::ScenarioConfig& config);

struct RunOptions {
    std::optional<simsync::SimTime> end; // run until this simulated time, then quit
    simsync::examples::ChromeTraceFile* trace = nullptr; // --trace: written at the end (opened before the run)
#if SIMSYNC_EXAMPLES_WEB
    std::optional<simsync::web::WebConsoleConfig> web; // serve the web console so (--web, web:)
#endif
};

// Returns the process exit code.
int run_scenario(const simsync::ScenarioConfig& config, const RunOptions& options);

} // namespace demo
