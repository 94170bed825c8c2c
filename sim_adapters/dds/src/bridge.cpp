#include "admission.hpp"
#include "remote_dds.hpp"

#include <simsync/core/asio.hpp>
#include <simsync/dds/bridge.hpp>
#include <simsync/core/error.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <list>
#include <map>
#include <mutex>
#include <optional>

namespace simsync::dds {

namespace {

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

std::uint8_t state_code(HandlerState s)
{
    switch (s) {
    case HandlerState::running: return 0;
    case HandlerState::paused: return 1;
    case HandlerState::stopped: return 2;
    }
    return 2;
}

} // namespace

struct Bridge::Impl {
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
        dds_entity_t out = 0; // its writer (owned by `writers`)
        Guid reader{};
        Accessor accessor;
        bool matched = false; // the writer has matched its reader: messages go out at once
        bool gone = false;
        // The publication handle of its writer (from its announce's sample
        // info): liveliness events name it.
        dds_instance_handle_t writer = 0;
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

    // ---------------------------------------------------------- writing
    // Whether writer `w` has matched the reader whose GUID is `g`.
    static bool reader_matched(dds_entity_t w, const Guid& g)
    {
        std::vector<dds_instance_handle_t> handles(16);
        dds_return_t n = dds_get_matched_subscriptions(w, handles.data(), handles.size());
        if (n > static_cast<dds_return_t>(handles.size())) {
            handles.resize(static_cast<std::size_t>(n) + 16);
            n = dds_get_matched_subscriptions(w, handles.data(), handles.size());
        }
        for (dds_return_t i = 0; i < std::min<dds_return_t>(n, static_cast<dds_return_t>(handles.size())); ++i) {
            dds_builtintopic_endpoint_t* ep = dds_get_matched_subscription_data(w, handles[static_cast<std::size_t>(i)]);
            if (!ep) continue;
            const bool same = std::memcmp(ep->key.v, g.data(), 16) == 0;
            dds_builtintopic_free_endpoint(ep);
            if (same) return true;
        }
        return false;
    }

    void write_now(const Outgoing& o)
    {
        remote::ToParticipantWire w = static_cast<const remote::ToParticipantWire&>(o);
        w.participant = o.participant;
        w.host_incarnation = incarnation;
        w.kind = static_cast<std::uint8_t>(o.kind);
        w.text = o.text;
        w.payload = o.payload;
        const simsync_remote_ToParticipant s = detail::sample_of(w);
        if (dds_write(o.via, &s) < 0) update([](BridgeStats& st) { ++st.write_failures; });
    }

    // Sends `o` once the writer has matched the reader it is for: a welcome
    // written before that would be lost (volatile), and every later message of
    // that participant keeps its place behind it.
    // Messages already held for that reader keep their place: nothing
    // overtakes them, so the participant sees its sequence without a gap.
    void send(Outgoing o, Remote* rec)
    {
        const bool queued = std::any_of(waiting_for_match.begin(), waiting_for_match.end(),
                                        [&](const Outgoing& w) { return w.reader == o.reader; });
        if (!queued && rec && rec->matched) {
            write_now(o);
            return;
        }
        if (!queued && reader_matched(o.via, o.reader)) {
            if (rec) rec->matched = true;
            write_now(o);
            return;
        }
        waiting_for_match.push_back(std::move(o));
        update([](BridgeStats& st) { ++st.held_for_discovery; });
    }

    void on_matched()
    {
        if (closing) return;
        sweep_writers();
        std::map<std::pair<dds_entity_t, Guid>, bool> matched; // asked once per writer and reader
        std::vector<Outgoing> still;
        for (Outgoing& o : waiting_for_match) {
            const std::pair<dds_entity_t, Guid> key{o.via, o.reader};
            auto it = matched.find(key);
            if (it == matched.end()) it = matched.emplace(key, reader_matched(o.via, o.reader)).first;
            if (it->second) {
                write_now(o);
            } else {
                still.push_back(std::move(o));
            }
        }
        waiting_for_match = std::move(still);
        for (auto& [name, rec] : remotes) {
            const auto it = matched.find({rec->out, rec->reader});
            if (it != matched.end() && it->second) rec->matched = true;
        }
    }

