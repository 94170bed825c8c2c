#pragma once
/// @file
/// YAML configuration of a whole scenario: handler, time, world, accessors, clock
/// publisher, pacer and timers, with errors that name file:line:column and key,
/// and an extension point (ScenarioExtensions) through which adapters and
/// programs validate their own sections at load time.
///
/// Every value a scenario file can hold is checked by load_scenario: a scenario
/// that loads runs, and a scenario that does not names the place of its first
/// error. The file format is described in docs/config.md.

#include <simsync/accessors/pacer.hpp>
#include <simsync/accessors/periodic_timer.hpp>
#include <simsync/core/accessor.hpp>
#include <simsync/core/error.hpp>
#include <simsync/core/handler.hpp>
#include <simsync/core/schedule.hpp>
#include <simsync/core/time.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace simsync {

/// A configuration error: where (file, 1-based line and column) and which key
/// (a path such as `accessors[2].rate`), and what was expected.
/// what() reads "scenario.yaml:12:11: accessors[2].rate: expected ..., got 'fast'".
/// An error about the file as a whole has no place: line and column 0, an empty
/// key, and what() reads "nope.yaml: cannot open the file: No such file or
/// directory", with the system's reason.
/// Copy/move: a value type, like Error.
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

struct ConfigNodeAccess; // the scenario loader's access to the representation (src/config)

/// A read-only view of one node of a parsed YAML document that remembers where it
/// came from, so every conversion error names file:line:column and the key path.
/// Adapters parse their own sections (a Bullet scene, a DDS sink) through it.
///
/// Parsing checks the document as a whole: one YAML document per file; map keys
/// are plain scalars and unique within their map; nesting at most kMaxDepth
/// levels (also through aliases, so an alias cannot make a cycle) and at most
/// kMaxNodes nodes visited (so aliases cannot blow a small file up).
///
/// Scalars are converted locale-independently (std::from_chars, never the C or
/// C++ locale): `0.5` is one half in a German locale too.
///
/// Copy/move: cheap copies share the parsed document. Thread safety: distinct
/// objects: safe; shared objects: safe for concurrent const use.
class ConfigNode {
public:
    /// Deepest nesting of maps and lists a document may have.
    static constexpr int kMaxDepth = 64;
    /// Most nodes a document may have, counting each use of an alias again.
    static constexpr std::int64_t kMaxNodes = 250'000;

    /// Parses `text`; `file` is the name used in error messages.
    /// @throws ConfigError on a YAML syntax error or a document that breaks the
    ///         rules above, naming line:column.
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
    /// The file name given to parse (or load_file's path).
    const std::string& file() const noexcept;
    /// 1-based position of the node (of its parent map when the node is missing).
    int line() const noexcept;
    int column() const noexcept;

    bool is_map() const;
    bool is_list() const;
    bool is_scalar() const;
    /// True for an empty document or an explicit null (`key:`, `key: ~`).
    bool is_null() const;

    /// The child `key` of a map. @throws ConfigError if missing or not a map.
    ConfigNode at(const std::string& key) const;
    /// The child `key` if present (and not null). @throws ConfigError if this
    /// node is neither a map nor null.
    std::optional<ConfigNode> find(const std::string& key) const;
    /// The keys of a map, in document order. @throws ConfigError if not a map.
    std::vector<std::string> keys() const;
    /// Elements of a list. @throws ConfigError if not a list.
    std::vector<ConfigNode> elements() const;
    /// Throws ConfigError naming the first key of this map that is not in `allowed`
    /// (or if the node is not a map): unknown keys are errors, not silently ignored.
    void allow_only(std::initializer_list<const char*> allowed) const;

