#pragma once
/// @file
/// Cyclone DDS domains and participants: which DDS domain a simsync process joins
/// and which network it talks on. Shared by every endpoint of the adapter (the
/// ROS 2 clock sink and follower; remote participants build on the same pieces).

#include <simsync/core/time.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace simsync::dds {

/// The largest DDS domain id: the standard port mapping (7400 + 250 x id + offsets)
/// runs out of UDP ports above it.
inline constexpr std::uint32_t kMaxDomainId = 232;
/// The largest DDS domain id with DDS Security: the governance and permissions
/// documents of the DDS Security specification (and Cyclone's parser of them)
/// take no id above 230.
inline constexpr std::uint32_t kMaxSecuredDomainId = 230;

/// How a domain reaches other participants.
enum class Network {
    /// Cyclone DDS's defaults: the interface it picks, multicast discovery. What a
    /// ROS 2 node on rmw_cyclonedds or rmw_fastrtps uses out of the box: choose
    /// this to be seen by ROS 2 nodes without configuring them.
    system,
    /// This machine only: interface `lo`, multicast off, unicast discovery sent to
    /// 127.0.0.1 (participant index `auto`, so a peer's ports can be computed).
    /// Traffic never leaves the machine. The other side must be restricted the same
    /// way or the two never match (a Fast DDS participant then announces only its
    /// network-card address): ROS 2 nodes need ROS_LOCALHOST_ONLY=1 or a DDS profile.
    loopback,
};

const char* to_string(Network network) noexcept;
/// Parses "system" or "loopback". @throws simsync::Error (invalid_argument) naming the text.
Network parse_network(const std::string& name);

/// The files of OMG DDS Security for one participant, as paths (PEM
/// certificates and key; S/MIME-signed XML documents). Cyclone DDS's built-in
/// plugins use them (authentication PKI-DH, access control
/// DDS:Access:Permissions, cryptography AES-GCM-GMAC): a participant then talks
/// only to participants whose certificate the identity CA signed, only on the
/// topics and partitions its permissions allow, with the protection the
/// governance asks for (docs/security.md explains each file; scripts/make-dds-certs
/// makes a set). A value type; paths as given (relative ones are relative to the
/// working directory when the participant is created).
struct SecurityFiles {
    /// The certificate of the CA that signs every identity certificate (PEM).
    std::string identity_ca;
    /// This participant's identity certificate, signed by identity_ca (PEM).
    std::string certificate;
    /// The private key of `certificate` (PEM, not encrypted).
    std::string private_key;
    /// The certificate of the CA that signs the governance and every
    /// permissions document (PEM).
    std::string permissions_ca;
    /// The domain governance, signed by permissions_ca (S/MIME).
    std::string governance;
    /// This participant's permissions (bound to its certificate's subject),
    /// signed by permissions_ca (S/MIME).
    std::string permissions;

    friend bool operator==(const SecurityFiles&, const SecurityFiles&) = default;
};

/// Checks that every file of `files` is named and can be read now.
/// @throws simsync::Error (invalid_argument) naming the field, the path and why
///         (empty path, no such file, not a regular file, permission denied).
void check_security_files(const SecurityFiles& files);

