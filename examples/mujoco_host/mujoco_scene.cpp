#include "mujoco_scene.hpp"

#include <algorithm>
#include <cmath>

namespace simsync::examples::mujoco_host {

namespace {
std::uint32_t colour_of(const float* rgba)
{
    auto channel = [](float c) { return static_cast<std::uint32_t>(std::lround(std::clamp(c, 0.0f, 1.0f) * 255)); };
    return channel(rgba[0]) << 16 | channel(rgba[1]) << 8 | channel(rgba[2]);
}
} // namespace

MujocoScene::MujocoScene(const mjModel& m)
{
    for (int g = 0; g < m.ngeom; ++g) {
        const mjtNum* s = m.geom_size + 3 * g;
        Geom geom{g, web::ShapeKind::box, {}, colour_of(m.geom_rgba + 4 * g)};
        switch (m.geom_type[g]) {
        case mjGEOM_PLANE:
            // Only a level plane attached to the world is the ground.
            if (m.geom_bodyid[g] == 0 && std::abs(m.geom_quat[4 * g + 1]) < 1e-9 &&
                std::abs(m.geom_quat[4 * g + 2]) < 1e-9) {
                ground_z_ = ground_z_ ? std::max(*ground_z_, m.geom_pos[3 * g + 2]) : m.geom_pos[3 * g + 2];
            }
            continue;
        case mjGEOM_SPHERE: geom.kind = web::ShapeKind::sphere, geom.size = {2 * s[0], 2 * s[0], 2 * s[0]}; break;
        case mjGEOM_CAPSULE: geom.size = {2 * s[0], 2 * s[0], 2 * (s[1] + s[0])}; break;
        case mjGEOM_CYLINDER: geom.size = {2 * s[0], 2 * s[0], 2 * s[1]}; break;
        case mjGEOM_BOX:
        case mjGEOM_ELLIPSOID: geom.size = {2 * s[0], 2 * s[1], 2 * s[2]}; break;
        default: continue; // meshes, height fields: not drawn
        }
        geoms_.push_back(geom);
    }
    // MuJoCo's own estimate of where the model is (stat.center, stat.extent).
    const double e = m.stat.extent;
    const mjtNum* c = m.stat.center;
    bounds_ = {{c[0] - e, c[1] - e, ground_z_.value_or(c[2] - e)}, {c[0] + e, c[1] + e, c[2] + e}};
}

void MujocoScene::draw(const World& world, web::SceneFrame& frame) const
{
    const mjData& d = dynamic_cast<const mujoco::MujocoWorld&>(world).data();
    for (const Geom& g : geoms_) {
        const mjtNum* p = d.geom_xpos + 3 * g.id;
        mjtNum q[4]; // w, x, y, z
        mju_mat2Quat(q, d.geom_xmat + 9 * g.id);
        frame.shapes.push_back({.id = static_cast<std::uint32_t>(g.id),
                                .kind = g.kind,
                                .position = {p[0], p[1], p[2]},
                                .orientation = {q[1], q[2], q[3], q[0]},
                                .size = g.size,
                                .colour = g.colour});
    }
    frame.bounds = bounds_;
    frame.ground_z = ground_z_;
}

} // namespace simsync::examples::mujoco_host
