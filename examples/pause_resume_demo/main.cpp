// simsync-demo: a paced simulation with sensor threads, a controller, a clock
// publisher and a pacing view, all accessors of one SimSyncHandler, that an
// operator pauses, steps and resumes without any of them noticing.
//
// Usage: simsync-demo [--config FILE] [--duration SIM_SECONDS] [--scale X]
//                     [--clock-udp HOST:PORT] [--trace FILE] [--web [HOST:]PORT]
// On a terminal: p pause, r resume, s step, + / - scale, q quit.
// Otherwise one command per line on stdin: pause, resume, step N, until T,
// scale X, revoke NAME, status, quit. --web serves the same controls, and a live
// picture, to a browser.

#include "balls_world.hpp"
#include "scenario.hpp"

#if SIMSYNC_EXAMPLES_WEB
#include <simsync/web/console.hpp>
#endif

#include <simsync/simsync.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

namespace {

const char* kUsage =
    "usage: simsync-demo [--config FILE] [--duration SIM_SECONDS] [--scale X]\n"
    "                    [--clock-udp HOST:PORT] [--trace FILE] [--web [HOST:]PORT]\n"
    "  --web [HOST:]PORT  serve the web console (loopback unless HOST says otherwise; port 0: a free one)\n";

struct Options {
    std::string config_file;
    double duration_s = 0; // 0: until quit
    double scale = 0;      // 0: from the scenario
    std::vector<simsync::ClockSinkConfig> clock_udp;
    std::string trace_file;
    std::string web;
};

bool parse_options(int argc, char** argv, Options& o)
{
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        auto value = [&](const char* what) -> std::string {
            if (i + 1 >= argc) throw std::invalid_argument(arg + " needs " + what);
            return argv[++i];
        };
        auto number = [&](const char* what) {
            const std::string v = value(what);
            char* end = nullptr;
            const double d = std::strtod(v.c_str(), &end);
            if (end == v.c_str() || *end != '\0' || !(d > 0)) {
                throw std::invalid_argument(arg + ": expected " + what + " > 0, got '" + v + "'");
            }
            return d;
        };
        if (arg == "--config") o.config_file = value("a file");
        else if (arg == "--duration") o.duration_s = number("a number of simulated seconds");
        else if (arg == "--scale") o.scale = number("a time scale");
        else if (arg == "--clock-udp") o.clock_udp.push_back(simsync::parse_udp_sink(value("HOST:PORT")));
        else if (arg == "--trace") o.trace_file = value("a file");
        else if (arg == "--web") {
            o.web = value("[HOST:]PORT");
#if SIMSYNC_EXAMPLES_WEB
            simsync::web::parse_endpoint(o.web); // throws naming what is wrong
#else
            throw std::invalid_argument("--web: this build has no web console (simsync::web is off)");
#endif
        }
        else if (arg == "--help" || arg == "-h") return false;
        else throw std::invalid_argument("unknown option '" + arg + "'");
    }
    return true;
}

} // namespace

int main(int argc, char** argv)
{
    Options options;
    try {
        if (!parse_options(argc, argv, options)) {
            std::fputs(kUsage, stdout);
            return 0;
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "simsync-demo: %s\n%s", e.what(), kUsage);
        return 2;
    }

    try {
        simsync::ScenarioConfig config = options.config_file.empty()
                                             ? simsync::load_scenario_string(demo::kDefaultScenario, "<embedded scenario>")
                                             : simsync::load_scenario_file(options.config_file);
        if (options.scale > 0) config.time_scale = options.scale;
        for (const auto& sink : options.clock_udp) config.clock.sinks.push_back(sink);

        demo::RunOptions run;
        if (options.duration_s > 0) {
            run.end = simsync::sim_time(std::chrono::duration<double>(options.duration_s));
        }
        run.trace_file = options.trace_file;
        run.web = options.web;
        return demo::run_scenario(config, run);
    } catch (const simsync::ConfigError& e) {
        std::fprintf(stderr, "simsync-demo: %s\n", e.what());
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "simsync-demo: %s\n", e.what());
        return 1;
    }
}
