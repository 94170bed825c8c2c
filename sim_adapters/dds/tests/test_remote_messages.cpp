// The remote participants' messages without DDS: decoding every kind, every
// refusal of the decoders and of the inboxes, counted by reason.

#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <simsync/dds/remote_messages.hpp>

#include <string>
#include <vector>

using namespace std::chrono_literals;
namespace r = simsync::dds::remote;

namespace {

// A NUL-terminated name field, as the fixed-size IDL string holds it.
struct NameField {
    std::string bytes;
    explicit NameField(const std::string& name) : bytes(name + '\0') {}
    std::string_view view() const { return bytes; }
};

r::ToHostWire to_host(const NameField& name, r::ToHostKind kind, std::uint64_t seq, std::uint64_t incarnation = 7)
{
    r::ToHostWire w;
    w.participant = name.view();
    w.incarnation = incarnation;
    w.seq = seq;
    w.kind = static_cast<std::uint8_t>(kind);
    w.reply_reader[15] = 1;
    return w;
}

r::HostMessage host_message(const std::string& name, r::ToHostKind kind, std::uint64_t seq,
                            std::uint64_t incarnation = 7)
{
    const NameField f(name);
    auto d = r::decode(to_host(f, kind, seq, incarnation));
    REQUIRE(d);
    return *d.message;
}

const NameField kEmptyText("");

r::ToParticipantWire to_participant(const NameField& name, r::ToParticipantKind kind, std::uint64_t seq,
                                    std::uint64_t target = 7, std::uint64_t host = 99)
{
    r::ToParticipantWire w;
    w.participant = name.view();
    w.target_incarnation = target;
    w.host_incarnation = host;
    w.seq = seq;
    w.kind = static_cast<std::uint8_t>(kind);
    w.text = kEmptyText.view();
    w.step = 1'000'000;
    if (kind == r::ToParticipantKind::grant) w.ref = 1;
    return w;
}

r::ParticipantMessage participant_message(const std::string& name, r::ToParticipantKind kind, std::uint64_t seq,
                                          std::uint64_t target = 7, std::uint64_t host = 99)
{
    const NameField f(name);
    auto d = r::decode(to_participant(f, kind, seq, target, host));
    REQUIRE(d);
    return *d.message;
}

} // namespace

TEST_CASE("RemoteMessages.Decode.EveryParticipantToHostKind")
{
    const NameField name("cam");
    auto a = to_host(name, r::ToHostKind::announce, 1);
    a.accessor_kind = 1;
    a.access_mode = 1;
    a.priority = -3;
    a.time = 5'000'000;
    a.lookahead = 2'000'000;
    auto da = r::decode(a);
    REQUIRE(da);
    CHECK(da.message->participant == "cam");
    CHECK(da.message->kind() == r::ToHostKind::announce);
    const auto& an = std::get<r::Announce>(da.message->body);
    CHECK(an.options.kind == simsync::AccessorKind::free);
    CHECK(an.options.mode == simsync::AccessMode::shared);
    CHECK(an.options.priority == -3);
    CHECK(an.options.first_request == simsync::sim_time(5ms));
    CHECK(an.options.lookahead == 2ms);

    auto q = to_host(name, r::ToHostKind::request, 2);
    q.time = 33'333'333;
    auto dq = r::decode(q);
    REQUIRE(dq);
    CHECK(std::get<r::Request>(dq.message->body).time == simsync::SimTime{33'333'333ns});

    const std::vector<std::uint8_t> bytes{1, 2, 3};
    auto rel = to_host(name, r::ToHostKind::release, 3);
    rel.has_time = true;
    rel.time = 40'000'000;
    rel.payload = bytes;
    auto dr = r::decode(rel);
    REQUIRE(dr);
    const auto& re = std::get<r::Release>(dr.message->body);
    CHECK(re.next_request == simsync::sim_time(40ms));
    CHECK(re.payload == bytes);
    rel.has_time = false;
    CHECK_FALSE(std::get<r::Release>(r::decode(rel).message->body).next_request.has_value());

    auto c = to_host(name, r::ToHostKind::cancel, 5);
    c.ref = 4;
    auto dc = r::decode(c);
    REQUIRE(dc);
    CHECK(std::get<r::Cancel>(dc.message->body).request == 4);

    CHECK(r::decode(to_host(name, r::ToHostKind::leave, 6)).message->kind() == r::ToHostKind::leave);

    // One sample per step: the release, its commands and the next request.
    auto rr = to_host(name, r::ToHostKind::release_and_request, 7);
    rr.has_time = true;
    rr.time = 41'000'000;
    rr.payload = bytes;
    auto drr = r::decode(rr);
    REQUIRE(drr);
    CHECK(drr.message->kind() == r::ToHostKind::release_and_request);
    const auto& rq = std::get<r::ReleaseAndRequest>(drr.message->body);
    CHECK(rq.next == simsync::sim_time(41ms));
    CHECK(rq.payload == bytes);
}

