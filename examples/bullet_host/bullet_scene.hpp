#pragma once
// How a Bullet world looks on the web console: every body of its scene as a box
// or a sphere at its current pose, the ground plane as a grid.

#include <simsync/bullet/bullet.hpp>
#include <simsync/web/scene.hpp>

#include <optional>
#include <vector>

namespace simsync::examples {

// Built from the SceneDescription the world was made of (shapes and sizes do not
// change); draw reads each body's pose (BulletWorld's const API) inside the
// console's shared access.
// Copy/move: both. Thread safety: draw is const and reads only.
class BulletScene final : public web::SceneSource {
public:
    // `highlighted`: bodies drawn in a colour of their own (e.g. the pushed box).
    explicit BulletScene(const bullet::SceneDescription& scene, std::vector<bullet::BodyIndex> highlighted = {});
    void draw(const World& world, web::SceneFrame& frame) const override;

private:
    struct Body {
        web::ShapeKind kind;
        web::Vec3 size;
        std::uint32_t colour;
    };
    std::vector<Body> bodies_;
    web::Bounds bounds_;
    std::optional<double> ground_z_;
};

} // namespace simsync::examples
