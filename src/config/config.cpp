#include <simsync/config.hpp>

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <limits>
#include <sstream>

namespace simsync {

// ------------------------------------------------------------------ ConfigError

namespace {
std::string locate(const std::string& file, int line, int column, const std::string& key, const std::string& msg)
{
    std::ostringstream out;
    out << file << ':' << line << ':' << column << ": " << (key.empty() ? std::string("(root)") : key) << ": " << msg;
    return out.str();
}
} // namespace

ConfigError::ConfigError(std::string file, int line, int column, std::string key, const std::string& message)
    : Error(errc::invalid_argument, locate(file, line, column, key, message)), file_(std::move(file)), line_(line),
      column_(column), key_(std::move(key))
{
}

// ------------------------------------------------------------------- ConfigNode

struct ConfigNode::Impl {
    std::string file;
    YAML::Node node;
    std::string path;
    YAML::Mark mark; // of the node, or of its parent when the node is missing
};

ConfigNode::ConfigNode(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
ConfigNode::ConfigNode(const ConfigNode&) = default;
ConfigNode::ConfigNode(ConfigNode&&) noexcept = default;
ConfigNode& ConfigNode::operator=(const ConfigNode&) = default;
ConfigNode& ConfigNode::operator=(ConfigNode&&) noexcept = default;
ConfigNode::~ConfigNode() = default;

ConfigNode ConfigNode::parse(const std::string& text, const std::string& file)
{
    try {
        YAML::Node root = YAML::Load(text);
        YAML::Mark mark = root.IsDefined() && !root.IsNull() ? root.Mark() : YAML::Mark();
        if (mark.line < 0) mark = YAML::Mark();
        return ConfigNode(std::make_shared<const Impl>(Impl{file, root, "", mark}));
    } catch (const YAML::Exception& e) {
        throw ConfigError(file, e.mark.line + 1, e.mark.column + 1, "", "YAML syntax error: " + e.msg);
    }
}

ConfigNode ConfigNode::load_file(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in) throw ConfigError(path, 0, 0, "", "cannot open the file");
    std::ostringstream text;
    text << in.rdbuf();
    return parse(text.str(), path);
}

const std::string& ConfigNode::path() const noexcept { return impl_->path; }
bool ConfigNode::is_map() const { return impl_->node.IsMap(); }
bool ConfigNode::is_list() const { return impl_->node.IsSequence(); }
bool ConfigNode::is_null() const { return !impl_->node.IsDefined() || impl_->node.IsNull(); }

void ConfigNode::fail(const std::string& message) const
{
    throw ConfigError(impl_->file, impl_->mark.line + 1, impl_->mark.column + 1, impl_->path, message);
}

namespace {
std::string join_path(const std::string& parent, const std::string& key)
{
    return parent.empty() ? key : parent + "." + key;
}

std::string scalar_text(const YAML::Node& n)
{
    if (n.IsScalar()) return n.Scalar();
    if (n.IsMap()) return "a map";
    if (n.IsSequence()) return "a list";
    return "nothing";
}
} // namespace

std::optional<ConfigNode> ConfigNode::find(const std::string& key) const
{
    if (!impl_->node.IsMap()) {
        if (impl_->node.IsNull() || !impl_->node.IsDefined()) return std::nullopt;
        fail("expected a map with key '" + key + "', got " + scalar_text(impl_->node));
    }
    const YAML::Node child = impl_->node[key];
    if (!child.IsDefined() || child.IsNull()) return std::nullopt;
    return ConfigNode(std::make_shared<const Impl>(Impl{impl_->file, child, join_path(impl_->path, key), child.Mark()}));
}

ConfigNode ConfigNode::at(const std::string& key) const
{
    if (auto child = find(key)) return *child;
    throw ConfigError(impl_->file, impl_->mark.line + 1, impl_->mark.column + 1, join_path(impl_->path, key),
                      "required key is missing");
}

std::vector<ConfigNode> ConfigNode::elements() const
{
    if (!impl_->node.IsSequence()) fail("expected a list, got " + scalar_text(impl_->node));
    std::vector<ConfigNode> out;
    std::size_t i = 0;
    for (const YAML::Node& child : impl_->node) {
        out.push_back(ConfigNode(std::make_shared<const Impl>(
            Impl{impl_->file, child, impl_->path + "[" + std::to_string(i++) + "]", child.Mark()})));
    }
    return out;
}

void ConfigNode::allow_only(std::initializer_list<const char*> allowed) const
{
    if (!impl_->node.IsMap()) fail("expected a map, got " + scalar_text(impl_->node));
    for (const auto& kv : impl_->node) {
        const std::string key = kv.first.as<std::string>();
        const bool known = std::any_of(allowed.begin(), allowed.end(), [&](const char* a) { return key == a; });
        if (!known) {
            std::string list;
            for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
            throw ConfigError(impl_->file, kv.first.Mark().line + 1, kv.first.Mark().column + 1,
                              join_path(impl_->path, key), "unknown key; expected one of: " + list);
        }
    }
}

std::string ConfigNode::as_string() const
{
    if (!impl_->node.IsScalar()) fail("expected a string, got " + scalar_text(impl_->node));
    return impl_->node.Scalar();
}

bool ConfigNode::as_bool() const
{
    const std::string s = as_string();
    if (s == "true" || s == "yes" || s == "on") return true;
    if (s == "false" || s == "no" || s == "off") return false;
    fail("expected true or false, got '" + s + "'");
}

std::int64_t ConfigNode::as_int() const
{
    const std::string s = as_string();
    std::size_t used = 0;
    try {
        const long long v = std::stoll(s, &used, 10);
        if (used == s.size()) return v;
    } catch (const std::exception&) {
    }
    fail("expected an integer, got '" + s + "'");
}

double ConfigNode::as_double() const
{
    const std::string s = as_string();
    std::size_t used = 0;
    try {
        const double v = std::stod(s, &used);
        if (used == s.size() && std::isfinite(v)) return v;
    } catch (const std::exception&) {
    }
    fail("expected a number, got '" + s + "'");
}

std::string ConfigNode::as_choice(std::initializer_list<const char*> choices) const
{
    const std::string s = as_string();
    std::string list;
    for (const char* c : choices) {
        if (s == c) return s;
        list += (list.empty() ? "" : ", ") + std::string(c);
    }
    fail("expected one of: " + list + "; got '" + s + "'");
}

namespace {

// "12.345" -> {12345, 1000}; false if not a plain non-negative decimal.
bool parse_decimal(const std::string& digits, std::int64_t& num, std::int64_t& den)
{
    num = 0;
    den = 1;
    bool seen_digit = false;
    bool after_point = false;
    for (char c : digits) {
        if (c == '.' && !after_point) {
            after_point = true;
            continue;
        }
        if (!std::isdigit(static_cast<unsigned char>(c))) return false;
        if (num > (std::numeric_limits<std::int64_t>::max() - 9) / 10) return false;
        num = num * 10 + (c - '0');
        if (after_point) {
            if (den > std::numeric_limits<std::int64_t>::max() / 10) return false;
            den *= 10;
        }
        seen_digit = true;
    }
    return seen_digit;
}

std::pair<std::string, std::string> split_unit(const std::string& s)
{
    std::string t;
    for (char c : s) {
        if (!std::isspace(static_cast<unsigned char>(c))) t += c;
    }
    std::size_t i = 0;
    while (i < t.size() && (std::isdigit(static_cast<unsigned char>(t[i])) || t[i] == '.')) ++i;
    return {t.substr(0, i), t.substr(i)};
}

} // namespace

SimDuration ConfigNode::as_duration() const
{
    const std::string s = as_string();
    const auto [number, unit] = split_unit(s);
    std::int64_t num = 0;
    std::int64_t den = 1;
    const char* expected = "expected a duration with a unit (ns, us, ms, s, min), e.g. 10ms or 0.5s";
    if (!parse_decimal(number, num, den)) fail(std::string(expected) + "; got '" + s + "'");
    std::int64_t unit_ns = 0;
    if (unit == "ns") unit_ns = 1;
    else if (unit == "us") unit_ns = 1'000;
    else if (unit == "ms") unit_ns = 1'000'000;
    else if (unit == "s") unit_ns = 1'000'000'000;
    else if (unit == "min") unit_ns = 60'000'000'000;
    else if (unit.empty() && num == 0) return SimDuration::zero();
    else fail(std::string(expected) + "; got '" + s + "'");
    __extension__ typedef __int128 Int128;
    const Int128 scaled = static_cast<Int128>(num) * unit_ns;
    if (scaled % den != 0) fail("'" + s + "' is not a whole number of nanoseconds");
    const Int128 ns = scaled / den;
    if (ns > std::numeric_limits<std::int64_t>::max()) fail("'" + s + "' is too long");
    return SimDuration{static_cast<std::int64_t>(ns)};
}

std::pair<std::int64_t, std::int64_t> ConfigNode::as_rate() const
{
    const std::string s = as_string();
    auto [number, unit] = split_unit(s);
    std::int64_t num = 0;
    std::int64_t den = 1;
    if ((!unit.empty() && unit != "Hz" && unit != "hz") || !parse_decimal(number, num, den) || num == 0) {
        fail("expected a rate in Hz greater than 0, e.g. 30 or 29.97Hz; got '" + s + "'");
    }
    return {num, den};
}

// ------------------------------------------------------------------ the schema

namespace {

PeriodicSchedule read_schedule(const ConfigNode& n, PeriodicSchedule fallback)
{
    const auto rate = n.find("rate");
    const auto period = n.find("period");
    const auto offset_node = n.find("offset");
    const SimDuration offset = offset_node ? offset_node->as_duration() : fallback.offset();
    if (rate && period) rate->fail("give either rate or period, not both");
    try {
        if (rate) {
            const auto [num, den] = rate->as_rate();
            return PeriodicSchedule::from_rate(num, den, offset);
        }
        if (period) {
            const SimDuration p = period->as_duration();
            if (p <= SimDuration::zero()) period->fail("expected a period > 0, got '" + period->as_string() + "'");
            return PeriodicSchedule::from_period(p, offset);
        }
    } catch (const ConfigError&) {
        throw;
    } catch (const Error& e) {
        n.fail(e.what());
    }
    if (offset_node) {
        // Keep the fallback's period with the new offset.
        return PeriodicSchedule::from_period(fallback.nominal_period(), offset);
    }
    return fallback;
}

void read_handler(const ConfigNode& n, ScenarioConfig& cfg)
{
    n.allow_only({"step", "rounding", "start_paused", "step_thread"});
    if (auto v = n.find("step")) {
        cfg.handler.step = v->as_duration();
        if (cfg.handler.step <= SimDuration::zero()) v->fail("expected a step > 0");
    }
    if (auto v = n.find("rounding")) cfg.handler.rounding = parse_rounding(v->as_choice({"nearest", "up", "down"}));
    if (auto v = n.find("start_paused")) cfg.handler.start_paused = v->as_bool();
    if (auto v = n.find("step_thread")) {
        cfg.handler.step_thread = v->as_choice({"any", "host"}) == "host" ? StepThread::host : StepThread::any;
    }
}

void read_time(const ConfigNode& n, ScenarioConfig& cfg)
{
    n.allow_only({"source", "scale"});
    if (auto v = n.find("source")) cfg.time_source = v->as_string();
    if (auto v = n.find("scale")) {
        cfg.time_scale = v->as_double();
        if (!(cfg.time_scale > 0)) v->fail("expected a time scale > 0, got '" + v->as_string() + "'");
    }
}

AccessorConfig read_accessor(const ConfigNode& n)
{
    n.allow_only({"name", "rate", "period", "offset", "kind", "mode", "priority", "role"});
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
        if (p < std::numeric_limits<int>::min() || p > std::numeric_limits<int>::max()) v->fail("priority out of range");
        a.priority = static_cast<int>(p);
    }
    if (auto v = n.find("role")) a.role = v->as_string();
    return a;
}

void read_clock(const ConfigNode& n, ScenarioConfig& cfg)
{
    n.allow_only({"enabled", "rate", "period", "offset", "sinks"});
    if (auto v = n.find("enabled")) cfg.clock.enabled = v->as_bool();
    cfg.clock.schedule = read_schedule(n, cfg.clock.schedule);
    if (auto sinks = n.find("sinks")) {
        for (const ConfigNode& s : sinks->elements()) {
            s.allow_only({"udp"});
            const ConfigNode udp = s.at("udp");
            try {
                cfg.clock.sinks.push_back(parse_udp_sink(udp.as_string()));
            } catch (const ConfigError&) {
                throw;
            } catch (const Error& e) {
                udp.fail(e.what());
            }
        }
    }
}

void read_pacer(const ConfigNode& n, ScenarioConfig& cfg)
{
    n.allow_only({"enabled", "period", "catch_up", "catch_up_limit", "spin_tail"});
    if (auto v = n.find("enabled")) cfg.pacer.enabled = v->as_bool();
    if (auto v = n.find("period")) {
        cfg.pacer.period = v->as_duration();
        if (cfg.pacer.period <= SimDuration::zero()) v->fail("expected a period > 0");
    }
    if (auto v = n.find("catch_up")) cfg.pacer.catch_up = v->as_choice({"none", "bounded", "full"});
    if (auto v = n.find("catch_up_limit")) cfg.pacer.catch_up_limit = v->as_duration();
    // as_duration refuses negative durations.
    if (auto v = n.find("spin_tail")) cfg.pacer.spin_tail = std::chrono::nanoseconds(v->as_duration().count());
}

TimerConfig read_timer(const ConfigNode& n)
{
    n.allow_only({"name", "clock", "period", "offset", "wait_for_start"});
    TimerConfig t;
    t.name = n.at("name").as_string();
    if (auto v = n.find("clock")) t.clock = v->as_choice({"real", "simulated"});
    t.period = n.at("period").as_duration();
    if (t.period <= SimDuration::zero()) n.at("period").fail("expected a period > 0");
    if (auto v = n.find("offset")) t.offset = v->as_duration();
    if (t.clock == "real" && t.offset >= t.period) {
        n.at("offset").fail("a real-time timer needs offset < period (" + format_seconds(t.period) + " s)");
    }
    if (auto v = n.find("wait_for_start")) t.wait_for_start = v->as_bool();
    return t;
}

} // namespace

