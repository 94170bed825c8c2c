// The scenario file's schema: the sections simsync reads, what adapters
// register (ScenarioExtensions), and load_scenario on top of ConfigNode.

#include <simsync/accessors/clock_publisher.hpp>
#include <simsync/clock/time_scale.hpp>
#include <simsync/clock/time_source.hpp>
#include <simsync/config/config.hpp>

#include "node_access.hpp"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <string_view>
#include <type_traits>

namespace simsync {

// -------------------------------------------------------------- extensions

namespace {

constexpr std::array<const char*, 7> kCoreSections = {"handler", "time",  "world", "accessors",
                                                     "clock",   "pacer", "timers"};
constexpr const char* kUdpSink = "udp";

bool is_core_section(std::string_view key)
{
    return std::any_of(kCoreSections.begin(), kCoreSections.end(), [&](const char* s) { return key == s; });
}

std::vector<std::string> builtin_time_sources()
{
    static const std::vector<std::string> names = TimeSourceFactory().names();
    return names;
}

bool is_builtin_time_source(std::string_view name)
{
    const std::vector<std::string> names = builtin_time_sources();
    return std::find(names.begin(), names.end(), name) != names.end();
}

enum class Part { world_type, clock_sink, section, time_source };

const char* to_string(Part part)
{
    switch (part) {
    case Part::world_type: return "world type";
    case Part::clock_sink: return "clock sink kind";
    case Part::section: return "section";
    case Part::time_source: return "time source";
    }
    return "?";
}

void check_registration(Part part, const std::string& name, const ConfigValidator* validate)
{
    const std::string what = std::string("ScenarioExtensions: ") + to_string(part);
    if (name.empty()) throw Error(errc::invalid_argument, what + " with an empty name");
    if (validate != nullptr && !*validate) throw Error(errc::invalid_argument, what + " '" + name + "' has an empty validator");
    const bool builtin = (part == Part::clock_sink && name == kUdpSink) ||
                         (part == Part::section && is_core_section(name)) ||
                         (part == Part::time_source && is_builtin_time_source(name));
    if (builtin) throw Error(errc::duplicate_name, what + " '" + name + "' is built in");
}

template <class Map>
void add_unique(Map& map, Part part, std::string name, ConfigValidator validate)
{
    check_registration(part, name, &validate);
    if (map.count(name) != 0) {
        throw Error(errc::duplicate_name, std::string("ScenarioExtensions: ") + to_string(part) + " '" + name +
                                              "' is registered already");
    }
    map.emplace(std::move(name), std::move(validate));
}

void check_extensions(const ScenarioExtensions& e)
{
    for (const auto& [name, validate] : e.world_types) check_registration(Part::world_type, name, &validate);
    for (const auto& [name, validate] : e.clock_sinks) check_registration(Part::clock_sink, name, &validate);
    for (const auto& [name, validate] : e.sections) check_registration(Part::section, name, &validate);
    for (const auto& name : e.time_sources) check_registration(Part::time_source, name, nullptr);
}

// Runs a registered validator; a simsync::Error that does not name a place is
// reported at the node it was given.
void validate_with(const ConfigValidator& validate, const ConfigNode& n)
{
    try {
        validate(n);
    } catch (const ConfigError&) {
        throw;
    } catch (const Error& e) {
        n.fail(e.what());
    }
}

} // namespace

ScenarioExtensions& ScenarioExtensions::add_world_type(std::string name, ConfigValidator validate)
{
    add_unique(world_types, Part::world_type, std::move(name), std::move(validate));
    return *this;
}

ScenarioExtensions& ScenarioExtensions::add_clock_sink(std::string kind, ConfigValidator validate)
{
    add_unique(clock_sinks, Part::clock_sink, std::move(kind), std::move(validate));
    return *this;
}

ScenarioExtensions& ScenarioExtensions::add_section(std::string key, ConfigValidator validate)
{
    add_unique(sections, Part::section, std::move(key), std::move(validate));
    return *this;
}

ScenarioExtensions& ScenarioExtensions::add_time_source(std::string name)
{
    check_registration(Part::time_source, name, nullptr);
    if (time_sources.count(name) != 0) {
        throw Error(errc::duplicate_name, "ScenarioExtensions: time source '" + name + "' is registered already");
    }
    time_sources.insert(std::move(name));
    return *this;
}

// ------------------------------------------------------------------ the schema

namespace {

std::chrono::nanoseconds positive_duration(const ConfigNode& n, const char* what)
{
    const std::chrono::nanoseconds d = n.as_duration();
    if (d <= std::chrono::nanoseconds::zero()) n.fail(std::string("expected ") + what + " > 0, got '" + n.as_string() + "'");
    return d;
}

PeriodicSchedule read_schedule(const ConfigNode& n, PeriodicSchedule fallback)
{
    const auto rate = n.find("rate");
    const auto period = n.find("period");
    const auto offset_node = n.find("offset");
    if (rate && period) rate->fail("give either rate or period, not both");
    const SimDuration offset = offset_node ? offset_node->as_duration() : fallback.offset();
    try {
        if (rate) {
            const auto [num, den] = rate->as_rate();
            return PeriodicSchedule::from_rate(num, den, offset);
        }
        if (period) return PeriodicSchedule::from_period(positive_duration(*period, "a period"), offset);
        if (offset_node) return PeriodicSchedule::from_period(fallback.nominal_period(), offset);
    } catch (const ConfigError&) {
        throw;
    } catch (const Error& e) {
        n.fail(e.what());
    }
    return fallback;
}

// Checks the keys of the map `n` against `allowed` and reads them with `read`,
// reporting whichever error comes first in the document: an unknown key after
// a bad value names the bad value, as an unknown key before it is named first.
template <class Read>
void read_map(const ConfigNode& n, std::initializer_list<const char*> allowed, Read&& read)
{
    FirstConfigError first;
    if (first.check([&] { n.allow_only(allowed); }) || n.is_map()) first.check(std::forward<Read>(read));
    first.throw_if_any();
}

void read_handler_keys(const ConfigNode& n, ScenarioConfig& cfg)
{
    if (auto v = n.find("step")) cfg.handler.step = positive_duration(*v, "a step");
    if (auto v = n.find("rounding")) cfg.handler.rounding = parse_rounding(v->as_choice({"nearest", "up", "down"}));
    if (auto v = n.find("start_paused")) cfg.handler.start_paused = v->as_bool();
    if (auto v = n.find("step_thread")) {
        cfg.handler.step_thread = v->as_choice({"any", "host"}) == "host" ? StepThread::host : StepThread::any;
    }
}

void read_handler(const ConfigNode& n, ScenarioConfig& cfg)
{
    read_map(n, {"step", "rounding", "start_paused", "step_thread"}, [&] { read_handler_keys(n, cfg); });
}

void read_time_keys(const ConfigNode& n, const ScenarioExtensions& ext, ScenarioConfig& cfg)
{
    if (auto v = n.find("source")) {
        const std::string name = v->as_string();
        if (!is_builtin_time_source(name) && ext.time_sources.count(name) == 0) {
            std::set<std::string> known(ext.time_sources.begin(), ext.time_sources.end());
            for (const std::string& b : builtin_time_sources()) known.insert(b);
            v->fail("unknown time source '" + name + "'; expected one of: " + join_names(known));
        }
        cfg.time_source = name;
    }
    if (auto v = n.find("scale")) {
        const double scale = v->as_double();
        if (!(scale >= TimeScale::kMin && scale <= TimeScale::kMax)) {
            std::ostringstream range;
            range << "expected a time scale (simulated seconds per wall second) in [" << TimeScale::kMin << ", "
                  << TimeScale::kMax << "], got '" << v->as_string() << "'";
            if (scale == 0) range << " (to run unpaced, set pacer.enabled: false)";
            v->fail(range.str());
        }
        cfg.time_scale = scale;
    }
}

void read_time(const ConfigNode& n, const ScenarioExtensions& ext, ScenarioConfig& cfg)
{
    read_map(n, {"source", "scale"}, [&] { read_time_keys(n, ext, cfg); });
}

void read_world(const ConfigNode& n, const ScenarioExtensions& ext, ScenarioConfig& cfg)
{
    if (!n.is_map()) n.fail("expected a map with a type key, e.g. {type: bullet}");
    const ConfigNode type = n.at("type");
    const std::string name = type.as_string();
    const auto known = ext.world_types.find(name);
    if (known == ext.world_types.end()) {
        std::vector<std::string> names;
        for (const auto& w : ext.world_types) names.push_back(w.first);
        type.fail("unknown world type '" + name + "'; " +
                  (names.empty() ? std::string("this program registers no world types")
                                 : "this program knows: " + join_names(names)));
    }
    validate_with(known->second, n);
    cfg.world_type = name;
    cfg.world = n;
}

AccessorConfig read_accessor_keys(const ConfigNode& n)
{
    AccessorConfig a;
    a.name = n.at("name").as_string();
    if (a.name.empty()) n.at("name").fail("expected a non-empty name");
    if (!n.find("rate") && !n.find("period")) n.fail("an accessor needs a rate (Hz) or a period");
    a.schedule = read_schedule(n, a.schedule);
    if (auto v = n.find("kind")) a.kind = v->as_choice({"lockstep", "free"}) == "free" ? AccessorKind::free : AccessorKind::lockstep;
    if (auto v = n.find("mode")) {
        a.mode = v->as_choice({"shared", "exclusive"}) == "exclusive" ? AccessMode::exclusive : AccessMode::shared;
    }
    if (auto v = n.find("priority")) {
        const std::int64_t p = v->as_int();
        if (p < std::numeric_limits<int>::min() || p > std::numeric_limits<int>::max()) {
            v->fail("expected a priority in [" + std::to_string(std::numeric_limits<int>::min()) + ", " +
                    std::to_string(std::numeric_limits<int>::max()) + "], got " + std::to_string(p));
        }
        a.priority = static_cast<int>(p);
    }
    if (auto v = n.find("role")) a.role = v->as_string();
    a.node = n;
    return a;
}

AccessorConfig read_accessor(const ConfigNode& n)
{
    AccessorConfig value;
    read_map(n, {"name", "rate", "period", "offset", "kind", "mode", "priority", "role"},
             [&] { value = read_accessor_keys(n); });
    return value;
}

std::string describe(const ConfigNode& n)
{
    if (n.is_map()) return "a map";
    if (n.is_list()) return "a list";
    if (n.is_null()) return "nothing";
    return "'" + n.as_string() + "'";
}

ClockSinkConfig read_sink(const ConfigNode& n, const ScenarioExtensions& ext)
{
    std::vector<std::string> kinds{kUdpSink};
    for (const auto& k : ext.clock_sinks) kinds.push_back(k.first);
    const std::string expected = "a sink is a map with one key naming its kind (" + join_names(kinds) + ")";
    if (!n.is_map()) n.fail("expected " + expected + ", got " + describe(n));
    const std::vector<std::string> keys = n.keys();
    if (keys.size() != 1) {
        if (keys.empty()) n.fail("expected " + expected + ", got an empty map");
        n.fail_key(keys[1], "expected " + expected + "; this one has a second key");
    }
    const std::string& kind = keys.front();
    const auto known = ext.clock_sinks.find(kind);
    if (kind != kUdpSink && known == ext.clock_sinks.end()) {
        n.fail_key(kind, "unknown clock sink kind; expected one of: " + join_names(kinds));
    }
    const ConfigNode value = ConfigNodeAccess::member(n, kind);
    if (kind == kUdpSink) {
        const std::string text = value.as_string();
        try {
            return parse_udp_sink(text);
        } catch (const Error& e) {
            value.fail(e.what());
        }
    }
    validate_with(known->second, value);
    return ExtensionSinkConfig{kind, value};
}

void read_clock_keys(const ConfigNode& n, const ScenarioExtensions& ext, ScenarioConfig& cfg)
{
    if (auto v = n.find("enabled")) cfg.clock.enabled = v->as_bool();
    cfg.clock.schedule = read_schedule(n, cfg.clock.schedule);
    if (auto sinks = n.find("sinks")) {
        for (const ConfigNode& s : sinks->elements()) cfg.clock.sinks.push_back(read_sink(s, ext));
    }
}

void read_clock(const ConfigNode& n, const ScenarioExtensions& ext, ScenarioConfig& cfg)
{
    read_map(n, {"enabled", "rate", "period", "sinks"}, [&] { read_clock_keys(n, ext, cfg); });
}

void read_pacer_keys(const ConfigNode& n, ScenarioConfig& cfg)
{
    if (auto v = n.find("enabled")) cfg.pacer.enabled = v->as_bool();
    if (auto v = n.find("period")) cfg.pacer.period = positive_duration(*v, "a period");
    if (auto v = n.find("catch_up")) {
        const std::string policy = v->as_choice({"none", "bounded", "full"});
        cfg.pacer.catch_up = parse_catch_up(policy);
    }
    // as_duration refuses negative durations: both are >= 0.
    if (auto v = n.find("catch_up_limit")) cfg.pacer.catch_up_limit = v->as_duration();
    if (auto v = n.find("spin_tail")) cfg.pacer.spin_tail = v->as_duration();
}

void read_pacer(const ConfigNode& n, ScenarioConfig& cfg)
{
    read_map(n, {"enabled", "period", "catch_up", "catch_up_limit", "spin_tail"},
             [&] { read_pacer_keys(n, cfg); });
}

TimerConfig read_timer_keys(const ConfigNode& n)
{
    TimerConfig t;
    t.name = n.at("name").as_string();
    if (t.name.empty()) n.at("name").fail("expected a non-empty name");
    if (auto v = n.find("clock")) {
        t.clock = v->as_choice({"real", "simulated"}) == "real" ? TimerClock::real : TimerClock::simulated;
    }
    t.period = positive_duration(n.at("period"), "a period");
    if (auto v = n.find("offset")) t.offset = v->as_duration();
    if (t.clock == TimerClock::real && t.offset >= t.period) {
        n.at("offset").fail("a real-time timer needs offset < period (" + format_seconds(t.period) + " s)");
    }
    if (auto v = n.find("wait_for_start")) t.wait_for_start = v->as_bool();
    return t;
}

TimerConfig read_timer(const ConfigNode& n)
{
    TimerConfig value;
    read_map(n, {"name", "clock", "period", "offset", "wait_for_start"}, [&] { value = read_timer_keys(n); });
    return value;
}

// Accessor names, simulated timers and the clock publisher's and pacer's
// accessors all share the handler's one namespace of accessor names.
void check_names(const ConfigNode& root, const ScenarioConfig& cfg)
{
    std::map<std::string, std::string, std::less<>> taken; // name -> who
    if (cfg.clock.enabled) taken.emplace(ClockPublisherConfig{}.name, "the clock publisher (clock.enabled)");
    if (cfg.pacer.enabled) taken.emplace(PacerConfig{}.name, "the pacer (pacer.enabled)");
    auto claim = [&](const std::string& name, const std::string& who, const ConfigNode& at) {
        const auto [it, fresh] = taken.emplace(name, who);
        if (!fresh) at.fail("duplicate accessor name '" + name + "': taken by " + it->second);
    };
    if (auto list = root.find("accessors")) {
        const std::vector<ConfigNode> nodes = list->elements();
        for (std::size_t i = 0; i < cfg.accessors.size(); ++i) {
            claim(cfg.accessors[i].name, "accessors[" + std::to_string(i) + "]", nodes[i].at("name"));
        }
    }
    if (auto list = root.find("timers")) {
        const std::vector<ConfigNode> nodes = list->elements();
        std::set<std::string, std::less<>> timer_names;
        for (std::size_t i = 0; i < cfg.timers.size(); ++i) {
            const TimerConfig& t = cfg.timers[i];
            if (!timer_names.insert(t.name).second) nodes[i].at("name").fail("duplicate timer name '" + t.name + "'");
            // A simulated timer registers an accessor of its name.
            if (t.clock == TimerClock::simulated) {
                claim(t.name, "timers[" + std::to_string(i) + "] (a simulated timer is an accessor)", nodes[i].at("name"));
            }
        }
    }
}

} // namespace

UdpSinkConfig parse_udp_sink(const std::string& host_port)
{
    const auto colon = host_port.rfind(':');
    const std::string port_text = colon == std::string::npos ? std::string() : host_port.substr(colon + 1);
    std::string host = colon == std::string::npos ? std::string() : host_port.substr(0, colon);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    std::uint32_t port = 0;
    const bool digits = all_digits(port_text) && port_text.size() <= 5;
    if (digits) std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    const bool host_ok = !host.empty() && std::none_of(host.begin(), host.end(), [](char c) {
        return c == ' ' || c == '\t' || c == '[' || c == ']' || static_cast<unsigned char>(c) < 0x20;
    });
    if (!host_ok || !digits || port < 1 || port > 65535) {
        throw Error(errc::invalid_argument, "expected host:port with a port in 1..65535, got '" + host_port + "'");
    }
    return {host, static_cast<std::uint16_t>(port)};
}

ScenarioConfig load_scenario(const ConfigNode& root, const ScenarioExtensions& extensions)
{
    check_extensions(extensions);
    ScenarioConfig cfg;
    if (root.is_null()) return cfg; // an empty file is a valid, empty scenario
    if (!root.is_map()) root.fail("expected a map of sections (handler, time, world, ...)");
    // Document order, so the first error in the file is the one reported.
    for (const std::string& key : root.keys()) {
        if (!is_core_section(key)) {
            const auto registered = extensions.sections.find(key);
            if (registered == extensions.sections.end()) {
                std::vector<std::string> names(kCoreSections.begin(), kCoreSections.end());
                for (const auto& s : extensions.sections) names.push_back(s.first);
                root.fail_key(key, "unknown key; expected one of: " + join_names(names));
            }
            const ConfigNode section = ConfigNodeAccess::member(root, key);
            validate_with(registered->second, section);
            cfg.sections.emplace(key, section);
            continue;
        }
        const std::optional<ConfigNode> n = root.find(key);
        if (!n) continue; // `key:` with nothing: the defaults
        if (key == "handler") read_handler(*n, cfg);
        else if (key == "time") read_time(*n, extensions, cfg);
        else if (key == "world") read_world(*n, extensions, cfg);
        else if (key == "accessors") {
            for (const ConfigNode& a : n->elements()) cfg.accessors.push_back(read_accessor(a));
        } else if (key == "clock") read_clock(*n, extensions, cfg);
        else if (key == "pacer") read_pacer(*n, cfg);
        else if (key == "timers") {
            for (const ConfigNode& t : n->elements()) cfg.timers.push_back(read_timer(t));
        }
    }
    check_names(root, cfg);
    return cfg;
}

ScenarioConfig load_scenario_file(const std::string& path, const ScenarioExtensions& extensions)
{
    return load_scenario(ConfigNode::load_file(path), extensions);
}

ScenarioConfig load_scenario_string(const std::string& text, const std::string& name,
                                    const ScenarioExtensions& extensions)
{
    return load_scenario(ConfigNode::parse(text, name), extensions);
}

} // namespace simsync