    Outgoing message_to(Remote& rec, remote::ToParticipantKind kind)
    {
        Outgoing o;
        o.via = rec.out;
        o.reader = rec.reader;
        o.participant = rec.info.name;
        o.target_incarnation = rec.info.incarnation;
        o.seq = ++rec.out_seq;
        o.kind = kind;
        return o;
    }

    // Refuses an announce, through a writer of that incarnation's own, kept
    // until its process is gone (see `writers`).
    void refuse_announce(const remote::HostMessage& m, const remote::Announce& a, remote::WelcomeRefusal why,
                         std::string text)
    {
        // Its repeats get the same answer, uncounted (repeated_announce).
        if (refused.size() >= kRefusedKept) refused.clear();
        refused[{m.participant, m.incarnation}] = {why, text};
        update([](BridgeStats& st) { ++st.refused_announces; });
        send_refusal(m, a, why, std::move(text));
    }

    void send_refusal(const remote::HostMessage& m, const remote::Announce& a, remote::WelcomeRefusal why,
                      std::string text)
    {
        const WriterKey key{m.participant, m.incarnation};
        Outgoing o;
        try {
            o.via = writer_for(key);
        } catch (const Error&) {
            update([](BridgeStats& st) { ++st.write_failures; });
            return;
        }
        o.reader = a.reply_reader;
        o.participant = m.participant;
        o.target_incarnation = m.incarnation;
        o.seq = 1;
        o.kind = remote::ToParticipantKind::welcome;
        o.error = static_cast<std::int32_t>(why);
        o.text = std::move(text);
        send(std::move(o), nullptr);
        keep_writer(key); // a refused incarnation is never registered
    }

    // A participant repeats its announce until it is welcomed (RemoteAccessor:
    // the host's reader may have matched it after the first). A repeat of one
    // admitted is not news (its welcome is sent or held for its reader); one
    // refused is answered again. True if `m` was such a repeat.
    bool repeated_announce(const remote::HostMessage& m)
    {
        if (m.kind() != remote::ToHostKind::announce) return false;
        if (const auto it = remotes.find(m.participant);
            it != remotes.end() && it->second->info.incarnation == m.incarnation) {
            return true;
        }
        const auto it = refused.find({m.participant, m.incarnation});
        if (it == refused.end()) return false;
        send_refusal(m, std::get<remote::Announce>(m.body), it->second.first, it->second.second);
        return true;
    }

    // --------------------------------------------------------- reading
    void drain()
    {
        drain_posted.store(false);
        if (closing || reader.get() <= 0) return;
        constexpr std::size_t kBatch = 16;
        for (;;) {
            void* samples[kBatch] = {};
            dds_sample_info_t infos[kBatch];
            const dds_return_t n = dds_take(reader.get(), samples, infos, kBatch, kBatch);
            if (n <= 0) return;
            for (dds_return_t i = 0; i < n; ++i) {
                const auto k = static_cast<std::size_t>(i);
                if (!infos[k].valid_data) continue; // a writer's unregistration: no message
                handle(*static_cast<const simsync_remote_ToHost*>(samples[k]), infos[k].publication_handle);
            }
            dds_return_loan(reader.get(), samples, n);
            if (static_cast<std::size_t>(n) < kBatch) return;
        }
    }

