#include "remote_dds.hpp"

#include <simsync/error.hpp>

#include <algorithm>
#include <cstring>
#include <random>

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

QosPtr make_remote_qos(const std::string& partition, Side side, WallClock::duration lease)
{
    if (partition.empty()) throw Error(errc::invalid_argument, "the DDS partition of remote participants is empty");
    if (side == Side::writer) check_lease(lease, "a remote participants' writer");
    Qos q;
    q.reliability = Reliability::reliable;
    q.durability = Durability::volatile_;
    q.depth = 0; // keep all: nothing a participant or the host writes is ever replaced
    q.max_blocking_time = std::chrono::nanoseconds(kRemoteMaxBlockingNs);
    QosPtr qos = make_qos(q, side);
    dds_qset_partition1(qos.get(), partition.c_str());
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

remote::ToHostWire wire_of(const simsync_remote_ToHost& s)
{
    remote::ToHostWire w;
    w.participant = std::string_view(s.participant, sizeof s.participant);
    w.incarnation = s.incarnation;
    w.seq = s.seq;
    w.kind = s.kind;
    w.accessor_kind = s.accessor_kind;
    w.access_mode = s.access_mode;
    w.priority = s.priority;
    w.time = s.time;
    w.has_time = s.has_time;
    w.lookahead = s.lookahead;
    w.ref = s.ref;
    std::copy(std::begin(s.reply_reader), std::end(s.reply_reader), w.reply_reader.begin());
    w.payload = std::span<const std::uint8_t>(s.payload._buffer, s.payload._buffer ? s.payload._length : 0);
    return w;
}

remote::ToParticipantWire wire_of(const simsync_remote_ToParticipant& s)
{
    remote::ToParticipantWire w;
    w.participant = std::string_view(s.participant, sizeof s.participant);
    w.target_incarnation = s.target_incarnation;
    w.host_incarnation = s.host_incarnation;
    w.seq = s.seq;
    w.kind = s.kind;
    w.error = s.error;
    w.text = std::string_view(s.text, sizeof s.text);
    w.step = s.step;
    w.rounding = s.rounding;
    w.state = s.state;
    w.now = s.now;
    w.ref = s.ref;
    w.requested = s.requested;
    w.granted = s.granted;
    w.grant_sequence = s.grant_sequence;
    w.payload = std::span<const std::uint8_t>(s.payload._buffer, s.payload._buffer ? s.payload._length : 0);
    return w;
}

std::array<std::uint8_t, 16> guid_bytes(const dds_guid_t& g)
{
    std::array<std::uint8_t, 16> b{};
    static_assert(sizeof g.v == 16);
    std::memcpy(b.data(), g.v, 16);
    return b;
}

} // namespace simsync::dds::detail
