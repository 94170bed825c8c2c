#include "remote_dds.hpp"

#include <simsync/dds/remote_accessor.hpp>
#include <simsync/core/error.hpp>

#include <algorithm>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

namespace simsync::dds {

namespace detail {

struct RemoteState {
    std::shared_ptr<Participant> participant;
    std::string name;
    AccessorOptions options;
    RemoteAccessorConfig config;
    std::uint64_t incarnation = random_incarnation();

    Entity to_host_topic;
    Entity to_participant_topic;
    Entity writer;
    Entity reader;
    // Reads nothing: watches the liveliness of the welcoming host's liveliness
    // writer (remote::host_partition), created once the welcome came.
    Entity host_alive_reader;

    std::mutex write_mutex; // sequence numbers in the order written
    std::uint64_t out_seq = 0;
    bool left = false;

    mutable std::mutex mutex;
    mutable std::condition_variable_any changed;
    remote::ParticipantInbox inbox;
    std::optional<remote::Welcome> welcome;
    HandlerState state = HandlerState::running;
    SimTime now{};
    // The publication handle of the host's writer to this participant (from
    // the welcome's sample info), the host's incarnation, and whether the host
    // is lost: its liveliness writer's lease expired (or that writer, or the
    // writer to this participant, is gone).
    dds_instance_handle_t host_writer = 0;
    std::uint64_t host_incarnation = 0;
    bool host_lost = false;
    std::optional<std::uint64_t> waiting_for; // the request whose reply a caller waits for
    std::optional<remote::Grant> reply;
    bool busy = false;
    bool holding = false;
    // An asynchronous request's completion (for `waiting_for`), and the
    // completions the listener has decided and will run once it unlocks.
    std::unique_ptr<RemoteCompletion> async;
    SimTime async_requested{};
    std::vector<std::pair<std::unique_ptr<RemoteCompletion>, RemoteAccess>> ready;
    std::weak_ptr<RemoteState> self;

    static RemoteAccess refusal(SimTime requested, std::error_code error)
    {
        RemoteAccess a;
        a.requested_ = requested;
        a.error_ = error;
        return a;
    }

    // Under `mutex`: the access a reply grants (or its refusal); a granted one is held.
    RemoteAccess accept_reply(remote::Grant g)
    {
        if (g.error) return refusal(g.requested, g.error);
        RemoteAccess a;
        a.state_ = self.lock();
        a.held_ = true;
        a.requested_ = g.requested;
        a.granted_ = g.granted;
        a.sequence_ = g.grant_sequence;
        a.payload_ = std::move(g.payload);
        holding = true;
        return a;
    }

    // Under `mutex`: ends the pending asynchronous request with `error`
    // (its completion runs once the lock is released).
    void end_async(std::error_code error)
    {
        if (!async) return;
        waiting_for.reset();
        busy = false;
        ready.emplace_back(std::move(async), refusal(async_requested, error));
    }

    void run_ready()
    {
        std::vector<std::pair<std::unique_ptr<RemoteCompletion>, RemoteAccess>> due;
        {
            std::lock_guard<std::mutex> guard(mutex);
            due.swap(ready);
        }
        for (auto& [completion, access] : due) completion->complete(access.error(), std::move(access));
    }

    RemoteState(std::string n, std::uint64_t inc) : name(n), inbox(std::move(n), inc) {}
    ~RemoteState()
    {
        // The readers first: dds_delete waits for a running listener, which uses this object.
        host_alive_reader.reset();
        reader.reset();
        writer.reset();
        to_participant_topic.reset();
        to_host_topic.reset();
    }

