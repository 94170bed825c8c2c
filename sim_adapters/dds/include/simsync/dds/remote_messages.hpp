#pragma once
/// @file
/// The messages of remote participants (simsync::dds::Bridge on the host,
/// simsync::dds::RemoteAccessor in the participant), decoded and checked.
///
/// Two layers, both free of Cyclone DDS (the fuzz target and the unit tests run
/// them without a DDS domain):
///  - decoding: a sample as it came off the wire (`ToHostWire`,
///    `ToParticipantWire`: views of the fields of the IDL structs in
///    idl/remote.idl) becomes a plain C++ message (`HostMessage`,
///    `ParticipantMessage`) or is refused with a named `Rejection` (unknown kind,
///    a value out of range, a payload above kMaxPayload, a bad name);
///  - the inboxes: `HostInbox` (host side) and `ParticipantInbox` (participant
///    side) keep, per sender, its incarnation and the last sequence number
///    accepted, and refuse what is for another participant, from another
///    incarnation or host, duplicated or out of order. Every refusal is counted
///    by reason.
/// Nothing refused is ever applied.

#include <simsync/core/accessor.hpp>
#include <simsync/core/handler.hpp>
#include <simsync/core/time.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace simsync::dds::remote {

/// The default DDS partition of the remote participants' topics: a host and its
/// participants meet only within one partition (and one domain, and one tag).
inline constexpr const char* kPartition = "simsync";
/// The largest payload of a grant or a release, in bytes (64 KiB). Writers
/// refuse a larger one (simsync::Error, invalid_argument); readers drop a larger
/// one and count it (Rejection::payload_too_large). The IDL leaves the sequence
/// unbounded so that such a sample reaches the decoder: Cyclone's deserializer
/// would drop it uncounted.
inline constexpr std::size_t kMaxPayload = 65536;
/// The longest participant name, in bytes (not counting a terminator).
inline constexpr std::size_t kMaxName = 256;
/// The longest refusal text of a welcome, in bytes.
inline constexpr std::size_t kMaxText = 1024;

/// The DDS partition in which the participant named `name` writes to the
/// host: `partition`, '/', the name with every byte outside [A-Za-z0-9_.-]
/// written as %XX. Escaped, a name is never a partition pattern ('*', '?'),
/// and two names never share a partition. The host reads "<partition>/*" and
/// believes a message for a name only from a writer in that name's partition
/// (with DDS Security: the partition its permissions grant).
std::string participant_partition(std::string_view partition, std::string_view name);

/// The DDS partition in which the host writes to one incarnation of the
/// participant named `name`: participant_partition(partition, name), '/', the
/// incarnation as 16 upper case hex digits. With the incarnation, a
/// participant restarted under its name never shares a partition with its
/// predecessor, whose reader Cyclone may still list (until that process's
/// DDS lease expires) but which never acknowledges anything. Everything the
/// host writes to that incarnation, the refusal of its announce included,
/// goes there.
std::string participant_partition(std::string_view partition, std::string_view name, std::uint64_t incarnation);

/// The DDS partition of a host's liveliness writer: `partition`, "/%host/",
/// the host's (Bridge's) incarnation as 16 upper case hex digits (no
/// participant's partition looks like it: an escaped name never holds a bare
/// '%'). That writer writes nothing: its DDS liveliness, with the Bridge's
/// lease, is how a participant that joined that host learns that it is gone.
/// It is the host's one writer with a finite lease: Cyclone DDS 0.10 reports
/// a writer of a remote participant not alive when another writer of that
/// participant with the same lease is deleted (the new shortest lease is
/// given the time left of the old one, none), so the writers that come and
/// go with the participants have an infinite lease.
std::string host_partition(std::string_view partition, std::uint64_t host_incarnation);

/// ToHost.kind (idl/remote.idl).
enum class ToHostKind : std::uint8_t {
    announce = 1,
    request = 2,
    release = 3,
    cancel = 4,
    leave = 5,
    release_and_request = 6,
};
/// ToParticipant.kind (idl/remote.idl).
enum class ToParticipantKind : std::uint8_t { welcome = 1, grant = 2, state = 3 };

/// Why a welcome refuses a participant (ToParticipant.error of a WELCOME).
enum class WelcomeRefusal : std::int32_t {
    none = 0,
    /// A participant of that name is registered (another live incarnation, or a
    /// local accessor of the handler).
    duplicate_name = 1,
    /// The handler refused the registration (its text says why).
    invalid = 2,
    /// The name is not among the host's allowed names (BridgeConfig::allowed_names).
    not_allowed = 3,
    /// The host has its most participants already (BridgeConfig::max_participants).
    participant_limit = 4,
};
const char* to_string(WelcomeRefusal r) noexcept;

