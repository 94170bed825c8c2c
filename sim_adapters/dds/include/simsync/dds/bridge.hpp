#pragma once
/// @file
/// The host side of remote participants: a Bridge represents every participant
/// process that joins over DDS as one accessor of the host's SimSyncHandler.
/// The participant side is simsync::dds::RemoteAccessor (remote_accessor.hpp);
/// the messages are in idl/remote.idl and remote_messages.hpp.

#include <simsync/clock/event_loop.hpp>
#include <simsync/core/accessor.hpp>
#include <simsync/core/handler.hpp>
#include <simsync/dds/domain.hpp>
#include <simsync/dds/remote_messages.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
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

/// What a Bridge does when a remote participant's liveliness lease expires
/// (its process died, or the link to it is lost, or it is stopped in a
/// debugger longer than its lease).
enum class LostParticipantPolicy {
    /// Revoke it: its pending request is withdrawn, its held access released and
    /// its registration removed (a lockstep bound is lifted), as
    /// SimSyncHandler::revoke does; the simulation goes on without it. A
    /// restarted participant of the same name joins again as a new one.
    revoke,
    /// Pause the handler and keep the participant registered (what it holds, it
    /// still holds): an operator decides. It may resume (if the participant
    /// comes back, e.g. from a debugger: its lease is then renewed), revoke it
    /// (SimSyncHandler::revoke), or start the participant again: a new
    /// incarnation of a lost participant's name replaces it (the old one is
    /// deregistered, its access released) instead of being refused as a
    /// duplicate; then resume.
    pause,
};
const char* to_string(LostParticipantPolicy policy) noexcept;

/// Why a remote participant stopped being one of the Bridge's (BridgeConfig::on_left).
enum class LeaveReason {
    /// It said so (LEAVE): its RemoteAccessor was destroyed.
    left,
    /// Its liveliness lease expired and the policy is revoke
    /// (LostParticipantPolicy::revoke): revoked.
    lost,
    /// It was lost under the pause policy and a new incarnation of its name
    /// joined in its place (BridgeStats::replaced); on_joined follows for the
    /// new one.
    replaced,
    /// The Bridge is being destroyed while it was registered.
    closing,
};
const char* to_string(LeaveReason reason) noexcept;

/// Configuration of a Bridge. A value type.
struct BridgeConfig {
    /// The DDS partition; participants must use the same one. No wildcard
    /// ('*', '?'): the Bridge reads every participant's own partition
    /// "<partition>/<escaped name>" through the pattern "<partition>/*".
    std::string partition = remote::kPartition;
    /// The names that may join: nullopt (the default) any name; else only
    /// these. An announce of another name gets a welcome refusing it
    /// (WelcomeRefusal::not_allowed: the participant's constructor throws
    /// invalid_state) and is counted (refused_announces, and rejected by
    /// reason name_not_allowed).
    std::optional<std::vector<std::string>> allowed_names{};
    /// At most this many remote participants registered at once (default: no
    /// limit). An announce beyond it is refused the same way
    /// (WelcomeRefusal::participant_limit; rejected: participant_limit).
    std::size_t max_participants = std::numeric_limits<std::size_t>::max();
    /// The liveliness lease the Bridge's writers offer (DDS automatic
    /// liveliness, asserted by Cyclone for as long as this process runs and its
    /// link works): a participant that hears nothing from this host for that
    /// long ends its pending request `stopped` and refuses later ones. Must be
    /// > 0; WallClock::duration::max() is infinite (never detected).
    /// A participant's own lease is its RemoteAccessorConfig::lease.
    WallClock::duration lease = std::chrono::seconds(1);
    /// What to do when a participant's lease expires; done on the Bridge's loop
    /// thread, within the lease (from the participant's last traffic) plus a
    /// margin for Cyclone's lease check and one loop job. In every case the
    /// handler's diagnostics get, on that thread, an accessor_ended Diagnostic
    /// naming the participant (`accessor`), the reason (`reason` = timed_out:
    /// its lease expired) and what was done (`message`).
    LostParticipantPolicy on_lost = LostParticipantPolicy::revoke;
    /// How many DDS writers of participants that are no longer registered the
    /// Bridge keeps (the host writes to each participant incarnation through a
    /// writer of its own, also to refuse it). One that is lost, revoked,
    /// refused, or leaves without having acknowledged everything keeps its
    /// writer: a revoked participant that
    /// comes back (from a debugger, an outage) is answered through it, and
    /// deleting a writer that a dead but still matched reader has not
    /// acknowledged blocks for Cyclone's writer linger time
    /// (Internal/WriterLingerDuration, 1 s by default). A kept
    /// writer is deleted once no reader matches it (Cyclone has dropped the
    /// participant's process from discovery: its DDS lease, DomainConfig::
    /// lease_duration, expired, or it exited), and beyond this many the oldest
    /// is deleted at once, on the loop's thread, which may then stand still
    /// for up to that linger time (a revoked participant whose writer goes
    /// is no longer answered). 0: none is kept.
    std::size_t kept_writers = 16;
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
    /// A participant joined: it is registered with the handler and listed by
    /// participants(), and its welcome is on its way. Not called for an
    /// announce the Bridge refuses (duplicate name, invalid options).
    /// Optional.
    std::function<void(const RemoteParticipantInfo&)> on_joined{};
    /// A participant that on_joined announced is no longer registered (its
    /// pending request withdrawn, its held access released, its name gone from
    /// participants()), for `reason`. Exactly once per on_joined, the last
    /// ones (closing) from inside the Bridge's destructor. An operator's
    /// SimSyncHandler::revoke of a remote participant is not a leave for the
    /// Bridge: on_left comes when the participant leaves or the Bridge closes.
    /// Optional.
    ///
    /// Both are called on the Bridge's loop thread, one at a time, in the order
    /// of the events, after the BridgeStats of the event are counted (`leaves`,
    /// `lost`, `replaced`) and without the Bridge's lock held, so they may call
    /// any member of the Bridge except the destructor, and any member of the
    /// handler. They hold up every participant's traffic while they run: they
    /// must not block (no wait_for_participants / wait_until, no waiting for
    /// another participant's progress), must not destroy the Bridge, and must
    /// not throw (a throw is caught and dropped).
    std::function<void(const RemoteParticipantInfo&, LeaveReason)> on_left{};
};

