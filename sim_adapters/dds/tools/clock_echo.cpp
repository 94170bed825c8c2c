// simsync-clock-echo: `ros2 topic echo /clock` and `ros2 topic hz /clock` in one,
// without ROS 2. Subscribes to ROS 2 /clock on a DDS domain (through
// simsync::dds::Ros2ClockFollower) and prints every time, then once a second the
// arrival rate, interval min/max and jitter (standard deviation of the arrival
// intervals over a window), and how fast the clock runs against the wall clock.
//
// Names as ROS 2 gives them: the domain is $ROS_DOMAIN_ID unless --domain says
// otherwise (as `ros2 topic echo` and simsync-demo --ros2-clock read it), and
// --topic takes the ROS 2 name (/clock) as well as the DDS one (rt/clock).
// SIGINT and SIGTERM end it with its summary, as --count and --duration do.
//
// Exit status: 0 if samples arrived (and --count was reached, if given); 1 if
// nothing arrived within --timeout (or fewer than --count before --duration
// ended); 2 for bad options; 3 if DDS could not be set up.

#include <simsync/dds/dds.hpp>
#include <simsync/simsync.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/program_options.hpp>

#include <algorithm>
#include <charconv>
#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <iostream>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace po = boost::program_options;
using namespace std::chrono_literals;

