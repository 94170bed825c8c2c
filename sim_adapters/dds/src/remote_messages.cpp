// Decoding and checking of the remote participants' messages. Free of Cyclone
// DDS: the fuzz target (tests/fuzz/fuzz_remote.cpp) compiles this file alone.

#include <simsync/core/error.hpp>
#include <simsync/dds/remote_messages.hpp>

#include <cstring>

namespace simsync::dds::remote {

const char* to_string(WelcomeRefusal r) noexcept
{
    switch (r) {
    case WelcomeRefusal::none: return "none";
    case WelcomeRefusal::duplicate_name: return "duplicate_name";
    case WelcomeRefusal::invalid: return "invalid";
    case WelcomeRefusal::not_allowed: return "not_allowed";
    case WelcomeRefusal::participant_limit: return "participant_limit";
    }
    return "?";
}

const char* to_string(Rejection r) noexcept
{
    switch (r) {
    case Rejection::unknown_kind: return "unknown_kind";
    case Rejection::bad_field: return "bad_field";
    case Rejection::bad_name: return "bad_name";
    case Rejection::payload_too_large: return "payload_too_large";
    case Rejection::unexpected_payload: return "unexpected_payload";
    case Rejection::unknown_participant: return "unknown_participant";
    case Rejection::wrong_incarnation: return "wrong_incarnation";
    case Rejection::duplicate: return "duplicate";
    case Rejection::out_of_order: return "out_of_order";
    case Rejection::other_participant: return "other_participant";
    case Rejection::wrong_host: return "wrong_host";
    case Rejection::not_welcomed: return "not_welcomed";
    case Rejection::name_not_allowed: return "name_not_allowed";
    case Rejection::participant_limit: return "participant_limit";
    case Rejection::not_its_name: return "not_its_name";
    }
    return "?";
}

std::uint64_t RejectionCounts::total() const noexcept
{
    std::uint64_t n = 0;
    for (const std::uint64_t c : by_reason) n += c;
    return n;
}

std::string check_name(std::string_view name)
{
    if (name.empty()) return "the participant name is empty";
    if (name.size() > kMaxName) {
        return "the participant name is " + std::to_string(name.size()) + " bytes, at most " +
               std::to_string(kMaxName);
    }
    for (const char c : name) {
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
            return "the participant name holds a control character";
        }
    }
    return {};
}

namespace {

constexpr char kHex[] = "0123456789ABCDEF";

void append_hex(std::string& out, std::uint64_t value)
{
    for (int shift = 60; shift >= 0; shift -= 4) out += kHex[(value >> shift) & 0xF];
}

} // namespace

std::string host_partition(std::string_view partition, std::uint64_t host_incarnation)
{
    std::string out(partition);
    out += "/%host/";
    append_hex(out, host_incarnation);
    return out;
}

std::string participant_partition(std::string_view partition, std::string_view name)
{
    std::string out(partition);
    out += '/';
    for (const char c : name) {
        const auto b = static_cast<unsigned char>(c);
        if ((b >= 'A' && b <= 'Z') || (b >= 'a' && b <= 'z') || (b >= '0' && b <= '9') || b == '_' || b == '.' ||
            b == '-') {
            out += c;
        } else {
            out += '%';
            out += kHex[b >> 4];
            out += kHex[b & 0xF];
        }
    }
    return out;
}

std::string participant_partition(std::string_view partition, std::string_view name, std::uint64_t incarnation)
{
    std::string out = participant_partition(partition, name);
    out += '/';
    append_hex(out, incarnation);
    return out;
}

namespace {

// The fixed-size string field up to its terminator; nullopt without one.
std::optional<std::string_view> terminated(std::string_view field)
{
    const auto nul = field.find('\0');
    if (nul == std::string_view::npos) return std::nullopt;
    return field.substr(0, nul);
}

template <class M>
Decoded<M> refuse(Rejection r)
{
    Decoded<M> d;
    d.rejection = r;
    return d;
}

} // namespace