    /// Any scalar, as written. @throws ConfigError for a map, a list or null.
    std::string as_string() const;
    /// YAML 1.2 core schema booleans (true, True, TRUE, false, False, FALSE) and
    /// the words yaml-cpp also reads as booleans: yes/no and on/off, each in the
    /// same three spellings. y/n and other spellings are errors.
    bool as_bool() const;
    /// A decimal integer with an optional sign (`-3`, `+7`, `42`), in int64 range.
    std::int64_t as_int() const;
    /// A finite decimal number: `0.5`, `-3`, `1e-3`, `+2.5E+2`, `.5`. Not
    /// `.inf`, `.nan`, hex or digit separators.
    double as_double() const;
    /// One of `choices`. @throws ConfigError listing the choices.
    std::string as_choice(std::initializer_list<const char*> choices) const;
    /// A duration: a non-negative decimal number, optional spaces, and a unit
    /// (ns, us, ms, s, min): "1ms", "0.5 s", "250us", "100ns"; a plain 0 is
    /// accepted. Exact, no floating point ("33.333ms" is 33333000 ns). The result
    /// is a plain span of nanoseconds (SimDuration and WallClock::duration are
    /// the same representation): the field it is stored in says which clock it
    /// is measured on.
    /// @throws ConfigError for anything else: no unit, an unknown unit, spaces
    ///         inside the number ("1 0 ms"), a sign, finer than 1 ns, beyond int64.
    std::chrono::nanoseconds as_duration() const;
    /// A rate in Hz as an exact fraction {numerator, denominator}: 30, 29.97,
    /// "100Hz", "100 Hz". At most 9 decimal places; more than 0 and at most 1 GHz
    /// (a period of at least 1 ns).
    std::pair<std::int64_t, std::int64_t> as_rate() const;

    /// Throws ConfigError at this node: "<file>:<line>:<col>: <path>: <message>".
    [[noreturn]] void fail(const std::string& message) const;
    /// Throws ConfigError at the key `key` of this map (where the key is written),
    /// with the path of the child. Falls back to this node's place if the key is
    /// not there.
    [[noreturn]] void fail_key(const std::string& key, const std::string& message) const;

private:
    friend struct ConfigNodeAccess;
    struct Impl;
    explicit ConfigNode(std::shared_ptr<const Impl> impl);
    std::shared_ptr<const Impl> impl_;
};

/// Keeps, of the errors of several checks of one part of a document, the one
/// placed first (line, then column), so a reader whose checks do not run in the
/// document's order still reports its first error in document order: an
/// unknown key after a bad value names the bad value. A check whose ConfigError
/// is kept ends there; the checks after it still run (skip those that need its
/// result). Errors without a place (line 0) count as placed last.
/// @code
/// simsync::FirstConfigError first;
/// first.check([&] { node.allow_only({"size", "mass"}); });
/// first.check([&] { if (auto v = node.find("size")) size = read_size(*v); });
/// first.check([&] { if (auto v = node.find("mass")) mass = v->as_double(); });
/// first.throw_if_any();
/// @endcode
/// Copy/move: a value type. One thread at a time.
class FirstConfigError {
public:
    /// Runs `check`; keeps the ConfigError it throws if it is placed before
    /// the one kept so far. Other exceptions propagate.
    /// @return true if `check` threw no ConfigError.
    template <class Check>
    bool check(Check&& check)
    {
        try {
            std::forward<Check>(check)();
            return true;
        } catch (const ConfigError& e) {
            keep(e);
            return false;
        }
    }
    /// True if an error is kept.
    bool any() const noexcept { return first_.has_value(); }
    /// @throws ConfigError the one kept, if any.
    void throw_if_any() const;

private:
    void keep(const ConfigError& e);
    std::optional<ConfigError> first_;
};

// ------------------------------------------------------------ extension point

/// Checks one part of a scenario that an adapter or a program owns (a world
/// type, a clock sink kind, a top-level section), at load time. It reads the
/// node through ConfigNode (`allow_only`, `at`, `find`, `as_*`) and reports a
/// bad value with `ConfigNode::fail`, so its errors name file:line:column and
/// key like the core's. A simsync::Error other than ConfigError that it throws
/// is reported at the node it was given; anything else propagates unchanged.
/// Called on the thread that calls load_scenario, before load_scenario returns,
/// once per occurrence in the file.
using ConfigValidator = std::function<void(const ConfigNode&)>;

