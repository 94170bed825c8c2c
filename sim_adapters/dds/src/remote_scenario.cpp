#include <simsync/dds/remote_scenario.hpp>
#include <simsync/error.hpp>

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
    return partition;
}

std::string read_name(const ConfigNode& n)
{
    std::string name = n.as_string();
    if (const std::string why = remote::check_name(name); !why.empty()) n.fail("expected a participant name: " + why);
    return name;
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
    node.allow_only(
        {"domain", "network", "interface", "peers", "tag", "partition", "expect", "join_timeout", "lease", "on_lost"});
    detail::read_domain_keys(node, s.domain);
    if (auto n = node.find("partition")) s.partition = read_partition(*n);
    if (auto n = node.find("expect")) {
        std::set<std::string> seen;
        for (const ConfigNode& e : n->elements()) {
            std::string name = read_name(e);
            if (!seen.insert(name).second) e.fail("the participant '" + name + "' is expected twice");
            s.expect.push_back(std::move(name));
        }
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
    node.allow_only({"name", "domain", "network", "interface", "peers", "tag", "partition", "kind", "mode", "priority",
                     "first_request", "lookahead", "join_timeout", "lease"});
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