Decoded<HostMessage> decode(const ToHostWire& w)
{
    using D = Decoded<HostMessage>;
    const auto name = terminated(w.participant);
    if (!name || !check_name(*name).empty()) return refuse<HostMessage>(Rejection::bad_name);
    if (w.incarnation == 0 || w.seq == 0) return refuse<HostMessage>(Rejection::bad_field);
    if (w.payload.size() > kMaxPayload) return refuse<HostMessage>(Rejection::payload_too_large);
    const auto kind = static_cast<ToHostKind>(w.kind);
    if (kind != ToHostKind::release && kind != ToHostKind::release_and_request && !w.payload.empty()) {
        return refuse<HostMessage>(Rejection::unexpected_payload);
    }

    HostMessage m;
    m.participant = std::string(*name);
    m.incarnation = w.incarnation;
    m.seq = w.seq;
    switch (kind) {
    case ToHostKind::announce: {
        if (w.accessor_kind > 1 || w.access_mode > 1 || w.lookahead < 0) return refuse<HostMessage>(Rejection::bad_field);
        // An incarnation starts with its announce.
        if (w.seq != 1) return refuse<HostMessage>(Rejection::bad_field);
        if (w.reply_reader == std::array<std::uint8_t, 16>{}) return refuse<HostMessage>(Rejection::bad_field);
        Announce a;
        a.reply_reader = w.reply_reader;
        a.options.kind = w.accessor_kind == 0 ? AccessorKind::lockstep : AccessorKind::free;
        a.options.mode = w.access_mode == 0 ? AccessMode::exclusive : AccessMode::shared;
        a.options.priority = w.priority;
        a.options.first_request = SimTime{SimDuration{w.time}};
        a.options.lookahead = SimDuration{w.lookahead};
        m.body = a;
        break;
    }
    case ToHostKind::request:
        m.body = Request{SimTime{SimDuration{w.time}}};
        break;
    case ToHostKind::release: {
        Release r;
        if (w.has_time) r.next_request = SimTime{SimDuration{w.time}};
        r.payload.assign(w.payload.begin(), w.payload.end());
        m.body = std::move(r);
        break;
    }
    case ToHostKind::cancel:
        if (w.ref == 0 || w.ref >= w.seq) return refuse<HostMessage>(Rejection::bad_field);
        m.body = Cancel{w.ref};
        break;
    case ToHostKind::leave:
        m.body = Leave{};
        break;
    case ToHostKind::release_and_request: {
        if (!w.has_time) return refuse<HostMessage>(Rejection::bad_field);
        ReleaseAndRequest r;
        r.next = SimTime{SimDuration{w.time}};
        r.payload.assign(w.payload.begin(), w.payload.end());
        m.body = std::move(r);
        break;
    }
    default:
        return refuse<HostMessage>(Rejection::unknown_kind);
    }
    D d;
    d.message = std::move(m);
    return d;
}

Decoded<ParticipantMessage> decode(const ToParticipantWire& w)
{
    using D = Decoded<ParticipantMessage>;
    const auto name = terminated(w.participant);
    if (!name || !check_name(*name).empty()) return refuse<ParticipantMessage>(Rejection::bad_name);
    if (w.target_incarnation == 0 || w.host_incarnation == 0 || w.seq == 0) {
        return refuse<ParticipantMessage>(Rejection::bad_field);
    }
    if (w.payload.size() > kMaxPayload) return refuse<ParticipantMessage>(Rejection::payload_too_large);
    const auto kind = static_cast<ToParticipantKind>(w.kind);
    if (kind != ToParticipantKind::grant && !w.payload.empty()) {
        return refuse<ParticipantMessage>(Rejection::unexpected_payload);
    }
    auto state = [](std::uint8_t s) -> std::optional<HandlerState> {
        switch (s) {
        case 0: return HandlerState::running;
        case 1: return HandlerState::paused;
        case 2: return HandlerState::stopped;
        default: return std::nullopt;
        }
    };

    ParticipantMessage m;
    m.participant = std::string(*name);
    m.target_incarnation = w.target_incarnation;
    m.host_incarnation = w.host_incarnation;
    m.seq = w.seq;
    switch (kind) {
    case ToParticipantKind::welcome: {
        // The welcome starts the host's stream to this incarnation.
        if (w.seq != 1) return refuse<ParticipantMessage>(Rejection::bad_field);
        Welcome wel;
        switch (w.error) {
        case 0: wel.refusal = WelcomeRefusal::none; break;
        case 1: wel.refusal = WelcomeRefusal::duplicate_name; break;
        case 2: wel.refusal = WelcomeRefusal::invalid; break;
        case 3: wel.refusal = WelcomeRefusal::not_allowed; break;
        case 4: wel.refusal = WelcomeRefusal::participant_limit; break;
        default: return refuse<ParticipantMessage>(Rejection::bad_field);
        }
        const auto text = terminated(w.text);
        if (!text || text->size() > kMaxText) return refuse<ParticipantMessage>(Rejection::bad_field);
        wel.text = std::string(*text);
        if (wel.refusal == WelcomeRefusal::none) {
            if (w.step <= 0 || w.rounding > 2 || w.now < 0) return refuse<ParticipantMessage>(Rejection::bad_field);
            const auto s = state(w.state);
            if (!s) return refuse<ParticipantMessage>(Rejection::bad_field);
            wel.step = SimDuration{w.step};
            wel.rounding = static_cast<Rounding>(w.rounding);
            wel.state = *s;
            wel.now = SimTime{SimDuration{w.now}};
        }
        m.body = std::move(wel);
        break;
    }
    case ToParticipantKind::grant: {
        Grant g;
        g.request = w.ref;
        if (g.request == 0) return refuse<ParticipantMessage>(Rejection::bad_field);
        if (w.error != 0) {
            // Only the refusals a request can end with.
            const auto e = static_cast<errc>(w.error);
            switch (e) {
            case errc::time_passed:
            case errc::stopped:
            case errc::timed_out:
            case errc::not_registered:
            case errc::would_block:
            case errc::world_failed:
            case errc::cancelled: break;
            default: return refuse<ParticipantMessage>(Rejection::bad_field);
            }
            if (!w.payload.empty()) return refuse<ParticipantMessage>(Rejection::unexpected_payload);
            g.error = make_error_code(e);
        } else if (w.granted < 0) {
            return refuse<ParticipantMessage>(Rejection::bad_field);
        }
        g.requested = SimTime{SimDuration{w.requested}};
        g.granted = SimTime{SimDuration{w.granted}};
        g.grant_sequence = w.grant_sequence;
        g.payload.assign(w.payload.begin(), w.payload.end());
        m.body = std::move(g);
        break;
    }
    case ToParticipantKind::state: {
        const auto s = state(w.state);
        if (!s || w.now < 0) return refuse<ParticipantMessage>(Rejection::bad_field);
        m.body = StateChange{*s, SimTime{SimDuration{w.now}}};
        break;
    }
    default:
        return refuse<ParticipantMessage>(Rejection::unknown_kind);
    }
    D d;
    d.message = std::move(m);
    return d;
}

