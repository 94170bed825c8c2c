#pragma once
// Internal: the Bridge's state, shared by the files that implement it, one
// concept each:
//   bridge.cpp              the public API: construction, close, the waits
//   bridge_inbox.cpp        reading: Cyclone's listeners post to the loop, which
//                           takes the samples and dispatches them
//   bridge_table.cpp        the participant table: joins, refusals, leaves,
//                           losses, revoked incarnations
//   bridge_grants.cpp       each participant's accessor on the handler: requests,
//                           grants, releases, withdrawals
//   bridge_outbox.cpp       writing: one writer per participant incarnation, and
//                           what waits for its reader to match
// Everything but the public API's waits and the listeners runs on the
// Bridge's loop thread. Not installed.

#include "admission.hpp"
#include "remote_dds.hpp"

#include <simsync/core/asio.hpp>
#include <simsync/dds/bridge.hpp>
#include <simsync/core/error.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace simsync::dds {

namespace detail {

using Guid = std::array<std::uint8_t, 16>;

// One host -> participant message, owned, until it is written (a welcome
// waits for its reader to match). The values are the wire's; the name, text
// and payload the wire views are kept here under the same names (hiding the
// views, which write_now points at them), and the kind as its enum.
struct Outgoing : remote::ToParticipantWire {
    dds_entity_t via = 0; // the writer it goes through
    Guid reader{};
    std::string participant;
    remote::ToParticipantKind kind = remote::ToParticipantKind::state;
    std::string text;
    std::vector<std::uint8_t> payload;
};

// The handler's state as the wire codes it.
std::uint8_t state_code(HandlerState s);

} // namespace detail

struct Bridge::Impl {
    using Guid = detail::Guid;
    using Outgoing = detail::Outgoing;

    SimSyncHandler& handler;
    std::shared_ptr<Participant> participant;
    BridgeConfig config;
    std::unique_ptr<EventLoop> own_loop;
    Executor exec;
    std::uint64_t incarnation = detail::random_incarnation();

    detail::Entity to_host_topic;
    detail::Entity to_participant_topic;
    detail::Entity reader; // deleted on the loop's thread (the drain uses it there)
    // Writes nothing: its liveliness (BridgeConfig::lease) tells the
    // participants that this host is there (remote::host_partition).
    detail::Entity alive_writer;
    // One writer per participant incarnation, in a partition of its own
    // (remote::participant_partition), created when it announces itself
    // (also to refuse it): what the host writes to one participant reaches
    // that participant's process only, and no host writer is matched by the
    // readers of two incarnations. A process that died is listed by Cyclone
    // until its DDS lease expires (10 s by default); its reader never
    // acknowledges, and a writer it matched fills its cache with what it owes
    // it, then blocks every write for 5 s and fails it: shared with other
    // incarnations (a restarted participant's grants, the refusals of a
    // supervisor's retries), such a writer stalled the whole Bridge. When an
    // incarnation is no longer registered (lost, revoked, refused, or left
    // without acknowledging) its writer is kept, listed in `idle_writers`: a
    // revoked one that comes back is answered through it, and deleting a
    // writer with samples it has not acknowledged blocks for Cyclone's linger
    // time. A kept writer goes once it has no matched reader and nothing held
    // for discovery (the process is gone), or, oldest first, beyond
    // BridgeConfig::kept_writers (with the record of a revoked incarnation
    // it served); and all at close. Loop thread only.
    using WriterKey = std::pair<std::string, std::uint64_t>; // name, incarnation
    std::map<WriterKey, detail::Entity> writers;
    std::list<WriterKey> idle_writers; // oldest first
    // Set once before the entities exist; the listeners post jobs holding a copy.
    std::weak_ptr<Impl> weak_self;
    std::atomic<bool> drain_posted{false};
    Subscription subscription;

