// simsync-demo: a paced simulation with sensor threads, a controller, a clock
// publisher and a pacing view, all accessors of one SimSyncHandler, that an
// operator pauses, steps and resumes without any of them noticing.
//
// Usage: simsync-demo [--config FILE] [--duration DURATION] [--scale X]
//                     [--clock-udp HOST:PORT]... [--ros2-clock [DOMAIN]] [--trace FILE]
//                     [--web [HOST:]PORT [--web-cert FILE --web-key FILE | --web-insecure]]
// (--help lists them; --scale 0 runs unpaced.)
// On a terminal: p pause, r resume, s step, + / - scale, q quit.
// Otherwise one command per line on stdin: pause, resume, step N, until T,
// scale X, revoke NAME, status, quit. --web serves the same controls, and a live
// picture, to a browser.

#include "balls_world.hpp"
#include "command_line.hpp"
#include "ros2_clock.hpp"
#include "scenario.hpp"
#include "web_options.hpp"

#include <simsync/simsync.hpp>

#include <cstdio>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

namespace po = simsync::examples::po;

simsync::examples::CommandLine command_line()
{
    simsync::examples::CommandLine cli;
    cli.program = "simsync-demo";
    cli.synopsis = "[--config FILE] [--duration DURATION] [--scale X] [--clock-udp HOST:PORT]...\n"
                   "                    [--ros2-clock [DOMAIN]] [--ros2-network NET] [--ros2-security FILE]\n"
                   "                    [--trace FILE] [--web [HOST:]PORT [--web-cert FILE --web-key FILE | --web-insecure]]";
    cli.summary = "Bouncing balls, sensor threads, a controller, a clock publisher and a pacer on one simulated clock.";
    cli.options.add_options()
        ("config", po::value<std::string>()->value_name("FILE"),
         "scenario YAML (docs/config.md; default: examples/pause_resume_demo/scenario.yaml, compiled in)")
        ("duration", po::value<simsync::examples::DurationArgument>()->value_name("DURATION"),
         (std::string("run this long, then quit (default: until quit or SIGINT/SIGTERM); ") +
          simsync::examples::kDurationHelp)
             .c_str());
    simsync::examples::add_scale_option(cli.options);
    cli.options.add_options()
        ("clock-udp", po::value<std::vector<std::string>>()->value_name("HOST:PORT")->composing(),
         "also publish the clock to this UDP destination (repeatable)");
    simsync::examples::add_ros2_clock_options(cli.options);
    cli.options.add_options()
        ("trace", po::value<std::string>()->value_name("FILE"),
         "write a Chrome trace JSON of every access, its wait and its hold (Perfetto, chrome://tracing); "
         "the file is created at the start");
    simsync::examples::add_web_options(cli.options);
    cli.epilogue =
        "On a terminal: p pause, r resume, s step, + / - scale x2 / /2, q quit.\n"
        "Otherwise one command per line on stdin: pause, resume, step N, until T, scale X, revoke NAME, status, quit.\n"
        "--web serves the same commands, and a live picture, to a browser.\n"
        "Exit status: 0 done, 1 failure while running, 2 bad option or scenario.";
    return cli;
}

} // namespace

int main(int argc, char** argv)
{
    std::vector<simsync::UdpSinkConfig> clock_udp;
    int exit_code = 0;
    const auto values = simsync::examples::parse_command_line(
        argc, argv, command_line(), exit_code, [&](const po::variables_map& v) {
            simsync::examples::check_duration_option(v);
            simsync::examples::check_scale_option(v);
            simsync::examples::check_ros2_clock_options(v);
            if (v.count("clock-udp") != 0) {
                for (const std::string& text : v["clock-udp"].as<std::vector<std::string>>()) {
                    try {
                        clock_udp.push_back(simsync::parse_udp_sink(text));
                    } catch (const simsync::Error& e) {
                        simsync::examples::option_error("clock-udp", e.what());
                    }
                }
            }
            simsync::examples::check_web_options(v, v.count("config") != 0);
        });
    if (!values) return exit_code;

    simsync::ScenarioConfig config;
    try {
        const simsync::ScenarioExtensions extensions = demo::scenario_extensions();
        config = values->count("config") != 0
                     ? simsync::load_scenario_file((*values)["config"].as<std::string>(), extensions)
                     : simsync::load_scenario_string(demo::kDefaultScenario, demo::kDefaultScenarioName, extensions);
        demo::check_scenario(config);
    } catch (const simsync::Error& e) { // ConfigError: file:line:column: key: what
        std::fprintf(stderr, "simsync-demo: %s\n", e.what());
        return 2;
    }
    simsync::examples::apply_scale_option(*values, config.pacer.enabled, config.time_scale);
    for (const auto& sink : clock_udp) config.clock.sinks.emplace_back(sink);
    try {
        if (auto ros2 = simsync::examples::ros2_clock_sink(*values)) config.clock.sinks.push_back(std::move(*ros2));
    } catch (const std::exception& e) {
        std::fprintf(stderr, "simsync-demo: %s\n", e.what());
        return 2;
    }

    try {
        demo::RunOptions run;
        if (const auto duration = simsync::examples::duration_option(*values, "duration")) {
            run.end = simsync::SimTime{*duration};
        }
        std::optional<simsync::examples::ChromeTraceFile> trace;
        if (values->count("trace") != 0) {
            // Opened now: a path that cannot be written is refused before the run.
            try {
                trace.emplace((*values)["trace"].as<std::string>());
            } catch (const std::runtime_error& e) {
                std::fprintf(stderr, "simsync-demo: --trace: %s\n", e.what());
                return 2;
            }
            run.trace = &*trace;
        }
#if SIMSYNC_EXAMPLES_WEB
        try {
            run.web = simsync::examples::web_console_config(*values, config, "simsync-demo");
        } catch (const std::invalid_argument& e) {
            std::fprintf(stderr, "simsync-demo: %s\n", e.what());
            return 2;
        }
#endif
        return demo::run_scenario(config, run);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "simsync-demo: %s\n", e.what());
        return 1;
    }
}
