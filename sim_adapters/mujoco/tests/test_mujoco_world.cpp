// The MuJoCo adapter: one step is one mj_step of the model's timestep (and a
// handler step that differs is refused by name), a world from a file or from
// text is the same world, writes need an exclusive access, and shared readers
// see exactly the state of the instant they were granted.

#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <simsync/mujoco/mujoco.hpp>
#include <simsync/simsync.hpp>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

using namespace std::chrono_literals;
namespace sm = simsync::mujoco;

namespace {

simsync::SimTime ms(std::int64_t n) { return simsync::sim_time(std::chrono::milliseconds(n)); }

// A free ball and no floor: gravity is the only thing that acts on it.
const char* const kBall = R"(<mujoco model="ball">
  <option timestep="0.002" gravity="0 0 -9.81"/>
  <worldbody>
    <body name="ball" pos="0 0 10">
      <freejoint/>
      <geom type="sphere" size="0.1" mass="2"/>
    </body>
  </worldbody>
</mujoco>)";

// Two motorised links and a box they can hit, on a floor (contacts included).
const char* const kArm = R"(<mujoco model="arm">
  <option timestep="0.001"/>
  <worldbody>
    <geom type="plane" size="2 2 0.1"/>
    <body name="upper" pos="0 0 0.5">
      <joint name="shoulder" type="hinge" axis="0 1 0" damping="0.1"/>
      <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.04" mass="1"/>
      <body name="lower" pos="0.4 0 0">
        <joint name="elbow" type="hinge" axis="0 1 0" damping="0.1"/>
        <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.03" mass="0.5"/>
      </body>
    </body>
    <body name="box" pos="0.6 0 0.1">
      <freejoint/>
      <geom type="box" size="0.1 0.1 0.1" mass="0.5"/>
    </body>
  </worldbody>
  <actuator>
    <motor joint="shoulder" ctrllimited="true" ctrlrange="-20 20"/>
    <motor joint="elbow" ctrllimited="true" ctrlrange="-10 10"/>
  </actuator>
</mujoco>)";

// A model file for the duration of a test case.
class TempModel {
public:
    explicit TempModel(const std::string& xml)
        : path_(std::filesystem::temp_directory_path() /
                ("simsync_mujoco_" + std::to_string(std::random_device{}()) + ".xml"))
    {
        std::ofstream(path_) << xml;
    }
    ~TempModel() { std::filesystem::remove(path_); }
    std::string path() const { return path_.string(); }

private:
    std::filesystem::path path_;
};

std::uint64_t hash_of(const mjModel& m, const mjData& d)
{
    simsync::TrajectoryHash h;
    h.add_bytes(d.qpos, sizeof(mjtNum) * static_cast<std::size_t>(m.nq));
    h.add_bytes(d.qvel, sizeof(mjtNum) * static_cast<std::size_t>(m.nv));
    h.add_bytes(d.act, sizeof(mjtNum) * static_cast<std::size_t>(m.na));
    return h.value();
}

std::string message_of(const std::function<void()>& f)
{
    try {
        f();
    } catch (const simsync::Error& e) {
        CHECK(e.code() == simsync::errc::invalid_argument);
        return e.what();
    }
    return "(no error)";
}

// The test controller: motor torques from where the arm is, so a write at the
// wrong instant changes everything after it.
void control(const mjModel& m, mjData& d)
{
    for (int i = 0; i < m.nu; ++i) {
        const int dof = m.jnt_dofadr[m.actuator_trnid[2 * i]];
        const int q = m.jnt_qposadr[m.actuator_trnid[2 * i]];
        d.ctrl[i] = 30.0 * (0.8 - d.qpos[q]) - 2.0 * d.qvel[dof];
    }
}

} // namespace

TEST_CASE("Mujoco.Step.OneCallIsOneMjStepOfTheModelTimestep")
{
    sm::MujocoWorld world(sm::MjcfText{kBall, "ball.xml"});
    CHECK(world.timestep() == 2ms);
    TempModel file(kBall);
    char error[1000] = "";
    mjModel* m = mj_loadXML(file.path().c_str(), nullptr, error, sizeof error);
    REQUIRE_MESSAGE(m != nullptr, error);
    mjData* d = mj_makeData(m);
    REQUIRE(world.state_hash() == hash_of(*m, *d));
    for (int n = 1; n <= 500; ++n) {
        world.step(2ms);
        mj_step(m, d); // the plain loop
        REQUIRE(world.steps() == static_cast<std::uint64_t>(n));
        REQUIRE(world.time() == ms(2 * n));
        // Bit for bit the plain loop's state, and MuJoCo's own clock agrees.
        REQUIRE(world.state_hash() == hash_of(*m, *d));
        REQUIRE(world.data().time == d->time);
    }
    // Semi-implicit Euler: v_n = -n dt g.
    CHECK(world.data().qvel[2] == doctest::Approx(-500 * 0.002 * 9.81).epsilon(1e-12));
    CHECK(world.data().qvel[0] == 0.0);
    mj_deleteData(d);
    mj_deleteModel(m);
}