// ------------------------------------------------------------- HostInbox

HostInbox::Result HostInbox::reject(Rejection r)
{
    counts_.add(r);
    return {Verdict::rejected, r};
}

HostInbox::Result HostInbox::accept(const HostMessage& m)
{
    const auto it = senders_.find(m.participant);
    if (m.kind() == ToHostKind::announce) {
        if (it == senders_.end()) {
            ++accepted_;
            return {Verdict::new_announce, {}};
        }
        if (it->second.incarnation == m.incarnation) return reject(Rejection::duplicate);
        ++accepted_;
        return {Verdict::taken_name, {}};
    }
    if (it == senders_.end()) return reject(Rejection::unknown_participant);
    Sender& s = it->second;
    if (s.incarnation != m.incarnation) return reject(Rejection::wrong_incarnation);
    if (m.seq <= s.last_seq) return reject(Rejection::duplicate);
    if (m.seq != s.last_seq + 1) return reject(Rejection::out_of_order);
    s.last_seq = m.seq;
    ++accepted_;
    return {Verdict::apply, {}};
}

void HostInbox::admit(const std::string& name, std::uint64_t incarnation)
{
    senders_[name] = Sender{incarnation, 1};
}

void HostInbox::forget(const std::string& name)
{
    const auto it = senders_.find(name);
    if (it != senders_.end()) senders_.erase(it);
}

bool HostInbox::admitted(const std::string& name) const { return senders_.find(name) != senders_.end(); }

// ------------------------------------------------------ ParticipantInbox

ParticipantInbox::ParticipantInbox(std::string name, std::uint64_t incarnation)
    : name_(std::move(name)), incarnation_(incarnation)
{
}

bool ParticipantInbox::reject(Rejection r, Rejection* out)
{
    counts_.add(r);
    if (out) *out = r;
    return false;
}

bool ParticipantInbox::accept(const ParticipantMessage& m, Rejection* rejection)
{
    if (m.participant != name_) return reject(Rejection::other_participant, rejection);
    if (m.target_incarnation != incarnation_) return reject(Rejection::wrong_incarnation, rejection);
    if (host_incarnation_ == 0) {
        if (m.kind() != ToParticipantKind::welcome) return reject(Rejection::not_welcomed, rejection);
        host_incarnation_ = m.host_incarnation;
        last_seq_ = m.seq;
        ++accepted_;
        return true;
    }
    if (m.host_incarnation != host_incarnation_) return reject(Rejection::wrong_host, rejection);
    if (m.seq <= last_seq_) return reject(Rejection::duplicate, rejection);
    if (m.seq != last_seq_ + 1) return reject(Rejection::out_of_order, rejection);
    last_seq_ = m.seq;
    ++accepted_;
    return true;
}

} // namespace simsync::dds::remote