/// Why a sample was dropped. Every reason is counted separately.
enum class Rejection : std::uint8_t {
    unknown_kind,        ///< a kind this version does not know
    bad_field,           ///< a field out of range (a negative lookahead, an unknown mode, ...)
    bad_name,            ///< an empty, unterminated or too long participant name
    payload_too_large,   ///< above kMaxPayload
    unexpected_payload,  ///< a payload on a message that carries none
    unknown_participant, ///< host: no participant of that name has joined
    wrong_incarnation,   ///< from (or for) another incarnation of that participant
    duplicate,           ///< a sequence number already accepted
    out_of_order,        ///< a sequence number beyond the next one expected
    other_participant,   ///< participant: addressed to another participant (normal traffic)
    wrong_host,          ///< participant: from a host other than the one that welcomed it
    not_welcomed,        ///< participant: anything but a welcome before the welcome
    name_not_allowed,    ///< host: an announce of a name not in BridgeConfig::allowed_names (refused in its welcome)
    participant_limit,   ///< host: an announce beyond BridgeConfig::max_participants (refused in its welcome)
    /// host: sent for a participant by a writer that is not in that
    /// participant's own partition, so not its (with DDS Security: not
    /// granted by its permissions): another participant speaking for it.
    not_its_name,
};
inline constexpr std::size_t kRejectionCount = 15;
const char* to_string(Rejection r) noexcept;

/// Counts of dropped samples, by reason. A value type.
struct RejectionCounts {
    std::array<std::uint64_t, kRejectionCount> by_reason{};
    std::uint64_t operator[](Rejection r) const noexcept { return by_reason[static_cast<std::size_t>(r)]; }
    void add(Rejection r) noexcept { ++by_reason[static_cast<std::size_t>(r)]; }
    std::uint64_t total() const noexcept;
};

// ------------------------------------------------------------- on the wire

/// The fields of a ToHost sample (idl/remote.idl), as views into it: what the
/// DDS side hands the decoder. `participant` holds the bytes of the fixed-size
/// string field up to and including its terminator, if any.
struct ToHostWire {
    std::string_view participant;
    std::uint64_t incarnation = 0;
    std::uint64_t seq = 0;
    std::uint8_t kind = 0;
    std::uint8_t accessor_kind = 0;
    std::uint8_t access_mode = 0;
    std::int32_t priority = 0;
    std::int64_t time = 0;
    bool has_time = false;
    std::int64_t lookahead = 0;
    std::uint64_t ref = 0;
    std::array<std::uint8_t, 16> reply_reader{};
    std::span<const std::uint8_t> payload;
};

/// The fields of a ToParticipant sample (idl/remote.idl), as views into it.
struct ToParticipantWire {
    std::string_view participant;
    std::uint64_t target_incarnation = 0;
    std::uint64_t host_incarnation = 0;
    std::uint64_t seq = 0;
    std::uint8_t kind = 0;
    std::int32_t error = 0;
    std::string_view text;
    std::int64_t step = 0;
    std::uint8_t rounding = 0;
    std::uint8_t state = 0;
    std::int64_t now = 0;
    std::uint64_t ref = 0;
    std::int64_t requested = 0;
    std::int64_t granted = 0;
    std::uint64_t grant_sequence = 0;
    std::span<const std::uint8_t> payload;
};

// ------------------------------------------------------ participant -> host

/// A participant joins: it becomes one accessor of the host's handler.
struct Announce {
    AccessorOptions options;
    /// The DDS GUID of the participant's reader of the host's messages: the
    /// host answers once its writer has matched that reader. Never all zero.
    std::array<std::uint8_t, 16> reply_reader{};
};
/// Asks for access at `time` (unrounded; the host rounds).
struct Request {
    SimTime time{};
};
/// Releases the held access, applying `payload` inside it first; a lockstep
/// participant declares `next_request` as its bound if set.
struct Release {
    std::optional<SimTime> next_request;
    std::vector<std::uint8_t> payload;
};
/// Releases the held access, applying `payload` inside it first, and asks for
/// access at `next` in the same operation (Accessor::release_and_request on
/// the host): until it is granted, the request holds time at `next` for a
/// lockstep participant. The message's sequence number is the request's.
struct ReleaseAndRequest {
    SimTime next{};
    std::vector<std::uint8_t> payload;
};
/// Withdraws the pending request whose sequence number is `request`.
struct Cancel {
    std::uint64_t request = 0;
};
/// Deregisters the participant.
struct Leave {};

/// A decoded participant -> host message.
struct HostMessage {
    std::string participant;
    std::uint64_t incarnation = 0;
    std::uint64_t seq = 0;
    std::variant<Announce, Request, Release, Cancel, Leave, ReleaseAndRequest> body;
    ToHostKind kind() const noexcept { return static_cast<ToHostKind>(body.index() + 1); }
};

// ------------------------------------------------------ host -> participant