    // Writes one message with the next sequence number; returns it (0 if not written).
    // `again`: write the message of that sequence number once more (the
    // announce, repeated until welcomed) instead of the next one.
    std::uint64_t write(remote::ToHostKind kind, const std::function<void(remote::ToHostWire&)>& fill,
                        const std::function<void(std::uint64_t)>& before_write = {}, std::uint64_t again = 0)
    {
        std::lock_guard<std::mutex> guard(write_mutex);
        if (left) return 0;
        remote::ToHostWire w;
        w.participant = name;
        w.incarnation = incarnation;
        w.seq = again != 0 ? again : out_seq + 1;
        w.kind = static_cast<std::uint8_t>(kind);
        fill(w);
        if (before_write) before_write(w.seq);
        const simsync_remote_ToHost s = sample_of(w);
        if (dds_write(writer.get(), &s) < 0) return 0;
        if (again == 0) ++out_seq;
        return w.seq;
    }

    // Writes a request for `t`. Before the write (the reply may arrive before
    // it returns) it becomes the request waited for, completed by
    // `*completion` if given (then moved from). With `release`: the held
    // access is released in the same message, with those commands
    // (RELEASE_AND_REQUEST), and no longer held.
    std::uint64_t write_request(SimTime t, std::unique_ptr<RemoteCompletion>* completion = nullptr,
                                std::optional<std::span<const std::uint8_t>> release = std::nullopt)
    {
        return write(
            release ? remote::ToHostKind::release_and_request : remote::ToHostKind::request,
            [&](remote::ToHostWire& m) {
                m.time = t.time_since_epoch().count();
                if (release) {
                    m.has_time = true;
                    m.payload = *release;
                }
            },
            [&](std::uint64_t next) {
                std::lock_guard<std::mutex> guard(mutex);
                waiting_for = next;
                reply.reset();
                if (release) holding = false;
                if (completion) {
                    async = std::move(*completion);
                    async_requested = t;
                }
            });
    }

    // Waits for the reply to request `seq` for `t` (0: it was not written),
    // as request_access_until does; `busy` is set and ends here.
    RemoteAccess await_reply(std::uint64_t seq, SimTime t, WallTime deadline, std::stop_token stop)
    {
        RemoteAccess access;
        access.requested_ = t;
        std::unique_lock<std::mutex> lock(mutex);
        if (seq == 0) {
            busy = false;
            waiting_for.reset();
            access.error_ = make_error_code(errc::stopped);
            return access;
        }
        auto answered = [&] { return reply.has_value() || state == HandlerState::stopped; };
        if (deadline == WallTime::max()) {
            changed.wait(lock, stop, answered);
        } else {
            changed.wait_until(lock, stop, deadline, answered);
        }
        busy = false;
        waiting_for.reset();
        if (reply) {
            remote::Grant g = std::move(*reply);
            reply.reset();
            return accept_reply(std::move(g));
        }
        // Not answered: withdraw it at the host (which releases it if it granted
        // it meanwhile); its reply, no longer waited for, is dropped when it comes.
        const bool host_stopped = state == HandlerState::stopped;
        lock.unlock();
        if (!host_stopped) {
            write(remote::ToHostKind::cancel, [&](remote::ToHostWire& m) { m.ref = seq; });
        }
        access.error_ = make_error_code(host_stopped                  ? errc::stopped
                                        : stop.stop_requested()       ? errc::cancelled
                                                                      : errc::timed_out);
        return access;
    }

    void on_data(dds_entity_t rd)
    {
        constexpr std::size_t kBatch = 16;
        for (;;) {
            void* samples[kBatch] = {};
            dds_sample_info_t infos[kBatch];
            const dds_return_t n = dds_take(rd, samples, infos, kBatch, kBatch);
            if (n <= 0) return;
            {
                std::lock_guard<std::mutex> guard(mutex);
                for (dds_return_t i = 0; i < n; ++i) {
                    const auto k = static_cast<std::size_t>(i);
                    if (!infos[k].valid_data) continue;
                    handle(*static_cast<const simsync_remote_ToParticipant*>(samples[k]), infos[k].publication_handle);
                }
            }
            changed.notify_all();
            run_ready();
            dds_return_loan(rd, samples, n);
            if (static_cast<std::size_t>(n) < kBatch) return;
        }
    }

