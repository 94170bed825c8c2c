// simsync-remote-controller: simsync-bullet-host's controller in a process of
// its own, the host kit's remote controller program (remote_participant.hpp)
// with the Bullet control law: from the pushed body's state the host sent, the
// impulse push_impulse computes (controller.hpp), sent back bit for bit
// (controller_wire.hpp).

#include "controller.hpp"
#include "controller_wire.hpp"
#include "remote_participant.hpp"

int main(int argc, char** argv)
{
    namespace bh = simsync::examples::bullet_host;
    simsync::examples::host::RemoteControllerProgram p;
    p.program = "simsync-remote-controller";
    p.summary = "simsync-bullet-host's controller (100 Hz, pushes the scene's first body) in a process of its own.";
    p.prepare = [](const simsync::examples::po::variables_map&) { return bh::kBulletWire; };
    p.command = [](const simsync::examples::host::ObservationFrame& frame) {
        const simsync::bullet::Vec3 j = bh::push_impulse(bh::from_frame(frame).body);
        return std::vector<double>{j.x, j.y, j.z};
    };
    return simsync::examples::host::run_remote_controller(p, argc, argv);
}