    void handle(const simsync_remote_ToHost& sample, dds_instance_handle_t writer_handle)
    {
        auto decoded = remote::decode(detail::wire_of(sample));
        if (!decoded) {
            // The inbox counts what it sees; decoding refusals are counted here.
            decode_rejections.add(decoded.rejection);
            update([](BridgeStats&) {});
            return;
        }
        const remote::HostMessage& m = *decoded.message;
        // Before the inbox: a message another participant sent for this name
        // must not advance its sequence.
        if (!speaks_for(m.participant, writer_handle)) {
            admission_rejections.add(remote::Rejection::not_its_name);
            update([](BridgeStats&) {});
            return;
        }
        if (repeated_announce(m)) return;
        const auto verdict = inbox.accept(m);
        using V = remote::HostInbox::Verdict;
        switch (verdict.verdict) {
        case V::rejected:
            if (verdict.rejection == remote::Rejection::unknown_participant) answer_revoked(m);
            update([](BridgeStats&) {});
            return;
        case V::new_announce:
            if (const auto why = admission.refuse_announce(m.participant, remotes.size())) {
                admission_rejections.add(*why);
                refuse_announce(m, std::get<remote::Announce>(m.body),
                                *why == remote::Rejection::name_not_allowed ? remote::WelcomeRefusal::not_allowed
                                                                            : remote::WelcomeRefusal::participant_limit,
                                admission.refusal_text(m.participant, *why));
                return;
            }
            on_announce(m, std::get<remote::Announce>(m.body), writer_handle);
            return;
        case V::taken_name: {
            if (const auto it = remotes.find(m.participant); it != remotes.end() && it->second->lost) {
                // A new incarnation of a participant lost under the pause
                // policy: it replaces the lost one.
                update([](BridgeStats& st) { ++st.replaced; });
                remove(it->second, LeaveReason::replaced);
                if (inbox.accept(m).verdict == V::new_announce) {
                    on_announce(m, std::get<remote::Announce>(m.body), writer_handle);
                }
                return;
            }
            const auto& a = std::get<remote::Announce>(m.body);
            refuse_announce(m, a, remote::WelcomeRefusal::duplicate_name,
                            "a remote participant named '" + m.participant + "' is already registered");
            return;
        }
        case V::apply: break;
        }
        const auto it = remotes.find(m.participant);
        if (it == remotes.end()) return; // admitted implies present
        const std::shared_ptr<Remote> rec = it->second;
        if (rec->lost) {
            // Lost (policy pause) and talking again: back from a debugger or an
            // outage, maybe through a writer Cyclone rediscovered.
            rec->lost = false;
            rec->writer = writer_handle;
            update([](BridgeStats& st) { ++st.regained; });
        }
        std::visit(
            [&](const auto& body) {
                using T = std::decay_t<decltype(body)>;
                if constexpr (std::is_same_v<T, remote::Request>) {
                    update([](BridgeStats& st) { ++st.requests; });
                    on_request(rec, m.seq, body.time);
                } else if constexpr (std::is_same_v<T, remote::Release>) {
                    on_release(*rec, body);
                } else if constexpr (std::is_same_v<T, remote::Cancel>) {
                    on_cancel(*rec, body.request);
                } else if constexpr (std::is_same_v<T, remote::Leave>) {
                    update([](BridgeStats& st) { ++st.leaves; });
                    remove(rec, LeaveReason::left);
                }
            },
            m.body);
    }

    // Whether the writer `writer_handle` may speak for `name`: the one that
    // announced it (checked then), or one in its own partition.
    bool speaks_for(const std::string& name, dds_instance_handle_t writer_handle) const
    {
        if (const auto it = remotes.find(name); it != remotes.end() && it->second->writer == writer_handle) return true;
        return admission.speaks_for(reader.get(), writer_handle, name);
    }

    // A writer in `partition` on the participant-bound topic; its matches
    // release the messages held for discovery.
    detail::Entity create_writer(const std::string& partition, WallClock::duration lease)
    {
        const detail::QosPtr wq = detail::make_remote_qos(partition, detail::Side::writer, lease);
        dds_listener_t* wl = dds_create_listener(this);
        dds_lset_publication_matched(wl, &on_publication_matched);
        const dds_entity_t w =
            dds_create_writer(participant->native_handle(), to_participant_topic.get(), wq.get(), wl);
        dds_delete_listener(wl);
        return detail::Entity(detail::check(w, "creating a DDS writer of the Bridge"));
    }

    dds_entity_t writer_for(const WriterKey& key)
    {
        idle_writers.remove(key);
        if (const auto it = writers.find(key); it != writers.end()) return it->second.get();
        // Infinite lease: the host's liveliness is `alive_writer`'s (see
        // remote::host_partition for why).
        detail::Entity w = create_writer(remote::participant_partition(config.partition, key.first, key.second),
                                         WallClock::duration::max());
        const dds_entity_t handle = w.get();
        writers.emplace(key, std::move(w));
        count_writers();
        return handle;
    }

    void count_writers()
    {
        update([n = writers.size()](BridgeStats& st) { st.writers = n; });
    }

    // Deletes the writer of an incarnation that is not registered, and what
    // is still held for discovery through it.
    void delete_writer(const WriterKey& key)
    {
        const auto it = writers.find(key);
        if (it == writers.end()) return;
        const dds_entity_t w = it->second.get();
        std::erase_if(waiting_for_match, [&](const Outgoing& o) { return o.via == w; });
        writers.erase(it); // may linger (see `writers`)
        idle_writers.remove(key);
        count_writers();
    }

