// The Bullet adapter: one step is one dt, forces act in the next step only, and
// shared readers see exactly the state of the instant they were granted.

#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <simsync/bullet/bullet.hpp>
#include <simsync/simsync.hpp>

#include <btBulletDynamicsCommon.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
namespace sb = simsync::bullet;

namespace {

simsync::SimTime ms(std::int64_t n) { return simsync::sim_time(std::chrono::milliseconds(n)); }

// Relative tolerance of one float or double rounding per step, accumulated.
double tolerance(int steps)
{
    const double eps = sb::BulletWorld::double_precision() ? std::numeric_limits<double>::epsilon()
                                                           : std::numeric_limits<float>::epsilon();
    return 4.0 * eps * steps;
}

sb::SceneDescription falling_sphere(sb::Vec3 gravity = {0, 0, -9.81})
{
    return sb::SceneBuilder{}
        .gravity(gravity)
        .no_ground()
        .allow_sleeping(false)
        .sphere("ball", 0.1, 2.0, {.position = {0, 0, 100}})
        .build();
}

// The controller rule of the concurrency case: an impulse that depends on where
// the pushed box is, so a push at the wrong instant changes everything after it.
void push(sb::BulletWorld& world, sb::BodyIndex body)
{
    const sb::Vec3 p = world.pose(body).position;
    world.apply_central_impulse(body, {-0.2 * p.y - 0.1 * p.x, 0.2 * p.x - 0.1 * p.y, 0.05});
}

} // namespace

TEST_CASE("BulletWorld.Step.OneCallIsOneInternalStepOfDt")
{
    sb::BulletWorld world(falling_sphere());
    const sb::BodyIndex ball = world.body_index("ball");
    constexpr double kDt = 0.001;
    constexpr double kG = 9.81;
    const double z0 = world.pose(ball).position.z;

    for (int n = 1; n <= 1000; ++n) {
        world.step(1ms);
        REQUIRE(world.steps() == static_cast<std::uint64_t>(n));
        // Bullet's own accounting: its internal tick ran once per call, with dt.
        REQUIRE(world.internal_steps() == static_cast<std::uint64_t>(n));
        REQUIRE(world.time() == ms(n));
        if (n % 100 == 0) {
            const sb::BodyState s = world.state(ball);
            // Semi-implicit Euler: v_n = -n dt g, z_n = z0 - dt^2 g n (n + 1) / 2.
            CHECK(s.linear_velocity.z == doctest::Approx(-n * kDt * kG).epsilon(tolerance(n)));
            CHECK(s.pose.position.z ==
                  doctest::Approx(z0 - kDt * kDt * kG * n * (n + 1) / 2).epsilon(tolerance(n)));
            CHECK(s.linear_velocity.x == 0.0);
            CHECK(s.linear_velocity.y == 0.0);
        }
    }
    CHECK(world.last_internal_step_seconds() ==
          static_cast<double>(sb::BulletWorld::double_precision() ? kDt : static_cast<double>(static_cast<float>(kDt))));
}

TEST_CASE("BulletWorld.Step.ThroughTheHandlerTheWorldClockIsTheHandlerClock")
{
    for (const simsync::SimDuration dt : {simsync::SimDuration{1ms}, simsync::SimDuration{250us},
                                          simsync::SimDuration{std::chrono::nanoseconds(1'000'000 / 3)}}) {
        CAPTURE(dt.count());
        sb::BulletWorld world(falling_sphere());
        simsync::SimSyncHandler handler(world, {.step = dt});
        auto probe = handler.register_accessor("probe", {.mode = simsync::AccessMode::shared});
        for (std::int64_t t_ms : {0, 1, 7, 100, 333}) {
            simsync::Access access = probe.request_access(ms(t_ms));
            REQUIRE(access);
            const auto& w = access.world_as<sb::BulletWorld>();
            CHECK(w.time() == access.granted_time());
            CHECK(w.steps() == handler.steps());
            CHECK(w.internal_steps() == w.steps());
            const double t = std::chrono::duration<double>(w.time().time_since_epoch()).count();
            CHECK(w.state(0).linear_velocity.z ==
                  doctest::Approx(-t * 9.81).epsilon(tolerance(static_cast<int>(w.steps()) + 1)));
        }
    }
}

