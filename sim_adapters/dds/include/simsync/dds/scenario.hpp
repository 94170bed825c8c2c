#pragma once
/// @file
/// The dds adapter in a scenario file: the `ros2` clock sink kind
/// (`clock.sinks[i].ros2`), checked when the scenario loads, with errors that
/// name file:line:column and the key like the rest of the configuration.

#include <simsync/config/config.hpp>
#include <simsync/dds/domain.hpp>
#include <simsync/dds/ros2_clock.hpp>

#include <memory>
#include <string_view>

namespace simsync::dds {

/// Reads a `security:` value (the `security` key of `remote:`, `participant:`
/// and `ros2` sinks): DDS Security for that participant. Either the block
/// itself, every key required:
/// @code
/// security:
///   identity_ca: certs/identity_ca.pem       # the CA that signs identity certificates
///   certificate: certs/host/cert.pem         # this participant's certificate
///   private_key: certs/host/key.pem          # and its key
///   permissions_ca: certs/permissions_ca.pem # the CA that signs the documents below
///   governance: certs/governance.p7s         # signed domain governance
///   permissions: certs/host/permissions.p7s  # signed permissions of this certificate
/// @endcode
/// or the path of a YAML file holding that block (`security:
/// certs/host/security.yaml`, what scripts/make-dds-certs writes per identity).
/// Relative paths are relative to the directory of the file that names them
/// (the working directory for a document that is not a file); the result holds
/// absolute paths. docs/security.md explains each file.
/// @throws ConfigError naming file:line:column and the key of the first bad
///         value: an unknown or missing key, a file that does not exist or
///         cannot be read (named now, not when the participant is created).
SecurityFiles parse_security(const ConfigNode& node);

/// Reads the YAML file at `path` holding a `security:` block (the form
/// parse_security takes as a path): what a program's --security option names.
/// @throws ConfigError as parse_security, naming that file.
SecurityFiles load_security_file(const std::string& path);

/// The sink's kind in a scenario: `clock.sinks[i].ros2`.
inline constexpr std::string_view kRos2SinkKind = "ros2";

/// A `ros2` clock sink as a scenario describes it. A value type.
struct Ros2SinkSettings {
    DomainConfig domain;
    Ros2ClockSinkConfig sink;
};

/// Reads the value of `clock.sinks[i].ros2`. Every key is optional; `- ros2:`
/// with no value is all defaults (ROS_DOMAIN_ID 0, Cyclone's default network,
/// the sink's default QoS).
/// @code
/// clock:
///   rate: 100
///   sinks:
///     - ros2: {domain: 0}
///     - ros2:
///         domain: 5                  # 0..232 (ROS_DOMAIN_ID)
///         network: loopback          # system (default) | loopback
///         interface: eth0            # a network interface instead of network's
///         peers: [10.0.0.2]          # extra unicast discovery peers
///         tag: sim-a                 # Cyclone discovery tag (Cyclone peers only)
///         security: certs/sim/security.yaml # DDS Security (parse_security); default none
///         topic: /clock              # a ROS 2 name (-> rt/clock) or a DDS one (rt/clock)
///         reliability: reliable      # reliable (default) | best_effort
///         durability: transient_local # transient_local (default) | volatile
///         depth: 1                   # keep last N (>= 1); 0 keeps all
///         repeat_while_paused: true  # write every paused repeat (default)
/// @endcode
/// @throws ConfigError naming file:line:column and the key of the first bad
///         value (an unknown key, a domain id above 232, an unknown network, ...).
Ros2SinkSettings parse_ros2_sink(const ConfigNode& node);

/// Builds the sink a validated `ros2` node describes: a Participant in its
/// domain (shared with other participants of the same DomainConfig in this
/// process) and a Ros2ClockSink in it. Call on the thread that sets the
/// publisher up; the sink is then the ClockPublisher's.
/// @throws ConfigError as parse_ros2_sink; simsync::Error if Cyclone DDS
///         refuses the domain or the writer (naming the domain or topic).
std::unique_ptr<Ros2ClockSink> make_ros2_clock_sink(const ConfigNode& node);

/// Registers the `ros2` clock sink kind (validated by parse_ros2_sink) in
/// `extensions`, so that load_scenario accepts `clock.sinks[i].ros2` and reports
/// its errors at file:line:column. The loaded scenario then holds each such sink
/// as an ExtensionSinkConfig of kind "ros2"; the program builds it with
/// make_ros2_clock_sink(sink.config). Call before loading.
/// @throws simsync::Error (duplicate_name) if a `ros2` kind is registered already.
void register_clock_sink(ScenarioExtensions& extensions);

} // namespace simsync::dds