    // The writer of an incarnation that is no longer registered is kept,
    // within the bound.
    void keep_writer(const WriterKey& key)
    {
        if (writers.count(key) == 0) return;
        idle_writers.remove(key);
        idle_writers.push_back(key);
        sweep_writers();
        while (idle_writers.size() > config.kept_writers) {
            const WriterKey oldest = idle_writers.front();
            delete_writer(oldest);
            forget_revoked(oldest);
        }
    }

    // The record of revoked incarnation `key`, if it is the name's.
    void forget_revoked(const WriterKey& key)
    {
        if (const auto r = revoked.find(key.first); r != revoked.end() && r->second.incarnation == key.second) {
            revoked.erase(r);
        }
    }

    // Kept writers that no reader matches any more, and that hold nothing
    // for a reader still being discovered, go, and with them the record of a
    // revoked incarnation they served: nobody is left to answer.
    void sweep_writers()
    {
        for (auto it = idle_writers.begin(); it != idle_writers.end();) {
            const WriterKey key = *it++;
            const dds_entity_t w = writers.at(key).get();
            const bool holding = std::any_of(waiting_for_match.begin(), waiting_for_match.end(),
                                             [&](const Outgoing& o) { return o.via == w; });
            if (!holding && dds_get_matched_subscriptions(w, nullptr, 0) == 0) {
                delete_writer(key);
                forget_revoked(key);
            }
        }
    }

    void on_announce(const remote::HostMessage& m, const remote::Announce& a, dds_instance_handle_t writer_handle)
    {
        Accessor accessor;
        try {
            accessor = handler.register_accessor(m.participant, a.options);
        } catch (const Error& e) {
            refuse_announce(m, a,
                            e.code() == errc::duplicate_name ? remote::WelcomeRefusal::duplicate_name
                                                             : remote::WelcomeRefusal::invalid,
                            e.what());
            return;
        }
        dds_entity_t out = 0;
        try {
            out = writer_for({m.participant, m.incarnation});
        } catch (const Error& e) {
            accessor.deregister();
            refuse_announce(m, a, remote::WelcomeRefusal::invalid, e.what());
            return;
        }
        inbox.admit(m.participant, m.incarnation);
        revoked.erase(m.participant);
        auto rec = std::make_shared<Remote>();
        rec->info = RemoteParticipantInfo{m.participant, a.options, m.incarnation};
        rec->out = out;
        rec->reader = a.reply_reader;
        rec->writer = writer_handle;
        rec->lease = detail::offered_lease(reader.get(), writer_handle);
        rec->accessor = std::move(accessor);
        remotes[m.participant] = rec;
        // Listed before the welcome goes out: once joined, a participant is listed.
        {
            std::lock_guard<std::mutex> guard(mutex);
            names.push_back(m.participant);
        }
        update([&](BridgeStats& st) { ++st.announces; });
        Outgoing o = message_to(*rec, remote::ToParticipantKind::welcome);
        o.step = handler.step_size().count();
        o.rounding = static_cast<std::uint8_t>(handler.rounding());
        o.state = state_code(handler.state());
        o.now = handler.now().time_since_epoch().count();
        send(std::move(o), rec.get());
        if (config.on_joined) {
            try {
                config.on_joined(rec->info);
            } catch (...) {
            }
        }
    }

    // The participant gave up on a request (timeout, stop_token). Whether the
    // handler has granted it yet or not, the participant holds nothing: a
    // grant it gets later is dropped there, and its access is released here,
    // declaring the granted time as its next request (a lockstep participant
    // keeps holding time at the instant it asked for, as a local one does).
    void on_cancel(Remote& rec, std::uint64_t request)
    {
        if (rec.pending == request) {
            rec.cancelled = request;
            if (rec.cancel) rec.cancel->emit(boost::asio::cancellation_type::terminal);
        } else if (rec.held && rec.held_request == request) {
            release_withdrawn(rec);
        } else if (rec.deferred && rec.deferred->first == request) {
            // Never started: answered as withdrawn, so every request gets one reply.
            Outgoing o = message_to(rec, remote::ToParticipantKind::grant);
            o.ref = request;
            o.requested = rec.deferred->second.time_since_epoch().count();
            o.error = static_cast<std::int32_t>(errc::cancelled);
            rec.deferred.reset();
            send(std::move(o), &rec);
            update([](BridgeStats& st) { ++st.refusals; });
        }
    }