/// What a program adds to the scenario format: the world types it can build,
/// the clock sink kinds it can build, the top-level sections it reads and the
/// time sources it adds to its TimeSourceFactory. The core never links an
/// adapter: an adapter offers a function that registers itself here, and the
/// program that links the adapter calls it before loading.
///
/// @code
/// simsync::ScenarioExtensions extensions;
/// simsync::bullet::register_world_type(extensions);           // world.type: bullet
/// extensions.add_clock_sink("ros2", [](const simsync::ConfigNode& n) {
///     n.allow_only({"topic"});                                 // clock.sinks[i].ros2
/// });
/// extensions.add_section("web", validate_web_section);        // top-level `web:`
/// const simsync::ScenarioConfig config = simsync::load_scenario_file(path, extensions);
/// @endcode
///
/// The maps may also be filled directly; load_scenario checks them before it
/// reads anything and throws simsync::Error: invalid_argument for an empty name
/// or validator, duplicate_name for a name that shadows a built-in one.
/// Copy/move: a value type. Thread safety: distinct objects: safe; shared
/// objects: safe for concurrent const use (load_scenario only reads it).
struct ScenarioExtensions {
    /// `world.type` name -> validator of the whole `world:` map (including its
    /// `type` key). The core has no world types of its own: a `world:` section
    /// must name a registered one.
    std::map<std::string, ConfigValidator, std::less<>> world_types;
    /// Kind -> validator of the value of `clock.sinks[i].<kind>`. `udp` is built in.
    std::map<std::string, ConfigValidator, std::less<>> clock_sinks;
    /// Top-level key -> validator of that section's value (a null node for a
    /// section written as `key:` with nothing after it). The core's sections
    /// (handler, time, world, accessors, clock, pacer, timers) cannot be replaced.
    std::map<std::string, ConfigValidator, std::less<>> sections;
    /// Names accepted in `time.source` besides the built-in ones (sim,
    /// simulation, system, ros, external): sources the program adds to its
    /// TimeSourceFactory.
    std::set<std::string, std::less<>> time_sources;

    /// Registers a world type. @throws simsync::Error: invalid_argument (empty
    /// name or validator), duplicate_name (already registered).
    ScenarioExtensions& add_world_type(std::string name, ConfigValidator validate);
    /// Registers a clock sink kind. @throws as add_world_type; `udp` is taken.
    ScenarioExtensions& add_clock_sink(std::string kind, ConfigValidator validate);
    /// Registers a top-level section. @throws as add_world_type; the core's
    /// section names are taken.
    ScenarioExtensions& add_section(std::string key, ConfigValidator validate);
    /// Accepts `name` in `time.source`. @throws as add_world_type; built-in
    /// names are taken.
    ScenarioExtensions& add_time_source(std::string name);
};

// ------------------------------------------------------------- the structures

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
    /// The list element this accessor was read from, so that a program's own
    /// checks (e.g. of `role`) name the place: `node->at("role").fail(...)`.
    /// Empty for an AccessorConfig made in code.
    std::optional<ConfigNode> node;
};

/// A UDP destination of the clock publisher (`clock.sinks[i].udp: HOST:PORT`).
struct UdpSinkConfig {
    std::string host;
    std::uint16_t port = 0;
    friend bool operator==(const UdpSinkConfig&, const UdpSinkConfig&) = default;
};

/// A clock sink of a registered kind (ScenarioExtensions::clock_sinks), already
/// validated: the program builds it from `config`.
struct ExtensionSinkConfig {
    std::string kind;
    /// The value of `clock.sinks[i].<kind>`.
    ConfigNode config;
};

/// One entry of `clock.sinks`: a built-in UDP sink or one of a registered kind.
using ClockSinkConfig = std::variant<UdpSinkConfig, ExtensionSinkConfig>;

