// libFuzzer target: the decoders of every remote-participant message
// (simsync::dds::remote::decode, both directions) and the two inboxes behind
// them, over arbitrary samples.
//
// The input is read as a series of samples: a byte choosing the direction
// (even: participant -> host, odd: host -> participant), then every field of
// that IDL struct (idl/remote.idl) from the following bytes, a name drawn from
// a few (so the inboxes see the same sender again) or from the input, and a
// payload length of up to 2 x kMaxPayload filled from the input. Decoded
// messages go through a HostInbox and a ParticipantInbox as the Bridge and
// RemoteAccessor use them. Nothing may crash, trip a sanitizer or throw; a
// decoded message that breaks a documented bound aborts.
//
// The decoders are free of Cyclone DDS, so this compiles
// sim_adapters/dds/src/remote_messages.cpp alone: the `fuzz` preset needs no
// adapter. Built as `fuzz_remote` there and, in every test build, as
// `fuzz_remote_replay`, which runs the kept corpus (tests/fuzz/corpus/remote).

#include <simsync/dds/remote_messages.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace r = simsync::dds::remote;

namespace {

class Input {
public:
    Input(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
    bool empty() const noexcept { return pos_ >= size_; }
    template <class T>
    T take()
    {
        T v{};
        std::uint8_t bytes[sizeof(T)]{};
        for (std::size_t i = 0; i < sizeof(T); ++i) bytes[i] = pos_ < size_ ? data_[pos_++] : 0;
        std::memcpy(&v, bytes, sizeof(T));
        return v;
    }
    std::string take_string(std::size_t n)
    {
        std::string s;
        for (std::size_t i = 0; i < n && pos_ < size_; ++i) s.push_back(static_cast<char>(data_[pos_++]));
        return s;
    }
    // `n` bytes: the input's next ones, repeated if it runs short.
    std::vector<std::uint8_t> take_bytes(std::size_t n)
    {
        std::vector<std::uint8_t> b(n);
        const std::size_t start = pos_;
        for (std::size_t i = 0; i < n; ++i) {
            if (pos_ < size_) {
                b[i] = data_[pos_++];
            } else if (pos_ > start) {
                b[i] = b[i - (pos_ - start)];
            }
        }
        return b;
    }

private:
    const std::uint8_t* data_;
    std::size_t size_;
    std::size_t pos_ = 0;
};

// A name field as the fixed-size IDL string holds it: usually a known,
// terminated name; sometimes bytes from the input, terminated or not.
std::string take_name(Input& in)
{
    const auto choice = in.take<std::uint8_t>();
    static const char* const known[] = {"cam", "lidar", "controller", ""};
    if (choice < 192) return std::string(known[choice % 4]) + '\0';
    const std::size_t n = in.take<std::uint16_t>() % (r::kMaxName + 8);
    std::string s = in.take_string(n);
    if (choice & 1) s.push_back('\0');
    return s;
}

[[noreturn]] void broken(const char* what)
{
    std::fprintf(stderr, "fuzz_remote: %s\n", what);
    std::abort();
}

void check(const r::HostMessage& m)
{
    if (m.participant.empty() || m.participant.size() > r::kMaxName) broken("accepted a bad name");
    if (m.incarnation == 0 || m.seq == 0) broken("accepted a zero incarnation or sequence");
    if (const auto* rel = std::get_if<r::Release>(&m.body); rel && rel->payload.size() > r::kMaxPayload) {
        broken("accepted an oversized release payload");
    }
    if (const auto* rr = std::get_if<r::ReleaseAndRequest>(&m.body); rr && rr->payload.size() > r::kMaxPayload) {
        broken("accepted an oversized release-and-request payload");
    }
    if (const auto* a = std::get_if<r::Announce>(&m.body); a && a->options.lookahead.count() < 0) {
        broken("accepted a negative lookahead");
    }
}

void check(const r::ParticipantMessage& m)
{
    if (m.participant.empty() || m.participant.size() > r::kMaxName) broken("accepted a bad name");
    if (const auto* g = std::get_if<r::Grant>(&m.body); g && g->payload.size() > r::kMaxPayload) {
        broken("accepted an oversized grant payload");
    }
    if (const auto* w = std::get_if<r::Welcome>(&m.body);
        w && w->refusal == r::WelcomeRefusal::none && w->step.count() <= 0) {
        broken("accepted a welcome without a step");
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    Input in(data, size);
    r::HostInbox host;
    r::ParticipantInbox participant("cam", 7);
    std::uint64_t last_applied = 0;
    for (int samples = 0; samples < 64 && !in.empty(); ++samples) {
        const auto direction = in.take<std::uint8_t>();
        const std::string name = take_name(in);
        if (direction % 2 == 0) {
            r::ToHostWire w;
            w.participant = name;
            w.incarnation = in.take<std::uint8_t>() % 4; // a few incarnations, and 0
            w.seq = in.take<std::uint8_t>() % 8;
            w.kind = in.take<std::uint8_t>() % 8;
            w.accessor_kind = in.take<std::uint8_t>() % 3;
            w.access_mode = in.take<std::uint8_t>() % 3;
            w.priority = in.take<std::int32_t>();
            w.time = in.take<std::int64_t>();
            w.has_time = (in.take<std::uint8_t>() & 1) != 0;
            w.lookahead = in.take<std::int64_t>();
            w.ref = in.take<std::uint8_t>() % 8;
            w.reply_reader[15] = in.take<std::uint8_t>() % 2;
            const std::vector<std::uint8_t> payload = in.take_bytes(in.take<std::uint32_t>() % (2 * r::kMaxPayload + 2));
            w.payload = payload;
            const auto d = r::decode(w);
            if (!d) continue;
            check(*d.message);
            const auto verdict = host.accept(*d.message);
            if (verdict.verdict == r::HostInbox::Verdict::new_announce) host.admit(d.message->participant, d.message->incarnation);
            if (verdict.verdict == r::HostInbox::Verdict::apply && !host.admitted(d.message->participant)) {
                broken("applied a message from a participant not admitted");
            }
            if (std::get_if<r::Leave>(&d.message->body) && verdict.verdict == r::HostInbox::Verdict::apply) {
                host.forget(d.message->participant);
            }
        } else {
            r::ToParticipantWire w;
            w.participant = name;
            w.target_incarnation = in.take<std::uint8_t>() % 9; // 7 is the inbox's
            w.host_incarnation = in.take<std::uint8_t>() % 3;
            w.seq = in.take<std::uint8_t>() % 8;
            w.kind = in.take<std::uint8_t>() % 5;
            w.error = in.take<std::int32_t>() % 120;
            const std::string text = take_name(in);
            w.text = text;
            w.step = in.take<std::int64_t>();
            w.rounding = in.take<std::uint8_t>() % 4;
            w.state = in.take<std::uint8_t>() % 4;
            w.now = in.take<std::int64_t>();
            w.ref = in.take<std::uint8_t>() % 8;
            w.requested = in.take<std::int64_t>();
            w.granted = in.take<std::int64_t>();
            w.grant_sequence = in.take<std::uint64_t>();
            const std::vector<std::uint8_t> payload = in.take_bytes(in.take<std::uint32_t>() % (2 * r::kMaxPayload + 2));
            w.payload = payload;
            const auto d = r::decode(w);
            if (!d) continue;
            check(*d.message);
            if (participant.accept(*d.message)) {
                if (d.message->participant != "cam" || d.message->target_incarnation != 7) {
                    broken("accepted a message for another participant");
                }
                if (d.message->seq <= last_applied) broken("accepted a sequence number twice");
                last_applied = d.message->seq;
            }
        }
    }
    if (size > 0) (void)r::to_string(static_cast<r::Rejection>(data[0] % r::kRejectionCount));
    return 0;
}
