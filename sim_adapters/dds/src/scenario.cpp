#include "cyclone.hpp"

#include <simsync/core/error.hpp>
#include <simsync/dds/scenario.hpp>

#include <filesystem>
#include <limits>
#include <optional>
#include <string>

namespace simsync::dds {

namespace detail {

namespace {

// A path as written at `n`, relative to the directory of the file `n` came
// from (when it came from a file; else to the working directory), made
// absolute, so that the configuration means the same from any directory.
std::string resolve_path(const ConfigNode& n)
{
    const std::string text = n.as_string();
    if (text.empty()) n.fail("expected a file path, got an empty string");
    std::filesystem::path p(text);
    if (p.is_relative()) {
        std::error_code ec;
        const std::filesystem::path file(n.file());
        if (std::filesystem::is_regular_file(file, ec)) p = file.parent_path() / p;
    }
    return std::filesystem::absolute(p).lexically_normal().string();
}

// The six files of the block at `n` (a map), each required and readable now.
SecurityFiles read_security_block(const ConfigNode& n)
{
    n.allow_only({"identity_ca", "certificate", "private_key", "permissions_ca", "governance", "permissions"});
    SecurityFiles s;
    const auto file = [&](const char* key, std::string& out) {
        const ConfigNode v = n.at(key);
        out = resolve_path(v);
        if (const std::string why = why_unreadable(out); !why.empty()) v.fail(why);
    };
    file("identity_ca", s.identity_ca);
    file("certificate", s.certificate);
    file("private_key", s.private_key);
    file("permissions_ca", s.permissions_ca);
    file("governance", s.governance);
    file("permissions", s.permissions);
    return s;
}

} // namespace

SecurityFiles read_security(const ConfigNode& n)
{
    if (!n.is_scalar()) return read_security_block(n);
    // A path: a YAML file holding the block (what scripts/make-dds-certs writes).
    const std::string path = resolve_path(n);
    if (const std::string why = why_unreadable(path); !why.empty()) n.fail("the DDS security file " + why);
    // Its own errors name its own file:line:column.
    return read_security_block(ConfigNode::load_file(path));
}

void read_domain_keys(const ConfigNode& node, DomainConfig& domain)
{
    if (auto n = node.find("domain")) {
        const std::int64_t id = n->as_int();
        if (id < 0 || id > static_cast<std::int64_t>(kMaxDomainId)) {
            n->fail("expected a DDS domain id 0.." + std::to_string(kMaxDomainId) + " (ROS_DOMAIN_ID), got " +
                    std::to_string(id));
        }
        domain.id = static_cast<std::uint32_t>(id);
    }
    if (auto n = node.find("network")) domain.network = parse_network(n->as_choice({"system", "loopback"}));
    if (auto n = node.find("interface")) domain.interface = n->as_string();
    if (auto n = node.find("peers")) {
        for (const ConfigNode& p : n->elements()) {
            std::string peer = p.as_string();
            if (peer.empty()) p.fail("expected a host or address, got an empty string");
            domain.peers.push_back(std::move(peer));
        }
    }
    if (auto n = node.find("tag")) domain.tag = n->as_string();
    if (auto n = node.find("security")) {
        domain.security = read_security(*n);
        if (domain.id > kMaxSecuredDomainId) {
            node.fail_key("domain", "expected a DDS domain id 0.." + std::to_string(kMaxSecuredDomainId) +
                                        " with `security` (governance and permissions take no id above it), got " +
                                        std::to_string(domain.id));
        }
    }
}

} // namespace detail

SecurityFiles parse_security(const ConfigNode& node) { return detail::read_security(node); }

SecurityFiles load_security_file(const std::string& path)
{
    return detail::read_security_block(ConfigNode::load_file(path));
}

Ros2SinkSettings parse_ros2_sink(const ConfigNode& node)
{
    Ros2SinkSettings s;
    if (node.is_null()) return s;
    node.allow_only({"domain", "network", "interface", "peers", "tag", "security", "topic", "reliability", "durability",
                     "depth", "repeat_while_paused"});
    detail::read_domain_keys(node, s.domain);
    if (auto n = node.find("topic")) {
        try {
            s.sink.topic = dds_topic_name(n->as_string()); // a ROS 2 name (/clock) as ROS 2 maps it (rt/clock)
        } catch (const ConfigError&) {
            throw;
        } catch (const Error& e) {
            n->fail(e.what());
        }
    }
    if (auto n = node.find("reliability")) {
        s.sink.qos.reliability = parse_reliability(n->as_choice({"reliable", "best_effort"}));
    }
    if (auto n = node.find("durability")) {
        s.sink.qos.durability = parse_durability(n->as_choice({"transient_local", "volatile"}));
    }
    if (auto n = node.find("depth")) {
        const std::int64_t depth = n->as_int();
        if (depth < 0 || depth > std::numeric_limits<std::int32_t>::max()) {
            n->fail("expected a history depth >= 1 (keep last N) or 0 (keep all), got " + std::to_string(depth));
        }
        s.sink.qos.depth = static_cast<std::int32_t>(depth);
    }
    if (auto n = node.find("repeat_while_paused")) s.sink.repeat_while_paused = n->as_bool();
    return s;
}

std::unique_ptr<Ros2ClockSink> make_ros2_clock_sink(const ConfigNode& node)
{
    const Ros2SinkSettings s = parse_ros2_sink(node);
    return std::make_unique<Ros2ClockSink>(Participant::create(s.domain), s.sink);
}

void register_clock_sink(ScenarioExtensions& extensions)
{
    extensions.add_clock_sink(std::string(kRos2SinkKind), [](const ConfigNode& node) { parse_ros2_sink(node); });
}

} // namespace simsync::dds