TEST_CASE("BulletWorld.Step.RejectsNonPositiveDt")
{
    sb::BulletWorld world(falling_sphere());
    CHECK_THROWS_AS(world.step(simsync::SimDuration{0}), simsync::Error);
    CHECK_THROWS_AS(world.step(simsync::SimDuration{-1}), simsync::Error);
    CHECK(world.steps() == 0);
    CHECK(world.internal_steps() == 0);
}

TEST_CASE("BulletWorld.Force.ActsInTheNextStepOnly")
{
    // No gravity: the applied force is the only thing that moves the ball.
    sb::BulletWorld world(falling_sphere({0, 0, 0}));
    simsync::SimSyncHandler handler(world, {.step = 1ms});
    auto controller = handler.register_accessor("controller", {.priority = 1, .first_request = ms(5)});
    auto reader = handler.register_accessor("reader", {.mode = simsync::AccessMode::shared,
                                                       .first_request = ms(5)});
    const sb::BodyIndex ball = 0;
    constexpr double kMass = 2.0;
    const sb::Vec3 force{4.0, 0, 0};
    const double dv = force.x / kMass * 0.001; // one step of the force

    std::vector<sb::BodyState> seen; // by the reader at 5, 6, 7 ms; checked after the join
    std::thread reader_thread([&] {
        for (std::int64_t t : {5, 6, 7}) {
            simsync::Access a = reader.request_access(ms(t));
            if (!a) break; // seen comes up short: the test thread's check says so
            seen.push_back(a.world_as<sb::BulletWorld>().state(ball));
            a.release(ms(t + 1));
        }
        reader.deregister();
    });

    {
        simsync::Access a = controller.request_access(ms(5));
        REQUIRE(a);
        auto& w = a.world_as<sb::BulletWorld>();
        w.apply_central_force(ball, force);
        // Not before: the force has changed nothing at the instant it was applied.
        CHECK(w.state(ball).linear_velocity.x == 0.0);
        CHECK(w.state(ball).pose.position.x == 0.0);
        a.release(ms(6));
    }
    double v6 = 0;
    {
        simsync::Access a = controller.request_access(ms(6));
        REQUIRE(a);
        v6 = a.world_as<sb::BulletWorld>().state(ball).linear_velocity.x;
        CHECK(v6 == doctest::Approx(dv).epsilon(tolerance(1)));
        a.release(ms(7));
    }
    {
        simsync::Access a = controller.request_access(ms(7));
        REQUIRE(a);
        auto& w = a.world_as<sb::BulletWorld>();
        // Not twice: Bullet cleared the force after the step it acted in.
        CHECK(w.state(ball).linear_velocity.x == v6);
        CHECK(w.state(ball).pose.position.x == doctest::Approx(2 * v6 * 0.001).epsilon(tolerance(2)));
        // An impulse, unlike a force, changes the velocity at once.
        w.apply_central_impulse(ball, {1.0, 0, 0});
        CHECK(w.state(ball).linear_velocity.x == doctest::Approx(v6 + 1.0 / kMass).epsilon(tolerance(1)));
    }
    controller.deregister();
    reader_thread.join();

    REQUIRE(seen.size() == 3);
    CHECK(seen[0].linear_velocity.x == 0.0); // 5 ms, after the controller applied the force
    CHECK(seen[1].linear_velocity.x == v6);
    // The reader at 7 ms comes after the controller's impulse (priority order).
    CHECK(seen[2].linear_velocity.x == doctest::Approx(v6 + 1.0 / kMass).epsilon(tolerance(1)));
}

