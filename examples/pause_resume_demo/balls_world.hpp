#pragma once
// A dependency-free world for the demo: balls under gravity bouncing on a floor.
// Deterministic: the same steps and kicks give the same trajectory bit for bit.

#include <simsync/core/world.hpp>

#include <cstdint>
#include <vector>

namespace demo {

struct Ball {
    double height_m;
    double velocity_mps;
};

// Copy/move: neither (accessors hold references). Thread safety: none of its own;
// the handler guarantees step() never overlaps an access, and the demo writes only
// in exclusive accesses.
class BallsWorld final : public simsync::World {
public:
    explicit BallsWorld(std::size_t balls, double restitution = 0.9);
    BallsWorld(const BallsWorld&) = delete;
    BallsWorld& operator=(const BallsWorld&) = delete;

    void step(simsync::SimDuration dt) override;

    // Read: any access. Write (kick): exclusive access only.
    const std::vector<Ball>& balls() const noexcept { return balls_; }
    void kick(std::size_t ball, double delta_velocity_mps);
    std::uint64_t steps() const noexcept { return steps_; }
    std::uint64_t bounces() const noexcept { return bounces_; }
    // FNV-1a over the exact bytes of the state: equal hashes, equal trajectories.
    std::uint64_t state_hash() const noexcept;

private:
    std::vector<Ball> balls_;
    double restitution_;
    std::uint64_t steps_ = 0;
    std::uint64_t bounces_ = 0;
};

} // namespace demo
