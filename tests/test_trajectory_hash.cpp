// The trajectory hash the engine adapters share: FNV-1a 64 over exact bytes.

#include <doctest/doctest.h>

#include <simsync/core/trajectory_hash.hpp>

TEST_CASE("TrajectoryHash.Fnv1a.KnownValues")
{
    simsync::TrajectoryHash h;
    CHECK(h.hex() == "cbf29ce484222325"); // the FNV-1a 64 offset basis: empty input
    h.add_bytes("a", 1);
    CHECK(h.hex() == "af63dc4c8601ec8c");
    simsync::TrajectoryHash foobar;
    foobar.add_bytes("foobar", 6);
    CHECK(foobar.value() == 0x85944171f73967e8ULL);
    CHECK(foobar.size() == 6);
    CHECK(simsync::to_hex(0x1) == "0000000000000001");
}
