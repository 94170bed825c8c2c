#pragma once
/// @file
/// The host side of remote participants: a Bridge represents every participant
/// process that joins over DDS as one accessor of the host's SimSyncHandler.
/// The participant side is simsync::dds::RemoteAccessor (remote_accessor.hpp);
/// the messages are in idl/remote.idl and remote_messages.hpp.

#include <simsync/accessor.hpp>
#include <simsync/dds/domain.hpp>
#include <simsync/dds/remote_messages.hpp>
#include <simsync/event_loop.hpp>
#include <simsync/handler.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace simsync::dds {

/// Who a remote participant is, as the Bridge's callbacks see it.
struct RemoteParticipantInfo {
    std::string name;
    AccessorOptions options;
    /// The participant object's incarnation (random, per RemoteAccessor).
    std::uint64_t incarnation = 0;
};

/// Configuration of a Bridge. A value type.
struct BridgeConfig {
    /// The DDS partition; participants must use the same one.
    std::string partition = remote::kPartition;
    /// Fills a grant's payload (observations), at most remote::kMaxPayload bytes.
    /// Called on the Bridge's loop thread inside the participant's access, at the
    /// granted instant (the world is protected). A throw or an oversized payload
    /// sends the grant with no payload and counts a payload_failure. Optional.
    std::function<std::vector<std::uint8_t>(const RemoteParticipantInfo&, Access&)> grant_payload{};
    /// Applies a release's payload (commands) inside the participant's access, at
    /// its granted instant, just before the access is released. Called on the
    /// Bridge's loop thread, also for an empty payload. A throw is counted as a
    /// payload_failure; the access is released all the same. Optional.
    std::function<void(const RemoteParticipantInfo&, Access&, std::span<const std::uint8_t>)> apply_release{};
};

/// What a Bridge did and dropped. A value type.
struct BridgeStats {
    std::uint64_t announces = 0;          ///< participants registered
    std::uint64_t refused_announces = 0;  ///< duplicate names and registrations the handler refused
    std::uint64_t requests = 0;
    std::uint64_t grants = 0;             ///< accesses granted and sent
    std::uint64_t refusals = 0;           ///< requests answered with a refusal (time_passed, stopped, cancelled, ...)
    std::uint64_t releases = 0;
    /// Accesses granted to a request its participant had withdrawn (timeout,
    /// stop_token) before the grant reached it: released at once, holding time
    /// at the granted instant for a lockstep participant.
    std::uint64_t withdrawn_grants = 0;
    std::uint64_t leaves = 0;
    std::uint64_t payload_failures = 0;   ///< a payload callback threw or returned too much
    std::uint64_t protocol_errors = 0;    ///< in-order messages that make no sense (a release without an access, a second request)
    std::uint64_t write_failures = 0;     ///< dds_write refused a message
    /// Messages (a welcome, and what followed it) held back until the writer
    /// had matched the participant's reader: discovery was still under way when
    /// the announce arrived.
    std::uint64_t held_for_discovery = 0;
    /// Samples dropped before acting on them, by reason (malformed, unknown,
    /// duplicate, out of order, ...).
    remote::RejectionCounts rejected;
};

/// Represents every remote participant (a simsync::dds::RemoteAccessor in any
/// process of the domain and partition) as one accessor of `handler`, with the
/// name, kind, mode, priority, first request and lookahead it announced. The
/// handler's grant rule and order apply to them as to local accessors, so a mix
/// of local and remote accessors gives the grant sequence of the all-local run.
///
/// It serves them all on one EventLoop (its own, or the one given) through the
/// asynchronous grant API: no thread per participant. Cyclone's listeners only
/// post to that loop; every message is decoded, checked (remote::HostInbox:
/// sender, incarnation, sequence) and acted on there, in the order each
/// participant wrote it. A grant's payload is filled, and a release's payload
/// applied, by the BridgeConfig callbacks on that loop, inside the access.
/// A second participant announcing a name that is registered (by another
/// participant or a local accessor) gets a welcome refusing it (duplicate_name).
///
/// Topics, QoS and the sequence of a grant: sim_adapters/dds/README.md.
///
/// Copy/move: neither. Thread safety: every member from any thread except the
/// destructor (not from the loop's thread, nor from a callback). Destruction
/// withdraws pending requests, releases held accesses and deregisters every
/// remote participant; the handler must outlive the Bridge, and a loop given
/// to it must too.
class Bridge {
public:
    /// Creates the topics, reader and writer in `participant` and starts
    /// serving. `executor`: the loop to run on; empty: a private EventLoop.
    /// @throws simsync::Error: invalid_argument if `participant` is null or the
    ///         partition empty; invalid_state if Cyclone refuses an entity.
    Bridge(SimSyncHandler& handler, std::shared_ptr<Participant> participant, BridgeConfig config = {},
           Executor executor = {});
    ~Bridge();
    Bridge(const Bridge&) = delete;
    Bridge& operator=(const Bridge&) = delete;

    /// The names of the remote participants registered now.
    std::vector<std::string> participants() const;
    BridgeStats stats() const;
    /// The host's incarnation (random; participants check it on every message).
    std::uint64_t incarnation() const noexcept;
    /// Blocks until at least `count` remote participants are registered, or
    /// `timeout` passes. @return whether they are.
    bool wait_for_participants(std::size_t count, WallClock::duration timeout) const;
    /// Blocks until every participant named in `names` is registered, or
    /// `timeout` passes. @return the names still missing (empty: all joined).
    std::vector<std::string> wait_for_participants(const std::vector<std::string>& names,
                                                   WallClock::duration timeout) const;
    /// Blocks until `done(stats())` or `timeout` passes; re-checked whenever
    /// the Bridge has processed a message. @return whether `done` held.
    bool wait_until(const std::function<bool(const BridgeStats&)>& done, WallClock::duration timeout) const;

private:
    struct Impl;
    std::shared_ptr<Impl> impl_;
};

} // namespace simsync::dds
