#include "balls_world.hpp"

#include <cstring>

namespace demo {

namespace {
constexpr double kGravity = -9.81;
} // namespace

BallsWorld::BallsWorld(std::size_t balls, double restitution) : restitution_(restitution)
{
    for (std::size_t i = 0; i < balls; ++i) balls_.push_back({1.0 + 0.5 * static_cast<double>(i), 0.0});
}

void BallsWorld::step(simsync::SimDuration dt)
{
    const double h = std::chrono::duration<double>(dt).count();
    for (Ball& b : balls_) {
        // Semi-implicit Euler: stable for a bouncing ball at millisecond steps.
        b.velocity_mps += kGravity * h;
        b.height_m += b.velocity_mps * h;
        if (b.height_m < 0.0) {
            b.height_m = -b.height_m * restitution_;
            b.velocity_mps = -b.velocity_mps * restitution_;
            ++bounces_;
        }
    }
    ++steps_;
}

void BallsWorld::kick(std::size_t ball, double delta_velocity_mps)
{
    if (ball < balls_.size()) balls_[ball].velocity_mps += delta_velocity_mps;
}

std::uint64_t BallsWorld::state_hash() const noexcept
{
    std::uint64_t h = 14695981039346656037ull;
    auto mix = [&](const void* data, std::size_t n) {
        const auto* p = static_cast<const unsigned char*>(data);
        for (std::size_t i = 0; i < n; ++i) {
            h ^= p[i];
            h *= 1099511628211ull;
        }
    };
    for (const Ball& b : balls_) {
        mix(&b.height_m, sizeof b.height_m);
        mix(&b.velocity_mps, sizeof b.velocity_mps);
    }
    return h;
}

} // namespace demo
