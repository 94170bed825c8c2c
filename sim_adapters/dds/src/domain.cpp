#include "cyclone.hpp"

#include <simsync/core/error.hpp>
#include <simsync/dds/domain.hpp>

#include <arpa/inet.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <string>

namespace simsync::dds {

namespace {

bool is_ip_address(const std::string& text)
{
    unsigned char buffer[sizeof(in6_addr)];
    return inet_pton(AF_INET, text.c_str(), buffer) == 1 || inet_pton(AF_INET6, text.c_str(), buffer) == 1;
}

} // namespace

const char* to_string(Network network) noexcept
{
    switch (network) {
    case Network::system: return "system";
    case Network::loopback: return "loopback";
    }
    return "?";
}

Network parse_network(const std::string& name)
{
    if (name == "system") return Network::system;
    if (name == "loopback") return Network::loopback;
    throw Error(errc::invalid_argument, "DDS network must be 'system' or 'loopback', got '" + name + "'");
}

namespace {

// The fields of SecurityFiles with their names (as in the `security:` block).
template <class F>
void for_each_security_file(const SecurityFiles& s, F&& f)
{
    f("identity_ca", s.identity_ca);
    f("certificate", s.certificate);
    f("private_key", s.private_key);
    f("permissions_ca", s.permissions_ca);
    f("governance", s.governance);
    f("permissions", s.permissions);
}

} // namespace

namespace detail {

std::string why_unreadable(const std::string& path)
{
    if (path.empty()) return "no file given";
    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);
    if (!std::filesystem::exists(status)) return "'" + path + "' cannot be read: no such file";
    if (ec) return "'" + path + "' cannot be read: " + ec.message();
    if (!std::filesystem::is_regular_file(status)) return "'" + path + "' is not a regular file";
    errno = 0;
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        const int err = errno;
        return "'" + path + "' cannot be read: " + (err != 0 ? std::strerror(err) : "open failed");
    }
    if (in.peek() == std::ifstream::traits_type::eof()) return "'" + path + "' is empty";
    return {};
}

} // namespace detail

void check_security_files(const SecurityFiles& files)
{
    for_each_security_file(files, [](const char* field, const std::string& path) {
        if (const std::string why = detail::why_unreadable(path); !why.empty()) {
            throw Error(errc::invalid_argument, std::string("DDS security: ") + field + ": " + why);
        }
    });
}

std::string describe(const DomainConfig& config)
{
    std::string text = "domain " + std::to_string(config.id) + ", " + to_string(config.network) + " network";
    if (!config.interface.empty()) text += ", interface " + config.interface;
    if (!config.peers.empty()) {
        text += ", peers ";
        for (std::size_t i = 0; i < config.peers.size(); ++i) text += (i ? ", " : "") + config.peers[i];
    }
    if (!config.tag.empty()) text += ", tag '" + config.tag + "'";
    if (config.lease_duration > SimDuration::zero()) text += ", lease " + format_seconds(config.lease_duration) + " s";
    if (!config.extra_xml.empty()) text += ", extra XML";
    if (config.security) text += ", DDS Security with certificate '" + config.security->certificate + "'";
    return text;
}

DomainConfig DomainConfig::loopback(std::uint32_t id)
{
    DomainConfig c;
    c.id = id;
    c.network = Network::loopback;
    return c;
}

namespace {

std::string xml_escape(const std::string& text)
{
    std::string out;
    out.reserve(text.size());
    for (const char c : text) {
        switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        case '\'': out += "&apos;"; break;
        default: out += c;
        }
    }
    return out;
}

void validate(const DomainConfig& c)
{
    if (c.id > kMaxDomainId) {
        throw Error(errc::invalid_argument, "DDS domain id must be 0.." + std::to_string(kMaxDomainId) + ", got " +
                                                std::to_string(c.id) +
                                                " (the standard port mapping runs out of UDP ports above it)");
    }
    if (c.lease_duration < SimDuration::zero()) {
        throw Error(errc::invalid_argument,
                    "DDS lease_duration must be >= 0, got " + format_seconds(c.lease_duration) + " s");
    }
    for (const std::string& peer : c.peers) {
        if (peer.empty()) throw Error(errc::invalid_argument, "a DDS discovery peer must not be empty");
    }
    if (c.security && c.id > kMaxSecuredDomainId) {
        throw Error(errc::invalid_argument, "DDS domain id must be 0.." + std::to_string(kMaxSecuredDomainId) +
                                                " with DDS Security, got " + std::to_string(c.id) +
                                                " (governance and permissions documents take no id above it)");
    }
    if (c.security) {
        for_each_security_file(*c.security, [](const char* field, const std::string& path) {
            if (path.empty()) throw Error(errc::invalid_argument, std::string("DDS security: ") + field + ": no file given");
        });
    }
}

} // namespace