/// The host's answer to an announce.
struct Welcome {
    WelcomeRefusal refusal = WelcomeRefusal::none;
    std::string text; ///< why, if refused
    SimDuration step{};
    Rounding rounding = Rounding::nearest;
    HandlerState state = HandlerState::running;
    SimTime now{};
};
/// The host's answer to a request: an access, or a refusal.
struct Grant {
    std::uint64_t request = 0; ///< the sequence number of the request it answers
    std::error_code error;     ///< empty: granted; else a simsync::errc refusal
    SimTime requested{};
    SimTime granted{};
    std::uint64_t grant_sequence = 0;
    std::vector<std::uint8_t> payload;
};
/// The simulation was paused, resumed or stopped.
struct StateChange {
    HandlerState state = HandlerState::running;
    SimTime now{};
};

/// A decoded host -> participant message.
struct ParticipantMessage {
    std::string participant;
    std::uint64_t target_incarnation = 0;
    std::uint64_t host_incarnation = 0;
    std::uint64_t seq = 0;
    std::variant<Welcome, Grant, StateChange> body;
    ToParticipantKind kind() const noexcept { return static_cast<ToParticipantKind>(body.index() + 1); }
};

/// A decoded message or why it was refused.
template <class Message>
struct Decoded {
    std::optional<Message> message;
    Rejection rejection = Rejection::bad_field; ///< meaningful when !message
    explicit operator bool() const noexcept { return message.has_value(); }
};

/// Decodes and validates every field of a ToHost sample. Never throws for any
/// input (only std::bad_alloc).
Decoded<HostMessage> decode(const ToHostWire& wire);
/// Decodes and validates every field of a ToParticipant sample. Never throws
/// for any input (only std::bad_alloc).
Decoded<ParticipantMessage> decode(const ToParticipantWire& wire);

/// Checks a participant name as sent: 1 to kMaxName bytes, no NUL, no control
/// character. @return empty if valid, else why not.
std::string check_name(std::string_view name);

// --------------------------------------------------------------- the inboxes

/// The host's view of who is talking to it: per admitted participant name, the
/// incarnation it admitted and the last sequence number accepted from it.
///
/// The Bridge calls `accept` for every decoded sample, `admit` when it has
/// registered an announced participant and `forget` when it leaves or is
/// refused. Copy/move: a value type. Thread safety: none (the Bridge uses it on
/// its loop's thread only).
class HostInbox {
public:
    /// What to do with a message.
    enum class Verdict {
        apply,         ///< in order, from the admitted incarnation: act on it
        new_announce,  ///< an announce of a name not admitted: register it, then admit or refuse
        taken_name,    ///< an announce from another incarnation of an admitted name: refuse it (duplicate name)
        rejected,      ///< dropped: see `rejection`
    };
    struct Result {
        Verdict verdict = Verdict::rejected;
        Rejection rejection = Rejection::bad_field;
    };

    /// Classifies `m` and counts a rejection. An accepted message advances the
    /// sender's sequence number.
    Result accept(const HostMessage& m);
    /// Admits `incarnation` under `name` with its announce (sequence 1) accepted.
    void admit(const std::string& name, std::uint64_t incarnation);
    /// Forgets `name`: its later messages are unknown_participant.
    void forget(const std::string& name);
    bool admitted(const std::string& name) const;

    const RejectionCounts& rejections() const noexcept { return counts_; }
    std::uint64_t accepted() const noexcept { return accepted_; }

private:
    struct Sender {
        std::uint64_t incarnation = 0;
        std::uint64_t last_seq = 0;
    };
    Result reject(Rejection r);
    std::map<std::string, Sender, std::less<>> senders_;
    RejectionCounts counts_;
    std::uint64_t accepted_ = 0;
};

/// A participant's view of the host: what is addressed to it (its name and
/// incarnation), from the host that welcomed it, in order. Before the welcome
/// only a welcome (sequence 1) is accepted; it fixes the host's incarnation.
///
/// Copy/move: a value type. Thread safety: none (RemoteAccessor uses it under
/// its mutex).
class ParticipantInbox {
public:
    ParticipantInbox(std::string name, std::uint64_t incarnation);

    /// True if `m` is to be acted on (then its sequence number is consumed);
    /// false if it is dropped, `rejection` says why (and it is counted).
    bool accept(const ParticipantMessage& m, Rejection* rejection = nullptr);

    bool welcomed() const noexcept { return host_incarnation_ != 0; }
    std::uint64_t host_incarnation() const noexcept { return host_incarnation_; }
    const RejectionCounts& rejections() const noexcept { return counts_; }
    std::uint64_t accepted() const noexcept { return accepted_; }

private:
    bool reject(Rejection r, Rejection* out);
    std::string name_;
    std::uint64_t incarnation_;
    std::uint64_t host_incarnation_ = 0;
    std::uint64_t last_seq_ = 0;
    RejectionCounts counts_;
    std::uint64_t accepted_ = 0;
};

} // namespace simsync::dds::remote