TEST_CASE("BulletWorld.Force.AccumulatesWithinOneInstant")
{
    sb::BulletWorld a(falling_sphere({0, 0, 0}));
    sb::BulletWorld b(falling_sphere({0, 0, 0}));
    a.apply_central_force(0, {1, 0, 0});
    a.apply_central_force(0, {1, 0, 0});
    b.apply_central_force(0, {2, 0, 0});
    a.step(1ms);
    b.step(1ms);
    CHECK(a.state_hash() == b.state_hash());
}

TEST_CASE("BulletWorld.Shared.ReadersSeeTheStateOfTheGrantedInstant")
{
    constexpr std::int64_t kEndMs = 300;
    const sb::SceneDescription scene = sb::default_scene();

    // Reference, no threads: the state hash at every millisecond, after the
    // controller's push at multiples of 10 ms.
    std::vector<std::uint64_t> reference;
    {
        sb::BulletWorld world(scene);
        const sb::BodyIndex pushed = world.body_index("box_0");
        for (std::int64_t t = 0; t <= kEndMs; ++t) {
            if (t % 10 == 0) push(world, pushed);
            reference.push_back(world.state_hash());
            if (t < kEndMs) world.step(1ms);
        }
    }

    for (int readers : {1, 3, 6}) {
        CAPTURE(readers);
        sb::BulletWorld world(scene);
        const sb::BodyIndex pushed = world.body_index("box_0");
        simsync::SimSyncHandler handler(world, {.step = 1ms});
        // The controller goes first at a shared instant; what it records after its
        // push is what every reader at that instant must see.
        auto controller = handler.register_accessor("controller", {.priority = 1, .first_request = ms(0)});
        std::vector<simsync::Accessor> accessors;
        for (int r = 0; r < readers; ++r) {
            accessors.push_back(handler.register_accessor(
                "reader_" + std::to_string(r), {.mode = simsync::AccessMode::shared, .first_request = ms(0)}));
        }
        std::vector<std::map<std::int64_t, std::uint64_t>> recorded(static_cast<std::size_t>(readers) + 1);

        auto run = [&](simsync::Accessor& accessor, std::int64_t period_ms, bool writes,
                       std::map<std::int64_t, std::uint64_t>& out, unsigned seed) {
            std::mt19937 rng(seed);
            std::uniform_int_distribution<int> jitter_us(0, 100);
            for (std::int64_t t = 0; t <= kEndMs; t += period_ms) {
                std::this_thread::sleep_for(std::chrono::microseconds(jitter_us(rng)));
                simsync::Access a = accessor.request_access(ms(t));
                REQUIRE(a);
                auto& w = a.world_as<sb::BulletWorld>();
                if (writes) push(w, pushed);
                std::this_thread::sleep_for(std::chrono::microseconds(jitter_us(rng)));
                out[std::chrono::duration_cast<std::chrono::milliseconds>(a.granted_time().time_since_epoch())
                        .count()] = w.state_hash();
                a.release(ms(t + period_ms));
            }
            accessor.deregister();
        };

        std::vector<std::thread> threads;
        threads.emplace_back(run, std::ref(controller), 10, true, std::ref(recorded[0]), 1u);
        const std::int64_t periods[] = {5, 3, 7, 1, 33, 10};
        for (int r = 0; r < readers; ++r) {
            threads.emplace_back(run, std::ref(accessors[static_cast<std::size_t>(r)]), periods[r], false,
                                 std::ref(recorded[static_cast<std::size_t>(r) + 1]), 100u + static_cast<unsigned>(r));
        }
        for (auto& t : threads) t.join();

        for (std::size_t r = 0; r < recorded.size(); ++r) {
            CAPTURE(r);
            CHECK(!recorded[r].empty());
            for (const auto& [t, hash] : recorded[r]) {
                CAPTURE(t);
                CHECK(hash == reference[static_cast<std::size_t>(t)]);
            }
        }
        CHECK(world.steps() == static_cast<std::uint64_t>(kEndMs));
    }
}

