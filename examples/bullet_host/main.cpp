// simsync-bullet-host: a physics host as a user would write one, on the host kit
// (examples/host_kit: what it shares with simsync-mujoco-host). A Bullet world (100 boxes falling on a plane in four stacks, or the scenario's
// scene) behind a SimSyncHandler with a 1 ms step: a controller (lockstep,
// exclusive, 100 Hz) pushes box_0 with an impulse computed from where box_0 is
// (controller.hpp); three sensors (lockstep, shared, 200 / 30 / 10 Hz) read
// poses, inline on the stepping thread (default) or on threads of their own.
// It prints `trajectory_hash=<16 hex digits>`: every body's exact state at each
// controller tick and at the end, the same for every thread timing (--jitter-us,
// --chaos, --host-steps, --sensors) and the same as --no-threads, where main's
// thread steps Bullet itself and applies the same controller at the same instants.
//
// --remote-controller runs the controller in another process,
// simsync-remote-controller, over Cyclone DDS (the host kit's remote_link.hpp):
// the host sends box_0's state with each of its grants and applies the impulse
// it sends back inside the same access, so the hash is the in-process one.

#include "controller.hpp"
#include "host_kit.hpp"
#include "controller_wire.hpp"
#include "remote_options.hpp"

#include <simsync/bullet/bullet.hpp>

#if SIMSYNC_EXAMPLES_WEB
#include "bullet_scene.hpp"
#endif

#include <cstdio>
#include <memory>

namespace {

namespace bh = simsync::examples::bullet_host;
namespace host = simsync::examples::host;
namespace po = simsync::examples::po;
namespace sb = simsync::bullet;

// The scenario without --config: 1 ms steps, the default scene, paced at 1x.
const std::string kDefaultScenario = std::string(R"(handler:
  step: 1ms
world:
  type: bullet
  preset: default   # 100 boxes (0.5 m, 1 kg) in four stacks on a ground plane
)") + host::kRunScenario;

// The host kit's controller over the one control law (controller.hpp), which a
// remote controller runs too.
class PushController final : public host::Controller {
public:
    void record(const simsync::World& world) override { inner_.record(as_bullet(world)); }
    void act(simsync::World& world) override { inner_.push(dynamic_cast<sb::BulletWorld&>(world)); }
    void finish(const simsync::World& world) override { inner_.finish(as_bullet(world)); }
    const simsync::TrajectoryHash& hash() const override { return inner_.hash(); }
    std::string summary() const override
    {
        char text[96];
        const sb::Vec3 p = inner_.last_position();
        std::snprintf(text, sizeof text, "pushes %llu, box_0 at (%.3f, %.3f, %.3f)",
                      static_cast<unsigned long long>(inner_.pushes()), p.x, p.y, p.z);
        return text;
    }
    bh::Controller& inner() { return inner_; }
    const bh::Controller& inner() const { return inner_; }

private:
    static const sb::BulletWorld& as_bullet(const simsync::World& w) { return dynamic_cast<const sb::BulletWorld&>(w); }
    bh::Controller inner_;
};

// What a sensor reads: poses only (const API), so it cannot perturb the world.
std::string read_sensor(const simsync::World& world)
{
    const auto& w = dynamic_cast<const sb::BulletWorld&>(world);
    double height = 0;
    std::size_t awake = 0;
    for (sb::BodyIndex i = 0; i < w.body_count(); ++i) {
        const sb::BodyState s = w.state(i);
        height += s.pose.position.z;
        awake += s.awake ? 1 : 0;
    }
    char text[64];
    std::snprintf(text, sizeof text, "mean height %.4f m, %zu awake", height / static_cast<double>(w.body_count()), awake);
    return text;
}

// The Bullet host's remote controller: the pushed body's state out, the impulse
// back (controller_wire.hpp), applied where the in-process controller pushes.
host::RemoteProtocol remote_protocol()
{
    host::RemoteProtocol p;
    p.host_program = "simsync-bullet-host";
    p.controller_program = "simsync-remote-controller";
    p.format = [](const simsync::World&) { return bh::kBulletWire; };
    p.observe = [](const host::Controller& c, const simsync::World& world, host::ObservationFrame& frame) {
        const auto& pusher = dynamic_cast<const PushController&>(c).inner();
        const host::ObservationFrame full =
            bh::to_frame({.body = pusher.observe(dynamic_cast<const sb::BulletWorld&>(world))});
        frame.flags = full.flags;
        frame.values = full.values;
    };
    p.apply = [](host::Controller& c, simsync::World& world, const std::vector<double>& impulse) {
        dynamic_cast<PushController&>(c).inner().apply(dynamic_cast<sb::BulletWorld&>(world),
                                                       {impulse[0], impulse[1], impulse[2]});
    };
    return p;
}

host::HostEngine engine()
{
    // The scene of the run, for the web console.
    auto scene = std::make_shared<sb::SceneDescription>();
    host::HostEngine e;
    e.program = "simsync-bullet-host";
    e.summary = "A Bullet world behind a SimSyncHandler: a controller and three sensors on one simulated clock;\n"
                "prints trajectory_hash=<16 hex digits>, the same for every thread timing.";
    e.default_scenario = kDefaultScenario;
    e.world_type = sb::kWorldType;
    e.validate_world = [](const simsync::ConfigNode& world) { (void)sb::scene_from_config(world); };
    e.make_world = [scene](const simsync::ConfigNode* world, const po::variables_map&) -> std::unique_ptr<simsync::World> {
        *scene = world ? sb::scene_from_config(*world) : sb::default_scene();
        // The controller pushes the first body; a static or missing one cannot be pushed.
        if (world && (scene->bodies.empty() || !scene->bodies.front().mass)) {
            world->fail("the controller pushes the first body: the scene needs a dynamic one");
        }
        return std::make_unique<sb::BulletWorld>(*scene);
    };
    e.make_controller = [](const simsync::World&) { return std::make_unique<PushController>(); };
    e.read_sensor = read_sensor;
    e.describe = [](const simsync::World& world) {
        return std::to_string(dynamic_cast<const sb::BulletWorld&>(world).body_count()) + " bodies, Bullet " +
               (sb::BulletWorld::double_precision() ? "double" : "float") + " precision";
    };
#if SIMSYNC_EXAMPLES_WEB
    e.make_scene = [scene](const simsync::World&) {
        // The controller pushes the first body: drawn in a colour of its own.
        return std::make_shared<const simsync::examples::BulletScene>(*scene, std::vector<sb::BodyIndex>{0});
    };
#endif
    host::offer_remote_controller(e, remote_protocol());
    return e;
}

} // namespace

int main(int argc, char** argv) { return host::run_host(engine(), argc, argv); }
