#pragma once
// DDS Security on the example programs' command lines: every option that gives
// a DDS participant its certificate takes one file, a YAML file holding the
// `security:` block of the scenario format (the six paths: identity CA,
// certificate, private key, permissions CA, governance, permissions), which
// scripts/make-dds-certs writes per identity (docs/security.md). Checked when
// the command line is parsed: a missing or unreadable file, or a bad block, is
// reported then, naming the option and the file:line:column and key. Without
// such an option a participant has no DDS Security: a trusted network only.
// Example code, not library API.

#include "command_line.hpp"

#include <string>

namespace simsync::examples {

// Adds --<name> FILE with `help` (what the participant is).
void add_dds_security_option(po::options_description& options, const char* name, const std::string& help);
// Checks --<name> if given (for a `check`): the file loads as a security block;
// in a build without the dds adapter, that this build cannot use it.
void check_dds_security_option(const po::variables_map& values, const char* name);
// The file --<name> names, or "" if not given.
std::string dds_security_file(const po::variables_map& values, const char* name);

} // namespace simsync::examples