TEST_CASE("BulletWorld.Scene.DefaultSceneHas100BoxesOnAPlane")
{
    const sb::SceneDescription scene = sb::default_scene();
    CHECK(scene.bodies.size() == 100);
    CHECK(scene.ground.has_value());
    sb::BulletWorld world(scene);
    CHECK(world.body_count() == 100);
    CHECK(world.body_name(0) == "box_0");
    CHECK(world.body_index("box_99") == 99);
    CHECK_FALSE(world.find_body("nope").has_value());
    CHECK_THROWS_AS(world.body_index("nope"), simsync::Error);
    CHECK_THROWS_AS(world.state(100), simsync::Error);
    // The native world is reachable with the same Bullet headers and precision.
    CHECK(world.native().getNumCollisionObjects() == 101);
    CHECK(world.native().getGravity().z() == doctest::Approx(-9.81));
}

TEST_CASE("BulletWorld.Scene.BadInputNamesTheField")
{
    auto message_of = [](const sb::SceneBuilder& builder) -> std::string {
        try {
            (void)builder.build();
        } catch (const simsync::Error& e) {
            CHECK(e.code() == simsync::errc::invalid_argument);
            return e.what();
        }
        return "";
    };
    CHECK(message_of(sb::SceneBuilder{}.box("a", {0.1, 0.1, 0.1}, -1.0)).find("bodies[0] (\"a\").mass") !=
          std::string::npos);
    CHECK(message_of(sb::SceneBuilder{}.sphere("a", 1, 1).sphere("a", 1, 1)).find("bodies[1] (\"a\").name") !=
          std::string::npos);
    CHECK(message_of(sb::SceneBuilder{}.sphere("a", 0, 1)).find(".radius") != std::string::npos);
    CHECK(message_of(sb::SceneBuilder{}.box("a", {0.1, -1, 0.1}, 1)).find(".half_extents.y") != std::string::npos);
    CHECK(message_of(sb::SceneBuilder{}.sphere("", 1, 1)).find("bodies[0].name") != std::string::npos);
    CHECK(message_of(sb::SceneBuilder{}.solver_iterations(0)).find("solver_iterations") != std::string::npos);
    CHECK(message_of(sb::SceneBuilder{}.ground({.normal = {0, 0, 0}})).find("ground.normal") != std::string::npos);
    CHECK(message_of(sb::SceneBuilder{}.gravity({0, 0, std::nan("")})).find("gravity.z") != std::string::npos);
    sb::SceneDescription bad;
    bad.bodies.push_back({.name = "x", .restitution = 2});
    CHECK_THROWS_AS(sb::BulletWorld{bad}, simsync::Error);
}

TEST_CASE("BulletWorld.Write.StaticBodiesAndBadIndicesThrow")
{
    sb::BulletWorld world(sb::SceneBuilder{}.box("wall", {1, 1, 1}, 0.0).sphere("ball", 0.1, 1).build());
    CHECK_THROWS_AS(world.apply_central_force(0, {1, 0, 0}), simsync::Error);
    CHECK_THROWS_AS(world.set_linear_velocity(7, {1, 0, 0}), simsync::Error);
    CHECK_NOTHROW(world.set_linear_velocity(1, {1, 0, 0}));
    CHECK(world.state(1).linear_velocity == sb::Vec3{1, 0, 0});
}

TEST_CASE("BulletWorld.Write.WakesASleepingBody")
{
    sb::BulletWorld world(sb::SceneBuilder{}.box("crate", {0.25, 0.25, 0.25}, 1.0, {.position = {0, 0, 0.25}}).build());
    const sb::BodyIndex crate = 0;
    for (int i = 0; i < 4000 && world.state(crate).awake; ++i) world.step(1ms);
    REQUIRE_FALSE(world.state(crate).awake);
    world.apply_central_impulse(crate, {0, 0, 1});
    CHECK(world.state(crate).awake);
    const double z = world.pose(crate).position.z;
    world.step(1ms);
    CHECK(world.pose(crate).position.z > z);
}