    // The remote participants: touched on the loop's thread only.
    struct Remote {
        RemoteParticipantInfo info;
        dds_entity_t our_writer = 0; // the writer to it (owned by `writers`)
        Guid reader{};
        Accessor accessor;
        bool matched = false; // the writer has matched its reader: messages go out at once
        bool gone = false;
        // The publication handle of its own writer (from its announce's sample
        // info): liveliness events name it.
        dds_instance_handle_t their_writer = 0;
        // The lease its writer offers (nullopt: infinite), for the report.
        std::optional<WallClock::duration> lease;
        bool lost = false; // its lease expired (policy pause keeps it registered)
        std::uint64_t out_seq = 0;
        std::optional<std::uint64_t> pending; // the request in flight
        SimTime pending_time{};
        std::optional<std::uint64_t> cancelled; // the participant withdrew `pending`
        std::unique_ptr<boost::asio::cancellation_signal> cancel;
        std::optional<Access> held;
        std::uint64_t held_request = 0;
        // A request that came while a withdrawn one had not completed yet.
        std::optional<std::pair<std::uint64_t, SimTime>> deferred;
    };
    remote::HostInbox inbox;
    std::map<std::string, std::shared_ptr<Remote>> remotes;
    // Participants revoked because their lease expired, by name, until the
    // name joins again or that incarnation leaves: one that was only stopped
    // (a debugger, a network outage) and comes back gets `not_registered` for
    // its requests instead of silence.
    struct Revoked {
        std::uint64_t incarnation = 0;
        Guid reader{};
        std::uint64_t out_seq = 0;
    };
    std::map<std::string, Revoked> revoked;
    std::vector<Outgoing> waiting_for_match; // in the order written
    // Announces refused, by name and incarnation, with the answer: their
    // repeats get it again. At most kRefusedKept (then forgotten at once).
    static constexpr std::size_t kRefusedKept = 256;
    std::map<std::pair<std::string, std::uint64_t>, std::pair<remote::WelcomeRefusal, std::string>> refused;
    bool closing = false;

    // What other threads may ask.
    mutable std::mutex mutex;
    mutable std::condition_variable changed;
    BridgeStats stats;
    std::vector<std::string> names;
    // The handler has stopped (its stopped event, or stopped before the
    // subscription): the waits end.
    bool handler_stopped = false;

    // Who may speak, and for whom (admission.hpp).
    detail::Admission admission;

    Impl(SimSyncHandler& h, std::shared_ptr<Participant> p, BridgeConfig c)
        : handler(h), participant(std::move(p)), config(std::move(c)),
          admission(config.partition, config.allowed_names, config.max_participants)
    {
    }

    void start();
    void close();

    template <class F>
    void update(F&& f)
    {
        {
            std::lock_guard<std::mutex> guard(mutex);
            f(stats);
            stats.rejected = inbox.rejections();
            for (std::size_t i = 0; i < remote::kRejectionCount; ++i) {
                stats.rejected.by_reason[i] += decode_rejections.by_reason[i] + admission_rejections.by_reason[i];
            }
        }
        changed.notify_all();
    }

    remote::RejectionCounts decode_rejections; // loop thread
    remote::RejectionCounts admission_rejections; // loop thread

    // ---- Reading (bridge_inbox.cpp): Cyclone's listeners post to the loop,
    // which takes and dispatches the samples
    void drain();
    void handle(const simsync_remote_ToHost& sample, dds_instance_handle_t their_writer);
    // Whether the writer `their_writer` may speak for `name`: the one that
    // announced it (checked then), or one in its own partition.
    bool speaks_for(const std::string& name, dds_instance_handle_t their_writer) const;
    void post(void (Impl::*job)());
    // Cyclone's listeners. The Impl outlives its reader and writer (deleted
    // first, and dds_delete waits for a running listener); they only post,
    // never keep the Impl alive.
    static void on_data_available(dds_entity_t, void* arg);
    static void on_publication_matched(dds_entity_t, const dds_publication_matched_status_t, void* arg);
    // One call per change of one writer: alive_count down is a loss (not
    // alive, or gone), up from not alive is a renewal; a new writer (up
    // without a not-alive one) needs nothing.
    static void on_liveliness_changed(dds_entity_t, const dds_liveliness_changed_status_t st, void* arg);

