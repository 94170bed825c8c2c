// The participant table: joins, refusals, leaves, losses and revoked
// incarnations (bridge_impl.hpp).
#include "bridge_impl.hpp"

namespace simsync::dds {

void Bridge::Impl::refuse_announce(const remote::HostMessage& m, const remote::Announce& a,
                                   remote::WelcomeRefusal why, std::string text)
{
    // Its repeats get the same answer, uncounted (repeated_announce).
    if (refused.size() >= kRefusedKept) refused.clear();
    refused[{m.participant, m.incarnation}] = {why, text};
    update([](BridgeStats& st) { ++st.refused_announces; });
    send_refusal(m, a, why, std::move(text));
}

void Bridge::Impl::send_refusal(const remote::HostMessage& m, const remote::Announce& a,
                                remote::WelcomeRefusal why, std::string text)
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

bool Bridge::Impl::repeated_announce(const remote::HostMessage& m)
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

void Bridge::Impl::on_announce(const remote::HostMessage& m, const remote::Announce& a,
                               dds_instance_handle_t their_writer)
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
    rec->our_writer = out;
    rec->reader = a.reply_reader;
    rec->their_writer = their_writer;
    rec->lease = detail::offered_lease(reader.get(), their_writer);
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
    o.state = detail::state_code(handler.state());
    o.now = handler.now().time_since_epoch().count();
    send(std::move(o), rec.get());
    if (config.on_joined) {
        try {
            config.on_joined(rec->info);
        } catch (...) {
        }
    }
}

void Bridge::Impl::remove(std::shared_ptr<Remote> rec, LeaveReason reason)
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
        if (reason == LeaveReason::left && dds_wait_for_acks(rec->our_writer, 0) == DDS_RETCODE_OK) {
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

void Bridge::Impl::on_liveliness(dds_instance_handle_t their_writer, bool alive)
{
    if (closing) return;
    drain();
    std::shared_ptr<Remote> rec;
    for (const auto& [name, r] : remotes) {
        if (r->their_writer == their_writer) rec = r;
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

void Bridge::Impl::refuse_revoked(const std::string& name, Revoked& r, std::uint64_t request, SimTime requested)
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

void Bridge::Impl::answer_revoked(const remote::HostMessage& m)
{
    const auto it = revoked.find(m.participant);
    if (it == revoked.end() || it->second.incarnation != m.incarnation) return;
    if (const auto* request = std::get_if<remote::Request>(&m.body)) {
        refuse_revoked(m.participant, it->second, m.seq, request->time);
    } else if (m.kind() == remote::ToHostKind::leave) {
        revoked.erase(it);
    }
}

} // namespace simsync::dds