TEST_CASE("RemoteMessages.Decode.RefusesAReleaseAndRequestWithoutItsTime")
{
    const NameField name("cam");
    auto rr = to_host(name, r::ToHostKind::release_and_request, 3);
    rr.has_time = false;
    rr.time = 41'000'000;
    const auto d = r::decode(rr);
    REQUIRE_FALSE(d);
    CHECK(d.rejection == r::Rejection::bad_field);
}

TEST_CASE("RemoteMessages.Decode.RefusesBadParticipantToHostSamples")
{
    const NameField name("cam");
    auto refused = [](const r::ToHostWire& w) {
        const auto d = r::decode(w);
        REQUIRE_FALSE(d);
        return d.rejection;
    };
    auto w = to_host(name, static_cast<r::ToHostKind>(9), 2);
    CHECK(refused(w) == r::Rejection::unknown_kind);
    w = to_host(name, static_cast<r::ToHostKind>(0), 2);
    CHECK(refused(w) == r::Rejection::unknown_kind);

    // Names: empty, unterminated, too long, control characters.
    const NameField empty("");
    CHECK(refused(to_host(empty, r::ToHostKind::request, 2)) == r::Rejection::bad_name);
    const std::string unterminated = "cam";
    w = to_host(name, r::ToHostKind::request, 2);
    w.participant = unterminated;
    CHECK(refused(w) == r::Rejection::bad_name);
    const NameField longest(std::string(r::kMaxName, 'a'));
    CHECK(r::decode(to_host(longest, r::ToHostKind::request, 2)));
    const NameField too_long(std::string(r::kMaxName + 1, 'a'));
    CHECK(refused(to_host(too_long, r::ToHostKind::request, 2)) == r::Rejection::bad_name);
    const NameField control("a\nb");
    CHECK(refused(to_host(control, r::ToHostKind::request, 2)) == r::Rejection::bad_name);

    // Zero incarnation or sequence; an announce that is not the first message.
    CHECK(refused(to_host(name, r::ToHostKind::request, 0)) == r::Rejection::bad_field);
    CHECK(refused(to_host(name, r::ToHostKind::request, 2, 0)) == r::Rejection::bad_field);
    CHECK(refused(to_host(name, r::ToHostKind::announce, 2)) == r::Rejection::bad_field);
    w = to_host(name, r::ToHostKind::announce, 1);
    w.accessor_kind = 2;
    CHECK(refused(w) == r::Rejection::bad_field);
    w = to_host(name, r::ToHostKind::announce, 1);
    w.access_mode = 7;
    CHECK(refused(w) == r::Rejection::bad_field);
    w = to_host(name, r::ToHostKind::announce, 1);
    w.lookahead = -1;
    CHECK(refused(w) == r::Rejection::bad_field);
    w = to_host(name, r::ToHostKind::announce, 1);
    w.reply_reader = {}; // nobody to answer
    CHECK(refused(w) == r::Rejection::bad_field);
    // A cancel must name an earlier message.
    w = to_host(name, r::ToHostKind::cancel, 3);
    CHECK(refused(w) == r::Rejection::bad_field);
    w.ref = 3;
    CHECK(refused(w) == r::Rejection::bad_field);

    // Payloads: only on a release, at most 64 KiB.
    const std::vector<std::uint8_t> limit(r::kMaxPayload, 0xAB);
    const std::vector<std::uint8_t> over(r::kMaxPayload + 1, 0xAB);
    w = to_host(name, r::ToHostKind::release, 2);
    w.payload = limit;
    CHECK(r::decode(w));
    w.payload = over;
    CHECK(refused(w) == r::Rejection::payload_too_large);
    w = to_host(name, r::ToHostKind::request, 2);
    w.payload = limit;
    CHECK(refused(w) == r::Rejection::unexpected_payload);
}

