#include "controller.hpp"

#include <cmath>

namespace simsync::examples::bullet_host {

sb::Vec3 push_impulse(const PushObservation& observation)
{
    const sb::BodyState& s = observation.state;
    const double x = s.pose.position.x;
    const double y = s.pose.position.y;
    const double r = std::hypot(x, y);
    const double ux = r > 1e-9 ? x / r : 1.0;
    const double uy = r > 1e-9 ? y / r : 0.0;
    const double radial = 1.0 * (2.0 - r);
    const double want_x = -uy * 1.5 + ux * radial;
    const double want_y = ux * 1.5 + uy * radial;
    double jx = 0.3 * (want_x - s.linear_velocity.x);
    double jy = 0.3 * (want_y - s.linear_velocity.y);
    const double norm = std::hypot(jx, jy);
    constexpr double kMaxDeltaV = 0.5; // m/s per push
    if (norm > kMaxDeltaV) {
        jx *= kMaxDeltaV / norm;
        jy *= kMaxDeltaV / norm;
    }
    const double m = observation.mass;
    return {m * jx, m * jy, 0.0};
}

PushObservation Controller::observe(const sb::BulletWorld& world) const
{
    return {world.state(pushed_), world.body_mass(pushed_)};
}

void Controller::apply(sb::BulletWorld& world, sb::Vec3 impulse)
{
    world.apply_central_impulse(pushed_, impulse);
    ++pushes_;
}

void Controller::finish(const sb::BulletWorld& world)
{
    world.hash_state(hash_);
    last_position_ = world.pose(pushed_).position;
    steps_at_end_ = world.steps();
}

} // namespace simsync::examples::bullet_host