TEST_CASE("Mujoco.Step.WithContactsTheTrajectoryIsThePlainLoopsAndPosesAreMjSteps")
{
    // The arm, its box and the floor (contacts) with a controller, against a
    // plain mj_step loop: the same state bit for bit after every step, and the
    // poses in mjData are those mj_step computed, of the state before it
    // integrated (MuJoCo's convention, documented in the header).
    sm::MujocoWorld world(sm::MjcfText{kArm});
    TempModel file(kArm);
    char error[1000] = "";
    mjModel* m = mj_loadXML(file.path().c_str(), nullptr, error, sizeof error);
    REQUIRE_MESSAGE(m != nullptr, error);
    mjData* d = mj_makeData(m);
    mjData* before = mj_makeData(m); // the plain loop's state before each step
    for (int n = 1; n <= 1000; ++n) {
        control(*m, *d);
        control(world.model(), world.data());
        mj_copyData(before, m, d);
        mj_kinematics(m, before);
        mj_step(m, d);
        world.step(1ms);
        REQUIRE(world.state_hash() == hash_of(*m, *d));
        for (int i = 0; i < 3 * m->nbody; ++i) REQUIRE(world.data().xpos[i] == before->xpos[i]);
    }
    CHECK(world.data().ncon > 0); // the comparison covered contacts
    mj_deleteData(before);
    mj_deleteData(d);
    mj_deleteModel(m);
}

TEST_CASE("Mujoco.Step.ThroughTheHandlerTheWorldClockIsTheHandlerClock")
{
    sm::MujocoWorld world(sm::MjcfText{kBall});
    simsync::SimSyncHandler handler(world, {.step = world.timestep()});
    auto probe = handler.register_accessor("probe", {.mode = simsync::AccessMode::shared});
    for (std::int64_t t_ms : {0, 2, 14, 100, 334}) {
        simsync::Access access = probe.request_access(ms(t_ms));
        REQUIRE(access);
        const sm::MujocoWorld& w = sm::view(access);
        CHECK(w.time() == access.granted_time());
        CHECK(w.steps() == handler.steps());
        CHECK(w.data().time == doctest::Approx(static_cast<double>(t_ms) / 1000).epsilon(1e-12));
    }
}

TEST_CASE("Mujoco.Step.AHandlerStepOtherThanTheModelTimestepIsRefusedNamingBoth")
{
    sm::MujocoWorld world(sm::MjcfText{kBall, "ball.xml"});
    const std::string expected = "MujocoWorld 'ball.xml': the handler's step is 0.001000000 s but the model's "
                                 "opt.timestep is 0.002 s";
    CHECK(message_of([&] { world.check_step(1ms); }).find(expected) != std::string::npos);
    CHECK(message_of([&] { world.step(1ms); }).find(expected) != std::string::npos);
    CHECK(message_of([&] { world.step(1ms); }).find("<option timestep=\"0.001\"/>") != std::string::npos);
    CHECK_NOTHROW(world.check_step(2ms));
    CHECK(world.steps() == 0);

    // Through a handler built with the wrong step: its first step fails, the
    // request says so and the handler reports the world's error.
    {
        simsync::SimSyncHandler handler(world, {.step = 1ms});
        auto probe = handler.register_accessor("probe");
        simsync::Access access = probe.request_access(ms(1));
        CHECK_FALSE(access);
        CHECK(access.error() == simsync::errc::world_failed);
        REQUIRE(handler.failure());
        CHECK(message_of([&] { std::rethrow_exception(handler.failure()); }).find(expected) != std::string::npos);
    }
    CHECK(world.steps() == 0);

    // A timestep changed behind the handler's back is refused too.
    world.model().opt.timestep = 0.001;
    CHECK(message_of([&] { world.step(2ms); }).find("opt.timestep was changed to 0.001 s after load (it was 0.002 s") !=
          std::string::npos);
    CHECK(world.steps() == 0);
}