std::string cyclone_config(const DomainConfig& c)
{
    validate(c);
    const bool loopback = c.network == Network::loopback;
    const std::string interface = !c.interface.empty() ? c.interface : loopback ? "lo" : "";
    std::vector<std::string> peers;
    if (loopback) peers.push_back("127.0.0.1");
    peers.insert(peers.end(), c.peers.begin(), c.peers.end());

    std::string x = "<CycloneDDS><Domain Id=\"any\">";
    x += "<General>";
    if (!interface.empty()) {
        // Cyclone matches `name` against interface names only: an address
        // ("10.0.0.1", "fe80::1") goes in `address`.
        const char* attribute = is_ip_address(interface) ? "address" : "name";
        x += std::string("<Interfaces><NetworkInterface ") + attribute + "=\"" + xml_escape(interface) +
             "\"/></Interfaces>";
    }
    // Multicast off alone would break discovery; the peers and a predictable
    // participant index below are what makes unicast discovery work.
    if (loopback) x += "<AllowMulticast>false</AllowMulticast>";
    x += "</General>";
    x += "<Discovery>";
    if (!peers.empty()) {
        // With the default index ("none") a participant listens on a random port
        // that no peer can guess.
        x += "<ParticipantIndex>auto</ParticipantIndex><Peers>";
        for (const std::string& p : peers) x += "<Peer Address=\"" + xml_escape(p) + "\"/>";
        x += "</Peers>";
    }
    if (!c.tag.empty()) x += "<Tag>" + xml_escape(c.tag) + "</Tag>";
    if (c.lease_duration > SimDuration::zero()) {
        x += "<LeaseDuration>" + std::to_string(c.lease_duration.count()) + " ns</LeaseDuration>";
    }
    x += "</Discovery>";
    x += c.extra_xml;
    x += "</Domain></CycloneDDS>";
    return x;
}

// --------------------------------------------------------------- the domains

