#pragma once
// Runs a ScenarioConfig: the demo's world, its accessor threads, the operator's
// commands, the status line and the final summary.

#include <simsync/config.hpp>

#include <optional>
#include <string>

namespace demo {

// The scenario `simsync-demo` runs without --config.
extern const char* const kDefaultScenario;

struct RunOptions {
    std::optional<simsync::SimTime> end; // run until this simulated time, then quit
    std::string trace_file;              // Chrome trace-event JSON of every grant
    std::string web;                     // "[HOST:]PORT": serve the web console there ("" = none)
};

// Returns the process exit code.
int run_scenario(const simsync::ScenarioConfig& config, const RunOptions& options);

} // namespace demo
