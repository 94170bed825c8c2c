// Reading: Cyclone's listeners post to the Bridge's loop, which takes the
// samples, checks who sent them and dispatches them (bridge_impl.hpp).
#include "bridge_impl.hpp"

namespace simsync::dds {

void Bridge::Impl::drain()
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

void Bridge::Impl::handle(const simsync_remote_ToHost& sample, dds_instance_handle_t their_writer)
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
    if (!speaks_for(m.participant, their_writer)) {
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
        on_announce(m, std::get<remote::Announce>(m.body), their_writer);
        return;
    case V::taken_name: {
        if (const auto it = remotes.find(m.participant); it != remotes.end() && it->second->lost) {
            // A new incarnation of a participant lost under the pause
            // policy: it replaces the lost one.
            update([](BridgeStats& st) { ++st.replaced; });
            remove(it->second, LeaveReason::replaced);
            if (inbox.accept(m).verdict == V::new_announce) {
                on_announce(m, std::get<remote::Announce>(m.body), their_writer);
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
        rec->their_writer = their_writer;
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
            } else if constexpr (std::is_same_v<T, remote::ReleaseAndRequest>) {
                update([](BridgeStats& st) { ++st.requests; });
                on_release_and_request(rec, m.seq, body);
            } else if constexpr (std::is_same_v<T, remote::Cancel>) {
                on_cancel(*rec, body.request);
            } else if constexpr (std::is_same_v<T, remote::Leave>) {
                update([](BridgeStats& st) { ++st.leaves; });
                remove(rec, LeaveReason::left);
            }
        },
        m.body);
}

bool Bridge::Impl::speaks_for(const std::string& name, dds_instance_handle_t their_writer) const
{
    if (const auto it = remotes.find(name); it != remotes.end() && it->second->their_writer == their_writer) {
        return true;
    }
    return admission.speaks_for(reader.get(), their_writer, name);
}

void Bridge::Impl::post(void (Impl::*job)())
{
    try {
        exec.post([weak = weak_self, job] {
            if (auto self = weak.lock()) ((*self).*job)();
        });
    } catch (const Error&) {
        // The loop is gone: the Bridge is being destroyed.
    }
}

void Bridge::Impl::on_data_available(dds_entity_t, void* arg)
{
    auto* impl = static_cast<Impl*>(arg);
    if (!impl->drain_posted.exchange(true)) impl->post(&Impl::drain);
}

void Bridge::Impl::on_publication_matched(dds_entity_t, const dds_publication_matched_status_t, void* arg)
{
    static_cast<Impl*>(arg)->post(&Impl::on_matched);
}

void Bridge::Impl::on_liveliness_changed(dds_entity_t, const dds_liveliness_changed_status_t st, void* arg)
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

} // namespace simsync::dds