TEST_CASE("Mujoco.Load.FileAndTextGiveTheSameTrajectory")
{
    TempModel file(kArm);
    sm::MujocoWorld from_file(sm::MjcfFile{file.path()});
    sm::MujocoWorld from_text(sm::MjcfText{kArm, "arm.xml"});
    CHECK(from_file.source() == file.path());
    CHECK(from_text.source() == "arm.xml");
    CHECK(from_file.model().nu == 2);
    CHECK(from_file.body_id("box") == from_text.body_id("box"));
    for (int n = 0; n < 300; ++n) {
        control(from_file.model(), from_file.data());
        control(from_text.model(), from_text.data());
        from_file.step(1ms);
        from_text.step(1ms);
    }
    CHECK(from_file.state_hash() == from_text.state_hash());
    // The arm moved (the comparison is not between two resting worlds).
    CHECK(from_file.data().qpos[0] > 0.1);
}

TEST_CASE("Mujoco.Load.BadInputNamesTheModelAndTheReason")
{
    CHECK(message_of([] { sm::MujocoWorld w(sm::MjcfFile{"/nonexistent/arm.xml"}); })
              .find("cannot load the model '/nonexistent/arm.xml': ") != std::string::npos);
    CHECK(message_of([] { sm::MujocoWorld w(sm::MjcfFile{""}); }).find("path is empty") != std::string::npos);
    // MuJoCo's own reason, with its place in the text.
    const std::string broken = message_of([] { sm::MujocoWorld w(sm::MjcfText{"<mujoco><worldbody>", "broken.xml"}); });
    CHECK(broken.find("cannot load the model 'broken.xml': ") != std::string::npos);
    CHECK(broken.find("XML") != std::string::npos);
    const std::string unknown = message_of([] {
        sm::MujocoWorld w(sm::MjcfText{"<mujoco><worldbody><body><geom type=\"sphere\" sizes=\"1\"/></body>"
                                       "</worldbody></mujoco>",
                                       "typo.xml"});
    });
    CHECK(unknown.find("'typo.xml'") != std::string::npos);
    CHECK(unknown.find("sizes") != std::string::npos);
    // A third of a millisecond is no whole number of nanoseconds.
    const std::string third = message_of([] {
        sm::MujocoWorld w(sm::MjcfText{"<mujoco><option timestep=\"0.00033333333333333332\"/></mujoco>", "third.xml"});
    });
    CHECK(third.find("'third.xml' has opt.timestep 0.0003333333333333333 s, which is not a positive whole number of "
                     "nanoseconds") != std::string::npos);
    CHECK(message_of([] { sm::MujocoWorld w(sm::MjcfText{kBall, "dir/ball.xml"}); }).find("without '/'") !=
          std::string::npos);
    sm::MujocoWorld arm(sm::MjcfText{kArm});
    CHECK(message_of([&] { (void)arm.body_id("elbow"); }).find("no body named 'elbow'") != std::string::npos);
    CHECK_FALSE(arm.find_body("nope").has_value());
}

TEST_CASE("Mujoco.Load.ASampleModelFromLibmujocoSamples" *
          doctest::skip(!std::filesystem::exists(SIMSYNC_MUJOCO_SAMPLE_MODEL)))
{
    sm::MujocoWorld world(sm::MjcfFile{SIMSYNC_MUJOCO_SAMPLE_MODEL});
    simsync::SimSyncHandler handler(world, {.step = world.timestep()});
    auto controller = handler.register_accessor("controller");
    simsync::Access access = controller.request_access(simsync::SimTime{100 * world.timestep()});
    REQUIRE(access);
    CHECK(sm::view(access).steps() == 100);
    CHECK(sm::view(access).model().nu >= 1);
}

TEST_CASE("Mujoco.Access.EditNeedsAnExclusiveAccessAndViewIsConst")
{
    static_assert(std::is_same_v<decltype(sm::view(std::declval<const simsync::Access&>()).data()), const mjData&>);
    static_assert(std::is_same_v<decltype(sm::view(std::declval<const simsync::Access&>()).model()), const mjModel&>);
    static_assert(std::is_same_v<decltype(sm::edit(std::declval<const simsync::Access&>()).data()), mjData&>);
    sm::MujocoWorld world(sm::MjcfText{kArm});
    simsync::SimSyncHandler handler(world, {.step = world.timestep()});
    auto sensor = handler.register_accessor("sensor", {.mode = simsync::AccessMode::shared});
    auto controller = handler.register_accessor("controller");
    {
        simsync::Access shared = sensor.request_access(ms(0));
        REQUIRE(shared);
        CHECK(message_of([&] { (void)sm::edit(shared); }).find("a shared access may only read") != std::string::npos);
        CHECK(sm::view(shared).model().nu == 2);
    }
    sensor.deregister();
    simsync::Access exclusive = controller.request_access(ms(0));
    REQUIRE(exclusive);
    sm::edit(exclusive).data().ctrl[0] = 1.5;
    CHECK(sm::view(exclusive).data().ctrl[0] == 1.5);
}

