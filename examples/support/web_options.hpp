#pragma once
// The web console on the example programs' command lines, one meaning for all:
//   --web [HOST:]PORT        serve it there (overrides the scenario's web.listen)
//   --web-cert FILE          TLS: a PEM certificate chain ...
//   --web-key FILE           ... and its PEM private key
//   --web-insecure           plain HTTP on a non-loopback address, said out loud
//   --web-allow-host NAME    a host name the browser may use besides the address
// merged over the scenario's `web:` section (simsync/web/scenario.hpp). Checked
// when the command line is parsed and again once the scenario is merged in:
// off loopback without TLS or --web-insecure the program refuses to start and
// says why. In a build without the web adapter every --web option is refused.
// Example code, not library API.

#include "command_line.hpp"

#include <simsync/config/config.hpp>

#include <optional>
#include <string>

#if SIMSYNC_EXAMPLES_WEB
#include <simsync/web/console.hpp>
#endif

namespace simsync::examples {

// Adds the --web options above.
void add_web_options(po::options_description& options);
// Checks them (for a `check`): the endpoint parses, files are readable, a key
// comes with its certificate, and a non-loopback --web has TLS or says
// --web-insecure unless the scenario may still give them (`scenario_given`).
void check_web_options(const po::variables_map& values, bool scenario_given);
// Registers the scenario's `web:` section (nothing without the web adapter).
void register_web_section(ScenarioExtensions& extensions);

#if SIMSYNC_EXAMPLES_WEB
// The console's configuration from the scenario's `web:` section and the
// options (which win), titled `title`; nullopt when neither says where to
// listen. @throws std::invalid_argument saying why a non-loopback endpoint
// without TLS or --web-insecure is refused (the program exits 2 with it).
std::optional<web::WebConsoleConfig> web_console_config(const po::variables_map& values,
                                                        const ScenarioConfig& scenario, const std::string& title);
#endif

} // namespace simsync::examples
