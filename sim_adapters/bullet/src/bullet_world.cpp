#include <simsync/bullet/bullet_world.hpp>

#include <simsync/core/error.hpp>

#include <btBulletDynamicsCommon.h>

#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace simsync::bullet {

namespace {

btVector3 to_bt(const Vec3& v)
{
    return {static_cast<btScalar>(v.x), static_cast<btScalar>(v.y), static_cast<btScalar>(v.z)};
}

btQuaternion to_bt(const Quaternion& q)
{
    btQuaternion out(static_cast<btScalar>(q.x), static_cast<btScalar>(q.y), static_cast<btScalar>(q.z),
                     static_cast<btScalar>(q.w));
    return out.normalize();
}

btTransform to_bt(const Pose& pose) { return btTransform(to_bt(pose.orientation), to_bt(pose.position)); }

Vec3 from_bt(const btVector3& v) { return {v.x(), v.y(), v.z()}; }

Pose from_bt(const btTransform& t)
{
    btQuaternion q;
    t.getBasis().getRotation(q);
    return {from_bt(t.getOrigin()), {q.x(), q.y(), q.z(), q.w()}};
}

} // namespace

struct BulletWorld::Impl {
    // Bullet's objects keep raw pointers to each other: the world to the
    // dispatcher, broadphase, solver and configuration; the dispatcher to the
    // configuration; bodies to their shapes. ~Impl tears them down in reverse.
    std::unique_ptr<btDefaultCollisionConfiguration> configuration;
    std::unique_ptr<btCollisionDispatcher> dispatcher;
    std::unique_ptr<btDbvtBroadphase> broadphase;
    std::unique_ptr<btSequentialImpulseConstraintSolver> solver;
    std::unique_ptr<btDiscreteDynamicsWorld> world;
    std::vector<std::unique_ptr<btCollisionShape>> shapes;
    std::unique_ptr<btRigidBody> ground;
    std::vector<std::unique_ptr<btRigidBody>> bodies; // index = scene index
    std::vector<std::string> names;
    std::vector<double> masses;
    std::map<std::string, BodyIndex, std::less<>> index_of;

    std::uint64_t steps = 0;
    std::uint64_t internal_steps = 0;
    SimDuration elapsed{0};
    btScalar last_internal_step = 0;
    // dt is fixed for a handler's life; convert it once, so every step hands
    // Bullet the very same btScalar.
    SimDuration cached_dt{0};
    btScalar cached_dt_seconds = 0;

    ~Impl()
    {
        if (world) {
            for (auto it = bodies.rbegin(); it != bodies.rend(); ++it) world->removeRigidBody(it->get());
            if (ground) world->removeRigidBody(ground.get());
        }
        bodies.clear();
        ground.reset();
        world.reset();
        solver.reset();
        broadphase.reset();
        dispatcher.reset();
        configuration.reset();
        shapes.clear();
    }

    static void on_internal_tick(btDynamicsWorld* world, btScalar time_step)
    {
        auto* self = static_cast<Impl*>(world->getWorldUserInfo());
        ++self->internal_steps;
        self->last_internal_step = time_step;
    }

    void check_index(BodyIndex index) const
    {
        if (index >= bodies.size()) {
            throw Error(errc::invalid_argument, "BulletWorld: body index " + std::to_string(index) +
                                                    " out of range (" + std::to_string(bodies.size()) +
                                                    " bodies)");
        }
    }

    const btRigidBody& body(BodyIndex index) const
    {
        check_index(index);
        return *bodies[index];
    }

    // A body about to be written: it must be dynamic, and is woken up, since Bullet
    // does not integrate a sleeping body and would silently drop the change.
    btRigidBody& writable_body(BodyIndex index)
    {
        check_index(index);
        btRigidBody& b = *bodies[index];
        if (b.isStaticOrKinematicObject()) {
            throw Error(errc::invalid_argument,
                        "BulletWorld: body '" + names[index] + "' is static (mass 0) and cannot be moved");
        }
        b.activate(true);
        return b;
    }
};