    void release_withdrawn(Remote& rec)
    {
        Access access = std::move(*rec.held);
        rec.held.reset();
        if (access) access.release(access.granted_time());
        update([](BridgeStats& st) { ++st.withdrawn_grants; });
    }

    void on_request(const std::shared_ptr<Remote>& rec, std::uint64_t seq, SimTime t)
    {
        if (rec->pending && rec->cancelled == rec->pending && !rec->deferred) {
            rec->deferred.emplace(seq, t); // after the withdrawn one completes
            return;
        }
        if (rec->pending || rec->held) {
            update([](BridgeStats& st) { ++st.protocol_errors; });
            return;
        }
        rec->pending = seq;
        rec->pending_time = t;
        rec->cancel = std::make_unique<boost::asio::cancellation_signal>();
        std::weak_ptr<Impl> weak = weak_self;
        try {
            rec->accessor.async_request_access(
                t, boost::asio::bind_cancellation_slot(
                       rec->cancel->slot(),
                       boost::asio::bind_executor(asio_executor(exec),
                                                  [weak, rec, seq](std::error_code ec, Access access) {
                                                      if (auto self = weak.lock()) {
                                                          self->on_completion(rec, seq, ec, std::move(access));
                                                      }
                                                  })));
        } catch (const Error&) {
            rec->pending.reset();
            update([](BridgeStats& st) { ++st.protocol_errors; });
        }
    }

    void on_completion(const std::shared_ptr<Remote>& rec, std::uint64_t seq, std::error_code ec, Access access)
    {
        if (rec->pending == seq) rec->pending.reset();
        if (closing || rec->gone) return; // `access`, if granted, is released here
        complete(*rec, seq, ec, std::move(access));
        if (!rec->pending && rec->deferred) {
            const auto [next_seq, t] = *rec->deferred;
            rec->deferred.reset();
            on_request(rec, next_seq, t);
        }
    }

    // Answers request `seq` (granted or refused) and keeps a granted access.
    void complete(Remote& rec, std::uint64_t seq, std::error_code ec, Access access)
    {
        const bool withdrawn = rec.cancelled == seq;
        if (withdrawn) rec.cancelled.reset();
        Outgoing o = message_to(rec, remote::ToParticipantKind::grant);
        o.ref = seq;
        o.requested = access.requested_time().time_since_epoch().count();
        if (ec || withdrawn) {
            o.error = ec ? ec.value() : static_cast<std::int32_t>(errc::cancelled);
            if (!ec && access) {
                // Granted before the withdrawal took effect.
                rec.held.emplace(std::move(access));
                release_withdrawn(rec);
            }
            send(std::move(o), &rec);
            update([](BridgeStats& st) { ++st.refusals; });
            return;
        }
        o.granted = access.granted_time().time_since_epoch().count();
        o.grant_sequence = access.sequence();
        bool payload_failed = false;
        if (config.grant_payload) {
            try {
                o.payload = config.grant_payload(rec.info, access);
                if (o.payload.size() > remote::kMaxPayload) {
                    o.payload.clear();
                    payload_failed = true;
                }
            } catch (...) {
                o.payload.clear();
                payload_failed = true;
            }
        }
        rec.held.emplace(std::move(access));
        rec.held_request = seq;
        send(std::move(o), &rec);
        update([&](BridgeStats& st) {
            ++st.grants;
            if (payload_failed) ++st.payload_failures;
        });
    }

    void on_release(Remote& rec, const remote::Release& r)
    {
        if (!rec.held) {
            update([](BridgeStats& st) { ++st.protocol_errors; });
            return;
        }
        Access access = std::move(*rec.held);
        rec.held.reset();
        bool payload_failed = false;
        bool bad_bound = false;
        if (access && config.apply_release) {
            try {
                config.apply_release(rec.info, access, r.payload);
            } catch (...) {
                payload_failed = true;
            }
        }
        if (r.next_request) {
            try {
                access.release(*r.next_request);
            } catch (const Error&) {
                bad_bound = true;
                access.release();
            }
        } else {
            access.release();
        }
        update([&](BridgeStats& st) {
            ++st.releases;
            if (payload_failed) ++st.payload_failures;
            if (bad_bound) ++st.protocol_errors;
        });
    }

