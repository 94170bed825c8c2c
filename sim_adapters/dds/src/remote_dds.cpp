#include "remote_dds.hpp"

#include <vector>

#include <simsync/core/error.hpp>

#include <algorithm>
#include <cstring>
#include <random>
#include <string_view>
#include <type_traits>

namespace simsync::dds::detail {

Entity create_to_host_topic(dds_entity_t participant)
{
    return Entity(check(dds_create_topic(participant, &simsync_remote_ToHost_desc, kToHostTopic, nullptr, nullptr),
                        std::string("creating DDS topic '") + kToHostTopic + "'"));
}

Entity create_to_participant_topic(dds_entity_t participant)
{
    return Entity(check(dds_create_topic(participant, &simsync_remote_ToParticipant_desc, kToParticipantTopic, nullptr,
                                         nullptr),
                        std::string("creating DDS topic '") + kToParticipantTopic + "'"));
}

void check_lease(WallClock::duration lease, const std::string& what)
{
    if (lease <= WallClock::duration::zero()) {
        throw Error(errc::invalid_argument, what + ": the liveliness lease must be > 0, got " +
                                                std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(lease).count()) +
                                                " ns");
    }
}

void check_partition(const std::string& partition, const std::string& what)
{
    if (partition.empty()) throw Error(errc::invalid_argument, what + ": the partition is empty");
    if (partition.find_first_of("*?") != std::string::npos) {
        throw Error(errc::invalid_argument, what + ": the partition '" + partition +
                                                "' has a wildcard ('*' or '?'), which would match other partitions");
    }
}

QosPtr make_remote_qos(const std::string& partition, Side side, WallClock::duration lease)
{
    return make_remote_qos(std::vector<std::string>{partition}, side, lease);
}

QosPtr make_remote_qos(const std::vector<std::string>& partitions, Side side, WallClock::duration lease)
{
    if (partitions.empty() || partitions.front().empty()) {
        throw Error(errc::invalid_argument, "the DDS partition of remote participants is empty");
    }
    if (side == Side::writer) check_lease(lease, "a remote participants' writer");
    Qos q;
    q.reliability = Reliability::reliable;
    q.durability = Durability::volatile_;
    q.depth = 0; // keep all: nothing a participant or the host writes is ever replaced
    q.max_blocking_time = std::chrono::nanoseconds(kRemoteMaxBlockingNs);
    QosPtr qos = make_qos(q, side);
    std::vector<const char*> names;
    for (const std::string& p : partitions) names.push_back(p.c_str());
    dds_qset_partition(qos.get(), static_cast<std::uint32_t>(names.size()), names.data());
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(lease);
    const bool infinite = side == Side::reader || lease >= WallClock::duration::max() ||
                          ns.count() >= DDS_INFINITY;
    dds_qset_liveliness(qos.get(), DDS_LIVELINESS_AUTOMATIC, infinite ? DDS_INFINITY : ns.count());
    return qos;
}

std::optional<WallClock::duration> offered_lease(dds_entity_t reader, dds_instance_handle_t writer)
{
    dds_builtintopic_endpoint_t* ep = dds_get_matched_publication_data(reader, writer);
    if (!ep) return std::nullopt;
    std::optional<WallClock::duration> lease;
    dds_liveliness_kind_t kind{};
    dds_duration_t d = DDS_INFINITY;
    if (ep->qos && dds_qget_liveliness(ep->qos, &kind, &d) && d != DDS_INFINITY) {
        lease = std::chrono::duration_cast<WallClock::duration>(std::chrono::nanoseconds(d));
    }
    dds_builtintopic_free_endpoint(ep);
    return lease;
}

std::uint64_t random_incarnation()
{
    std::random_device rd;
    std::uint64_t v = 0;
    while (v == 0) v = (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
    return v;
}

namespace {

// Copies `text` into a fixed-size IDL string field (truncated, terminated).
template <std::size_t N>
void copy_text(char (&field)[N], std::string_view text)
{
    const std::size_t n = std::min(text.size(), N - 1);
    text.copy(field, n);
    field[n] = '\0';
}

// The fields a sample and its wire view both hold by value, each named once
// for both directions: f(sample's field, wire's field).
template <class Sample, class Wire, class F>
void each_value(Sample& s, Wire& w, F f)
    requires std::is_same_v<std::remove_const_t<Sample>, simsync_remote_ToHost>
{
    f(s.incarnation, w.incarnation);
    f(s.seq, w.seq);
    f(s.kind, w.kind);
    f(s.accessor_kind, w.accessor_kind);
    f(s.access_mode, w.access_mode);
    f(s.priority, w.priority);
    f(s.time, w.time);
    f(s.has_time, w.has_time);
    f(s.lookahead, w.lookahead);
    f(s.ref, w.ref);
}

template <class Sample, class Wire, class F>
void each_value(Sample& s, Wire& w, F f)
    requires std::is_same_v<std::remove_const_t<Sample>, simsync_remote_ToParticipant>
{
    f(s.target_incarnation, w.target_incarnation);
    f(s.host_incarnation, w.host_incarnation);
    f(s.seq, w.seq);
    f(s.kind, w.kind);
    f(s.error, w.error);
    f(s.step, w.step);
    f(s.rounding, w.rounding);
    f(s.state, w.state);
    f(s.now, w.now);
    f(s.ref, w.ref);
    f(s.requested, w.requested);
    f(s.granted, w.granted);
    f(s.grant_sequence, w.grant_sequence);
}

template <class Wire, class Sample>
Wire view_of(const Sample& s)
{
    Wire w;
    each_value(s, w, [](const auto& from, auto& to) { to = from; });
    w.participant = std::string_view(s.participant, sizeof s.participant);
    w.payload = std::span<const std::uint8_t>(s.payload._buffer, s.payload._buffer ? s.payload._length : 0);
    return w;
}

template <class Sample, class Wire>
Sample written_of(const Wire& w)
{
    Sample s{};
    each_value(s, w, [](auto& to, const auto& from) { to = from; });
    copy_text(s.participant, w.participant);
    // Borrowed: dds_write serializes it and never frees it.
    s.payload._buffer = const_cast<std::uint8_t*>(w.payload.data());
    s.payload._length = static_cast<std::uint32_t>(w.payload.size());
    s.payload._maximum = s.payload._length;
    s.payload._release = false;
    return s;
}

} // namespace

remote::ToHostWire wire_of(const simsync_remote_ToHost& s)
{
    auto w = view_of<remote::ToHostWire>(s);
    std::copy(std::begin(s.reply_reader), std::end(s.reply_reader), w.reply_reader.begin());
    return w;
}

remote::ToParticipantWire wire_of(const simsync_remote_ToParticipant& s)
{
    auto w = view_of<remote::ToParticipantWire>(s);
    w.text = std::string_view(s.text, sizeof s.text);
    return w;
}

simsync_remote_ToHost sample_of(const remote::ToHostWire& w)
{
    auto s = written_of<simsync_remote_ToHost>(w);
    std::copy(w.reply_reader.begin(), w.reply_reader.end(), s.reply_reader);
    return s;
}

simsync_remote_ToParticipant sample_of(const remote::ToParticipantWire& w)
{
    auto s = written_of<simsync_remote_ToParticipant>(w);
    copy_text(s.text, w.text);
    return s;
}

std::array<std::uint8_t, 16> guid_bytes(const dds_guid_t& g)
{
    std::array<std::uint8_t, 16> b{};
    static_assert(sizeof g.v == 16);
    std::memcpy(b.data(), g.v, 16);
    return b;
}

} // namespace simsync::dds::detail