namespace {

// Cyclone DDS takes one configuration per domain id and process
// (dds_create_domain fails for an id that exists). Reference-counted by hand
// under one mutex, so that deleting the last reference and creating the domain
// anew can never interleave (a weak_ptr registry would let a new open see the
// old domain expired while its dds_delete has not run yet).
struct DomainEntry {
    dds_entity_t handle = 0;
    DomainConfig config;
    int refs = 0;
};

// Never destroyed: a Participant with static storage duration may outlive any
// function-local static made after it.
std::mutex& registry_mutex()
{
    static auto* m = new std::mutex;
    return *m;
}

std::map<std::uint32_t, DomainEntry>& registry()
{
    static auto* r = new std::map<std::uint32_t, DomainEntry>;
    return *r;
}

void acquire_domain(const DomainConfig& c)
{
    const std::string xml = cyclone_config(c); // validates first
    std::lock_guard<std::mutex> guard(registry_mutex());
    auto it = registry().find(c.id);
    if (it != registry().end()) {
        if (!(it->second.config == c)) {
            throw Error(errc::invalid_state, "DDS domain " + std::to_string(c.id) +
                                                 " is already open in this process with another configuration (" +
                                                 describe(it->second.config) + "; asked for " + describe(c) +
                                                 "): Cyclone DDS takes one configuration per domain id and process");
        }
        ++it->second.refs;
        return;
    }
    const dds_entity_t handle = dds_create_domain(c.id, xml.c_str());
    if (handle < 0) {
        detail::fail(handle, "creating DDS domain " + std::to_string(c.id) + " (" + describe(c) +
                                 "; a domain already created in this process outside simsync::dds, or a "
                                 "configuration Cyclone refuses, fails here)");
    }
    registry().emplace(c.id, DomainEntry{handle, c, 1});
}

void release_domain(std::uint32_t id) noexcept
{
    std::lock_guard<std::mutex> guard(registry_mutex());
    auto it = registry().find(id);
    if (it == registry().end()) return;
    if (--it->second.refs == 0) {
        dds_delete(it->second.handle);
        registry().erase(it);
    }
}

// "file:" and the absolute path: Cyclone's plugins read URIs, and a relative
// path would depend on the working directory of whoever reads the log.
std::string file_uri(const std::string& path)
{
    return "file:" + std::filesystem::absolute(path).lexically_normal().string();
}

// The participant QoS that turns Cyclone's DDS Security plugins on with `s`
// (the properties of the OMG DDS Security specification, section 9; the
// plugin libraries are Cyclone's built-in ones).
detail::QosPtr security_qos(const SecurityFiles& s)
{
    detail::QosPtr q(dds_create_qos());
    dds_qset_prop(q.get(), "dds.sec.auth.library.path", "dds_security_auth");
    dds_qset_prop(q.get(), "dds.sec.auth.library.init", "init_authentication");
    dds_qset_prop(q.get(), "dds.sec.auth.library.finalize", "finalize_authentication");
    dds_qset_prop(q.get(), "dds.sec.auth.identity_ca", file_uri(s.identity_ca).c_str());
    dds_qset_prop(q.get(), "dds.sec.auth.identity_certificate", file_uri(s.certificate).c_str());
    dds_qset_prop(q.get(), "dds.sec.auth.private_key", file_uri(s.private_key).c_str());
    dds_qset_prop(q.get(), "dds.sec.crypto.library.path", "dds_security_crypto");
    dds_qset_prop(q.get(), "dds.sec.crypto.library.init", "init_crypto");
    dds_qset_prop(q.get(), "dds.sec.crypto.library.finalize", "finalize_crypto");
    dds_qset_prop(q.get(), "dds.sec.access.library.path", "dds_security_ac");
    dds_qset_prop(q.get(), "dds.sec.access.library.init", "init_access_control");
    dds_qset_prop(q.get(), "dds.sec.access.library.finalize", "finalize_access_control");
    dds_qset_prop(q.get(), "dds.sec.access.permissions_ca", file_uri(s.permissions_ca).c_str());
    dds_qset_prop(q.get(), "dds.sec.access.governance", file_uri(s.governance).c_str());
    dds_qset_prop(q.get(), "dds.sec.access.permissions", file_uri(s.permissions).c_str());
    return q;
}

} // namespace

struct Participant::Impl {
    DomainConfig config;
    dds_entity_t participant = 0;
};

Participant::Participant(const DomainConfig& config) : impl_(std::make_unique<Impl>())
{
    impl_->config = config;
    // Named at once, before Cyclone, whose own report goes to its log only.
    if (config.security) check_security_files(*config.security);
    acquire_domain(config);
    detail::QosPtr qos = config.security ? security_qos(*config.security) : nullptr;
    const dds_entity_t p = dds_create_participant(config.id, qos.get(), nullptr);
    if (p < 0) {
        release_domain(config.id);
        std::string what = "creating a DDS participant in domain " + std::to_string(config.id);
        if (config.security) {
            const SecurityFiles& s = *config.security;
            what += " with DDS Security (certificate '" + s.certificate + "', identity CA '" + s.identity_ca +
                    "', permissions '" + s.permissions + "', governance '" + s.governance + "', permissions CA '" +
                    s.permissions_ca + "': Cyclone's log on stderr names what it refused: a certificate its CA did "
                                       "not sign or that expired, a key that is not the certificate's, a document "
                                       "not signed by the permissions CA, permissions for another subject or "
                                       "without this domain)";
        }
        detail::fail(p, what);
    }
    impl_->participant = p;
}

Participant::~Participant()
{
    dds_delete(impl_->participant);
    release_domain(impl_->config.id);
}

std::shared_ptr<Participant> Participant::create(const DomainConfig& config)
{
    return std::make_shared<Participant>(config);
}

const DomainConfig& Participant::config() const noexcept { return impl_->config; }

std::int32_t Participant::native_handle() const noexcept { return impl_->participant; }

} // namespace simsync::dds
