#include "dds_security.hpp"

#if SIMSYNC_EXAMPLES_HAVE_DDS
#include <simsync/dds/scenario.hpp>
#endif

#include <simsync/config/config.hpp>

namespace simsync::examples {

void add_dds_security_option(po::options_description& options, const char* name, const std::string& help)
{
    options.add_options()(name, po::value<std::string>()->value_name("FILE"),
                          (help + ": a YAML file with the security block (identity_ca, certificate, private_key, "
                                  "permissions_ca, governance, permissions; scripts/make-dds-certs writes one per "
                                  "identity). Without it: no DDS Security, a trusted network only")
                              .c_str());
}

void check_dds_security_option(const po::variables_map& values, const char* name)
{
    if (values.count(name) == 0) return;
#if SIMSYNC_EXAMPLES_HAVE_DDS
    try {
        (void)dds::load_security_file(values[name].as<std::string>());
    } catch (const ConfigError& e) {
        option_error(name, e.what());
    }
#else
    option_error(name, "this program was built without the dds adapter (Cyclone DDS was not found at configure time; "
                       "scripts/setup-deps installs it)");
#endif
}

std::string dds_security_file(const po::variables_map& values, const char* name)
{
    return values.count(name) != 0 ? values[name].as<std::string>() : std::string();
}

} // namespace simsync::examples