TEST_CASE("RemoteMessages.Decode.EveryHostToParticipantKind")
{
    const NameField name("cam");
    const NameField text("taken");
    auto w = to_participant(name, r::ToParticipantKind::welcome, 1);
    w.step = 2'000'000;
    w.rounding = 2;
    w.state = 1;
    w.now = 10'000'000;
    auto dw = r::decode(w);
    REQUIRE(dw);
    const auto& wel = std::get<r::Welcome>(dw.message->body);
    CHECK(wel.refusal == r::WelcomeRefusal::none);
    CHECK(wel.step == 2ms);
    CHECK(wel.rounding == simsync::Rounding::down);
    CHECK(wel.state == simsync::HandlerState::paused);
    CHECK(wel.now == simsync::sim_time(10ms));

    w.error = 1;
    w.text = text.view();
    auto refused_welcome = r::decode(w);
    REQUIRE(refused_welcome);
    CHECK(std::get<r::Welcome>(refused_welcome.message->body).refusal == r::WelcomeRefusal::duplicate_name);
    CHECK(std::get<r::Welcome>(refused_welcome.message->body).text == "taken");
    // The admission's refusals (BridgeConfig::allowed_names, max_participants).
    w.error = 3;
    REQUIRE(r::decode(w));
    CHECK(std::get<r::Welcome>(r::decode(w).message->body).refusal == r::WelcomeRefusal::not_allowed);
    w.error = 4;
    REQUIRE(r::decode(w));
    CHECK(std::get<r::Welcome>(r::decode(w).message->body).refusal == r::WelcomeRefusal::participant_limit);

    const std::vector<std::uint8_t> bytes{9, 8};
    auto g = to_participant(name, r::ToParticipantKind::grant, 2);
    g.ref = 2;
    g.requested = 33'333'333;
    g.granted = 33'000'000;
    g.grant_sequence = 12;
    g.payload = bytes;
    auto dg = r::decode(g);
    REQUIRE(dg);
    const auto& gr = std::get<r::Grant>(dg.message->body);
    CHECK_FALSE(gr.error);
    CHECK(gr.request == 2);
    CHECK(gr.granted == simsync::sim_time(33ms));
    CHECK(gr.grant_sequence == 12);
    CHECK(gr.payload == bytes);
    g.payload = {};
    g.error = static_cast<std::int32_t>(simsync::errc::time_passed);
    CHECK(std::get<r::Grant>(r::decode(g).message->body).error == simsync::errc::time_passed);

    auto s = to_participant(name, r::ToParticipantKind::state, 3);
    s.state = 2;
    s.now = 5;
    auto ds = r::decode(s);
    REQUIRE(ds);
    CHECK(std::get<r::StateChange>(ds.message->body).state == simsync::HandlerState::stopped);
}