BulletWorld::BulletWorld(const SceneDescription& scene) : impl_(std::make_unique<Impl>())
{
    validate(scene);
    Impl& s = *impl_;
    s.configuration = std::make_unique<btDefaultCollisionConfiguration>();
    s.dispatcher = std::make_unique<btCollisionDispatcher>(s.configuration.get());
    s.broadphase = std::make_unique<btDbvtBroadphase>();
    s.solver = std::make_unique<btSequentialImpulseConstraintSolver>();
    s.world = std::make_unique<btDiscreteDynamicsWorld>(s.dispatcher.get(), s.broadphase.get(), s.solver.get(),
                                                        s.configuration.get());
    s.world->setGravity(to_bt(scene.gravity));
    s.world->getSolverInfo().m_numIterations = scene.solver_iterations;
    s.world->setInternalTickCallback(&Impl::on_internal_tick, &s, false);

    if (scene.ground) {
        const GroundPlane& g = *scene.ground;
        const double length = std::sqrt(g.normal.x * g.normal.x + g.normal.y * g.normal.y + g.normal.z * g.normal.z);
        const Vec3 unit{g.normal.x / length, g.normal.y / length, g.normal.z / length};
        s.shapes.push_back(std::make_unique<btStaticPlaneShape>(to_bt(unit), static_cast<btScalar>(g.offset / length)));
        btRigidBody::btRigidBodyConstructionInfo info(0, nullptr, s.shapes.back().get());
        info.m_friction = static_cast<btScalar>(g.friction);
        info.m_restitution = static_cast<btScalar>(g.restitution);
        s.ground = std::make_unique<btRigidBody>(info);
        s.world->addRigidBody(s.ground.get());
    }

    for (BodyIndex i = 0; i < scene.bodies.size(); ++i) {
        const BodyDescription& d = scene.bodies[i];
        switch (d.shape) {
        case Shape::box: s.shapes.push_back(std::make_unique<btBoxShape>(to_bt(d.half_extents))); break;
        case Shape::sphere: s.shapes.push_back(std::make_unique<btSphereShape>(static_cast<btScalar>(d.radius))); break;
        }
        btCollisionShape* shape = s.shapes.back().get();
        const auto mass = static_cast<btScalar>(d.mass);
        btVector3 inertia(0, 0, 0);
        if (d.mass > 0) shape->calculateLocalInertia(mass, inertia);
        // No motion state: reads see the simulated transform itself, and Bullet has
        // nothing to interpolate.
        btRigidBody::btRigidBodyConstructionInfo info(mass, nullptr, shape, inertia);
        info.m_startWorldTransform = to_bt(d.pose);
        info.m_friction = static_cast<btScalar>(d.friction);
        info.m_restitution = static_cast<btScalar>(d.restitution);
        auto body = std::make_unique<btRigidBody>(info);
        if (d.mass > 0) {
            body->setLinearVelocity(to_bt(d.linear_velocity));
            body->setAngularVelocity(to_bt(d.angular_velocity));
            if (!scene.allow_sleeping) body->setActivationState(DISABLE_DEACTIVATION);
        }
        s.world->addRigidBody(body.get());
        s.bodies.push_back(std::move(body));
        s.names.push_back(d.name);
        s.masses.push_back(d.mass);
        s.index_of.emplace(d.name, i);
    }
}

BulletWorld::~BulletWorld() = default;

void BulletWorld::step(SimDuration dt)
{
    Impl& s = *impl_;
    if (dt.count() <= 0) {
        throw Error(errc::invalid_argument, "BulletWorld::step: dt must be > 0, got " + format_seconds(dt) + " s");
    }
    if (dt != s.cached_dt) {
        s.cached_dt = dt;
        s.cached_dt_seconds = static_cast<btScalar>(static_cast<double>(dt.count()) / 1e9);
    }
    // maxSubSteps = 0: exactly one internal step of dt, no accumulator, no
    // interpolation (see the class comment). Bullet clears applied forces at the end.
    const int substeps = s.world->stepSimulation(s.cached_dt_seconds, 0, s.cached_dt_seconds);
    if (substeps != 1) {
        throw Error(errc::invalid_state, "BulletWorld::step: Bullet took " + std::to_string(substeps) +
                                             " internal steps for dt = " + format_seconds(dt) +
                                             " s (expected 1; is dt below Bullet's epsilon?)");
    }
    ++s.steps;
    s.elapsed += dt;
}