    // Under `mutex`.
    void handle(const simsync_remote_ToParticipant& sample, dds_instance_handle_t writer_handle)
    {
        auto decoded = remote::decode(wire_of(sample));
        if (!decoded) {
            decode_rejections.add(decoded.rejection);
            return;
        }
        const remote::ParticipantMessage& m = *decoded.message;
        if (!inbox.accept(m)) return;
        if (const auto* w = std::get_if<remote::Welcome>(&m.body)) {
            welcome = *w;
            host_writer = writer_handle;
            host_incarnation = m.host_incarnation;
            if (w->refusal == remote::WelcomeRefusal::none) {
                state = w->state;
                now = w->now;
            }
        } else if (const auto* g = std::get_if<remote::Grant>(&m.body)) {
            if (!g->error && g->granted > now) now = g->granted;
            if (waiting_for == g->request && async) {
                waiting_for.reset();
                busy = false;
                ready.emplace_back(std::move(async), accept_reply(*g));
            } else if (waiting_for == g->request) {
                reply = *g;
            }
            // Else a reply to a request given up on (no longer `waiting_for`):
            // dropped; the host releases such an access itself.
        } else if (const auto* s = std::get_if<remote::StateChange>(&m.body)) {
            state = s->state;
            if (s->now > now) now = s->now;
            if (state == HandlerState::stopped) end_async(make_error_code(errc::stopped));
        }
    }

    static void on_data_available(dds_entity_t rd, void* arg) { static_cast<RemoteState*>(arg)->on_data(rd); }

    // The host's writer to this participant is gone (alive count down for its
    // handle; its lease is infinite, so it is never merely not alive): the
    // host closed, or Cyclone dropped its process. (A reply that arrived
    // before is still taken, by the data listener, and answers its request if
    // that has not ended yet.)
    static void on_liveliness_changed(dds_entity_t, const dds_liveliness_changed_status_t st, void* arg)
    {
        if (st.alive_count_change >= 0) return;
        auto* self = static_cast<RemoteState*>(arg);
        {
            std::lock_guard<std::mutex> guard(self->mutex);
            if (self->host_writer == 0 || st.last_publication_handle != self->host_writer) return;
        }
        self->lose_host();
    }

    // The host's liveliness writer, the only one in its partition, lost its
    // liveliness or is gone: the host's process died or the link to it is lost.
    static void on_host_liveliness_changed(dds_entity_t, const dds_liveliness_changed_status_t st, void* arg)
    {
        if (st.alive_count_change < 0) static_cast<RemoteState*>(arg)->lose_host();
    }

    void lose_host()
    {
        {
            std::lock_guard<std::mutex> guard(mutex);
            if (host_lost) return;
            host_lost = true;
            state = HandlerState::stopped;
            end_async(make_error_code(errc::stopped));
        }
        changed.notify_all();
        run_ready();
    }

    remote::RejectionCounts decode_rejections; // under `mutex`

    // Under `mutex`.
    remote::RejectionCounts all_rejections() const
    {
        remote::RejectionCounts c = inbox.rejections();
        for (std::size_t i = 0; i < remote::kRejectionCount; ++i) c.by_reason[i] += decode_rejections.by_reason[i];
        return c;
    }

    // Throws (the access still held) for commands above the limit or a next
    // request before the granted time.
    static void check_release(const RemoteAccess& access, std::optional<SimTime> next,
                              std::span<const std::uint8_t> commands)
    {
        if (commands.size() > remote::kMaxPayload) {
            throw Error(errc::invalid_argument, "RemoteAccess::release: a payload of " +
                                                    std::to_string(commands.size()) + " bytes, at most " +
                                                    std::to_string(remote::kMaxPayload));
        }
        if (next && *next < access.granted_time()) {
            throw Error(errc::invalid_argument, "RemoteAccess::release: the next request " +
                                                    format_seconds(next->time_since_epoch()) +
                                                    " s is before the granted time " +
                                                    format_seconds(access.granted_time().time_since_epoch()) + " s");
        }
    }

