// Each remote participant's accessor on the handler: its requests, grants,
// releases and withdrawals (bridge_impl.hpp).
#include "bridge_impl.hpp"

namespace simsync::dds {

void Bridge::Impl::on_cancel(Remote& rec, std::uint64_t request)
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

void Bridge::Impl::release_withdrawn(Remote& rec)
{
    Access access = std::move(*rec.held);
    rec.held.reset();
    if (access) access.release(access.granted_time());
    update([](BridgeStats& st) { ++st.withdrawn_grants; });
}

void Bridge::Impl::on_request(const std::shared_ptr<Remote>& rec, std::uint64_t seq, SimTime t)
{
    if (rec->pending && rec->cancelled == rec->pending && !rec->deferred) {
        rec->deferred.emplace(seq, t); // after the withdrawn one completes
        return;
    }
    if (rec->pending || rec->held) {
        update([](BridgeStats& st) { ++st.protocol_errors; });
        return;
    }
    start_request(rec, seq, t, nullptr);
}

void Bridge::Impl::start_request(const std::shared_ptr<Remote>& rec, std::uint64_t seq, SimTime t, Access* held)
{
    rec->pending = seq;
    rec->pending_time = t;
    rec->cancel = std::make_unique<boost::asio::cancellation_signal>();
    std::weak_ptr<Impl> weak = weak_self;
    auto completion = boost::asio::bind_cancellation_slot(
        rec->cancel->slot(), boost::asio::bind_executor(asio_executor(exec), [weak, rec, seq](std::error_code ec,
                                                                                              Access access) {
            if (auto self = weak.lock()) self->on_completion(rec, seq, ec, std::move(access));
        }));
    try {
        if (held != nullptr) {
            rec->accessor.async_release_and_request(std::move(*held), t, std::move(completion));
        } else {
            rec->accessor.async_request_access(t, std::move(completion));
        }
    } catch (const Error&) {
        rec->pending.reset();
        update([](BridgeStats& st) { ++st.protocol_errors; });
    }
}

void Bridge::Impl::on_completion(const std::shared_ptr<Remote>& rec, std::uint64_t seq, std::error_code ec,
                                 Access access)
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

void Bridge::Impl::complete(Remote& rec, std::uint64_t seq, std::error_code ec, Access access)
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

void Bridge::Impl::on_release_and_request(const std::shared_ptr<Remote>& rec, std::uint64_t seq,
                                          const remote::ReleaseAndRequest& r)
{
    if (!rec->held || rec->pending) {
        update([](BridgeStats& st) { ++st.protocol_errors; });
        return;
    }
    Access access = std::move(*rec->held);
    rec->held.reset();
    const bool payload_failed = !apply_commands(*rec, access, r.payload);
    bool bad_bound = false;
    if (access && r.next < access.granted_time()) {
        // The participant checks this before it writes: a foreign writer's.
        bad_bound = true;
        access.release();
    }
    update([&](BridgeStats& st) {
        ++st.releases;
        if (payload_failed) ++st.payload_failures;
        if (bad_bound) ++st.protocol_errors;
    });
    // Released and requested in one operation: the handler may hand the next
    // grant over at once (its completion still comes through the loop). An
    // access already released (above) or revoked by an operator is not
    // passed on: a plain request.
    if (!access) access = Access{};
    start_request(rec, seq, r.next, access ? &access : nullptr);
}

bool Bridge::Impl::apply_commands(Remote& rec, Access& access, std::span<const std::uint8_t> commands)
{
    if (!access || !config.apply_release) return true;
    try {
        config.apply_release(rec.info, access, commands);
        return true;
    } catch (...) {
        return false;
    }
}

void Bridge::Impl::on_release(Remote& rec, const remote::Release& r)
{
    if (!rec.held) {
        update([](BridgeStats& st) { ++st.protocol_errors; });
        return;
    }
    Access access = std::move(*rec.held);
    rec.held.reset();
    const bool payload_failed = !apply_commands(rec, access, r.payload);
    bool bad_bound = false;
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

} // namespace simsync::dds
