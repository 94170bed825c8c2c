#include "remote_options.hpp"

#include "dds_security.hpp"

#include <simsync/core/error.hpp>

#include <unistd.h>

#include <filesystem>
#include <random>

namespace simsync::examples::host {

void add_remote_options(CommandLine& cli, const std::string& controller_program)
{
    po::options_description remote("remote controller (the controller in another process, over Cyclone DDS)");
    remote.add_options()
        ("remote-controller", po::value<std::string>()->value_name("spawn|wait"),
         ("run the controller in a " + controller_program + " process instead of a thread: spawn starts it as "
          "a child (its output goes to stderr); wait prints the command line to start it and waits for it. "
          "The hash is the in-process controller's").c_str())
        ("remote-domain", po::value<std::uint32_t>()->value_name("ID")->default_value(0),
         "DDS domain id of the remote controller, 0..232")
        ("remote-network", po::value<std::string>()->value_name("NET")->default_value("loopback"),
         "loopback (this machine only) or system (Cyclone's defaults: the network, multicast discovery)")
        ("remote-tag", po::value<std::string>()->value_name("TAG"),
         "Cyclone discovery tag shared with the controller (default: spawn: one unique to this run, so runs "
         "never meet; wait: none)")
        ("remote-partition", po::value<std::string>()->value_name("P")->default_value("simsync"),
         "DDS partition of the remote participants' topics")
        ("remote-delay-us", po::value<std::int64_t>()->value_name("MAX")->default_value(0),
         "spawn: the controller sleeps a random 0..MAX us before each request and inside each access "
         "(its --random-delay-us, seeded from --seed)")
        ("remote-program", po::value<std::string>()->value_name("PATH"),
         ("spawn: the controller program (default: " + controller_program + " beside this program)").c_str())
        ("remote-join-timeout", po::value<double>()->value_name("SECONDS")->default_value(30.0),
         "how long to wait for the controller to join");
    add_dds_security_option(remote, "remote-security", "DDS Security for the host's Bridge");
    add_dds_security_option(remote, "remote-controller-security",
                            "spawn: DDS Security for the controller (its --security)");
    cli.options.add(remote);
    cli.hidden.add_options()("remote-xmit-loss", po::value<int>()->value_name("PER_MILLE"),
                             "fault test hook of --remote-controller: Cyclone DDS drops this many of every 1000 "
                             "packets that the host, and the controller it starts, send");
    cli.hidden.add_options()("remote-lease", po::value<double>()->value_name("SECONDS"),
                             "fault test hook of --remote-controller: the liveliness lease of the host and of the "
                             "controller it starts (default 1 s)");
}

void check_remote_options(const po::variables_map& v)
{
    const bool remote = v.count("remote-controller") != 0;
    for (const char* name : {"remote-tag", "remote-program", "remote-xmit-loss", "remote-lease", "remote-security",
                             "remote-controller-security"}) {
        if (v.count(name) != 0 && !remote) option_error(name, "only with --remote-controller");
    }
    for (const char* name : {"remote-domain", "remote-network", "remote-partition", "remote-delay-us",
                             "remote-join-timeout"}) {
        if (!v[name].defaulted() && !remote) option_error(name, "only with --remote-controller");
    }
    if (!remote) return;
#if !SIMSYNC_HOST_REMOTE
    option_error("remote-controller", "this program was built without the dds adapter (Cyclone DDS was not found at "
                                      "configure time; scripts/setup-deps installs it)");
#endif
    const std::string& mode = v["remote-controller"].as<std::string>();
    if (mode != "spawn" && mode != "wait") {
        option_error("remote-controller", "'" + mode + "' is neither 'spawn' nor 'wait'");
    }
    if (v["no-threads"].as<bool>()) option_error("remote-controller", "not with --no-threads");
    if (v["remote-domain"].as<std::uint32_t>() > 232) option_error("remote-domain", "expected 0..232");
    const std::string& net = v["remote-network"].as<std::string>();
    if (net != "loopback" && net != "system") {
        option_error("remote-network", "expected loopback or system, got '" + net + "'");
    }
    if (v["remote-partition"].as<std::string>().empty()) option_error("remote-partition", "empty");
    if (v["remote-delay-us"].as<std::int64_t>() < 0) option_error("remote-delay-us", "must be >= 0");
    if (!v["remote-delay-us"].defaulted() && mode != "spawn") {
        option_error("remote-delay-us", "only with --remote-controller spawn (else: the controller's "
                                        "--random-delay-us)");
    }
    check_dds_security_option(v, "remote-security");
    check_dds_security_option(v, "remote-controller-security");
    if ((v.count("remote-security") != 0) != (v.count("remote-controller-security") != 0) && mode == "spawn") {
        option_error(v.count("remote-security") != 0 ? "remote-security" : "remote-controller-security",
                     "spawn needs both --remote-security and --remote-controller-security "
                     "(a secured host matches only a secured controller)");
    }
    if (v.count("remote-controller-security") != 0 && mode != "spawn") {
        option_error("remote-controller-security",
                     "only with --remote-controller spawn (wait: give the controller its --security)");
    }
    if (v.count("remote-security") != 0 && v["remote-domain"].as<std::uint32_t>() > 230) {
        option_error("remote-domain", "expected 0..230 with --remote-security");
    }
    if (v.count("remote-program") != 0 && mode != "spawn") {
        option_error("remote-program", "only with --remote-controller spawn");
    }
    const double timeout = v["remote-join-timeout"].as<double>();
    if (!(timeout > 0 && timeout <= 86400)) option_error("remote-join-timeout", "expected (0, 86400] s");
    if (v.count("remote-xmit-loss") != 0) {
        const int loss = v["remote-xmit-loss"].as<int>();
        if (loss < 0 || loss > 1000) option_error("remote-xmit-loss", "expected 0..1000");
    }
    if (v.count("remote-lease") != 0) {
        const double lease = v["remote-lease"].as<double>();
        if (!(lease >= 0.01 && lease <= 86400)) option_error("remote-lease", "expected [0.01, 86400] s");
    }
}

std::optional<RemoteControllerOptions> remote_options(const po::variables_map& v, const RemoteProtocol& protocol)
{
    if (v.count("remote-controller") == 0) return std::nullopt;
    RemoteControllerOptions r;
    r.mode = v["remote-controller"].as<std::string>() == "spawn" ? RemoteControllerOptions::Mode::spawn
                                                                 : RemoteControllerOptions::Mode::wait;
    r.domain = v["remote-domain"].as<std::uint32_t>();
    r.loopback = v["remote-network"].as<std::string>() == "loopback";
    r.partition = v["remote-partition"].as<std::string>();
    r.delay_us = v["remote-delay-us"].as<std::int64_t>();
    r.join_timeout_s = v["remote-join-timeout"].as<double>();
    if (v.count("remote-xmit-loss") != 0) r.xmit_loss_per_mille = v["remote-xmit-loss"].as<int>();
    if (v.count("remote-lease") != 0) r.lease_s = v["remote-lease"].as<double>();
    r.security = dds_security_file(v, "remote-security");
    r.controller_security = dds_security_file(v, "remote-controller-security");
    if (v.count("remote-tag") != 0) {
        r.tag = v["remote-tag"].as<std::string>();
    } else if (r.mode == RemoteControllerOptions::Mode::spawn) {
        std::random_device device;
        r.tag = protocol.host_program + "-" + std::to_string(::getpid()) + "-" + std::to_string(device());
    }
    if (v.count("remote-program") != 0) {
        r.program = v["remote-program"].as<std::string>();
    } else {
        // Beside this program (the build tree, or the install's bin/).
        std::error_code ec;
        const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
        r.program = ec ? protocol.controller_program : (self.parent_path() / protocol.controller_program).string();
    }
    return r;
}

std::string remote_plan_line(const RemoteControllerOptions& ro)
{
    const bool spawn = ro.mode == RemoteControllerOptions::Mode::spawn;
    std::string line = std::string("controller in another process (") + (spawn ? "spawn" : "wait") + "): DDS domain " +
                       std::to_string(ro.domain) + ", " + (ro.loopback ? "loopback" : "system network") +
                       ", partition " + ro.partition + ", tag '" + ro.tag + "'";
    if (spawn) line += ", random delay 0.." + std::to_string(ro.delay_us) + " us";
    return line;
}

namespace {
// What the engine's functions share: the remote controller's options, made
// once (a spawned one's tag is random).
struct RemoteState {
    RemoteProtocol protocol;
    bool resolved = false;
    std::optional<RemoteControllerOptions> options;
    const std::optional<RemoteControllerOptions>& of(const po::variables_map& v)
    {
        if (!resolved) options = remote_options(v, protocol), resolved = true;
        return options;
    }
};
} // namespace

void offer_remote_controller(HostEngine& e, RemoteProtocol protocol)
{
    auto state = std::make_shared<RemoteState>();
    state->protocol = std::move(protocol);
    e.synopsis_tail += kRemoteSynopsis;
    e.add_options = [own = e.add_options, program = state->protocol.controller_program](CommandLine& cli) {
        if (own) own(cli);
        add_remote_options(cli, program);
    };
    e.check_options = [own = e.check_options](const po::variables_map& v) {
        if (own) own(v);
        check_remote_options(v);
    };
    e.plan_line = [state, own = e.plan_line](const po::variables_map& v) {
        std::string line = own ? own(v) : std::string();
        if (!state->of(v)) return line;
        return line + (line.empty() ? "" : "\n") + remote_plan_line(*state->of(v));
    };
    e.wants_remote = [state](const po::variables_map& v) { return state->of(v).has_value(); };
    e.make_remote = [state](SimSyncHandler& handler, Controller& controller, SimTime end, std::uint64_t seed,
                            const po::variables_map& v) -> std::unique_ptr<RemoteController> {
#if SIMSYNC_HOST_REMOTE
        RemoteControllerOptions options = *state->of(v);
        options.seed = seed;
        if (state->protocol.controller_args) options.controller_args = state->protocol.controller_args();
        return make_remote_controller(handler, controller, end, options, state->protocol);
#else
        (void)handler, (void)controller, (void)end, (void)seed, (void)v;
        throw Error(errc::invalid_argument, "--remote-controller: built without the dds adapter");
#endif
    };
}

} // namespace simsync::examples::host
