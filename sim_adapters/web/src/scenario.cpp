#include <simsync/core/error.hpp>
#include <simsync/web/scenario.hpp>

#include <fstream>

namespace simsync::web {

namespace {

std::size_t positive(const ConfigNode& node)
{
    const std::int64_t v = node.as_int();
    if (v <= 0) node.fail("must be > 0, got " + std::to_string(v));
    return static_cast<std::size_t>(v);
}

std::chrono::nanoseconds positive_duration(const ConfigNode& node)
{
    const auto d = node.as_duration();
    if (d <= std::chrono::nanoseconds::zero()) node.fail("must be > 0");
    return d;
}

// A file named in the section is opened now, so that a typo is reported at
// load with its place rather than when the console starts.
std::string readable_file(const ConfigNode& node)
{
    std::string path = node.as_string();
    if (!std::ifstream(path)) node.fail("cannot read '" + path + "'");
    return path;
}

} // namespace

WebSection read_web_section(const ConfigNode& node)
{
    WebSection section;
    if (node.is_null()) return section;
    if (!node.is_map()) node.fail("expected a map of web console settings");
    node.allow_only({"listen", "certificate", "private_key", "insecure", "allowed_hosts", "require_token",
                     "max_connections", "reserved_for_control", "max_per_address", "max_pending",
                     "handshake_timeout", "viewer_idle_timeout", "frame_period"});
    WebConsoleConfig& c = section.config;
    if (auto n = node.find("listen")) {
        try {
            section.listen = parse_endpoint(n->as_string());
        } catch (const ConfigError&) {
            throw;
        } catch (const Error& e) {
            n->fail(e.what());
        }
    }
    if (auto n = node.find("certificate")) c.tls_certificate_file = readable_file(*n);
    if (auto n = node.find("private_key")) c.tls_private_key_file = readable_file(*n);
    if (c.tls_certificate_file.empty() != c.tls_private_key_file.empty()) {
        node.fail(c.tls_certificate_file.empty() ? "private_key needs its certificate"
                                                 : "certificate needs its private_key");
    }
    if (auto n = node.find("insecure")) c.allow_insecure = n->as_bool();
    if (auto n = node.find("allowed_hosts")) {
        for (const ConfigNode& e : n->elements()) {
            std::string name = e.as_string();
            if (name.empty() || name.find_first_of(" /:[]@") != std::string::npos) {
                e.fail("'" + name + "' is not a host name (no port, no scheme)");
            }
            c.allowed_hosts.push_back(std::move(name));
        }
    }
    if (auto n = node.find("require_token")) c.require_token = n->as_bool();
    if (auto n = node.find("max_connections")) c.max_connections = positive(*n);
    if (auto n = node.find("reserved_for_control")) {
        const std::int64_t v = n->as_int();
        if (v < 0 || static_cast<std::size_t>(v) > c.max_connections) {
            n->fail("must be from 0 to max_connections (" + std::to_string(c.max_connections) + "), got " +
                    std::to_string(v));
        }
        c.reserved_for_control = static_cast<std::size_t>(v);
    } else if (c.reserved_for_control > c.max_connections) {
        c.reserved_for_control = c.max_connections;
    }
    if (auto n = node.find("max_per_address")) c.max_per_address = positive(*n);
    if (auto n = node.find("max_pending")) c.max_pending = positive(*n);
    if (auto n = node.find("handshake_timeout")) c.handshake_timeout = positive_duration(*n);
    if (auto n = node.find("viewer_idle_timeout")) c.viewer_idle_timeout = positive_duration(*n);
    if (auto n = node.find("frame_period")) c.frame_period = positive_duration(*n);
    return section;
}

void register_web_section(ScenarioExtensions& extensions)
{
    extensions.add_section("web", [](const ConfigNode& node) { read_web_section(node); });
}

} // namespace simsync::web
