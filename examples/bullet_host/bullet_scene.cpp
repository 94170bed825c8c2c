#include "bullet_scene.hpp"

#include <algorithm>
#include <cmath>

namespace simsync::examples {

namespace {
constexpr std::uint32_t kStatic = 0x6b7785;
constexpr std::uint32_t kHighlight = 0xe0603c;
constexpr std::uint32_t kPalette[] = {0x4fa3e0, 0x5cc488, 0xe0c23c, 0xb07ce0};
} // namespace

BulletScene::BulletScene(const bullet::SceneDescription& scene, std::vector<bullet::BodyIndex> highlighted)
{
    web::Vec3 lo{1e300, 1e300, 1e300};
    web::Vec3 hi{-1e300, -1e300, -1e300};
    for (std::size_t i = 0; i < scene.bodies.size(); ++i) {
        const bullet::BodyDescription& b = scene.bodies[i];
        Body body;
        if (b.shape == bullet::Shape::sphere) {
            body.kind = web::ShapeKind::sphere;
            body.size = {2 * b.radius, 2 * b.radius, 2 * b.radius};
        } else {
            body.kind = web::ShapeKind::box;
            body.size = {2 * b.half_extents.x, 2 * b.half_extents.y, 2 * b.half_extents.z};
        }
        const bool lit = std::find(highlighted.begin(), highlighted.end(), i) != highlighted.end();
        // Neighbouring bodies (a stack's layers) in turns of the palette.
        body.colour = lit ? kHighlight : b.mass == 0 ? kStatic : kPalette[(i / 5) % std::size(kPalette)];
        bodies_.push_back(body);
        const double r = std::max({body.size.x, body.size.y, body.size.z});
        const auto& p = b.pose.position;
        lo = {std::min(lo.x, p.x - r), std::min(lo.y, p.y - r), std::min(lo.z, p.z - r)};
        hi = {std::max(hi.x, p.x + r), std::max(hi.y, p.y + r), std::max(hi.z, p.z + r)};
    }
    if (scene.ground) {
        const bullet::Vec3 n = scene.ground->normal;
        const double length = std::sqrt(n.x * n.x + n.y * n.y + n.z * n.z);
        // A grid only for a level ground (z up); a tilted plane is left out.
        if (length > 0 && std::abs(n.x) < 1e-9 && std::abs(n.y) < 1e-9) ground_z_ = scene.ground->offset / n.z;
    }
    if (bodies_.empty()) lo = hi = {0, 0, 0};
    if (ground_z_) lo.z = std::min(lo.z, *ground_z_);
    // Room around the stacks for bodies that fall or are pushed outwards.
    const double margin = 1.0;
    bounds_ = {{lo.x - margin, lo.y - margin, lo.z}, {hi.x + margin, hi.y + margin, hi.z}};
}

void BulletScene::draw(const World& world, web::SceneFrame& frame) const
{
    const auto& w = dynamic_cast<const bullet::BulletWorld&>(world);
    const std::size_t n = std::min(w.body_count(), bodies_.size());
    for (bullet::BodyIndex i = 0; i < n; ++i) {
        const bullet::Pose p = w.pose(i);
        const Body& b = bodies_[i];
        frame.shapes.push_back({.id = static_cast<std::uint32_t>(i),
                                .kind = b.kind,
                                .position = {p.position.x, p.position.y, p.position.z},
                                .orientation = {p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w},
                                .size = b.size,
                                .colour = b.colour});
    }
    frame.bounds = bounds_;
    frame.ground_z = ground_z_;
}

} // namespace simsync::examples
