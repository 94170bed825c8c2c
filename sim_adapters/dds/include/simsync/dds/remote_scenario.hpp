#pragma once
/// @file
/// Remote participants in configuration files, and the start across processes.
///
/// The host's scenario gets a top-level `remote:` section (the Bridge: domain,
/// partition, the participants it expects and how long to wait for them); a
/// participant process reads a `participant:` document (its domain, partition,
/// name and accessor options). Both are checked when they load, with errors that
/// name file:line:column and the key, like the rest of the configuration.
///
/// The start across processes (the CPM Lab start signal) is the handler's own
/// state: the host's simulation starts paused, start_together() waits until every
/// expected participant has joined and then resumes it, and participants that
/// must not act before the start wait for it with
/// `RemoteAccessor::wait_for_state(HandlerState::running, ...)`. A stop (or a
/// pause) of the handler reaches every participant the same way (the `STATE`
/// message): see docs/remote.md.

#include <simsync/config/config.hpp>
#include <simsync/core/accessor.hpp>
#include <simsync/core/handler.hpp>
#include <simsync/dds/bridge.hpp>
#include <simsync/dds/domain.hpp>
#include <simsync/dds/remote_accessor.hpp>

#include <cstddef>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace simsync::dds {

/// The host's section: `remote:` at the top level of its scenario.
inline constexpr std::string_view kRemoteSection = "remote";

/// The `remote:` section of a host's scenario. A value type.
struct RemoteHostSettings {
    DomainConfig domain;
    /// BridgeConfig::partition.
    std::string partition = remote::kPartition;
    /// The participants the simulation starts with (start_together): names, unique.
    std::vector<std::string> expect;
    /// BridgeConfig::allowed_names (nullopt: `allow: any`, the default) and
    /// BridgeConfig::max_participants (default: no limit).
    std::optional<std::vector<std::string>> allow;
    std::size_t max_participants = std::numeric_limits<std::size_t>::max();
    /// How long start_together waits for them.
    WallClock::duration join_timeout = std::chrono::seconds(60);
    /// BridgeConfig::lease and BridgeConfig::on_lost.
    WallClock::duration lease = std::chrono::seconds(1);
    LostParticipantPolicy on_lost = LostParticipantPolicy::revoke;

    /// A BridgeConfig with the partition, allowed names, participant limit,
    /// lease and policy read here (the payload callbacks are the program's).
    BridgeConfig bridge_config() const;
};

/// Reads a `remote:` section. Every key is optional.
/// @code
/// remote:
///   domain: 7                      # 0..232
///   network: loopback              # system (default) | loopback
///   interface: eth0                # a network interface instead of network's
///   peers: [10.0.0.2]              # extra unicast discovery peers
///   tag: lab-a                     # Cyclone discovery tag
///   security: certs/host/security.yaml # DDS Security (parse_security); default none: trusted network only
///   partition: simsync             # the DDS partition (default simsync)
///   expect: [controller, camera]   # start when these have joined
///   allow: [controller, camera]    # the names that may join (default any)
///   max_participants: 2            # at most this many at once (default no limit)
///   join_timeout: 30s              # how long to wait for them (default 60 s)
///   lease: 1s                      # the host's liveliness lease (default 1 s)
///   on_lost: revoke                # revoke (default) | pause: a participant whose lease expired
/// @endcode
/// @throws ConfigError naming file:line:column and the key of the first bad
///         value (an unknown key, a domain id above 232, an empty or repeated
///         name, a name remote::check_name refuses, an empty partition or one
///         with a wildcard, an expected name not allowed, fewer
///         max_participants than expected ones, a security file that cannot
///         be read, ...).
RemoteHostSettings parse_remote_host(const ConfigNode& node);

/// Registers the `remote:` section (validated by parse_remote_host) in
/// `extensions`, so that load_scenario accepts it and reports its errors at
/// file:line:column; the loaded scenario then holds it in `sections`. Call
/// before loading.
/// @throws simsync::Error (duplicate_name) if a `remote` section is registered already.
void register_remote_section(ScenarioExtensions& extensions);

/// A participant process's configuration: the `participant:` document. A value type.
struct RemoteParticipantSettings {
    DomainConfig domain;
    std::string name;
    AccessorOptions options;
    /// partition, join_timeout and lease.
    RemoteAccessorConfig config;
};

/// Reads the value of a participant's `participant:` key. `name` is required.
/// @code
/// participant:
///   name: controller               # required
///   domain: 7                      # as in `remote:`; network, interface, peers, tag, security too
///   partition: simsync
///   kind: lockstep                 # lockstep (default) | free
///   mode: exclusive                # exclusive (default) | shared
///   priority: 0                    # order at one instant, higher first
///   first_request: 0ms             # a lockstep participant holds time here from joining
///   lookahead: 0ms                 # holds time at its release + lookahead
///   join_timeout: 10s              # how long to wait for the host's welcome
///   lease: 1s                      # its liveliness lease (default 1 s)
/// @endcode
/// @throws ConfigError naming file:line:column and the key of the first bad value.
RemoteParticipantSettings parse_remote_participant(const ConfigNode& node);

/// The start across processes: waits until every participant named in
/// `expect` has joined `bridge` (is registered with the handler), then resumes
/// `handler` (which the host started paused), so that they all begin at the
/// same simulated instant. Call on the host's thread that starts the run.
/// Ends as soon as the handler stops (also when it is stopped already), not
/// at the timeout.
/// @throws simsync::Error (timed_out) naming the participants that had not
///         joined within `timeout`; the handler then stays paused.
/// @throws simsync::Error (stopped) if the handler stopped before everyone
///         joined ("the handler stopped before everyone had joined ('b' had
///         not)"); nothing is resumed.
void start_together(SimSyncHandler& handler, const Bridge& bridge, const std::vector<std::string>& expect,
                    WallClock::duration timeout);

} // namespace simsync::dds
