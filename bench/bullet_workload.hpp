#pragma once
// The Bullet benchmarks' shared workload (bench_bullet_host, bench_web_viewers):
// a controller that pushes box_0 round a circle and sensors that read every
// body, at fixed rates on exact integer-nanosecond instants. One definition, so
// that both benchmarks measure the same work and their trajectory hashes agree.

#include <simsync/bullet/bullet.hpp>
#include <simsync/simsync.hpp>

#include <cmath>
#include <cstdint>

namespace simsync::bench::bullet_workload {

inline constexpr int kControllerHz = 100;
inline constexpr int kSensorHz[] = {200, 200, 100, 100, 50, 50, 30, 30, 20, 10};

// The n-th instant of a participant at `hz`, exact (no accumulated rounding).
inline SimTime instant(int hz, std::int64_t n)
{
    return SimTime{SimDuration{n * 1'000'000'000 / hz}};
}

// The controller: records the state and pushes box_0 round a circle (state
// dependent, so a push at the wrong instant changes the hash).
inline void control(simsync::bullet::BulletWorld& w, simsync::bullet::TrajectoryHash& hash)
{
    w.hash_state(hash);
    const simsync::bullet::BodyState s = w.state(0);
    const double r = std::hypot(s.pose.position.x, s.pose.position.y);
    const double ux = r > 1e-9 ? s.pose.position.x / r : 1.0;
    const double uy = r > 1e-9 ? s.pose.position.y / r : 0.0;
    const double jx = 0.3 * (-uy * 1.5 + ux * (2.0 - r) - s.linear_velocity.x);
    const double jy = 0.3 * (ux * 1.5 + uy * (2.0 - r) - s.linear_velocity.y);
    const double n = std::hypot(jx, jy);
    const double k = n > 0.5 ? 0.5 / n : 1.0;
    w.apply_central_impulse(0, {k * jx, k * jy, 0.0});
}

// A sensor: reads every body's height (const access only).
inline double sense(const simsync::bullet::BulletWorld& w)
{
    double sum = 0;
    for (simsync::bullet::BodyIndex i = 0; i < w.body_count(); ++i) sum += w.state(i).pose.position.z;
    return sum;
}

} // namespace simsync::bench::bullet_workload