ClockSinkConfig parse_udp_sink(const std::string& host_port)
{
    const auto colon = host_port.rfind(':');
    const std::string port_text = colon == std::string::npos ? std::string() : host_port.substr(colon + 1);
    std::int64_t port = 0;
    const bool digits = !port_text.empty() && port_text.size() <= 5 &&
                        std::all_of(port_text.begin(), port_text.end(),
                                    [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; });
    if (digits) port = std::stoll(port_text);
    if (colon == std::string::npos || colon == 0 || !digits || port < 1 || port > 65535) {
        throw Error(errc::invalid_argument,
                    "expected host:port with a port in 1..65535, got '" + host_port + "'");
    }
    return {host_port.substr(0, colon), static_cast<std::uint16_t>(port)};
}

ScenarioConfig load_scenario(const ConfigNode& root)
{
    ScenarioConfig cfg;
    if (root.is_null()) return cfg; // an empty file is a valid, empty scenario
    root.allow_only({"handler", "time", "world", "accessors", "clock", "pacer", "timers"});
    if (auto n = root.find("handler")) read_handler(*n, cfg);
    if (auto n = root.find("time")) read_time(*n, cfg);
    if (auto n = root.find("world")) {
        cfg.world_type = n->at("type").as_string();
        cfg.world = *n;
    }
    if (auto n = root.find("accessors")) {
        for (const ConfigNode& a : n->elements()) {
            AccessorConfig acc = read_accessor(a);
            for (const AccessorConfig& other : cfg.accessors) {
                if (other.name == acc.name) a.at("name").fail("duplicate accessor name '" + acc.name + "'");
            }
            cfg.accessors.push_back(std::move(acc));
        }
    }
    if (auto n = root.find("clock")) read_clock(*n, cfg);
    if (auto n = root.find("pacer")) read_pacer(*n, cfg);
    if (auto n = root.find("timers")) {
        for (const ConfigNode& t : n->elements()) cfg.timers.push_back(read_timer(t));
    }
    return cfg;
}

ScenarioConfig load_scenario_file(const std::string& path) { return load_scenario(ConfigNode::load_file(path)); }

ScenarioConfig load_scenario_string(const std::string& text, const std::string& name)
{
    return load_scenario(ConfigNode::parse(text, name));
}

} // namespace simsync