std::size_t BulletWorld::body_count() const noexcept { return impl_->bodies.size(); }

const std::string& BulletWorld::body_name(BodyIndex index) const
{
    impl_->body(index);
    return impl_->names[index];
}

std::optional<BodyIndex> BulletWorld::find_body(std::string_view name) const
{
    const auto it = impl_->index_of.find(name);
    if (it == impl_->index_of.end()) return std::nullopt;
    return it->second;
}

BodyIndex BulletWorld::body_index(std::string_view name) const
{
    if (auto index = find_body(name)) return *index;
    throw Error(errc::invalid_argument, "BulletWorld: no body named '" + std::string(name) + "'");
}

double BulletWorld::body_mass(BodyIndex index) const
{
    impl_->body(index);
    return impl_->masses[index];
}

Pose BulletWorld::pose(BodyIndex index) const { return from_bt(impl_->body(index).getWorldTransform()); }

BodyState BulletWorld::state(BodyIndex index) const
{
    const btRigidBody& b = impl_->body(index);
    return {from_bt(b.getWorldTransform()), from_bt(b.getLinearVelocity()), from_bt(b.getAngularVelocity()),
            b.isActive()};
}

void BulletWorld::hash_state(TrajectoryHash& hash) const
{
    auto add = [&hash](const btVector3& v) {
        hash.add(v.x());
        hash.add(v.y());
        hash.add(v.z());
    };
    for (const auto& body : impl_->bodies) {
        const btTransform& t = body->getWorldTransform();
        add(t.getOrigin());
        // Bullet stores the orientation as a rotation matrix; a quaternion would be
        // derived from it, so hash the stored rows themselves.
        for (int row = 0; row < 3; ++row) add(t.getBasis()[row]);
        add(body->getLinearVelocity());
        add(body->getAngularVelocity());
    }
}

std::uint64_t BulletWorld::state_hash() const
{
    TrajectoryHash hash;
    hash_state(hash);
    return hash.value();
}

std::uint64_t BulletWorld::steps() const noexcept { return impl_->steps; }
SimTime BulletWorld::time() const noexcept { return SimTime{impl_->elapsed}; }
std::uint64_t BulletWorld::internal_steps() const noexcept { return impl_->internal_steps; }
double BulletWorld::last_internal_step_seconds() const noexcept { return impl_->last_internal_step; }
bool BulletWorld::double_precision() noexcept { return sizeof(btScalar) == sizeof(double); }

void BulletWorld::apply_central_force(BodyIndex index, Vec3 force)
{
    impl_->writable_body(index).applyCentralForce(to_bt(force));
}

void BulletWorld::apply_torque(BodyIndex index, Vec3 torque) { impl_->writable_body(index).applyTorque(to_bt(torque)); }

void BulletWorld::apply_central_impulse(BodyIndex index, Vec3 impulse)
{
    impl_->writable_body(index).applyCentralImpulse(to_bt(impulse));
}

void BulletWorld::set_linear_velocity(BodyIndex index, Vec3 velocity)
{
    impl_->writable_body(index).setLinearVelocity(to_bt(velocity));
}

void BulletWorld::set_angular_velocity(BodyIndex index, Vec3 velocity)
{
    impl_->writable_body(index).setAngularVelocity(to_bt(velocity));
}

void BulletWorld::set_pose(BodyIndex index, const Pose& pose)
{
    btRigidBody& b = impl_->writable_body(index);
    const btTransform t = to_bt(pose);
    b.setWorldTransform(t);
    b.setInterpolationWorldTransform(t);
}

btDiscreteDynamicsWorld& BulletWorld::native() noexcept { return *impl_->world; }
const btDiscreteDynamicsWorld& BulletWorld::native() const noexcept { return *impl_->world; }

} // namespace simsync::bullet
