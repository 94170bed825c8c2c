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
// simsync-remote-controller, over Cyclone DDS (remote_link.hpp): the host sends
// box_0's state with each of its grants and applies the impulse it sends back
// inside the same access, so the hash is the in-process one, bit for bit.

#include "controller.hpp"
#include "host_kit.hpp"
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

// What the engine's functions share: the scene of the run (for the web console)
// and the remote controller's options, made once (a spawned one's tag is random).
struct State {
    sb::SceneDescription scene;
    bool remote_resolved = false;
    std::optional<bh::RemoteControllerOptions> remote;
    const std::optional<bh::RemoteControllerOptions>& remote_of(const po::variables_map& v)
    {
        if (!remote_resolved) remote = bh::remote_options(v), remote_resolved = true;
        return remote;
    }
};

host::HostEngine engine()
{
    auto state = std::make_shared<State>();
    host::HostEngine e;
    e.program = "simsync-bullet-host";
    e.summary = "A Bullet world behind a SimSyncHandler: a controller and three sensors on one simulated clock;\n"
                "prints trajectory_hash=<16 hex digits>, the same for every thread timing.";
    e.synopsis_tail = bh::kRemoteSynopsis;
    e.add_options = bh::add_remote_options;
    e.check_options = bh::check_remote_options;
    e.default_scenario = kDefaultScenario;
    e.world_type = sb::kWorldType;
    e.validate_world = [](const simsync::ConfigNode& world) { (void)sb::scene_from_config(world); };
    e.make_world = [state](const simsync::ConfigNode* world, const po::variables_map&) -> std::unique_ptr<simsync::World> {
        state->scene = world ? sb::scene_from_config(*world) : sb::default_scene();
        // The controller pushes the first body; a static or missing one cannot be pushed.
        if (world && (state->scene.bodies.empty() || !state->scene.bodies.front().mass)) {
            world->fail("the controller pushes the first body: the scene needs a dynamic one");
        }
        return std::make_unique<sb::BulletWorld>(state->scene);
    };
    e.make_controller = [](const simsync::World&) { return std::make_unique<PushController>(); };
    e.read_sensor = read_sensor;
    e.describe = [](const simsync::World& world) {
        return std::to_string(dynamic_cast<const sb::BulletWorld&>(world).body_count()) + " bodies, Bullet " +
               (sb::BulletWorld::double_precision() ? "double" : "float") + " precision";
    };
    e.plan_line = [state](const po::variables_map& v) {
        return state->remote_of(v) ? bh::remote_plan_line(*state->remote_of(v)) : std::string();
    };
#if SIMSYNC_EXAMPLES_WEB
    e.make_scene = [state](const simsync::World&) {
        // The controller pushes the first body: drawn in a colour of its own.
        return std::make_shared<const simsync::examples::BulletScene>(state->scene, std::vector<sb::BodyIndex>{0});
    };
#endif
#if SIMSYNC_BULLET_HOST_REMOTE
    e.wants_remote = [state](const po::variables_map& v) { return state->remote_of(v).has_value(); };
    e.make_remote = [state](simsync::SimSyncHandler& handler, host::Controller& controller, simsync::SimTime end,
                            std::uint64_t seed, const po::variables_map& v) {
        bh::RemoteControllerOptions options = *state->remote_of(v);
        options.seed = seed;
        return bh::make_remote_controller(handler, dynamic_cast<PushController&>(controller).inner(), end, options);
    };
#endif
    return e;
}

} // namespace

int main(int argc, char** argv) { return host::run_host(engine(), argc, argv); }