    void release(const RemoteAccess& access, std::optional<SimTime> next, std::span<const std::uint8_t> commands)
    {
        check_release(access, next, commands);
        write(remote::ToHostKind::release, [&](remote::ToHostWire& m) {
            m.has_time = next.has_value();
            m.time = next ? next->time_since_epoch().count() : 0;
            m.payload = commands;
        });
        std::lock_guard<std::mutex> guard(mutex);
        holding = false;
    }
};

} // namespace detail

// ------------------------------------------------------------ RemoteAccess

RemoteAccess::RemoteAccess(RemoteAccess&& o) noexcept
    : state_(std::move(o.state_)), held_(o.held_), error_(o.error_), requested_(o.requested_), granted_(o.granted_),
      sequence_(o.sequence_), payload_(std::move(o.payload_))
{
    o.held_ = false;
}

RemoteAccess& RemoteAccess::operator=(RemoteAccess&& o) noexcept
{
    if (this != &o) {
        try {
            release();
        } catch (...) {
        }
        state_ = std::move(o.state_);
        held_ = o.held_;
        error_ = o.error_;
        requested_ = o.requested_;
        granted_ = o.granted_;
        sequence_ = o.sequence_;
        payload_ = std::move(o.payload_);
        o.held_ = false;
    }
    return *this;
}

RemoteAccess::~RemoteAccess()
{
    try {
        release();
    } catch (...) {
    }
}

void RemoteAccess::release(std::span<const std::uint8_t> commands)
{
    if (!held_) return;
    state_->release(*this, std::nullopt, commands);
    held_ = false;
}

void RemoteAccess::release(SimTime next_request, std::span<const std::uint8_t> commands)
{
    if (!held_) return;
    state_->release(*this, next_request, commands);
    held_ = false;
}

// ---------------------------------------------------------- RemoteAccessor

RemoteAccessor::RemoteAccessor(std::shared_ptr<Participant> participant, std::string name, AccessorOptions options,
                               RemoteAccessorConfig config)
{
    if (!participant) throw Error(errc::invalid_argument, "RemoteAccessor: the participant is null");
    if (const std::string why = remote::check_name(name); !why.empty()) {
        throw Error(errc::invalid_argument, "RemoteAccessor: " + why);
    }
    detail::check_lease(config.lease, "RemoteAccessor '" + name + "'");
    detail::check_partition(config.partition, "RemoteAccessor '" + name + "'");
    if (options.lookahead < SimDuration::zero()) {
        throw Error(errc::invalid_argument, "RemoteAccessor '" + name + "': negative lookahead");
    }
    state_ = std::make_shared<detail::RemoteState>(name, 0);
    detail::RemoteState& s = *state_;
    s.self = state_;
    s.inbox = remote::ParticipantInbox(name, s.incarnation);
    s.participant = std::move(participant);
    s.options = options;
    s.config = std::move(config);

    const dds_entity_t pp = s.participant->native_handle();
    s.to_host_topic = detail::create_to_host_topic(pp);
    s.to_participant_topic = detail::create_to_participant_topic(pp);
    // In its own partition, the only one the host believes it in (with DDS
    // Security: the one its permissions grant; admission.hpp).
    const std::string own = remote::participant_partition(s.config.partition, s.name);
    const detail::QosPtr wq = detail::make_remote_qos(own, detail::Side::writer, s.config.lease);
    s.writer = detail::Entity(detail::check(dds_create_writer(pp, s.to_host_topic.get(), wq.get(), nullptr),
                                            "creating the RemoteAccessor's DDS writer in partition '" + own +
                                                "' (with DDS Security: do its permissions grant publishing "
                                                "simsync/remote/to_host there?)"));
    detail::check(dds_set_status_mask(s.writer.get(), DDS_PUBLICATION_MATCHED_STATUS),
                  "enabling the matched status of the RemoteAccessor's writer");
    // What the host writes to this incarnation, the refusal of its announce
    // included, comes in a partition of its own, through a writer the host
    // made for it: nobody else's traffic reaches this process, no host writer
    // is matched by another incarnation's reader (a dead one would hold it
    // up), and with DDS Security no other identity may read it.
    const detail::QosPtr rq = detail::make_remote_qos(
        remote::participant_partition(s.config.partition, s.name, s.incarnation), detail::Side::reader);
    dds_listener_t* listener = dds_create_listener(&s);
    dds_lset_data_available(listener, &detail::RemoteState::on_data_available);
    dds_lset_liveliness_changed(listener, &detail::RemoteState::on_liveliness_changed);
    const dds_entity_t r = dds_create_reader(pp, s.to_participant_topic.get(), rq.get(), listener);
    dds_delete_listener(listener);
    s.reader = detail::Entity(detail::check(r, "creating the RemoteAccessor's DDS reader"));
    dds_guid_t guid{};
    detail::check(dds_get_guid(s.reader.get(), &guid), "reading the GUID of the RemoteAccessor's reader");

    const WallTime deadline = deadline_after(s.config.join_timeout);
    if (!detail::wait_for_readers(s.writer.get(), 1, s.config.join_timeout)) {
        throw Error(errc::timed_out, "RemoteAccessor '" + name + "': no host in DDS domain " +
                                         std::to_string(s.participant->config().id) + ", partition '" +
                                         s.config.partition + "' within the join timeout");
    }
    const auto announce = [&](remote::ToHostWire& m) {
        m.accessor_kind = options.kind == AccessorKind::lockstep ? 0 : 1;
        m.access_mode = options.mode == AccessMode::exclusive ? 0 : 1;
        m.priority = options.priority;
        m.time = options.first_request.time_since_epoch().count();
        m.lookahead = options.lookahead.count();
        m.reply_reader = detail::guid_bytes(guid);
    };
    const std::uint64_t seq = s.write(remote::ToHostKind::announce, announce);
    if (seq == 0) throw Error(errc::invalid_state, "RemoteAccessor '" + name + "': writing the announce failed");

    // The writer's match is this side's: the host's reader may not have
    // matched it yet (with DDS Security the two sides' matches can be far
    // apart), or the reader matched may not be a host's, and a volatile reader
    // never gets what was written before it matched. So the announce is
    // repeated until a welcome comes; the host ignores repeats of one it has
    // admitted or refused.
    std::unique_lock<std::mutex> lock(s.mutex);
    for (;;) {
        const WallTime next = std::min(deadline, deadline_after(detail::kReannouncePeriod));
        if (s.changed.wait_until(lock, next, [&] { return s.welcome.has_value(); })) break;
        if (WallClock::now() >= deadline) {
            throw Error(errc::timed_out,
                        "RemoteAccessor '" + name + "': the host did not answer within the join timeout");
        }
        lock.unlock();
        s.write(remote::ToHostKind::announce, announce, {}, seq);
        lock.lock();
    }
    if (s.welcome->refusal != remote::WelcomeRefusal::none) {
        const errc code = s.welcome->refusal == remote::WelcomeRefusal::duplicate_name ? errc::duplicate_name
                                                                                       : errc::invalid_state;
        throw Error(code, "RemoteAccessor '" + name + "': the host refused it: " + s.welcome->text);
    }
    const std::uint64_t host = s.host_incarnation;
    lock.unlock();
    const detail::QosPtr aq =
        detail::make_remote_qos(remote::host_partition(s.config.partition, host), detail::Side::reader);
    dds_listener_t* alive_listener = dds_create_listener(&s);
    dds_lset_liveliness_changed(alive_listener, &detail::RemoteState::on_host_liveliness_changed);
    const dds_entity_t a = dds_create_reader(pp, s.to_participant_topic.get(), aq.get(), alive_listener);
    dds_delete_listener(alive_listener);
    s.host_alive_reader = detail::Entity(detail::check(a, "creating the RemoteAccessor's reader of its host's liveliness"));
}

RemoteAccessor::~RemoteAccessor()
{
    if (!state_) return;
    state_->write(remote::ToHostKind::leave, [](remote::ToHostWire&) {});
    {
        std::lock_guard<std::mutex> guard(state_->write_mutex);
        state_->left = true; // a RemoteAccess released later writes nothing
    }
    {
        std::lock_guard<std::mutex> guard(state_->mutex);
        state_->end_async(make_error_code(errc::not_registered));
    }
    state_->run_ready();
}

void RemoteAccessor::check_async_release(const RemoteAccess& held, SimTime next,
                                         std::span<const std::uint8_t> commands) const
{
    if (!held) return; // nothing to lose: start_async makes the remaining checks
    const detail::RemoteState& s = *state_;
    if (held.state_ != state_) {
        throw Error(errc::invalid_argument,
                    "RemoteAccessor '" + s.name + "': async_release_and_request of another accessor's access");
    }
    detail::RemoteState::check_release(held, next, commands);
    std::lock_guard<std::mutex> guard(s.mutex);
    if (s.busy) throw Error(errc::busy, "RemoteAccessor '" + s.name + "': a request is pending or an access is held");
}

detail::RemoteTicket RemoteAccessor::start_async(SimTime t, std::unique_ptr<detail::RemoteCompletion> completion,
                                                 RemoteAccess* held, std::span<const std::uint8_t> commands)
{
    detail::RemoteState& s = *state_;
    const bool releasing = held != nullptr && *held;
    if (releasing) {
        if (held->state_ != state_) {
            throw Error(errc::invalid_argument,
                        "RemoteAccessor '" + s.name + "': async_release_and_request of another accessor's access");
        }
        detail::RemoteState::check_release(*held, t, commands);
    }
    bool stopped = false;
    {
        std::lock_guard<std::mutex> guard(s.mutex);
        if (s.busy || (s.holding && !releasing)) {
            throw Error(errc::busy, "RemoteAccessor '" + s.name + "': a request is pending or an access is held");
        }
        stopped = s.state == HandlerState::stopped;
        if (!stopped) s.busy = true;
    }
    if (stopped) {
        if (releasing) held->release(t, commands);
        completion->complete(make_error_code(errc::stopped), detail::RemoteState::refusal(t, make_error_code(errc::stopped)));
        return {};
    }
    const std::uint64_t seq =
        releasing ? s.write_request(t, &completion, commands) : s.write_request(t, &completion);
    if (releasing) {
        held->held_ = false;
        if (seq == 0) {
            std::lock_guard<std::mutex> guard(s.mutex);
            s.holding = false; // left: the host releases it as it deregisters
        }
    }
    if (seq == 0) {
        {
            std::lock_guard<std::mutex> guard(s.mutex);
            s.end_async(make_error_code(errc::stopped));
            if (completion) s.ready.emplace_back(std::move(completion), detail::RemoteState::refusal(t, make_error_code(errc::stopped)));
            s.busy = false;
        }
        s.run_ready();
        return {};
    }
    return {state_, seq};
}

void detail::cancel_remote(const RemoteTicket& ticket) noexcept
{
    const std::shared_ptr<RemoteState> s = ticket.state.lock();
    if (!s || ticket.request == 0) return;
    bool withdrawn = false;
    {
        std::lock_guard<std::mutex> guard(s->mutex);
        if (s->async && s->waiting_for == ticket.request) {
            s->end_async(make_error_code(errc::cancelled));
            withdrawn = true;
        }
    }
    if (!withdrawn) return;
    try {
        s->write(remote::ToHostKind::cancel, [&](remote::ToHostWire& m) { m.ref = ticket.request; });
    } catch (...) {
    }
    s->run_ready();
}

RemoteAccess RemoteAccessor::request_access(SimTime t, std::stop_token stop)
{
    return request_access_until(t, WallTime::max(), std::move(stop));
}

RemoteAccess RemoteAccessor::request_access_for(SimTime t, WallClock::duration timeout, std::stop_token stop)
{
    return request_access_until(t, deadline_after(timeout), std::move(stop));
}

RemoteAccess RemoteAccessor::request_access_until(SimTime t, WallTime deadline, std::stop_token stop)
{
    detail::RemoteState& s = *state_;
    {
        std::lock_guard<std::mutex> guard(s.mutex);
        if (s.busy || s.holding) {
            throw Error(errc::busy, "RemoteAccessor '" + s.name + "': a request is pending or an access is held");
        }
        if (s.state == HandlerState::stopped) return detail::RemoteState::refusal(t, make_error_code(errc::stopped));
        s.busy = true;
    }
    return s.await_reply(s.write_request(t), t, deadline, std::move(stop));
}

RemoteAccess RemoteAccessor::release_and_request(RemoteAccess&& held, SimTime next,
                                                 std::span<const std::uint8_t> commands, std::stop_token stop)
{
    detail::RemoteState& s = *state_;
    if (!held) return request_access(next, std::move(stop));
    if (held.state_ != state_) {
        throw Error(errc::invalid_argument,
                    "RemoteAccessor '" + s.name + "': release_and_request of another accessor's access");
    }
    detail::RemoteState::check_release(held, next, commands);
    bool stopped = false;
    {
        std::lock_guard<std::mutex> guard(s.mutex);
        if (s.busy) throw Error(errc::busy, "RemoteAccessor '" + s.name + "': a request is pending");
        stopped = s.state == HandlerState::stopped;
        if (!stopped) s.busy = true;
    }
    if (stopped) {
        held.release(next, commands);
        return detail::RemoteState::refusal(next, make_error_code(errc::stopped));
    }
    // One message: the release, its commands and the next request.
    const std::uint64_t seq = s.write_request(next, nullptr, commands);
    held.held_ = false;
    if (seq == 0) {
        std::lock_guard<std::mutex> guard(s.mutex);
        s.holding = false; // left: the host releases it as it deregisters
    }
    return s.await_reply(seq, next, WallTime::max(), std::move(stop));
}

const std::string& RemoteAccessor::name() const noexcept { return state_->name; }
const AccessorOptions& RemoteAccessor::options() const noexcept { return state_->options; }
SimDuration RemoteAccessor::step_size() const noexcept { return state_->welcome->step; }
Rounding RemoteAccessor::rounding() const noexcept { return state_->welcome->rounding; }

HandlerState RemoteAccessor::state() const
{
    std::lock_guard<std::mutex> guard(state_->mutex);
    return state_->state;
}

SimTime RemoteAccessor::now() const
{
    std::lock_guard<std::mutex> guard(state_->mutex);
    return state_->now;
}

bool RemoteAccessor::wait_for_state(HandlerState state, WallClock::duration timeout) const
{
    std::unique_lock<std::mutex> lock(state_->mutex);
    return detail::wait_until_deadline(state_->changed, lock, deadline_after(timeout),
                                       [&] { return state_->state == state; });
}

std::uint64_t RemoteAccessor::incarnation() const noexcept { return state_->incarnation; }

bool RemoteAccessor::host_lost() const
{
    std::lock_guard<std::mutex> guard(state_->mutex);
    return state_->host_lost;
}

remote::RejectionCounts RemoteAccessor::rejections() const
{
    std::lock_guard<std::mutex> guard(state_->mutex);
    return state_->all_rejections();
}

bool RemoteAccessor::wait_for_rejections(std::uint64_t total, WallClock::duration timeout) const
{
    std::unique_lock<std::mutex> lock(state_->mutex);
    return detail::wait_until_deadline(state_->changed, lock, deadline_after(timeout),
                                       [&] { return state_->all_rejections().total() >= total; });
}

} // namespace simsync::dds