TEST_CASE("Mujoco.Control.ACtrlWrittenAtTActsFromTheStepAfterT")
{
    sm::MujocoWorld pushed(sm::MjcfText{kArm});
    sm::MujocoWorld idle(sm::MjcfText{kArm});
    for (int n = 0; n < 5; ++n) {
        pushed.step(1ms);
        idle.step(1ms);
    }
    pushed.data().ctrl[0] = 20;
    CHECK(pushed.state_hash() == idle.state_hash()); // nothing changes at T itself
    pushed.step(1ms);
    idle.step(1ms);
    CHECK(pushed.state_hash() != idle.state_hash());
    CHECK(pushed.data().qvel[0] > idle.data().qvel[0]);
    // MuJoCo keeps ctrl: it acts in every later step until written again.
    CHECK(pushed.data().ctrl[0] == 20);
}

TEST_CASE("Mujoco.Shared.ReadersSeeTheStateOfTheGrantedInstant")
{
    constexpr std::int64_t kEndMs = 300;

    // Reference, no threads: the state hash at every millisecond, after the
    // controller's write at multiples of 10 ms.
    std::vector<std::uint64_t> reference;
    {
        sm::MujocoWorld world(sm::MjcfText{kArm});
        for (std::int64_t t = 0; t <= kEndMs; ++t) {
            if (t % 10 == 0) control(world.model(), world.data());
            reference.push_back(world.state_hash());
            if (t < kEndMs) world.step(1ms);
        }
    }

    for (int readers : {1, 3}) {
        CAPTURE(readers);
        sm::MujocoWorld world(sm::MjcfText{kArm});
        simsync::SimSyncHandler handler(world, {.step = world.timestep()});
        auto controller = handler.register_accessor("controller", {.priority = 1, .first_request = ms(0)});
        std::vector<simsync::Accessor> accessors;
        for (int r = 0; r < readers; ++r) {
            accessors.push_back(handler.register_accessor(
                "reader_" + std::to_string(r), {.mode = simsync::AccessMode::shared, .first_request = ms(0)}));
        }
        // Written by each thread, read here after the joins.
        std::vector<std::map<std::int64_t, std::uint64_t>> recorded(static_cast<std::size_t>(readers) + 1);
        std::vector<std::string> refusals(recorded.size());

        auto run = [&](simsync::Accessor& accessor, std::int64_t period_ms, bool writes, std::size_t slot) {
            // Random delays move the threads' arrival order around; the grants
            // and the states they see must not move.
            std::mt19937 rng(static_cast<unsigned>(slot) + 1);
            std::uniform_int_distribution<int> jitter_us(0, 100);
            for (std::int64_t t = 0; t <= kEndMs; t += period_ms) {
                std::this_thread::sleep_for(std::chrono::microseconds(jitter_us(rng)));
                simsync::Access a = accessor.request_access(ms(t));
                if (!a) {
                    refusals[slot] = a.error().message();
                    break;
                }
                if (writes) control(sm::edit(a).model(), sm::edit(a).data());
                std::this_thread::sleep_for(std::chrono::microseconds(jitter_us(rng)));
                recorded[slot][std::chrono::duration_cast<std::chrono::milliseconds>(
                                   a.granted_time().time_since_epoch())
                                   .count()] = sm::view(a).state_hash();
                a.release(ms(t + period_ms));
            }
            accessor.deregister();
        };

        std::vector<std::thread> threads;
        threads.emplace_back(run, std::ref(controller), 10, true, 0);
        const std::int64_t periods[] = {5, 3, 7};
        for (int r = 0; r < readers; ++r) {
            threads.emplace_back(run, std::ref(accessors[static_cast<std::size_t>(r)]), periods[r], false,
                                 static_cast<std::size_t>(r) + 1);
        }
        for (auto& t : threads) t.join();

        for (std::size_t r = 0; r < recorded.size(); ++r) {
            CAPTURE(r);
            CHECK(refusals[r].empty());
            CHECK(!recorded[r].empty());
            for (const auto& [t, hash] : recorded[r]) {
                CAPTURE(t);
                CHECK(hash == reference[static_cast<std::size_t>(t)]);
            }
        }
        CHECK(world.steps() == static_cast<std::uint64_t>(kEndMs));
    }
}
