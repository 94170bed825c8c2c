#include "ros2_clock.hpp"

#include "dds_security.hpp"

#if SIMSYNC_EXAMPLES_HAVE_DDS
#include <simsync/dds/dds.hpp>
#endif

#include <cstdint>
#include <cstdlib>
#include <string>
#include <variant>

namespace simsync::examples {

namespace {

constexpr const char* kWithoutDds =
    "this program was built without the dds adapter (Cyclone DDS was not found at configure time; "
    "scripts/setup-deps installs it)";

// The domain of --ros2-clock: its value, else $ROS_DOMAIN_ID (as a ROS 2 node
// reads it), else 0.
std::uint64_t ros2_domain(const po::variables_map& values)
{
    const std::string text = values["ros2-clock"].as<std::string>();
    if (!text.empty()) return parse_unsigned_option("ros2-clock", text);
    const char* env = std::getenv("ROS_DOMAIN_ID");
    if (env == nullptr || *env == '\0') return 0;
    try {
        return parse_unsigned_option("ros2-clock", env);
    } catch (const std::exception&) {
        option_error("ros2-clock", "no DOMAIN given and ROS_DOMAIN_ID='" + std::string(env) +
                                       "' is not a domain id (0..232)");
    }
}

} // namespace

bool have_ros2_clock() noexcept { return SIMSYNC_EXAMPLES_HAVE_DDS != 0; }

void add_ros2_clock_options(po::options_description& options)
{
    options.add_options()
        ("ros2-clock", po::value<std::string>()->implicit_value("")->value_name("[DOMAIN]"),
         "also publish the clock as ROS 2 /clock on this DDS domain, 0..232 "
         "(default: $ROS_DOMAIN_ID, else 0)")
        ("ros2-network", po::value<std::string>()->value_name("NET"),
         "the network of --ros2-clock: system (default; Cyclone DDS's defaults, as ROS 2 nodes) "
         "or loopback (127.0.0.1 only, no multicast)");
    add_dds_security_option(options, "ros2-security", "DDS Security for --ros2-clock");
}

void check_ros2_clock_options(const po::variables_map& values)
{
    for (const char* name : {"ros2-network", "ros2-security"}) {
        if (values.count(name) != 0 && values.count("ros2-clock") == 0) option_error(name, "only with --ros2-clock");
    }
    if (values.count("ros2-clock") == 0) return;
    if (!have_ros2_clock()) option_error("ros2-clock", kWithoutDds);
    const std::uint64_t domain = ros2_domain(values);
    constexpr std::uint64_t kMaxDomain = 232; // simsync::dds::kMaxDomainId
    if (domain > kMaxDomain) {
        option_error("ros2-clock", "expected a DDS domain id 0..232 (ROS_DOMAIN_ID), got " + std::to_string(domain));
    }
    if (values.count("ros2-network") != 0) {
        const std::string net = values["ros2-network"].as<std::string>();
        if (net != "system" && net != "loopback") {
            option_error("ros2-network", "expected system or loopback, got '" + net + "'");
        }
    }
    check_dds_security_option(values, "ros2-security");
    if (values.count("ros2-security") != 0 && domain > 230) { // simsync::dds::kMaxSecuredDomainId
        option_error("ros2-clock", "expected a DDS domain id 0..230 with --ros2-security, got " + std::to_string(domain));
    }
}

std::optional<ClockSinkConfig> ros2_clock_sink(const po::variables_map& values)
{
    if (values.count("ros2-clock") == 0) return std::nullopt;
    // The same node a scenario's `- ros2: {domain: N, network: NET}` gives, so
    // the sink is built by the same maker and means the same.
    std::string yaml = "domain: " + std::to_string(ros2_domain(values));
    if (values.count("ros2-network") != 0) yaml += "\nnetwork: " + values["ros2-network"].as<std::string>();
    if (const std::string file = dds_security_file(values, "ros2-security"); !file.empty()) {
        // A double-quoted YAML scalar: any path reads back as given.
        std::string quoted = "\"";
        for (const char c : file) {
            if (c == '"' || c == '\\') quoted += '\\';
            quoted += c;
        }
        yaml += "\nsecurity: " + quoted + "\"";
    }
    return ClockSinkConfig{ExtensionSinkConfig{"ros2", ConfigNode::parse(yaml, "--ros2-clock")}};
}

std::string describe_clock_sinks(const ClockConfig& clock)
{
    if (clock.sinks.empty()) return "no sink (clock.sinks is empty)";
    std::string text;
    for (const ClockSinkConfig& sink : clock.sinks) {
        if (!text.empty()) text += "; ";
        if (const auto* udp = std::get_if<UdpSinkConfig>(&sink)) {
            text += "udp " + udp->host + ":" + std::to_string(udp->port);
            continue;
        }
        const auto& extension = std::get<ExtensionSinkConfig>(sink);
#if SIMSYNC_EXAMPLES_HAVE_DDS
        if (extension.kind == "ros2") {
            const dds::Ros2SinkSettings ros2 = dds::parse_ros2_sink(extension.config);
            text += "ROS 2 /clock (DDS topic " + ros2.sink.topic + ") on " + dds::describe(ros2.domain);
            continue;
        }
#endif
        text += extension.kind;
    }
    return text;
}

std::string clock_plan_line(const ClockConfig& clock, const std::string& time_source)
{
    if (!clock.enabled) return "clock: off (clock.enabled: false)";
    return "clock: time source '" + time_source + "', " + clock.schedule.describe() + " of simulated time, to " +
           describe_clock_sinks(clock);
}

std::string clock_summary_line(const ClockConfig& clock, const std::string& time_source, std::uint64_t published)
{
    const std::string n = std::to_string(published);
    if (clock.sinks.empty()) return "clock: " + n + " ticks, sent nowhere (no sink: clock.sinks is empty)";
    return "clock: " + n + " messages from time source '" + time_source + "' to " + describe_clock_sinks(clock);
}

void register_ros2_clock_sink(ScenarioExtensions& extensions)
{
#if SIMSYNC_EXAMPLES_HAVE_DDS
    dds::register_clock_sink(extensions);
#else
    extensions.add_clock_sink("ros2", [](const ConfigNode& node) { node.fail(kWithoutDds); });
#endif
}

void add_ros2_clock_maker(ClockSinkMakers& makers)
{
#if SIMSYNC_EXAMPLES_HAVE_DDS
    makers.emplace("ros2", [](const ConfigNode& node) -> std::unique_ptr<ClockSink> {
        return dds::make_ros2_clock_sink(node);
    });
#else
    (void)makers;
#endif
}

} // namespace simsync::examples