TEST_CASE("RemoteMessages.Decode.RefusesBadHostToParticipantSamples")
{
    const NameField name("cam");
    auto refused = [](const r::ToParticipantWire& w) {
        const auto d = r::decode(w);
        REQUIRE_FALSE(d);
        return d.rejection;
    };
    CHECK(refused(to_participant(name, static_cast<r::ToParticipantKind>(4), 2)) == r::Rejection::unknown_kind);
    const NameField empty("");
    CHECK(refused(to_participant(empty, r::ToParticipantKind::state, 2)) == r::Rejection::bad_name);
    CHECK(refused(to_participant(name, r::ToParticipantKind::state, 0)) == r::Rejection::bad_field);
    CHECK(refused(to_participant(name, r::ToParticipantKind::state, 2, 0)) == r::Rejection::bad_field);
    CHECK(refused(to_participant(name, r::ToParticipantKind::state, 2, 7, 0)) == r::Rejection::bad_field);

    auto w = to_participant(name, r::ToParticipantKind::welcome, 2); // a welcome starts the stream
    CHECK(refused(w) == r::Rejection::bad_field);
    w = to_participant(name, r::ToParticipantKind::welcome, 1);
    w.step = 0;
    CHECK(refused(w) == r::Rejection::bad_field);
    w.step = 1;
    w.rounding = 3;
    CHECK(refused(w) == r::Rejection::bad_field);
    w.rounding = 0;
    w.state = 3;
    CHECK(refused(w) == r::Rejection::bad_field);
    w.state = 0;
    w.error = 5; // the first that is no WelcomeRefusal
    CHECK(refused(w) == r::Rejection::bad_field);
    w.error = 0;
    const std::string unterminated = "x";
    w.text = unterminated;
    CHECK(refused(w) == r::Rejection::bad_field);

    auto g = to_participant(name, r::ToParticipantKind::grant, 2);
    g.ref = 0;
    CHECK(refused(g) == r::Rejection::bad_field);
    g.ref = 1;
    g.error = static_cast<std::int32_t>(simsync::errc::busy); // not a refusal of a request
    CHECK(refused(g) == r::Rejection::bad_field);
    g.error = 0;
    g.granted = -1;
    CHECK(refused(g) == r::Rejection::bad_field);
    g.granted = 0;
    const std::vector<std::uint8_t> over(r::kMaxPayload + 1, 1);
    g.payload = over;
    CHECK(refused(g) == r::Rejection::payload_too_large);
    const std::vector<std::uint8_t> some{1};
    g.payload = some;
    g.error = static_cast<std::int32_t>(simsync::errc::stopped);
    CHECK(refused(g) == r::Rejection::unexpected_payload);

    auto s = to_participant(name, r::ToParticipantKind::state, 2);
    s.payload = some;
    CHECK(refused(s) == r::Rejection::unexpected_payload);
    s.payload = {};
    s.now = -1;
    CHECK(refused(s) == r::Rejection::bad_field);
}

