#pragma once
// Internal: the Cyclone DDS C API as the adapter uses it (errors, owned
// entities, QoS, waiting for matches). Not installed.

#include <simsync/core/error.hpp>
#include <simsync/core/time.hpp>
#include <simsync/dds/qos.hpp>

#include <dds/dds.h>

#include <cstddef>
#include <memory>
#include <string>

namespace simsync::dds::detail {

/// Throws simsync::Error for a failed Cyclone call: `what` names the operation
/// and its object; Cyclone's reason is appended. BAD_PARAMETER and
/// INCONSISTENT_POLICY map to invalid_argument, the rest to invalid_state.
[[noreturn]] void fail(dds_return_t rc, const std::string& what);

/// Returns `rc` if it is a valid entity or a success, else throws as `fail`.
inline dds_return_t check(dds_return_t rc, const std::string& what)
{
    if (rc < 0) fail(rc, what);
    return rc;
}

/// Owns one Cyclone entity (topic, writer, reader, waitset, condition): deletes
/// it on destruction. Move-only.
class Entity {
public:
    Entity() = default;
    explicit Entity(dds_entity_t e) noexcept : e_(e) {}
    Entity(Entity&& o) noexcept : e_(o.e_) { o.e_ = 0; }
    Entity& operator=(Entity&& o) noexcept
    {
        if (this != &o) {
            reset();
            e_ = o.e_;
            o.e_ = 0;
        }
        return *this;
    }
    Entity(const Entity&) = delete;
    Entity& operator=(const Entity&) = delete;
    ~Entity() { reset(); }
    void reset() noexcept
    {
        if (e_ > 0) dds_delete(e_);
        e_ = 0;
    }
    dds_entity_t get() const noexcept { return e_; }

private:
    dds_entity_t e_ = 0;
};

struct QosDeleter {
    void operator()(dds_qos_t* q) const noexcept { dds_delete_qos(q); }
};
using QosPtr = std::unique_ptr<dds_qos_t, QosDeleter>;

enum class Side { writer, reader };
/// A Cyclone QoS object for a writer or reader with `qos`. Writers are pinned to
/// plain CDR (XCDR1), what ROS 2 puts on the wire; readers keep Cyclone's default
/// (XCDR1 and XCDR2 accepted), so they match either kind of writer.
/// @throws simsync::Error (invalid_argument) for a negative depth or blocking time.
QosPtr make_qos(const Qos& qos, Side side);

/// The Clock_ topic `name` in `participant`.
Entity create_clock_topic(dds_entity_t participant, const std::string& name);

/// Why the file at `path` cannot be read now (empty: it can, and is not
/// empty): "'<path>' cannot be read: <reason>", "... is not a regular file", ...
std::string why_unreadable(const std::string& path);

/// Number of readers matched by `writer` / writers matched by `reader`.
std::size_t matched_readers(dds_entity_t writer);
std::size_t matched_writers(dds_entity_t reader);

/// Waits until `writer` matches at least `wanted` readers, or `reader` at least
/// `wanted` writers, or `timeout` passes. Wakes on the entity's matched status,
/// in slices of at most 50 ms, so a status change that a concurrent waiter
/// consumed delays this one by one slice at most.
bool wait_for_readers(dds_entity_t writer, std::size_t wanted, WallClock::duration timeout);
bool wait_for_writers(dds_entity_t reader, std::size_t wanted, WallClock::duration timeout);

} // namespace simsync::dds::detail
