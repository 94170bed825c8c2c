#include "bridge_impl.hpp"

#include <algorithm>

namespace simsync::dds {

std::uint8_t detail::state_code(HandlerState s)
{
    switch (s) {
    case HandlerState::running: return 0;
    case HandlerState::paused: return 1;
    case HandlerState::stopped: return 2;
    }
    return 2;
}

void Bridge::Impl::note_stopped()
{
    {
        std::lock_guard<std::mutex> guard(mutex);
        handler_stopped = true;
    }
    changed.notify_all();
}

template <class Done>
bool Bridge::Impl::wait(WallClock::duration timeout, Done done) const
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
    detail::wait_until_deadline(changed, lock, deadline_after(timeout), ended);
    return held;
}

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
        o.state = detail::state_code(HandlerState::stopped);
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