    // By value: the caller's reference may be the map entry erased here.
    // Tells on_left last, once the participant is gone everywhere.
    void remove(std::shared_ptr<Remote> rec, LeaveReason reason)
    {
        rec->gone = true;
        if (rec->pending && rec->cancel) rec->cancel->emit(boost::asio::cancellation_type::terminal);
        rec->held.reset(); // releases
        rec->accessor.deregister();
        inbox.forget(rec->info.name);
        remotes.erase(rec->info.name);
        std::erase_if(waiting_for_match, [&](const Outgoing& o) { return o.reader == rec->reader; });
        // A participant that left has acknowledged what it was sent (unless it
        // left in a hurry): its writer goes, without waiting for anything.
        // Otherwise it is kept, within the bound (see `writers`).
        if (reason != LeaveReason::closing) {
            const WriterKey key{rec->info.name, rec->info.incarnation};
            if (reason == LeaveReason::left && dds_wait_for_acks(rec->out, 0) == DDS_RETCODE_OK) {
                delete_writer(key);
            } else {
                keep_writer(key);
            }
        }
        {
            std::lock_guard<std::mutex> guard(mutex);
            std::erase(names, rec->info.name);
        }
        changed.notify_all();
        if (config.on_left) {
            try {
                config.on_left(rec->info, reason);
            } catch (...) {
            }
        }
    }

    void note_stopped()
    {
        {
            std::lock_guard<std::mutex> guard(mutex);
            handler_stopped = true;
        }
        changed.notify_all();
    }

    // The waits: `done` is checked with `mutex` held; see bridge.hpp.
    template <class Done>
    bool wait(WallClock::duration timeout, Done done) const
    {
        // Read before taking our lock, so that the two locks never nest;
        // a stop after this read arrives as the event.
        const bool stopped_before = handler.state() == HandlerState::stopped;
        std::unique_lock<std::mutex> lock(mutex);
        bool held = done();
        if (held || stopped_before) return held;
        auto ended = [&] {
            held = done();
            return held || handler_stopped;
        };
        // A timeout of duration::max() (or near it) waits for the condition
        // or the stop only.
        if (const WallTime deadline = deadline_after(timeout); deadline == WallTime::max()) {
            changed.wait(lock, ended);
        } else {
            changed.wait_until(lock, deadline, ended);
        }
        return held;
    }

    // A writer's liveliness changed (posted by the listener). Samples it wrote
    // before are taken first, so an announce is never behind its writer's loss.
    void on_liveliness(dds_instance_handle_t writer_handle, bool alive)
    {
        if (closing) return;
        drain();
        std::shared_ptr<Remote> rec;
        for (const auto& [name, r] : remotes) {
            if (r->writer == writer_handle) rec = r;
        }
        if (!rec) return; // left already, or not a participant we know
        if (alive) {
            if (rec->lost) {
                rec->lost = false;
                update([](BridgeStats& st) { ++st.regained; });
            }
            return;
        }
        if (rec->lost) return;
        rec->lost = true;
        // Its reader may be unmatched now (Cyclone drops a lost participant's
        // endpoints): hold what is written to it until it matches again.
        rec->matched = false;
        update([](BridgeStats& st) { ++st.lost; });
        Diagnostic d;
        d.kind = Diagnostic::Kind::accessor_ended;
        d.at = handler.now();
        d.accessor = rec->info.name;
        d.reason = make_error_code(errc::timed_out);
        std::string lease = "its DDS liveliness lease";
        if (rec->lease) {
            lease += " (" + format_seconds(std::chrono::duration_cast<SimDuration>(*rec->lease)) + " s)";
        }
        d.message = "simsync: remote participant '" + rec->info.name + "' lost at " + format_seconds(d.at) +
                    " s: " + lease +
                    " expired (its process died, the link to it is lost, or it is stopped longer than its lease)";
        if (config.on_lost == LostParticipantPolicy::revoke) {
            const std::optional<std::uint64_t> pending = rec->pending;
            remove(rec, LeaveReason::lost);
            // Remembered while its writer is kept (see `writers`).
            if (writers.count({rec->info.name, rec->info.incarnation}) != 0) {
                Revoked& r = revoked[rec->info.name];
                r = Revoked{rec->info.incarnation, rec->reader, rec->out_seq};
                if (pending) refuse_revoked(rec->info.name, r, *pending, rec->pending_time);
            }
            d.message += "; revoked, the simulation goes on";
        } else {
            handler.pause();
            d.message += "; the simulation is paused (policy pause): resume if it comes back, or revoke it or "
                         "start it again, then resume";
        }
        handler.report(d);
    }

