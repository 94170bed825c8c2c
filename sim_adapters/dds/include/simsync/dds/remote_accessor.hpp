#pragma once
/// @file
/// The participant side of remote participants: a RemoteAccessor is an accessor
/// of a SimSyncHandler in another process (or machine), reached over DDS through
/// the host's simsync::dds::Bridge, with the local Accessor's request/release
/// contract. Moving a sensor or controller thread into another process changes
/// its construction, and the world is reached through payloads instead of
/// `Access::world()`.

#include <simsync/core/accessor.hpp>
#include <simsync/core/handler.hpp>
#include <simsync/dds/domain.hpp>
#include <simsync/dds/remote_messages.hpp>

#include <cstdint>
#include <memory>
#include <span>
#include <stop_token>
#include <string>
#include <vector>

namespace simsync::dds {

/// Configuration of a RemoteAccessor. A value type.
struct RemoteAccessorConfig {
    /// The DDS partition; the host's Bridge must use the same one (no
    /// wildcard). The participant writes in "<partition>/<its escaped name>"
    /// (its own: the host believes a message for a name only from that
    /// name's partition) and reads in "<partition>/<escaped name>/<incarnation>"
    /// (remote::participant_partition), where the host writes to it alone:
    /// docs/remote.md, "Topics and QoS".
    std::string partition = remote::kPartition;
    /// How long the constructor waits for a host to match and welcome it.
    WallClock::duration join_timeout = std::chrono::seconds(10);
    /// The liveliness lease its writer offers (DDS automatic liveliness,
    /// asserted by Cyclone for as long as this process runs and its link
    /// works): when the host hears nothing from it for that long, the host's
    /// Bridge takes it for lost and acts per BridgeConfig::on_lost (revoke it,
    /// or pause the simulation). Must be > 0; WallClock::duration::max() is
    /// infinite (never taken for lost). A process that may stand still longer
    /// (stopped in a debugger) needs a longer lease, or the host's pause policy.
    WallClock::duration lease = std::chrono::seconds(1);
};

class RemoteAccess;

namespace detail {
struct RemoteState;

// The type-erased completion of RemoteAccessor::async_request_access;
// simsync/dds/remote_asio.hpp makes one from an Asio completion handler.
// `complete` is called exactly once, never with the accessor's lock held, and
// must not run the handler in place (it posts it).
class RemoteCompletion {
public:
    virtual ~RemoteCompletion() = default;
    virtual void complete(std::error_code error, RemoteAccess access) = 0;
};

// Identifies one asynchronous request, for its cancellation.
struct RemoteTicket {
    std::weak_ptr<RemoteState> state;
    std::uint64_t request = 0;
};
// Withdraws the request if it is still pending (completing it with
// errc::cancelled); no-op otherwise. Any thread.
void cancel_remote(const RemoteTicket& ticket) noexcept;
} // namespace detail

/// A remote access: granted at one simulated instant by the host, or the
/// reason why not. What Access is to a local accessor, without `world()`: the
/// host fills `payload()` (observations) inside the access, and applies the
/// bytes given to `release` (commands) inside it, at the granted instant,
/// before the host releases it.
///
/// Copy: no. Move: yes. Thread safety: as Access (one thread at a time).
/// Destroying a held one releases it (without a payload).
class RemoteAccess {
public:
    RemoteAccess() noexcept = default;
    RemoteAccess(RemoteAccess&& other) noexcept;
    RemoteAccess& operator=(RemoteAccess&& other) noexcept;
    RemoteAccess(const RemoteAccess&) = delete;
    RemoteAccess& operator=(const RemoteAccess&) = delete;
    ~RemoteAccess();

    /// True while held (granted and not released).
    explicit operator bool() const noexcept { return held_; }
    /// Why none was granted: time_passed, stopped, timed_out, not_registered,
    /// cancelled, world_failed (empty when one was granted).
    std::error_code error() const noexcept { return error_; }
    SimTime granted_time() const noexcept { return granted_; }
    SimTime requested_time() const noexcept { return requested_; }
    /// The grant's position in the host handler's total order of grants.
    std::uint64_t sequence() const noexcept { return sequence_; }
    /// The bytes the host sent with the grant (BridgeConfig::grant_payload).
    std::span<const std::uint8_t> payload() const noexcept { return payload_; }

