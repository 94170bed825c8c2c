#include "controller_wire.hpp"

namespace simsync::examples::bullet_host {

host::ObservationFrame to_frame(const Observation& o)
{
    const sb::BodyState& s = o.body.state;
    return {.granted = o.granted,
            .end = o.end,
            .final = o.final,
            .flags = s.awake ? kAwakeFlag : std::uint8_t{0},
            .values = {o.body.mass, s.pose.position.x, s.pose.position.y, s.pose.position.z,
                       s.pose.orientation.x, s.pose.orientation.y, s.pose.orientation.z, s.pose.orientation.w,
                       s.linear_velocity.x, s.linear_velocity.y, s.linear_velocity.z, s.angular_velocity.x,
                       s.angular_velocity.y, s.angular_velocity.z}};
}

Observation from_frame(const host::ObservationFrame& f)
{
    Observation o{.granted = f.granted, .end = f.end, .final = f.final, .body = {}};
    const std::vector<double>& v = f.values;
    sb::BodyState& s = o.body.state;
    s.awake = (f.flags & kAwakeFlag) != 0;
    o.body.mass = v[0];
    s.pose.position = {v[1], v[2], v[3]};
    s.pose.orientation.x = v[4], s.pose.orientation.y = v[5], s.pose.orientation.z = v[6], s.pose.orientation.w = v[7];
    s.linear_velocity = {v[8], v[9], v[10]};
    s.angular_velocity = {v[11], v[12], v[13]};
    return o;
}

std::vector<std::uint8_t> encode(const Observation& o) { return host::encode(kBulletWire, to_frame(o)); }

std::vector<std::uint8_t> encode(const Command& c)
{
    return host::encode(kBulletWire, host::CommandFrame{c.granted, {c.impulse.x, c.impulse.y, c.impulse.z}});
}

WireDecoded<Observation> decode_observation(std::span<const std::uint8_t> bytes)
{
    WireDecoded<host::ObservationFrame> d = host::decode_observation(kBulletWire, bytes);
    if (!d) return {std::nullopt, d.error};
    return {from_frame(*d.value), d.error};
}

WireDecoded<Command> decode_command(std::span<const std::uint8_t> bytes)
{
    WireDecoded<host::CommandFrame> d = host::decode_command(kBulletWire, bytes);
    if (!d) return {std::nullopt, d.error};
    const std::vector<double>& v = d.value->values;
    return {Command{d.value->granted, {v[0], v[1], v[2]}}, d.error};
}

} // namespace simsync::examples::bullet_host