/// What a Bridge did and dropped. A value type.
struct BridgeStats {
    std::uint64_t announces = 0;          ///< participants registered
    /// Duplicate names, registrations the handler refused, names not allowed
    /// and announces beyond max_participants (the last two are also in
    /// `rejected`, by reason).
    std::uint64_t refused_announces = 0;
    std::uint64_t requests = 0;
    std::uint64_t grants = 0;             ///< accesses granted and sent
    std::uint64_t refusals = 0;           ///< requests answered with a refusal (time_passed, stopped, cancelled, ...)
    std::uint64_t releases = 0;
    /// Accesses granted to a request its participant had withdrawn (timeout,
    /// stop_token) before the grant reached it: released at once, holding time
    /// at the granted instant for a lockstep participant.
    std::uint64_t withdrawn_grants = 0;
    std::uint64_t leaves = 0;
    /// Participants whose liveliness lease expired while registered (each
    /// handled per BridgeConfig::on_lost).
    std::uint64_t lost = 0;
    /// Lost participants heard from again while still registered (policy
    /// pause: back from a debugger or a network outage): their lease was
    /// renewed, or a message of theirs arrived.
    std::uint64_t regained = 0;
    /// Lost participants (policy pause) replaced by a new incarnation of their name.
    std::uint64_t replaced = 0;
    std::uint64_t payload_failures = 0;   ///< a payload callback threw or returned too much
    std::uint64_t protocol_errors = 0;    ///< in-order messages that make no sense (a release without an access, a second request)
    std::uint64_t write_failures = 0;     ///< dds_write refused a message
    /// Messages (a welcome, and what followed it) held back until the writer
    /// had matched the participant's reader: discovery was still under way when
    /// the announce arrived, or a lost participant's reader was dropped and not
    /// yet rediscovered.
    std::uint64_t held_for_discovery = 0;
    /// The DDS writers the Bridge holds now for participants (not a count of
    /// events): one per registered participant, plus at most
    /// BridgeConfig::kept_writers of participants no longer registered.
    std::uint64_t writers = 0;
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
/// post to that loop; every message is decoded, checked and acted on there, in
/// the order each participant wrote it. The checks: the writer that sent it is
/// in the named participant's own partition (with DDS Security its permissions
/// grant exactly that: a participant speaks only for its own name, see
/// docs/security.md), the name is allowed and the participant limit not
/// reached (BridgeConfig::allowed_names, max_participants), and
/// remote::HostInbox's sender, incarnation and sequence. The last stop
/// accidents (duplicates, stale processes), not an attacker: on a domain
/// without DDS Security (DomainConfig::security) anyone on the network can
/// write in any partition, so every check can be forged. A grant's payload is filled, and a release's payload
/// applied, by the BridgeConfig callbacks on that loop, inside the access.
/// It writes to each participant through a writer of its own, in a DDS
/// partition of its own (remote::participant_partition; one per incarnation,
/// created when it announces itself, also to refuse it), so what it writes to
/// one participant reaches that participant's process only, and no writer of
/// the host waits for the dead reader of another incarnation.
/// A second participant announcing a name that is registered (by another
/// participant or a local accessor) gets a welcome refusing it (duplicate_name).
///
/// Liveness is apart from progress. A participant that is slow (it holds its
/// access long, or its lockstep bound holds time) is waited for, as a local
/// accessor is: it is registered under its own name, so the handler's
/// Snapshot::waiting_for and a status line built on it name it. A participant
/// whose process dies or whose link is lost is detected by DDS liveliness:
/// its writer offers a lease (RemoteAccessorConfig::lease, 1 s by default),
/// Cyclone renews it while the process runs, and when no traffic arrives for
/// the lease the Bridge's reader gets DDS_LIVELINESS_CHANGED for that writer
/// (mapped to the participant by the publication handle of its announce). The
/// Bridge then acts per BridgeConfig::on_lost (revoke, or pause the handler)
/// on its loop's thread and reports it (handler.report). Bound: the lease plus
/// a margin for Cyclone's lease check and the loop (tens of milliseconds on
/// an idle machine; the tests allow seconds on a loaded one). A participant
/// stopped in a debugger longer than its lease is indistinguishable from a
/// dead one (the known false alarm): give it a lease longer than the pauses
/// you expect, or use the pause policy. See README.md, "Liveness".
///
/// Topics, QoS, the sequence of a grant, liveness: docs/remote.md.
///
/// Joins and leaves are told by BridgeConfig::on_joined and on_left, on the
/// loop's thread: waiting for a participant to come or go needs no polling.
///
/// Copy/move: neither. Thread safety: every member from any thread except the
/// destructor (not from the loop's thread, nor from a callback) and the waits
/// (not from the loop's thread). Destruction withdraws pending requests,
/// releases held accesses and deregisters every remote participant (on_left:
/// closing); the handler must outlive the Bridge, and a loop given to it must
/// too.
class Bridge {
public:
    /// Creates the topics and the reader in `participant` (the writer to a
    /// participant comes when it announces itself) and starts serving. `executor`: the loop to run on; empty: a private EventLoop.
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
    // The waits below end in one of three ways: what they wait for holds
    // (checked first: it wins over the others), the handler stops (at once,
    // through the handler's stopped event; also when it is stopped already
    // when the wait begins), or `timeout` passes. A negative result means
    // "stopped" if handler.state() == HandlerState::stopped, else "timed out":
    // a stop is final, so checking the state after the return is no race (a
    // stop just after a timeout reads as stopped, which it also is). They do
    // not outlast the stop: for what comes after it (the participants'
    // leaves), use BridgeConfig::on_left; stats() and participants() still
    // answer. Any thread except the Bridge's loop thread (the waits need it to
    // make progress), so not from a BridgeConfig callback.

    /// Blocks until at least `count` remote participants are registered, the
    /// handler stops, or `timeout` passes. @return whether they are.
    bool wait_for_participants(std::size_t count, WallClock::duration timeout) const;
    /// Blocks until every participant named in `names` is registered, the
    /// handler stops, or `timeout` passes. @return the names still missing
    /// (empty: all joined).
    std::vector<std::string> wait_for_participants(const std::vector<std::string>& names,
                                                   WallClock::duration timeout) const;
    /// Blocks until `done(stats())`, the handler stops, or `timeout` passes;
    /// `done` is called with the Bridge's lock held (it must not call the
    /// Bridge) and re-checked whenever the Bridge has processed a message.
    /// @return whether `done` held.
    bool wait_until(const std::function<bool(const BridgeStats&)>& done, WallClock::duration timeout) const;

private:
    struct Impl;
    std::shared_ptr<Impl> impl_;
};

} // namespace simsync::dds