    /// Releases; the host applies `commands` inside the access first
    /// (BridgeConfig::apply_release). A lockstep participant then holds time at
    /// `granted_time() + lookahead`. No-op if not held.
    /// @throws simsync::Error (invalid_argument) if `commands` is above
    ///         remote::kMaxPayload; the access is then still held.
    void release(std::span<const std::uint8_t> commands = {});
    /// Releases and, atomically on the host, declares the next request's time
    /// (see Access::release(SimTime)).
    /// @throws simsync::Error (invalid_argument) if `next_request` is before the
    ///         granted time or `commands` too large; the access is then still held.
    void release(SimTime next_request, std::span<const std::uint8_t> commands = {});

private:
    friend class RemoteAccessor;
    friend struct detail::RemoteState;
    std::shared_ptr<detail::RemoteState> state_;
    bool held_ = false;
    std::error_code error_;
    SimTime requested_{};
    SimTime granted_{};
    std::uint64_t sequence_ = 0;
    std::vector<std::uint8_t> payload_;
};

/// An accessor of a host's SimSyncHandler, in this process, over DDS: the host's
/// Bridge registers it under `name` with `options` (kind, mode, priority, first
/// request, lookahead) and serves its requests under the handler's grant rule and
/// order, exactly as a local accessor's.
///
/// Construction joins: it waits until a host in the domain and partition has
/// matched it, announces itself, and waits for the welcome, from which it learns
/// the simulation's step, rounding, state and current time.
/// Requests are blocking, on the calling thread, or asynchronous
/// (async_request_access, completed on the handler's executor); it has no
/// thread of its own: Cyclone's listener hands replies over. Every message it
/// sends carries its incarnation (random per object) and a sequence number;
/// what it receives is checked by a remote::ParticipantInbox (its name, its
/// incarnation, the host that welcomed it, in order); what fails is dropped and
/// counted (`rejections`).
///
/// Liveness: its writer offers RemoteAccessorConfig::lease (see there); in
/// turn it watches the lease of the host's writer (BridgeConfig::lease): when
/// the host's process dies or the link to it is lost, a pending request ends
/// `stopped`, state() becomes stopped, host_lost() true, and later requests
/// return `stopped` at once (nothing hangs on a host that is gone). A
/// participant the host has revoked must be constructed again to rejoin.
///
/// A request that ends on this side (timeout, stop_token) withdraws it at the
/// host; if the host had granted it already, the access is released at once,
/// declaring its granted time as the next request's (so a lockstep participant
/// holds time at the instant it asked for, as a local one does).
///
/// Copy/move: neither. Thread safety: one request at a time (a second one while
/// one is pending or an access is held throws `busy`); the observers from any
/// thread. Destruction deregisters it at the host, which releases an access
/// still held (a RemoteAccess released later writes nothing); a RemoteAccess
/// must not outlive the accessor's Participant.
class RemoteAccessor {
public:
    /// Joins the host (see the class comment).
    /// @throws simsync::Error: invalid_argument for a bad name (remote::check_name),
    ///         a null participant or a lease <= 0; duplicate_name if the host refuses the name
    ///         (its text says why); timed_out if no host matched or answered
    ///         within `config.join_timeout`; invalid_state if the host refused it
    ///         otherwise or Cyclone refuses an entity.
    RemoteAccessor(std::shared_ptr<Participant> participant, std::string name, AccessorOptions options = {},
                   RemoteAccessorConfig config = {});
    ~RemoteAccessor();
    RemoteAccessor(const RemoteAccessor&) = delete;
    RemoteAccessor& operator=(const RemoteAccessor&) = delete;

