#pragma once
/// @file
/// YAML configuration of a whole scenario: handler, time, world, accessors, clock
/// publisher, pacer and timers, with errors that name file:line:column and key.

#include <simsync/accessor.hpp>
#include <simsync/error.hpp>
#include <simsync/handler.hpp>
#include <simsync/schedule.hpp>
#include <simsync/time.hpp>

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace simsync {

/// A configuration error: where (file, 1-based line and column) and which key
/// (a path such as `accessors[2].rate`), and what was expected.
/// what() reads "scenario.yaml:12:11: accessors[2].rate: expected ..., got 'fast'".
class ConfigError : public Error {
public:
    ConfigError(std::string file, int line, int column, std::string key, const std::string& message);
    const std::string& file() const noexcept { return file_; }
    int line() const noexcept { return line_; }
    int column() const noexcept { return column_; }
    const std::string& key() const noexcept { return key_; }

private:
    std::string file_;
    int line_;
    int column_;
    std::string key_;
};

/// A read-only view of one node of a parsed YAML document that remembers where it
/// came from, so every conversion error names file:line:column and the key path.
/// Adapters parse their own sections (a Bullet scene, a DDS sink) through it.
///
/// Copy/move: cheap copies share the parsed document. Thread safety: distinct
/// objects: safe; shared objects: safe for concurrent const use.
class ConfigNode {
public:
    /// Parses `text`; `file` is the name used in error messages.
    /// @throws ConfigError on a YAML syntax error.
    static ConfigNode parse(const std::string& text, const std::string& file);
    /// @throws ConfigError if the file cannot be read or parsed.
    static ConfigNode load_file(const std::string& path);

    ConfigNode(const ConfigNode&);
    ConfigNode(ConfigNode&&) noexcept;
    ConfigNode& operator=(const ConfigNode&);
    ConfigNode& operator=(ConfigNode&&) noexcept;
    ~ConfigNode();

    /// The key path of this node, e.g. `accessors[2].rate` (empty for the root).
    const std::string& path() const noexcept;
    bool is_map() const;
    bool is_list() const;
    /// True for an empty document or an explicit null.
    bool is_null() const;

    /// The child `key` of a map. @throws ConfigError if missing or not a map.
    ConfigNode at(const std::string& key) const;
    /// The child `key` if present (and not null).
    std::optional<ConfigNode> find(const std::string& key) const;
    /// Elements of a list. @throws ConfigError if not a list.
    std::vector<ConfigNode> elements() const;
    /// Throws ConfigError naming the first key of this map that is not in `allowed`
    /// (or if the node is not a map): unknown keys are errors, not silently ignored.
    void allow_only(std::initializer_list<const char*> allowed) const;

    std::string as_string() const;
    bool as_bool() const;
    std::int64_t as_int() const;
    double as_double() const;
    /// One of `choices`. @throws ConfigError listing the choices.
    std::string as_choice(std::initializer_list<const char*> choices) const;
    /// A duration with a unit: "1ms", "0.5 s", "250us", "100ns"; exact, no
    /// floating point ("33.333ms" is 33333000 ns). A plain 0 is accepted.
    SimDuration as_duration() const;
    /// A rate in Hz as an exact fraction: 30, 29.97, "100Hz".
    std::pair<std::int64_t, std::int64_t> as_rate() const;

    /// Throws ConfigError at this node: "<file>:<line>:<col>: <path>: <message>".
    [[noreturn]] void fail(const std::string& message) const;

private:
    struct Impl;
    explicit ConfigNode(std::shared_ptr<const Impl> impl);
    std::shared_ptr<const Impl> impl_;
};

/// One accessor thread of a scenario (a sensor, a controller, ...).
struct AccessorConfig {
    std::string name;
    /// Its request instants: `rate` (Hz) or `period`, and `offset`.
    PeriodicSchedule schedule = PeriodicSchedule::from_period(std::chrono::milliseconds(10));
    AccessorKind kind = AccessorKind::lockstep;
    AccessMode mode = AccessMode::shared;
    int priority = 0;
    /// Free-form role for the program that runs the scenario ("sensor", "controller").
    std::string role = "sensor";
};

/// Where the clock publisher sends its messages: a UDP destination.
struct ClockSinkConfig {
    std::string host;
    std::uint16_t port = 0;
};

/// Parses "HOST:PORT" (the last colon splits; port 1..65535), as `clock.sinks[].udp`
/// in a scenario or a program's `--clock-udp` option give it.
/// @throws simsync::Error (invalid_argument) naming the text.
ClockSinkConfig parse_udp_sink(const std::string& host_port);

struct ClockConfig {
    bool enabled = true;
    PeriodicSchedule schedule = PeriodicSchedule::from_rate(100);
    std::vector<ClockSinkConfig> sinks;
};

struct PacerSectionConfig {
    bool enabled = true;
    SimDuration period = std::chrono::milliseconds(10);
    std::string catch_up = "bounded"; ///< none | bounded | full
    SimDuration catch_up_limit = std::chrono::milliseconds(100);
    /// PacerConfig::spin_tail (wall time); 0 turns spinning off.
    std::chrono::nanoseconds spin_tail = std::chrono::microseconds(150);
};

struct TimerConfig {
    std::string name;
    std::string clock = "simulated"; ///< real | simulated
    SimDuration period = std::chrono::milliseconds(100);
    SimDuration offset = SimDuration::zero();
    bool wait_for_start = false;
};

/// A whole scenario as one YAML file describes it. Every field has a default, so
/// an empty file is a valid scenario with no accessors.
struct ScenarioConfig {
    HandlerConfig handler;
    std::string time_source = "sim"; ///< sim | simulation | system | ros | external
    double time_scale = 1.0;
    std::string world_type = "bouncing_balls";
    /// The `world:` section, for world types that read more keys (adapters).
    std::optional<ConfigNode> world;
    std::vector<AccessorConfig> accessors;
    ClockConfig clock;
    PacerSectionConfig pacer;
    std::vector<TimerConfig> timers;
};

/// Reads a scenario. @throws ConfigError naming file:line:column and key.
ScenarioConfig load_scenario(const ConfigNode& root);
ScenarioConfig load_scenario_file(const std::string& path);
ScenarioConfig load_scenario_string(const std::string& text, const std::string& name = "<config>");

} // namespace simsync
