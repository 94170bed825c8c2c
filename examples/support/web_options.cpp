#include "web_options.hpp"

#include <simsync/core/error.hpp>

#include <fstream>
#include <stdexcept>
#include <vector>

#if SIMSYNC_EXAMPLES_WEB
#include <simsync/web/scenario.hpp>
#endif

namespace simsync::examples {

namespace {

bool given(const po::variables_map& values, const char* name)
{
    if (values.count(name) == 0) return false;
    if (std::string(name) == "web-insecure") return values[name].as<bool>();
    return true;
}

#if SIMSYNC_EXAMPLES_WEB
// The one sentence both checks print: the operator must choose, knowingly.
std::string needs_tls(const std::string& host)
{
    return "serving the web console on " + host +
           ", which is not a loopback address, needs TLS (--web-cert FILE --web-key FILE, or certificate and "
           "private_key in the scenario's web: section) or an explicit --web-insecure (web: insecure: true): "
           "without TLS the control token and every command cross the network in clear";
}
#endif

} // namespace

void add_web_options(po::options_description& options)
{
    options.add_options()
        ("web", po::value<std::string>()->value_name("[HOST:]PORT"),
         "serve the live web console (loopback unless HOST says otherwise; port 0: a free one; the URL is printed "
         "with the control token in its #fragment). Any HOST but loopback needs --web-cert and --web-key, or "
         "--web-insecure")
        ("web-cert", po::value<std::string>()->value_name("FILE"),
         "the web console serves TLS (https, wss) with this PEM certificate chain (with --web-key)")
        ("web-key", po::value<std::string>()->value_name("FILE"), "the PEM private key of --web-cert")
        ("web-insecure", po::bool_switch(),
         "serve the web console over plain HTTP on a non-loopback address (a trusted network only)")
        ("web-allow-host", po::value<std::vector<std::string>>()->value_name("NAME")->composing(),
         "a host name the browser may reach the web console by, besides its address (repeatable)");
}

void check_web_options(const po::variables_map& values, bool scenario_given)
{
#if SIMSYNC_EXAMPLES_WEB
    const bool cert = values.count("web-cert") != 0;
    const bool key = values.count("web-key") != 0;
    if (cert != key) option_error(cert ? "web-cert" : "web-key", cert ? "needs --web-key" : "needs --web-cert");
    for (const char* file : {"web-cert", "web-key"}) {
        if (values.count(file) != 0 && !std::ifstream(values[file].as<std::string>())) {
            option_error(file, "cannot read '" + values[file].as<std::string>() + "'");
        }
    }
    if (values.count("web") == 0) return;
    web::Endpoint endpoint;
    try {
        endpoint = web::parse_endpoint(values["web"].as<std::string>());
    } catch (const Error& e) {
        option_error("web", e.what());
    }
    // With a scenario file, its web: section may still give the certificate.
    if (!scenario_given && !web::is_loopback(endpoint.host) && !cert && !given(values, "web-insecure")) {
        option_error("web", needs_tls(endpoint.host));
    }
#else
    (void)scenario_given;
    for (const char* name : {"web", "web-cert", "web-key", "web-insecure", "web-allow-host"}) {
        if (given(values, name)) option_error(name, "this build has no web console (simsync::web is off)");
    }
#endif
}

void register_web_section(ScenarioExtensions& extensions)
{
#if SIMSYNC_EXAMPLES_WEB
    web::register_web_section(extensions);
#else
    (void)extensions;
#endif
}

#if SIMSYNC_EXAMPLES_WEB
std::optional<web::WebConsoleConfig> web_console_config(const po::variables_map& values,
                                                        const ScenarioConfig& scenario, const std::string& title)
{
    web::WebSection section;
    if (const auto it = scenario.sections.find("web"); it != scenario.sections.end()) {
        section = web::read_web_section(it->second);
    }
    if (values.count("web") != 0) section.listen = web::parse_endpoint(values["web"].as<std::string>());
    if (!section.listen) return std::nullopt;
    web::WebConsoleConfig config = section.config;
    config.endpoint = *section.listen;
    config.title = title;
    if (values.count("web-cert") != 0) {
        config.tls_certificate_file = values["web-cert"].as<std::string>();
        config.tls_private_key_file = values["web-key"].as<std::string>();
    }
    if (given(values, "web-insecure")) config.allow_insecure = true;
    if (values.count("web-allow-host") != 0) {
        for (const auto& name : values["web-allow-host"].as<std::vector<std::string>>()) {
            config.allowed_hosts.push_back(name);
        }
    }
    if (!web::is_loopback(config.endpoint.host) && config.tls_certificate_file.empty() && !config.allow_insecure) {
        throw std::invalid_argument(needs_tls(config.endpoint.host));
    }
    return config;
}
#endif

} // namespace simsync::examples