TEST_CASE("RemoteMessages.HostInbox.AdmitsInOrderAndCountsEveryRefusal")
{
    r::HostInbox inbox;
    using V = r::HostInbox::Verdict;
    // Anything but an announce from a stranger.
    auto res = inbox.accept(host_message("cam", r::ToHostKind::request, 2));
    CHECK(res.verdict == V::rejected);
    CHECK(res.rejection == r::Rejection::unknown_participant);

    CHECK(inbox.accept(host_message("cam", r::ToHostKind::announce, 1)).verdict == V::new_announce);
    inbox.admit("cam", 7);
    CHECK(inbox.admitted("cam"));
    // The same announce again (a duplicated sample).
    CHECK(inbox.accept(host_message("cam", r::ToHostKind::announce, 1)).rejection == r::Rejection::duplicate);
    // Another incarnation announcing the name.
    CHECK(inbox.accept(host_message("cam", r::ToHostKind::announce, 1, 8)).verdict == V::taken_name);
    // Another incarnation's request.
    CHECK(inbox.accept(host_message("cam", r::ToHostKind::request, 2, 8)).rejection == r::Rejection::wrong_incarnation);
    // In order.
    CHECK(inbox.accept(host_message("cam", r::ToHostKind::request, 2)).verdict == V::apply);
    CHECK(inbox.accept(host_message("cam", r::ToHostKind::release, 3)).verdict == V::apply);
    // Duplicated, old, and a gap.
    CHECK(inbox.accept(host_message("cam", r::ToHostKind::release, 3)).rejection == r::Rejection::duplicate);
    CHECK(inbox.accept(host_message("cam", r::ToHostKind::request, 2)).rejection == r::Rejection::duplicate);
    CHECK(inbox.accept(host_message("cam", r::ToHostKind::request, 5)).rejection == r::Rejection::out_of_order);
    CHECK(inbox.accept(host_message("cam", r::ToHostKind::request, 4)).verdict == V::apply);

    inbox.forget("cam");
    CHECK(inbox.accept(host_message("cam", r::ToHostKind::request, 5)).rejection ==
          r::Rejection::unknown_participant);

    const auto& c = inbox.rejections();
    CHECK(c[r::Rejection::unknown_participant] == 2);
    CHECK(c[r::Rejection::duplicate] == 3);
    CHECK(c[r::Rejection::wrong_incarnation] == 1);
    CHECK(c[r::Rejection::out_of_order] == 1);
    CHECK(c.total() == 7);
    CHECK(inbox.accepted() == 5);
}

TEST_CASE("RemoteMessages.ParticipantInbox.OnlyItsOwnInOrderFromItsHost")
{
    r::ParticipantInbox inbox("cam", 7);
    using K = r::ToParticipantKind;
    r::Rejection why{};
    // Before the welcome: nothing else.
    CHECK_FALSE(inbox.accept(participant_message("cam", K::state, 2), &why));
    CHECK(why == r::Rejection::not_welcomed);
    // Someone else's, and a previous incarnation's.
    CHECK_FALSE(inbox.accept(participant_message("lidar", K::welcome, 1), &why));
    CHECK(why == r::Rejection::other_participant);
    CHECK_FALSE(inbox.accept(participant_message("cam", K::welcome, 1, 6), &why));
    CHECK(why == r::Rejection::wrong_incarnation);

    CHECK(inbox.accept(participant_message("cam", K::welcome, 1)));
    CHECK(inbox.welcomed());
    CHECK(inbox.host_incarnation() == 99);
    CHECK_FALSE(inbox.accept(participant_message("cam", K::welcome, 1), &why));
    CHECK(why == r::Rejection::duplicate);
    // Another host (another simulation reaching this participant).
    CHECK_FALSE(inbox.accept(participant_message("cam", K::grant, 2, 7, 100), &why));
    CHECK(why == r::Rejection::wrong_host);
    CHECK(inbox.accept(participant_message("cam", K::grant, 2)));
    CHECK_FALSE(inbox.accept(participant_message("cam", K::state, 4), &why));
    CHECK(why == r::Rejection::out_of_order);
    CHECK_FALSE(inbox.accept(participant_message("cam", K::grant, 2), &why));
    CHECK(why == r::Rejection::duplicate);
    CHECK(inbox.accept(participant_message("cam", K::state, 3)));

    const auto& c = inbox.rejections();
    CHECK(c[r::Rejection::not_welcomed] == 1);
    CHECK(c[r::Rejection::other_participant] == 1);
    CHECK(c[r::Rejection::wrong_incarnation] == 1);
    CHECK(c[r::Rejection::duplicate] == 2);
    CHECK(c[r::Rejection::wrong_host] == 1);
    CHECK(c[r::Rejection::out_of_order] == 1);
    CHECK(inbox.accepted() == 3);
}

TEST_CASE("RemoteMessages.Rejection.EveryReasonHasAName")
{
    for (std::size_t i = 0; i < r::kRejectionCount; ++i) {
        CHECK(std::string(r::to_string(static_cast<r::Rejection>(i))) != "?");
    }
    CHECK(std::string(r::to_string(r::WelcomeRefusal::duplicate_name)) == "duplicate_name");
}
