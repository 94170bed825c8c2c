#pragma once
// What the adapter's test programs (simsync_remote_host, simsync_remote_participant)
// share: the DDS domain their command lines describe.

#include <simsync/dds/domain.hpp>
#include <simsync/dds/scenario.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace simsync::dds::test_programs {

// Loopback on `domain` unless `interface` is named (the network-namespace
// test: an address of the namespace's veth), plus the given unicast peers and
// tag; DDS Security from the YAML file `security` (load_security_file) if named.
inline DomainConfig domain_of(std::uint32_t domain, const std::string& interface,
                              const std::vector<std::string>& peers, const std::string& tag,
                              const std::string& security = {})
{
    DomainConfig dc = interface.empty() ? DomainConfig::loopback(domain) : DomainConfig{};
    dc.id = domain;
    if (!interface.empty()) dc.interface = interface;
    dc.peers.insert(dc.peers.end(), peers.begin(), peers.end());
    dc.tag = tag;
    if (!security.empty()) dc.security = load_security_file(security);
    return dc;
}

} // namespace simsync::dds::test_programs