/// Everything that decides which participants a simsync participant can see.
/// A value type.
struct DomainConfig {
    /// The DDS domain id: ROS_DOMAIN_ID for ROS 2 nodes. 0 to kMaxDomainId.
    std::uint32_t id = 0;
    Network network = Network::system;
    /// A network interface (name, e.g. "eth0", or address) instead of the one
    /// `network` implies; empty: `lo` for loopback, Cyclone's choice for system.
    std::string interface;
    /// Extra unicast discovery peers ("10.0.0.2", "host:7410"), e.g. where
    /// multicast does not pass. Added to 127.0.0.1 for loopback.
    std::vector<std::string> peers;
    /// Cyclone DDS's discovery tag: participants see each other only if their
    /// tags are equal. Separates simulations that share a domain id and a network.
    /// Only Cyclone DDS knows tags: a tagged participant never matches another
    /// vendor's (Fast DDS, so rmw_fastrtps nodes), so leave it empty for ROS 2.
    std::string tag;
    /// How long others keep this participant after its last sign of life; zero:
    /// Cyclone's default (10 s). Must be >= 0.
    SimDuration lease_duration{0};
    /// Raw Cyclone XML inserted inside `<Domain>`, for settings not covered above
    /// (e.g. `<Internal><Watermarks><WhcHigh>4kB</WhcHigh></Watermarks></Internal>`).
    /// Not validated here: Cyclone refuses a bad one when the domain is created.
    std::string extra_xml;
    /// DDS Security for the participant (SecurityFiles; the id must then be at
    /// most kMaxSecuredDomainId); nullopt (the default):
    /// none, so anyone who reaches the network, domain, tag and partition is
    /// believed and can read everything: a trusted network only.
    std::optional<SecurityFiles> security;

    friend bool operator==(const DomainConfig&, const DomainConfig&) = default;

    /// A loopback domain with the given id.
    static DomainConfig loopback(std::uint32_t id);
};

/// Where a participant of `config` talks, for a program to print: "domain 0,
/// system network", plus ", interface eth0", ", peers 10.0.0.2, 10.0.0.3",
/// ", tag 'sim-a'", ", lease 2.000000000 s", ", extra XML" and ", DDS Security with
/// certificate '...'" where set.
std::string describe(const DomainConfig& config);

/// The Cyclone DDS XML configuration that a Participant gives `dds_create_domain`
/// for `config` (the environment's CYCLONEDDS_URI is not read). Text fields are
/// XML-escaped.
/// @throws simsync::Error (invalid_argument) naming the field for an id above
///         kMaxDomainId or a negative lease.
std::string cyclone_config(const DomainConfig& config);

/// A DDS domain participant in a domain configured by a DomainConfig: what every
/// writer and reader of the adapter is created in.
///
/// Cyclone DDS allows one configuration per domain id and process, so the first
/// Participant of an id creates the domain (`dds_create_domain` with
/// cyclone_config) and later ones with an equal DomainConfig share it; the domain
/// is deleted with the last of them. Each Participant is its own DDS participant.
/// Endpoints hold a `std::shared_ptr<Participant>`, so it lives as long as they do.
///
/// Copy/move: neither (endpoints refer to it). Thread safety: distinct objects:
/// safe. Shared objects: const members from any thread; Cyclone DDS's entities
/// are thread-safe, so endpoints may be created from several threads at once.
class Participant {
public:
    /// Joins the domain `config` describes; with `config.security`, as a
    /// participant authenticated by its certificate, under its permissions
    /// (Cyclone's DDS Security plugins, given the files as participant QoS
    /// properties).
    /// @throws simsync::Error: invalid_argument for a bad config (naming the
    ///         field; for security, a file that cannot be read) or a
    ///         configuration Cyclone refuses (naming the domain and its reason);
    ///         invalid_state if the id is already open in this process with a
    ///         different DomainConfig (naming both), or Cyclone cannot create the
    ///         domain or the participant (for security: a certificate the CA did
    ///         not sign, a document not signed by the permissions CA, permissions
    ///         that do not name the certificate's subject or allow no join of this
    ///         domain; the message names the files, Cyclone's log says which).
    explicit Participant(const DomainConfig& config);
    /// Deletes the DDS participant and everything created in it.
    ~Participant();
    Participant(const Participant&) = delete;
    Participant& operator=(const Participant&) = delete;

    /// Shorthand for std::make_shared<Participant>(config).
    static std::shared_ptr<Participant> create(const DomainConfig& config);

    const DomainConfig& config() const noexcept;
    /// The Cyclone `dds_entity_t` of the participant, for code that creates its
    /// own endpoints with the Cyclone C API. Owned by this object: do not delete.
    std::int32_t native_handle() const noexcept;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace simsync::dds