    /// Blocks until the access at `t` is granted or refused by the host; a stop
    /// requested on `stop` withdraws it (`cancelled`).
    RemoteAccess request_access(SimTime t, std::stop_token stop = {});
    /// As request_access, but gives up with `timed_out` at the wall-clock `deadline`.
    RemoteAccess request_access_until(SimTime t, WallTime deadline, std::stop_token stop = {});
    /// As request_access, but gives up with `timed_out` after `timeout` of wall time.
    RemoteAccess request_access_for(SimTime t, WallClock::duration timeout, std::stop_token stop = {});
    /// Releases `held` (the host applies `commands` inside it first, as
    /// RemoteAccess::release does) and asks for `next` in one message, then
    /// blocks as request_access does: what `held.release(next, commands)`
    /// followed by `request_access(next, stop)` does, with the same order and
    /// determinism (on the host, Accessor::release_and_request: until it is
    /// granted, the request holds time at `next`), in one sample each way per
    /// step instead of two from the participant. `held` may be empty (a plain
    /// request); it is empty on return unless the call throws.
    /// @code
    /// simsync::dds::RemoteAccess a = controller.request_access(t);
    /// while (a) {
    ///     t += period;
    ///     a = controller.release_and_request(std::move(a), t, decide(a.payload()));
    /// }
    /// @endcode
    /// @throws simsync::Error: invalid_argument if `held` is another
    ///         accessor's, `next` is before its granted time or `commands`
    ///         above remote::kMaxPayload (`held` is then still held); busy if a
    ///         request is pending.
    RemoteAccess release_and_request(RemoteAccess&& held, SimTime next, std::span<const std::uint8_t> commands = {},
                                     std::stop_token stop = {});
    /// Starts a request for `t` and returns at once; `token` says how it
    /// completes, with the signature `void(std::error_code, RemoteAccess)`: a
    /// callback bound to an executor, `boost::asio::use_future`,
    /// `boost::asio::use_awaitable`, ... The handler is always posted to its
    /// associated executor (Asio's system executor if it has none), never run
    /// on Cyclone's thread nor inside this call. Terminal, partial or total
    /// cancellation through its cancellation slot withdraws the request
    /// (`cancelled`), as a timeout does for a blocking one. Destroying the
    /// RemoteAccessor completes a pending one with `not_registered`.
    /// Defined in simsync/dds/remote_asio.hpp: include it.
    /// @throws simsync::Error (busy) if a request is pending or an access held.
    template <class CompletionToken>
    auto async_request_access(SimTime t, CompletionToken&& token);
    /// The asynchronous release_and_request: releases `held` with `commands`
    /// and starts the request for `next` in one message, completing as
    /// async_request_access does. A deferred token (an awaitable) sends it when
    /// it starts. Defined in simsync/dds/remote_asio.hpp.
    /// @throws simsync::Error as release_and_request (then `held` is still
    ///         held, unless the token defers the start).
    template <class CompletionToken>
    auto async_release_and_request(RemoteAccess&& held, SimTime next, std::vector<std::uint8_t> commands,
                                   CompletionToken&& token);

    const std::string& name() const noexcept;
    const AccessorOptions& options() const noexcept;
    /// The host handler's step and rounding (from the welcome).
    SimDuration step_size() const noexcept;
    Rounding rounding() const noexcept;
    /// The simulation's state and time as last heard from the host (welcome,
    /// grants, state changes).
    HandlerState state() const;
    SimTime now() const;
    /// Blocks until the host has said the simulation is in `state` (or it is
    /// already known to be), or `timeout` passes. @return whether it is.
    bool wait_for_state(HandlerState state, WallClock::duration timeout) const;
    std::uint64_t incarnation() const noexcept;
    /// True once the liveliness lease of the host that welcomed it expired
    /// (the host's process died or the link is lost); state() is then stopped.
    bool host_lost() const;
    /// Samples dropped, by reason.
    remote::RejectionCounts rejections() const;
    /// Blocks until at least `total` samples have been dropped in all, or
    /// `timeout` passes. @return whether they have.
    bool wait_for_rejections(std::uint64_t total, WallClock::duration timeout) const;

private:
    // The engine's side of async_request_access and async_release_and_request
    // (simsync/dds/remote_asio.hpp): `held`, if given, is released with
    // `commands` in the request's message.
    // async_release_and_request's checks, made before `held` moves into the
    // initiation: an access refused there must stay with the caller, held.
    void check_async_release(const RemoteAccess& held, SimTime next, std::span<const std::uint8_t> commands) const;
    detail::RemoteTicket start_async(SimTime t, std::unique_ptr<detail::RemoteCompletion> completion,
                                     RemoteAccess* held = nullptr, std::span<const std::uint8_t> commands = {});

    std::shared_ptr<detail::RemoteState> state_;
};

} // namespace simsync::dds
