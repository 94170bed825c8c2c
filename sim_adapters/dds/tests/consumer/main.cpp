// Links simsync::dds from an installed tree and uses it without opening a domain
// (a packaging test must not touch the network).
#include <simsync/dds/dds.hpp>

int main()
{
    const std::string xml = simsync::dds::cyclone_config(simsync::dds::DomainConfig::loopback(7));
    return xml.find("127.0.0.1") != std::string::npos && simsync::dds::matches(simsync::dds::kClockWriterQos,
                                                                               simsync::dds::kClockReaderQos)
               ? 0
               : 1;
}