    // Answers request `request` of a revoked participant `not_registered`; sent
    // once the writer matches its reader again (as a welcome is), or never.
    void refuse_revoked(const std::string& name, Revoked& r, std::uint64_t request, SimTime requested)
    {
        Outgoing o;
        // Through the writer it had (kept while it is revoked, as its record
        // is): behind what was written to it before, in one writer's order.
        const auto w = writers.find({name, r.incarnation});
        if (w == writers.end()) return;
        o.via = w->second.get();
        o.reader = r.reader;
        o.participant = name;
        o.target_incarnation = r.incarnation;
        o.seq = ++r.out_seq;
        o.kind = remote::ToParticipantKind::grant;
        o.ref = request;
        o.requested = requested.time_since_epoch().count();
        o.error = static_cast<std::int32_t>(errc::not_registered);
        send(std::move(o), nullptr);
        update([](BridgeStats& st) { ++st.refusals; });
    }

    // A message from a participant the Bridge does not know: if it is a revoked
    // one, its requests are refused `not_registered` and its leave forgets it.
    void answer_revoked(const remote::HostMessage& m)
    {
        const auto it = revoked.find(m.participant);
        if (it == revoked.end() || it->second.incarnation != m.incarnation) return;
        if (const auto* request = std::get_if<remote::Request>(&m.body)) {
            refuse_revoked(m.participant, it->second, m.seq, request->time);
        } else if (m.kind() == remote::ToHostKind::leave) {
            revoked.erase(it);
        }
    }

    void broadcast_state()
    {
        if (closing) return;
        const std::uint8_t state = state_code(handler.state());
        const std::int64_t now = handler.now().time_since_epoch().count();
        for (auto& [name, rec] : remotes) {
            Outgoing o = message_to(*rec, remote::ToParticipantKind::state);
            o.state = state;
            o.now = now;
            send(std::move(o), rec.get());
        }
    }

    void post(void (Impl::*job)())
    {
        try {
            exec.post([weak = weak_self, job] {
                if (auto self = weak.lock()) ((*self).*job)();
            });
        } catch (const Error&) {
            // The loop is gone: the Bridge is being destroyed.
        }
    }

    // Cyclone's listeners. The Impl outlives its reader and writer (deleted
    // first, and dds_delete waits for a running listener); they only post,
    // never keep the Impl alive.
    static void on_data_available(dds_entity_t, void* arg)
    {
        auto* impl = static_cast<Impl*>(arg);
        if (!impl->drain_posted.exchange(true)) impl->post(&Impl::drain);
    }
    static void on_publication_matched(dds_entity_t, const dds_publication_matched_status_t, void* arg)
    {
        static_cast<Impl*>(arg)->post(&Impl::on_matched);
    }
    // One call per change of one writer: alive_count down is a loss (not
    // alive, or gone), up from not alive is a renewal; a new writer (up
    // without a not-alive one) needs nothing.
    static void on_liveliness_changed(dds_entity_t, const dds_liveliness_changed_status_t st, void* arg)
    {
        auto* impl = static_cast<Impl*>(arg);
        bool alive = false;
        if (st.alive_count_change < 0) {
            alive = false;
        } else if (st.alive_count_change > 0 && st.not_alive_count_change < 0) {
            alive = true;
        } else {
            return;
        }
        const dds_instance_handle_t h = st.last_publication_handle;
        try {
            impl->exec.post([weak = impl->weak_self, h, alive] {
                if (auto self = weak.lock()) self->on_liveliness(h, alive);
            });
        } catch (const Error&) {
        }
    }

