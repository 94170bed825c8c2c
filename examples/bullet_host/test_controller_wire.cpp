// The payloads of simsync-bullet-host's remote controller (controller_wire.hpp):
// the documented layout, bit-exact round trips, and a named refusal for every
// kind of malformed payload.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "controller.hpp"
#include "controller_wire.hpp"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace bh = simsync::examples::bullet_host;
namespace sb = simsync::bullet;

namespace {

bh::Observation sample_observation()
{
    bh::Observation o;
    o.granted = simsync::SimTime{simsync::SimDuration{70'000'000}};
    o.end = simsync::SimTime{simsync::SimDuration{1'000'000'000}};
    o.final = false;
    o.body.mass = 1.0;
    o.body.state.pose.position = {0.1, -0.0, 0.25};
    o.body.state.pose.orientation = {0.0, 0.0, std::sin(0.15), std::cos(0.15)};
    o.body.state.linear_velocity = {1.0 / 3.0, std::numeric_limits<double>::denorm_min(), -9.81e-3};
    o.body.state.angular_velocity = {std::numeric_limits<double>::max(), std::numeric_limits<double>::lowest(), 0.0};
    o.body.state.awake = true;
    return o;
}

std::uint64_t bits(double d) { return std::bit_cast<std::uint64_t>(d); }

void check_same_bits(const sb::Vec3& a, const sb::Vec3& b)
{
    CHECK(bits(a.x) == bits(b.x));
    CHECK(bits(a.y) == bits(b.y));
    CHECK(bits(a.z) == bits(b.z));
}

// Little-endian u64 at `at`.
std::uint64_t le64(const std::vector<std::uint8_t>& b, std::size_t at)
{
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= std::uint64_t{b[at + i]} << (8 * i);
    return v;
}

void put_le64(std::vector<std::uint8_t>& b, std::size_t at, std::uint64_t v)
{
    for (int i = 0; i < 8; ++i) b[at + i] = static_cast<std::uint8_t>(v >> (8 * i));
}

} // namespace

TEST_CASE("ControllerWire.Observation.LayoutIsTheDocumentedOne")
{
    const bh::Observation o = sample_observation();
    const std::vector<std::uint8_t> b = bh::encode(o);
    REQUIRE(b.size() == bh::kObservationSize);
    CHECK(b[0] == 'S');
    CHECK(b[1] == 'S');
    CHECK(b[2] == 'B');
    CHECK(b[3] == 'C');
    CHECK(b[4] == 1); // version, little-endian
    CHECK(b[5] == 0);
    CHECK(b[6] == 1); // type observation
    CHECK(b[7] == 0);
    CHECK(le64(b, 8) == 70'000'000u);
    CHECK(le64(b, 16) == 1'000'000'000u);
    CHECK(b[24] == 0x02); // awake, not final
    for (std::size_t i = 25; i < 32; ++i) CHECK(b[i] == 0);
    CHECK(le64(b, 32) == bits(1.0));
    CHECK(le64(b, 40) == bits(0.1));
    CHECK(le64(b, 48) == bits(-0.0));
    CHECK(le64(b, 88) == bits(std::cos(0.15)));  // orientation.w
    CHECK(le64(b, 96) == bits(1.0 / 3.0));       // linear velocity x
    CHECK(le64(b, 136) == bits(0.0));            // angular velocity z
}

TEST_CASE("ControllerWire.Observation.RoundTripIsBitExact")
{
    const bh::Observation o = sample_observation();
    const bh::WireDecoded<bh::Observation> d = bh::decode_observation(bh::encode(o));
    REQUIRE(d);
    CHECK(d.value->granted == o.granted);
    CHECK(d.value->end == o.end);
    CHECK(d.value->final == o.final);
    CHECK(d.value->body.state.awake);
    CHECK(bits(d.value->body.mass) == bits(o.body.mass));
    check_same_bits(d.value->body.state.pose.position, o.body.state.pose.position);
    check_same_bits(d.value->body.state.linear_velocity, o.body.state.linear_velocity);
    check_same_bits(d.value->body.state.angular_velocity, o.body.state.angular_velocity);
    CHECK(bits(d.value->body.state.pose.orientation.w) == bits(o.body.state.pose.orientation.w));

    bh::Observation last = o;
    last.final = true;
    last.body.state.awake = false;
    const auto d2 = bh::decode_observation(bh::encode(last));
    REQUIRE(d2);
    CHECK(d2.value->final);
    CHECK_FALSE(d2.value->body.state.awake);
}

TEST_CASE("ControllerWire.Command.RoundTripIsBitExactAndThePushIsTheInProcessOne")
{
    // The remote controller computes push_impulse from the decoded observation;
    // the host applies the decoded command: the bits must be those of the
    // in-process computation.
    std::mt19937_64 rng(1234);
    std::uniform_real_distribution<double> u(-3.0, 3.0);
    for (int i = 0; i < 1000; ++i) {
        bh::Observation o = sample_observation();
        o.body.state.pose.position = {u(rng), u(rng), u(rng)};
        o.body.state.linear_velocity = {u(rng), u(rng), u(rng)};
        o.body.mass = std::abs(u(rng)) + 0.1;
        const sb::Vec3 in_process = bh::push_impulse(o.body);
        const auto observed = bh::decode_observation(bh::encode(o));
        REQUIRE(observed);
        const bh::Command c{.granted = observed.value->granted, .impulse = bh::push_impulse(observed.value->body)};
        const std::vector<std::uint8_t> b = bh::encode(c);
        REQUIRE(b.size() == bh::kCommandSize);
        const auto command = bh::decode_command(b);
        REQUIRE(command);
        CHECK(command.value->granted == o.granted);
        check_same_bits(command.value->impulse, in_process);
    }
}

TEST_CASE("ControllerWire.MalformedPayloadsAreRefusedByName")
{
    const std::vector<std::uint8_t> obs = bh::encode(sample_observation());
    const std::vector<std::uint8_t> cmd = bh::encode(bh::Command{.granted = {}, .impulse = {1, 2, 3}});

    SUBCASE("empty and truncated")
    {
        CHECK(bh::decode_command({}).error == bh::WireError::wrong_size);
        CHECK(bh::decode_observation({}).error == bh::WireError::wrong_size);
        CHECK(bh::decode_command(std::span(cmd).first(3)).error == bh::WireError::wrong_size);
        CHECK(bh::decode_command(std::span(cmd).first(7)).error == bh::WireError::wrong_size);
        CHECK(bh::decode_command(std::span(cmd).first(cmd.size() - 1)).error == bh::WireError::wrong_size);
        CHECK(bh::decode_observation(std::span(obs).first(obs.size() - 8)).error == bh::WireError::wrong_size);
    }
    SUBCASE("padded")
    {
        std::vector<std::uint8_t> b = cmd;
        b.push_back(0);
        CHECK(bh::decode_command(b).error == bh::WireError::wrong_size);
    }
    SUBCASE("foreign bytes")
    {
        const std::vector<std::uint8_t> text{'c', 'o', 'n', 't', 'r', 'o', 'l', 'l', 'e', 'r'};
        CHECK(bh::decode_command(text).error == bh::WireError::bad_magic);
        std::vector<std::uint8_t> b = cmd;
        b[3] = 'X';
        CHECK(bh::decode_command(b).error == bh::WireError::bad_magic);
    }
    SUBCASE("another version")
    {
        std::vector<std::uint8_t> b = cmd;
        b[4] = 99; // what simsync-remote-controller --corrupt-command-at sends
        CHECK(bh::decode_command(b).error == bh::WireError::unsupported_version);
        b[4] = 1;
        b[5] = 1; // version 257
        CHECK(bh::decode_command(b).error == bh::WireError::unsupported_version);
    }
    SUBCASE("the other type")
    {
        CHECK(bh::decode_command(obs).error == bh::WireError::wrong_type);
        CHECK(bh::decode_observation(cmd).error == bh::WireError::wrong_type);
        std::vector<std::uint8_t> b = cmd;
        b[6] = 7;
        CHECK(bh::decode_command(b).error == bh::WireError::wrong_type);
    }
    SUBCASE("reserved bits")
    {
        std::vector<std::uint8_t> b = obs;
        b[24] |= 0x80;
        CHECK(bh::decode_observation(b).error == bh::WireError::reserved_bits);
        b = obs;
        b[31] = 1;
        CHECK(bh::decode_observation(b).error == bh::WireError::reserved_bits);
    }
    SUBCASE("not finite")
    {
        for (double bad : {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                           -std::numeric_limits<double>::infinity()}) {
            std::vector<std::uint8_t> b = cmd;
            put_le64(b, 24, bits(bad)); // impulse y
            CHECK(bh::decode_command(b).error == bh::WireError::not_finite);
            std::vector<std::uint8_t> o = obs;
            put_le64(o, 32, bits(bad)); // mass
            CHECK(bh::decode_observation(o).error == bh::WireError::not_finite);
        }
    }
    SUBCASE("every error has a name")
    {
        for (std::size_t i = 0; i < bh::kWireErrorCount; ++i) {
            CHECK(std::string(bh::to_string(static_cast<bh::WireError>(i))) != "unknown");
        }
    }
}

TEST_CASE("ControllerWire.Decoders.NeverReadPastTheEnd")
{
    // Every prefix and random mutations: decoding answers, never crashes (the
    // asan preset checks the reads).
    const std::vector<std::uint8_t> obs = bh::encode(sample_observation());
    const std::vector<std::uint8_t> cmd = bh::encode(bh::Command{.granted = {}, .impulse = {1, 2, 3}});
    for (std::size_t n = 0; n <= obs.size(); ++n) {
        CHECK((n == obs.size()) == static_cast<bool>(bh::decode_observation(std::span(obs).first(n))));
    }
    for (std::size_t n = 0; n <= cmd.size(); ++n) {
        CHECK((n == cmd.size()) == static_cast<bool>(bh::decode_command(std::span(cmd).first(n))));
    }
    std::mt19937 rng(5);
    for (int i = 0; i < 10000; ++i) {
        std::vector<std::uint8_t> b = (i % 2 == 0) ? obs : cmd;
        b[rng() % b.size()] = static_cast<std::uint8_t>(rng());
        if (rng() % 4 == 0) b.resize(rng() % (b.size() + 8));
        (void)bh::decode_observation(b);
        (void)bh::decode_command(b);
    }
}
