#include <simsync/core/error.hpp>
#include <simsync/dds/remote_scenario.hpp>

#include <algorithm>
#include <limits>
#include <set>
#include <string>

namespace simsync::dds {

namespace detail {
// scenario.cpp: the keys that say which DDS domain (domain, network, interface, peers, tag).
void read_domain_keys(const ConfigNode& node, DomainConfig& domain);
} // namespace detail

namespace {

std::string read_partition(const ConfigNode& n)
{
    std::string partition = n.as_string();
    if (partition.empty()) n.fail("expected a DDS partition name, got an empty string");
    if (partition.find_first_of("*?") != std::string::npos) {
        n.fail("expected a DDS partition name without a wildcard ('*' or '?'), got '" + partition + "'");
    }
    return partition;
}

std::string read_name(const ConfigNode& n)
{
    std::string name = n.as_string();
    if (const std::string why = remote::check_name(name); !why.empty()) n.fail("expected a participant name: " + why);
    return name;
}

// A list of unique participant names.
std::vector<std::string> read_names(const ConfigNode& n, const char* twice)
{
    std::vector<std::string> names;
    std::set<std::string> seen;
    for (const ConfigNode& e : n.elements()) {
        std::string name = read_name(e);
        if (!seen.insert(name).second) e.fail("the participant '" + name + "' is " + twice + " twice");
        names.push_back(std::move(name));
    }
    return names;
}

WallClock::duration read_timeout(const ConfigNode& n)
{
    const auto d = std::chrono::duration_cast<WallClock::duration>(n.as_duration());
    if (d <= WallClock::duration::zero()) n.fail("expected a duration above 0, got " + n.as_string());
    return d;
}

} // namespace

RemoteHostSettings parse_remote_host(const ConfigNode& node)
{
    RemoteHostSettings s;
    if (node.is_null()) return s;
    node.allow_only({"domain", "network", "interface", "peers", "tag", "security", "partition", "expect", "allow",
                     "max_participants", "join_timeout", "lease", "on_lost"});
    detail::read_domain_keys(node, s.domain);
    if (auto n = node.find("partition")) s.partition = read_partition(*n);
    if (auto n = node.find("expect")) s.expect = read_names(*n, "expected");
    if (auto n = node.find("allow")) {
        if (n->is_list()) {
            s.allow = read_names(*n, "allowed");
        } else if (!n->is_scalar()) {
            n->fail("expected 'any' or a list of participant names");
        } else if (n->as_string() != "any") {
            n->fail("expected 'any' or a list of participant names, got '" + n->as_string() + "'");
        }
    }
    if (auto n = node.find("max_participants")) {
        const std::int64_t max = n->as_int();
        if (max < 1) n->fail("expected a number of participants >= 1, got " + std::to_string(max));
        s.max_participants = static_cast<std::size_t>(max);
    }
    if (s.allow) {
        // Expected but never allowed: start_together would wait for nothing.
        if (auto n = node.find("expect")) {
            for (const std::string& name : s.expect) {
                if (std::find(s.allow->begin(), s.allow->end(), name) == s.allow->end()) {
                    n->fail("the participant '" + name + "' is expected but not in `allow`");
                }
            }
        }
    }
    if (s.expect.size() > s.max_participants) {
        node.fail_key("max_participants", "expected at least the " + std::to_string(s.expect.size()) +
                                              " participants of `expect`, got " + std::to_string(s.max_participants));
    }
    if (auto n = node.find("join_timeout")) s.join_timeout = read_timeout(*n);
    if (auto n = node.find("lease")) s.lease = read_timeout(*n);
    if (auto n = node.find("on_lost")) {
        s.on_lost = n->as_choice({"revoke", "pause"}) == "pause" ? LostParticipantPolicy::pause
                                                                  : LostParticipantPolicy::revoke;
    }
    return s;
}

BridgeConfig RemoteHostSettings::bridge_config() const
{
    BridgeConfig c;
    c.partition = partition;
    c.allowed_names = allow;
    c.max_participants = max_participants;
    c.lease = lease;
    c.on_lost = on_lost;
    return c;
}

void register_remote_section(ScenarioExtensions& extensions)
{
    extensions.add_section(std::string(kRemoteSection), [](const ConfigNode& node) { parse_remote_host(node); });
}

RemoteParticipantSettings parse_remote_participant(const ConfigNode& node)
{
    RemoteParticipantSettings s;
    node.allow_only({"name", "domain", "network", "interface", "peers", "tag", "security", "partition", "kind", "mode",
                     "priority", "first_request", "lookahead", "join_timeout", "lease"});
    s.name = read_name(node.at("name"));
    detail::read_domain_keys(node, s.domain);
    if (auto n = node.find("partition")) s.config.partition = read_partition(*n);
    if (auto n = node.find("kind")) {
        s.options.kind = n->as_choice({"lockstep", "free"}) == "free" ? AccessorKind::free : AccessorKind::lockstep;
    }
    if (auto n = node.find("mode")) {
        s.options.mode = n->as_choice({"exclusive", "shared"}) == "shared" ? AccessMode::shared : AccessMode::exclusive;
    }
    if (auto n = node.find("priority")) {
        const std::int64_t p = n->as_int();
        if (p < std::numeric_limits<int>::min() || p > std::numeric_limits<int>::max()) {
            n->fail("expected a priority in int range, got " + std::to_string(p));
        }
        s.options.priority = static_cast<int>(p);
    }
    if (auto n = node.find("first_request")) s.options.first_request = SimTime{SimDuration{n->as_duration()}};
    if (auto n = node.find("lookahead")) s.options.lookahead = SimDuration{n->as_duration()};
    if (auto n = node.find("join_timeout")) s.config.join_timeout = read_timeout(*n);
    if (auto n = node.find("lease")) s.config.lease = read_timeout(*n);
    return s;
}

void start_together(SimSyncHandler& handler, const Bridge& bridge, const std::vector<std::string>& expect,
                    WallClock::duration timeout)
{
    const std::vector<std::string> missing = bridge.wait_for_participants(expect, timeout);
    if (!missing.empty()) {
        std::string names;
        for (const std::string& m : missing) names += (names.empty() ? "'" : ", '") + m + "'";
        // The wait ends early only for a stop (final: no race in asking now).
        if (handler.state() == HandlerState::stopped) {
            throw Error(errc::stopped, "simsync: the simulation did not start: the handler stopped before everyone "
                                       "had joined (" + names + " had not)");
        }
        throw Error(errc::timed_out, "simsync: the simulation did not start: " + names + " had not joined within " +
                                         format_seconds(std::chrono::duration_cast<SimDuration>(timeout)) + " s");
    }
    handler.resume();
}

} // namespace simsync::dds
