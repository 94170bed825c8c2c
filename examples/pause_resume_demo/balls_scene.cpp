#include "balls_scene.hpp"

#include <algorithm>

namespace demo {

namespace {
constexpr std::uint32_t kColours[] = {0xe0603c, 0x4fa3e0, 0x5cc488, 0xe0c23c, 0xb07ce0, 0xe07cb0};
} // namespace

void BallsScene::draw(const simsync::World& world, simsync::web::SceneFrame& frame) const
{
    const auto& balls = dynamic_cast<const BallsWorld&>(world).balls();
    for (std::size_t i = 0; i < balls.size(); ++i) {
        const double z = balls[i].height_m + kRadius; // the ball rests on the floor at height 0
        frame.shapes.push_back({.id = static_cast<std::uint32_t>(i),
                                .kind = simsync::web::ShapeKind::sphere,
                                .position = {static_cast<double>(i) * kSpacing, 0.0, z},
                                .size = {2 * kRadius, 2 * kRadius, 2 * kRadius},
                                .colour = kColours[i % std::size(kColours)]});
    }
    // The camera frames the row at the height the balls started from (1 m, then
    // 0.5 m higher each), so it does not jump as they bounce.
    const double last = static_cast<double>(std::max<std::size_t>(balls.size(), 1) - 1);
    const double span = last * kSpacing;
    const double height = 1.0 + 0.5 * last + 2 * kRadius;
    frame.bounds = simsync::web::Bounds{{-0.5, -0.5, 0.0}, {span + 0.5, 0.5, height}};
    frame.ground_z = 0.0;
    frame.camera = simsync::web::CameraHint{.azimuth_deg = -90, .elevation_deg = 12}; // side on
}

} // namespace demo
