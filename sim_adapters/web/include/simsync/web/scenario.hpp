#pragma once
/// @file
/// The scenario's `web:` section: where a program's web console listens and how
/// it guards itself, written in the scenario file beside the rest of the run.
///
/// @code{.yaml}
/// web:
///   listen: 0.0.0.0:8443            # [HOST:]PORT, as --web takes it
///   certificate: /etc/simsync/console.pem   # TLS: a PEM certificate chain ...
///   private_key: /etc/simsync/console.key   # ... and its PEM key (both or neither)
///   insecure: false                 # plain HTTP off loopback (needs saying)
///   allowed_hosts: [sim.example.org]
///   require_token: false            # the token on loopback too
///   max_connections: 32
///   reserved_for_control: 4
///   max_per_address: 8
///   max_pending: 64
///   handshake_timeout: 5s
///   viewer_idle_timeout: 30s
///   frame_period: 100ms
/// @endcode
///
/// Every key is optional; what is not written keeps WebConsoleConfig's default.
/// Each value is checked where it is written (errors name file:line:column and
/// key); a certificate or key file that cannot be read is named at load. Whether
/// the whole is acceptable (TLS or `insecure` off loopback) is the WebConsole
/// constructor's check, once a program has merged its command line in.

#include <simsync/config/config.hpp>
#include <simsync/web/console.hpp>

#include <optional>

namespace simsync::web {

/// A `web:` section as read: the console's configuration, and where it listens
/// if the section says so.
struct WebSection {
    WebConsoleConfig config;
    /// `listen`, if written (a program serves the console when this or its
    /// own option says where).
    std::optional<Endpoint> listen;
};

/// Reads a `web:` section (a map, or null for `web:` alone). Pure function of
/// the node and the files it names; any thread.
/// @throws ConfigError naming file:line:column and the key: an unknown key, a
///         bad value, a certificate without a key (or the reverse), a file that
///         cannot be read.
WebSection read_web_section(const ConfigNode& node);

/// Registers `web:` as a top-level section of the scenario format, checked by
/// read_web_section at load. @throws simsync::Error duplicate_name if `web`
/// is registered already.
void register_web_section(ScenarioExtensions& extensions);

} // namespace simsync::web
