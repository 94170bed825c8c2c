#pragma once
// Internal: who may speak to a Bridge, and for whom (BridgeConfig::allowed_names,
// max_participants, and the binding of a participant's name to its writer's
// partition). Kept apart from bridge.cpp's protocol. Not installed.

#include "cyclone.hpp"

#include <simsync/dds/remote_messages.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace simsync::dds::detail {

/// The checks a Bridge makes before it acts on a participant's message.
///
/// The name binding: a participant writes to the host in a partition of its
/// own, `<partition>/<escaped name>` (participant_partition), and the Bridge
/// reads `<partition>/*`. A message is believed to come from participant N
/// only if the writer that sent it is in N's partition and in no other. On an
/// open domain that only keeps honest participants apart; with DDS Security,
/// a writer is matched only if its permissions (signed by the permissions CA
/// and bound to the subject of a certificate the identity CA signed) grant it
/// that partition of the topic, which the remote's access control checks on
/// this side (check_remote_datawriter): so a certificate whose permissions
/// grant `<partition>/camera` cannot speak for `controller`.
///
/// Copy/move: a value type. Thread safety: none (the Bridge's loop thread).
class Admission {
public:
    Admission(std::string partition, std::optional<std::vector<std::string>> allowed_names,
              std::size_t max_participants);

    /// The partition pattern of the Bridge's reader: every participant's own.
    std::string reader_partition() const { return partition_ + "/*"; }

    /// Why an announce of `name` is refused while `registered` remote
    /// participants are registered: name_not_allowed, participant_limit; or
    /// nullopt if it may join.
    std::optional<remote::Rejection> refuse_announce(const std::string& name, std::size_t registered) const;
    /// The text of the welcome that refuses it for `why`.
    std::string refusal_text(const std::string& name, remote::Rejection why) const;

    /// Whether `writer` (a publication handle matched by `reader`) may speak
    /// for `name`: its partitions are exactly `name`'s own. False for a writer
    /// no longer matched (its partitions are unknown).
    bool speaks_for(dds_entity_t reader, dds_instance_handle_t writer, const std::string& name) const;

private:
    std::string partition_;
    std::optional<std::vector<std::string>> allowed_;
    std::size_t max_;
};

} // namespace simsync::dds::detail
