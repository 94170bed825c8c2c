#include "admission.hpp"

#include "remote_dds.hpp"

#include <algorithm>

namespace simsync::dds::detail {

Admission::Admission(std::string partition, std::optional<std::vector<std::string>> allowed_names,
                     std::size_t max_participants)
    : partition_(std::move(partition)), allowed_(std::move(allowed_names)), max_(max_participants)
{
}

std::optional<remote::Rejection> Admission::refuse_announce(const std::string& name, std::size_t registered) const
{
    if (allowed_ && std::find(allowed_->begin(), allowed_->end(), name) == allowed_->end()) {
        return remote::Rejection::name_not_allowed;
    }
    if (registered >= max_) return remote::Rejection::participant_limit;
    return std::nullopt;
}

std::string Admission::refusal_text(const std::string& name, remote::Rejection why) const
{
    if (why == remote::Rejection::name_not_allowed) {
        return "the host does not allow a participant named '" + name + "' (BridgeConfig::allowed_names)";
    }
    return "the host has " + std::to_string(max_) + " participant(s) already, its limit (BridgeConfig::max_participants)";
}

bool Admission::speaks_for(dds_entity_t reader, dds_instance_handle_t writer, const std::string& name) const
{
    dds_builtintopic_endpoint_t* ep = dds_get_matched_publication_data(reader, writer);
    if (ep == nullptr) return false;
    std::uint32_t n = 0;
    char** names = nullptr;
    bool own = false;
    if (dds_qget_partition(ep->qos, &n, &names) && n == 1 && names != nullptr && names[0] != nullptr) {
        own = remote::participant_partition(partition_, name) == names[0];
    }
    for (std::uint32_t i = 0; i < n && names != nullptr; ++i) dds_free(names[i]);
    dds_free(names);
    dds_builtintopic_free_endpoint(ep);
    return own;
}

} // namespace simsync::dds::detail
