// Writing: one writer per participant incarnation, in a partition of its
// own, and what waits for its reader to match (bridge_impl.hpp).
#include "bridge_impl.hpp"

namespace simsync::dds {

bool Bridge::Impl::reader_matched(dds_entity_t w, const Guid& g)
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

void Bridge::Impl::write_now(const Outgoing& o)
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

void Bridge::Impl::send(Outgoing o, Remote* rec)
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

void Bridge::Impl::on_matched()
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
        const auto it = matched.find({rec->our_writer, rec->reader});
        if (it != matched.end() && it->second) rec->matched = true;
    }
}

detail::Outgoing Bridge::Impl::message_to(Remote& rec, remote::ToParticipantKind kind)
{
    Outgoing o;
    o.via = rec.our_writer;
    o.reader = rec.reader;
    o.participant = rec.info.name;
    o.target_incarnation = rec.info.incarnation;
    o.seq = ++rec.out_seq;
    o.kind = kind;
    return o;
}

detail::Entity Bridge::Impl::create_writer(const std::string& partition, WallClock::duration lease)
{
    const detail::QosPtr wq = detail::make_remote_qos(partition, detail::Side::writer, lease);
    dds_listener_t* wl = dds_create_listener(this);
    dds_lset_publication_matched(wl, &on_publication_matched);
    const dds_entity_t w =
        dds_create_writer(participant->native_handle(), to_participant_topic.get(), wq.get(), wl);
    dds_delete_listener(wl);
    return detail::Entity(detail::check(w, "creating a DDS writer of the Bridge"));
}

dds_entity_t Bridge::Impl::writer_for(const WriterKey& key)
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

void Bridge::Impl::count_writers()
{
    update([n = writers.size()](BridgeStats& st) { st.writers = n; });
}

void Bridge::Impl::delete_writer(const WriterKey& key)
{
    const auto it = writers.find(key);
    if (it == writers.end()) return;
    const dds_entity_t w = it->second.get();
    std::erase_if(waiting_for_match, [&](const Outgoing& o) { return o.via == w; });
    writers.erase(it); // may linger (see `writers`)
    idle_writers.remove(key);
    count_writers();
}

void Bridge::Impl::keep_writer(const WriterKey& key)
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

void Bridge::Impl::forget_revoked(const WriterKey& key)
{
    if (const auto r = revoked.find(key.first); r != revoked.end() && r->second.incarnation == key.second) {
        revoked.erase(r);
    }
}

void Bridge::Impl::sweep_writers()
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

void Bridge::Impl::broadcast_state()
{
    if (closing) return;
    const std::uint8_t state = detail::state_code(handler.state());
    const std::int64_t now = handler.now().time_since_epoch().count();
    for (auto& [name, rec] : remotes) {
        Outgoing o = message_to(*rec, remote::ToParticipantKind::state);
        o.state = state;
        o.now = now;
        send(std::move(o), rec.get());
    }
}

} // namespace simsync::dds