    // ---- The participant table (bridge_table.cpp): joins, refusals, leaves,
    // losses, revoked incarnations
    // Refuses an announce, through a writer of that incarnation's own, kept
    // until its process is gone (see `writers`).
    void refuse_announce(const remote::HostMessage& m, const remote::Announce& a, remote::WelcomeRefusal why,
                         std::string text);
    void send_refusal(const remote::HostMessage& m, const remote::Announce& a, remote::WelcomeRefusal why,
                      std::string text);
    // A participant repeats its announce until it is welcomed (RemoteAccessor:
    // the host's reader may have matched it after the first). A repeat of one
    // admitted is not news (its welcome is sent or held for its reader); one
    // refused is answered again. True if `m` was such a repeat.
    bool repeated_announce(const remote::HostMessage& m);
    void on_announce(const remote::HostMessage& m, const remote::Announce& a,
                     dds_instance_handle_t their_writer);
    // By value: the caller's reference may be the map entry erased here.
    // Tells on_left last, once the participant is gone everywhere.
    void remove(std::shared_ptr<Remote> rec, LeaveReason reason);
    // A writer's liveliness changed (posted by the listener). Samples it wrote
    // before are taken first, so an announce is never behind its writer's loss.
    void on_liveliness(dds_instance_handle_t their_writer, bool alive);
    // Answers request `request` of a revoked participant `not_registered`; sent
    // once the writer matches its reader again (as a welcome is), or never.
    void refuse_revoked(const std::string& name, Revoked& r, std::uint64_t request, SimTime requested);
    // A message from a participant the Bridge does not know: if it is a revoked
    // one, its requests are refused `not_registered` and its leave forgets it.
    void answer_revoked(const remote::HostMessage& m);

    // ---- Each participant's accessor (bridge_grants.cpp): its requests, grants,
    // releases and withdrawals on the handler
    // The participant gave up on a request (timeout, stop_token). Whether the
    // handler has granted it yet or not, the participant holds nothing: a
    // grant it gets later is dropped there, and its access is released here,
    // declaring the granted time as its next request (a lockstep participant
    // keeps holding time at the instant it asked for, as a local one does).
    void on_cancel(Remote& rec, std::uint64_t request);
    void release_withdrawn(Remote& rec);
    void on_request(const std::shared_ptr<Remote>& rec, std::uint64_t seq, SimTime t);
    void on_completion(const std::shared_ptr<Remote>& rec, std::uint64_t seq, std::error_code ec,
                       Access access);
    // Answers request `seq` (granted or refused) and keeps a granted access.
    void complete(Remote& rec, std::uint64_t seq, std::error_code ec, Access access);
    void on_release(Remote& rec, const remote::Release& r);
    // A release and the next request in one message (its sequence `seq` is
    // the request's): the commands applied inside the access, then one
    // Accessor::async_release_and_request.
    void on_release_and_request(const std::shared_ptr<Remote>& rec, std::uint64_t seq,
                                const remote::ReleaseAndRequest& r);
    // Starts request `seq` for `t` on the handler, releasing `*held` in the
    // same operation if given; its completion comes on the loop.
    void start_request(const std::shared_ptr<Remote>& rec, std::uint64_t seq, SimTime t, Access* held);
    // Applies a release's commands inside `access` (BridgeConfig::apply_release);
    // false if that threw (counted as a payload failure by the caller).
    bool apply_commands(Remote& rec, Access& access, std::span<const std::uint8_t> commands);

    // ---- Writing (bridge_outbox.cpp): the writers, one per participant
    // incarnation, and what waits for a reader to match
    // Whether writer `w` has matched the reader whose GUID is `g`.
    static bool reader_matched(dds_entity_t w, const Guid& g);
    void write_now(const Outgoing& o);
    // Sends `o` once the writer has matched the reader it is for: a welcome
    // written before that would be lost (volatile), and every later message of
    // that participant keeps its place behind it.
    // Messages already held for that reader keep their place: nothing
    // overtakes them, so the participant sees its sequence without a gap.
    void send(Outgoing o, Remote* rec);
    void on_matched();
    Outgoing message_to(Remote& rec, remote::ToParticipantKind kind);
    // A writer in `partition` on the participant-bound topic; its matches
    // release the messages held for discovery.
    detail::Entity create_writer(const std::string& partition, WallClock::duration lease);
    dds_entity_t writer_for(const WriterKey& key);
    void count_writers();
    // Deletes the writer of an incarnation that is not registered, and what
    // is still held for discovery through it.
    void delete_writer(const WriterKey& key);
    // The writer of an incarnation that is no longer registered is kept,
    // within the bound.
    void keep_writer(const WriterKey& key);
    // The record of revoked incarnation `key`, if it is the name's.
    void forget_revoked(const WriterKey& key);
    // Kept writers that no reader matches any more, and that hold nothing
    // for a reader still being discovered, go, and with them the record of a
    // revoked incarnation they served: nobody is left to answer.
    void sweep_writers();
    void broadcast_state();

    // ---- The waits of the public API (bridge.cpp)
    void note_stopped();
    // The waits: `done` is checked with `mutex` held; see bridge.hpp.
    template <class Done>
    bool wait(WallClock::duration timeout, Done done) const;
};

} // namespace simsync::dds
