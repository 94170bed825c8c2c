#pragma once
// How the demo's bouncing balls look on the web console: one sphere per ball,
// in a row along x, at its height above the floor (z up).

#include "balls_world.hpp"

#include <simsync/web/scene.hpp>

namespace demo {

// Reads BallsWorld::balls() (const) inside the console's shared access.
// Copy/move: both (stateless). Thread safety: draw is const and reads only.
class BallsScene final : public simsync::web::SceneSource {
public:
    void draw(const simsync::World& world, simsync::web::SceneFrame& frame) const override;

    static constexpr double kRadius = 0.15;   // metres, for the picture only
    static constexpr double kSpacing = 0.6;   // between balls along x
};

} // namespace demo