namespace {

std::string seconds(simsync::RosTime t)
{
    return simsync::format_seconds(simsync::SimTime{simsync::from_ros_time(t).time_since_epoch()});
}

double ms(simsync::WallClock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// Arrival statistics, kept on the follower's thread (the sample callback) and
// read by main only after the follower has stopped (its thread joined).
struct Stats {
    std::size_t window = 100;
    std::deque<simsync::WallClock::duration> intervals;
    std::uint64_t count = 0;
    std::optional<simsync::dds::ClockSample> first;
    std::optional<simsync::dds::ClockSample> previous;
    simsync::WallTime last_report{};

    void add(const simsync::dds::ClockSample& s)
    {
        ++count;
        if (!first) first = s;
        if (previous) {
            intervals.push_back(s.received - previous->received);
            if (intervals.size() > window) intervals.pop_front();
        }
        previous = s;
    }

    std::string summary() const
    {
        if (intervals.empty()) return "one sample, no rate yet";
        double mean = 0;
        for (const auto& i : intervals) mean += ms(i);
        mean /= static_cast<double>(intervals.size());
        double var = 0;
        for (const auto& i : intervals) var += (ms(i) - mean) * (ms(i) - mean);
        const double stddev = std::sqrt(var / static_cast<double>(intervals.size()));
        const auto [lo, hi] = std::minmax_element(intervals.begin(), intervals.end());
        char line[256];
        const double wall = std::chrono::duration<double>(previous->received - first->received).count();
        const double sim = std::chrono::duration<double>(simsync::from_ros_time(previous->time) -
                                                         simsync::from_ros_time(first->time))
                               .count();
        std::snprintf(line, sizeof line,
                      "rate %.2f Hz  min %.3f ms  max %.3f ms  jitter (std dev) %.3f ms  window %zu  "
                      "clock/wall %.3f",
                      mean > 0 ? 1000.0 / mean : 0.0, ms(*lo), ms(*hi), stddev, intervals.size(),
                      wall > 0 ? sim / wall : 0.0);
        return line;
    }
};

// "2.5" (seconds) or "250ms", "2.5s", "1min" (simsync::parse_duration).
simsync::WallClock::duration wall_duration(const std::string& text)
{
    return simsync::parse_duration(text, "s");
}

} // namespace

int main(int argc, char** argv)
{
    std::string domain_text;
    std::string topic = "/clock";
    std::string network = "system";
    std::vector<std::string> peers;
    std::string interface;
    std::string tag;
    std::string security;
    std::string reliability = "best_effort";
    std::string durability = "volatile";
    std::uint64_t count = 0;
    std::string duration_text = "0";
    std::string timeout_text = "5";
    std::size_t window = 100;
    bool quiet = false;
    po::options_description options("simsync-clock-echo options");
    options.add_options()
        ("help,h", "this help")
        ("domain,d", po::value(&domain_text), "DDS domain id, 0..232 (default: $ROS_DOMAIN_ID, else 0)")
        ("topic", po::value(&topic)->default_value("/clock"),
         "the topic: a ROS 2 name (/clock, /sim/clock) or a DDS one (rt/clock)")
        ("network", po::value(&network)->default_value(network), "system (Cyclone's defaults, multicast) or loopback (127.0.0.1 only)")
        ("interface", po::value(&interface), "network interface to use instead")
        ("peer", po::value(&peers)->composing(), "extra unicast discovery peer (repeatable)")
        ("tag", po::value(&tag), "Cyclone discovery tag of the simulation (Cyclone peers only)")
        ("security", po::value(&security),
         "DDS Security: a YAML file with the security block (scripts/make-dds-certs writes one per identity; "
         "its permissions must allow reading the topic). Without it: none, a trusted network only")
        ("reliability", po::value(&reliability)->default_value(reliability), "best_effort (rclcpp's ClockQoS) or reliable")
        ("durability", po::value(&durability)->default_value(durability), "volatile or transient_local")
        ("count,n", po::value(&count)->default_value(0), "exit after this many samples (0: no limit)")
        ("duration", po::value(&duration_text)->default_value("0"),
         "exit after this much wall time: seconds (2.5) or a number and a unit (250ms, 2.5s, 1min); 0: no limit")
        ("timeout", po::value(&timeout_text)->default_value("5"),
         "exit 1 if no sample arrives within this much wall time (as --duration)")
        ("window", po::value(&window)->default_value(100), "arrival intervals the statistics cover")
        ("quiet,q", po::bool_switch(&quiet), "statistics only, not every time");
    po::variables_map vm;
    std::string domain_source = "--domain"; // where the domain id came from
    simsync::WallClock::duration timeout{};
    simsync::WallClock::duration duration{}; // zero: no limit
    simsync::dds::DomainConfig config;
    simsync::dds::Ros2ClockFollowerConfig follower_config;
    std::string option; // the option being checked, for the error message
    try {
        po::store(po::parse_command_line(argc, argv, options), vm);
        if (vm.count("help")) {
            std::cout << "usage: simsync-clock-echo [options]\n"
                         "Prints ROS 2 /clock from a DDS domain: times, rate, jitter.\n\n"
                      << options;
            return 0;
        }
        po::notify(vm);
        option = "--domain";
        if (vm.count("domain") == 0) {
            // As a ROS 2 node (and simsync-demo --ros2-clock) reads it.
            const char* env = std::getenv("ROS_DOMAIN_ID");
            if (env != nullptr && *env != '\0') {
                domain_text = env;
                domain_source = "ROS_DOMAIN_ID";
            } else {
                domain_text = "0";
                domain_source = "default";
            }
        }
        std::uint64_t domain = 0;
        const auto [end, ec] = std::from_chars(domain_text.data(), domain_text.data() + domain_text.size(), domain);
        if (domain_text.empty() || ec != std::errc{} || end != domain_text.data() + domain_text.size() ||
            domain > simsync::dds::kMaxDomainId) {
            throw std::invalid_argument("expected a DDS domain id 0.." + std::to_string(simsync::dds::kMaxDomainId) +
                                        ", got '" + domain_text + "'" +
                                        (domain_source == "ROS_DOMAIN_ID" ? " (from ROS_DOMAIN_ID)" : ""));
        }
        config.id = static_cast<std::uint32_t>(domain);
        option = "--network";
        config.network = simsync::dds::parse_network(network);
        config.interface = interface;
        config.peers = peers;
        config.tag = tag;
        option = "--security";
        if (!security.empty()) {
            config.security = simsync::dds::load_security_file(security);
            if (domain > simsync::dds::kMaxSecuredDomainId) {
                throw std::invalid_argument("needs a DDS domain id 0.." +
                                            std::to_string(simsync::dds::kMaxSecuredDomainId) + ", got " +
                                            std::to_string(domain));
            }
        }
        option = "--topic";
        follower_config.topic = simsync::dds::dds_topic_name(topic);
        option = "--reliability";
        follower_config.qos.reliability = simsync::dds::parse_reliability(reliability);
        option = "--durability";
        follower_config.qos.durability = simsync::dds::parse_durability(durability);
        option = "--timeout";
        timeout = wall_duration(timeout_text);
        if (timeout <= simsync::WallClock::duration::zero()) throw std::invalid_argument("expected a time > 0, got 0");
        option = "--duration";
        duration = wall_duration(duration_text);
        option = "--window";
        if (window < 1) throw std::invalid_argument("expected at least 1 interval");
    } catch (const po::error& e) {
        std::cerr << "simsync-clock-echo: " << e.what() << "\nusage: simsync-clock-echo [options] (--help lists them)\n";
        return 2;
    } catch (const std::exception& e) {
        std::cerr << "simsync-clock-echo: " << option << ": " << e.what()
                  << "\nusage: simsync-clock-echo [options] (--help lists them)\n";
        return 2;
    }

    // Everything that ends the run is an event on this loop, run by main: a
    // signal, the first-sample timeout, --duration, and --count reached (posted
    // by the follower's thread).
    boost::asio::io_context io;
    boost::asio::signal_set signals(io, SIGINT, SIGTERM);
    int interrupted_by = 0;
    signals.async_wait([&](const boost::system::error_code& ec, int number) {
        if (ec) return;
        interrupted_by = number;
        io.stop();
    });
    const std::uint64_t wanted = count > 0 ? count : std::numeric_limits<std::uint64_t>::max();

    Stats stats;
    stats.window = window;
    follower_config.on_sample = [&](const simsync::dds::ClockSample& s) {
        stats.add(s);
        if (stats.count == wanted) boost::asio::post(io, [&io] { io.stop(); });
        if (!quiet) std::printf("clock %s\n", seconds(s.time).c_str());
        if (s.received - stats.last_report >= 1s) {
            stats.last_report = s.received;
            std::printf("%s\n", stats.summary().c_str());
        }
        std::fflush(stdout);
    };

    try {
        simsync::ExternalTimeSource source;
        source.on_backward_jump([](const simsync::TimeJump& j) {
            std::printf("backward jump: %s -> %s (a follower holds %s)\n",
                        simsync::format_seconds(simsync::SimTime{j.from.time_since_epoch()}).c_str(),
                        simsync::format_seconds(simsync::SimTime{j.to.time_since_epoch()}).c_str(),
                        simsync::format_seconds(simsync::SimTime{j.held.time_since_epoch()}).c_str());
        });
        auto participant = simsync::dds::Participant::create(config);
        simsync::dds::Ros2ClockFollower follower(participant, source, follower_config);
        std::fprintf(stderr, "simsync-clock-echo: waiting for %s (DDS topic %s) on %s (%s; domain id from %s)\n",
                     topic.c_str(), follower_config.topic.c_str(), simsync::dds::describe(config).c_str(),
                     simsync::dds::describe(follower_config.qos).c_str(), domain_source.c_str());

        boost::asio::steady_timer first_sample(io, timeout);
        first_sample.async_wait([&](const boost::system::error_code& ec) {
            if (!ec && follower.received() == 0) io.stop();
        });
        boost::asio::steady_timer end_of_duration(io, duration);
        if (duration > simsync::WallClock::duration::zero()) {
            end_of_duration.async_wait([&](const boost::system::error_code& ec) {
                if (!ec) io.stop();
            });
        }
        io.run();
        follower.stop();
        if (interrupted_by != 0) {
            std::fprintf(stderr, "simsync-clock-echo: %s\n", interrupted_by == SIGINT ? "SIGINT" : "SIGTERM");
        }
        const std::uint64_t received = follower.received();
        if (received == 0) {
            std::fprintf(stderr, "simsync-clock-echo: no %s sample within %s s (matched writers: %zu)\n",
                         follower_config.topic.c_str(), simsync::format_seconds(timeout).c_str(),
                         follower.matched_writers());
            return 1;
        }
        std::printf("received %llu samples (%llu invalid ignored, %llu backward jumps); %s\n",
                    static_cast<unsigned long long>(received), static_cast<unsigned long long>(follower.invalid()),
                    static_cast<unsigned long long>(source.backward_jumps()), stats.summary().c_str());
        if (count > 0 && received < count) {
            std::fprintf(stderr, "simsync-clock-echo: %llu of %llu samples\n",
                         static_cast<unsigned long long>(received), static_cast<unsigned long long>(count));
            return 1;
        }
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "simsync-clock-echo: %s\n", e.what());
        return 3;
    }
}