/// Reads a duration written as a scenario file writes one (ConfigNode::as_duration:
/// "10ms", "0.5 s", "250us", "2min", a plain 0) from text that does not come
/// from a file, such as a program's `--duration 2.5s`. With `bare_unit` ("ns",
/// "us", "ms", "s" or "min") a plain number is read in that unit ("2.5" with
/// "s": 2.5 s); without, a plain number other than 0 is an error, as in a file.
/// Exact integer nanoseconds. Any thread.
/// @throws simsync::Error (invalid_argument) saying what was expected and what
///         was got, or naming an unknown `bare_unit`.
std::chrono::nanoseconds parse_duration(std::string_view text, std::string_view bare_unit = {});

/// Parses "HOST:PORT" (the last colon splits; `[v6]:PORT` for IPv6 literals,
/// brackets removed from the host; port 1..65535 in decimal), as
/// `clock.sinks[].udp` in a scenario or a program's `--clock-udp` option give
/// it. The host is resolved only when the sink is built.
/// @throws simsync::Error (invalid_argument) naming the text.
UdpSinkConfig parse_udp_sink(const std::string& host_port);

struct ClockConfig {
    bool enabled = true;
    /// Publish instants: ClockPublisherConfig::schedule (a scenario gives
    /// `rate` or `period`, no offset: ticks at `n * period`).
    PeriodicSchedule schedule = PeriodicSchedule::from_rate(100);
    std::vector<ClockSinkConfig> sinks;
};

/// The `pacer:` section. Simulated-time values are SimDuration, wall-clock ones
/// WallClock::duration (PacerConfig's types).
struct PacerSectionConfig {
    bool enabled = true;
    /// Simulated time between pacing points (> 0).
    SimDuration period = std::chrono::milliseconds(10);
    CatchUp catch_up = CatchUp::bounded;
    /// PacerConfig::max_catch_up (wall time, >= 0).
    WallClock::duration catch_up_limit = std::chrono::milliseconds(100);
    /// PacerConfig::spin_tail (wall time, >= 0); 0 turns spinning off.
    WallClock::duration spin_tail = std::chrono::microseconds(150);
};

/// One entry of `timers:`, the fields of a PeriodicTimerConfig. `period` and
/// `offset` are measured on the timer's clock (wall time for TimerClock::real,
/// simulated time for TimerClock::simulated), as in PeriodicTimerConfig.
struct TimerConfig {
    std::string name;
    TimerClock clock = TimerClock::simulated;
    std::chrono::nanoseconds period = std::chrono::milliseconds(100);
    std::chrono::nanoseconds offset{0};
    bool wait_for_start = false;
};

/// A whole scenario as one YAML file describes it. Every field has a default, so
/// an empty file is a valid scenario with no accessors.
struct ScenarioConfig {
    HandlerConfig handler;
    /// A built-in time source name or one of ScenarioExtensions::time_sources.
    std::string time_source = "sim";
    /// Initial TimeScale value, in [TimeScale::kMin, TimeScale::kMax].
    double time_scale = 1.0;
    /// `world.type`, a registered world type; empty without a `world:` section
    /// (the program's default world).
    std::string world_type;
    /// The `world:` section, already checked by the world type's validator.
    std::optional<ConfigNode> world;
    std::vector<AccessorConfig> accessors;
    ClockConfig clock;
    PacerSectionConfig pacer;
    std::vector<TimerConfig> timers;
    /// Registered top-level sections present in the file (ScenarioExtensions::
    /// sections), by key, already checked by their validators.
    std::map<std::string, ConfigNode, std::less<>> sections;
};

/// Reads a scenario: every value is checked, registered parts by their
/// validators (see ScenarioExtensions). Any thread; validators run on it.
/// @throws ConfigError naming file:line:column and key; simsync::Error
///         (invalid_argument) for inconsistent `extensions`.
ScenarioConfig load_scenario(const ConfigNode& root, const ScenarioExtensions& extensions = {});
ScenarioConfig load_scenario_file(const std::string& path, const ScenarioExtensions& extensions = {});
ScenarioConfig load_scenario_string(const std::string& text, const std::string& name = "<config>",
                                    const ScenarioExtensions& extensions = {});

} // namespace simsync
