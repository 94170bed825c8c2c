#pragma once
// How a MuJoCo model looks on the web console: each geom as a box or a sphere
// (the console draws no other shapes: a capsule or a cylinder is drawn as the
// box around it, an ellipsoid as its box) at its pose of the instant, a plane
// at height z as the ground grid.

#include <simsync/mujoco/mujoco.hpp>
#include <simsync/web/scene.hpp>

#include <optional>
#include <vector>

namespace simsync::examples::mujoco_host {

// Built from the model (geom types and sizes do not change); draw reads
// geom_xpos and geom_xmat from the world's const mjData inside the console's
// shared access. Those are what mj_step computed at the start of the last step
// (MuJoCo's convention; see MujocoWorld): one step behind qpos, invisible at
// the console's few frames a second.
// Copy/move: both. Thread safety: draw is const and reads only.
class MujocoScene final : public web::SceneSource {
public:
    explicit MujocoScene(const mjModel& model);
    void draw(const World& world, web::SceneFrame& frame) const override;

private:
    struct Geom {
        int id;
        web::ShapeKind kind;
        web::Vec3 size;
        std::uint32_t colour;
    };
    std::vector<Geom> geoms_;
    web::Bounds bounds_;
    std::optional<double> ground_z_;
};

} // namespace simsync::examples::mujoco_host