    remote::RejectionCounts decode_rejections; // loop thread
    remote::RejectionCounts admission_rejections; // loop thread
};

void Bridge::Impl::start()
{
    const dds_entity_t pp = participant->native_handle();
    to_host_topic = detail::create_to_host_topic(pp);
    to_participant_topic = detail::create_to_participant_topic(pp);
    alive_writer = create_writer(remote::host_partition(config.partition, incarnation), config.lease);

    // Every participant's own partition: where it alone may write (admission.hpp).
    const detail::QosPtr rq = detail::make_remote_qos(admission.reader_partition(), detail::Side::reader);
    dds_listener_t* rl = dds_create_listener(this);
    dds_lset_data_available(rl, &on_data_available);
    dds_lset_liveliness_changed(rl, &on_liveliness_changed);
    const dds_entity_t r = dds_create_reader(pp, to_host_topic.get(), rq.get(), rl);
    dds_delete_listener(rl);
    // Assigned on the loop: drain() reads it there.
    exec.sync([&] { reader = detail::Entity(detail::check(r, "creating the Bridge's DDS reader")); });
    post(&Impl::drain); // samples that arrived before `reader` was set

    subscription = handler.subscribe([weak = weak_self](const HandlerEvent& e) {
        auto self = weak.lock();
        if (!self) return;
        if (e.kind == HandlerEvent::Kind::stopped) self->note_stopped();
        self->post(&Impl::broadcast_state);
    });
    // Stopped before the subscription: no event will come.
    if (handler.state() == HandlerState::stopped) note_stopped();
}

void Bridge::Impl::close()
{
    // On the loop's thread. No sample is taken after this.
    reader.reset();
    // Participants learn that the host is gone: pending requests end `stopped`.
    for (auto& [name, rec] : remotes) {
        Outgoing o = message_to(*rec, remote::ToParticipantKind::state);
        o.state = state_code(HandlerState::stopped);
        o.now = handler.now().time_since_epoch().count();
        send(std::move(o), rec.get());
    }
    closing = true;
    while (!remotes.empty()) remove(remotes.begin()->second, LeaveReason::closing);
    // Deleting a writer waits (up to Cyclone's linger time) until its readers
    // have acknowledged what it wrote, so the participants hear of the stop.
    idle_writers.clear();
    writers.clear();
    count_writers();
}

const char* to_string(LeaveReason reason) noexcept
{
    switch (reason) {
    case LeaveReason::left: return "left";
    case LeaveReason::lost: return "lost";
    case LeaveReason::replaced: return "replaced";
    case LeaveReason::closing: return "closing";
    }
    return "?";
}

const char* to_string(LostParticipantPolicy policy) noexcept
{
    switch (policy) {
    case LostParticipantPolicy::revoke: return "revoke";
    case LostParticipantPolicy::pause: return "pause";
    }
    return "?";
}

Bridge::Bridge(SimSyncHandler& handler, std::shared_ptr<Participant> participant, BridgeConfig config,
               Executor executor)
{
    if (!participant) throw Error(errc::invalid_argument, "Bridge: the participant is null");
    detail::check_partition(config.partition, "Bridge");
    detail::check_lease(config.lease, "Bridge");
    impl_ = std::make_shared<Impl>(handler, std::move(participant), std::move(config));
    if (!executor) {
        impl_->own_loop = std::make_unique<EventLoop>();
        executor = impl_->own_loop->executor();
    }
    impl_->exec = executor;
    impl_->weak_self = impl_;
    impl_->start();
}

Bridge::~Bridge()
{
    impl_->subscription.reset();
    try {
        impl_->exec.sync([this] { impl_->close(); });
    } catch (...) {
    }
    // No listener runs after these deletions (dds_delete waits for one running).
    impl_->alive_writer.reset();
    impl_->to_host_topic.reset();
    impl_->to_participant_topic.reset();
    impl_->own_loop.reset();
}

std::vector<std::string> Bridge::participants() const
{
    std::lock_guard<std::mutex> guard(impl_->mutex);
    return impl_->names;
}

BridgeStats Bridge::stats() const
{
    std::lock_guard<std::mutex> guard(impl_->mutex);
    return impl_->stats;
}

std::uint64_t Bridge::incarnation() const noexcept { return impl_->incarnation; }

bool Bridge::wait_for_participants(std::size_t count, WallClock::duration timeout) const
{
    return impl_->wait(timeout, [&] { return impl_->names.size() >= count; });
}

std::vector<std::string> Bridge::wait_for_participants(const std::vector<std::string>& names,
                                                       WallClock::duration timeout) const
{
    std::vector<std::string> missing;
    impl_->wait(timeout, [&] {
        missing.clear();
        for (const std::string& name : names) {
            if (std::find(impl_->names.begin(), impl_->names.end(), name) == impl_->names.end()) {
                missing.push_back(name);
            }
        }
        return missing.empty();
    });
    return missing;
}

bool Bridge::wait_until(const std::function<bool(const BridgeStats&)>& done, WallClock::duration timeout) const
{
    return impl_->wait(timeout, [&] { return done(impl_->stats); });
}

} // namespace simsync::dds
