// simsync_dds_forger: what an attacker on the network writes against a simsync
// host, for the DDS Security tests (test_remote_security.cpp). A plain Cyclone
// DDS program on the types idlc made from idl/remote.idl, with nothing of
// simsync::dds but those types: it sets the DDS Security properties itself when
// given an identity, and otherwise none.
//
// Forge (the default): a writer on simsync/remote/to_host in --partition (the
// attacker chooses it; the host believes a name only from its own partition)
// writes, as participant --name with --incarnation from sequence --first-seq,
// the messages of --send (announce, request, release, cancel, leave), a
// release carrying --payload. Its announce names a reader of its own (in
// --partition and its parent) as the reply reader; a release that follows a
// request of its own waits for the grant, as a participant would (when its
// writer is matched at all). Prints on stdout:
//   writer-refused <reason>    Cyclone refused the writer (its permissions); ends
//   matched <n> | unmatched    after waiting up to --match-timeout for a reader
//   granted | no-grant         before a release after a request: the grant came (10 s)
//   wrote <k>                  samples written (also when unmatched: they go nowhere)
//   acked yes|no               every matched reader acknowledged them (within 10 s)
// then stays (its writer with it) until stdin closes.
//
// Eavesdrop (--eavesdrop): readers of both topics in every partition of the
// pattern "<partition>*"; prints
//   matched | unmatched        a writer of each topic matched within --match-timeout
// then reads until stdin closes, and prints
//   read <n> marker <k>        samples read, and how many carry --payload's bytes
//
// Identity (--identity DIR, a directory scripts/make-dds-certs wrote): its
// cert.pem, key.pem, permissions.p7s and the CAs and governance one level up.
// Exit status: 0, 1 if Cyclone refused the participant, 2 for bad options.

#include <simsync_dds_idl/remote.h>

#include <dds/dds.h>

#include <boost/program_options.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace po = boost::program_options;

namespace {

void say(const std::string& line)
{
    std::fputs((line + "\n").c_str(), stdout);
    std::fflush(stdout);
}

// The properties of the DDS Security specification, for Cyclone's plugins.
void set_security(dds_qos_t* qos, const std::string& dir)
{
    const std::string up = dir + "/..";
    const auto file = [](const std::string& p) { return "file:" + p; };
    dds_qset_prop(qos, "dds.sec.auth.library.path", "dds_security_auth");
    dds_qset_prop(qos, "dds.sec.auth.library.init", "init_authentication");
    dds_qset_prop(qos, "dds.sec.auth.library.finalize", "finalize_authentication");
    dds_qset_prop(qos, "dds.sec.auth.identity_ca", file(up + "/identity_ca.pem").c_str());
    dds_qset_prop(qos, "dds.sec.auth.identity_certificate", file(dir + "/cert.pem").c_str());
    dds_qset_prop(qos, "dds.sec.auth.private_key", file(dir + "/key.pem").c_str());
    dds_qset_prop(qos, "dds.sec.crypto.library.path", "dds_security_crypto");
    dds_qset_prop(qos, "dds.sec.crypto.library.init", "init_crypto");
    dds_qset_prop(qos, "dds.sec.crypto.library.finalize", "finalize_crypto");
    dds_qset_prop(qos, "dds.sec.access.library.path", "dds_security_ac");
    dds_qset_prop(qos, "dds.sec.access.library.init", "init_access_control");
    dds_qset_prop(qos, "dds.sec.access.library.finalize", "finalize_access_control");
    dds_qset_prop(qos, "dds.sec.access.permissions_ca", file(up + "/permissions_ca.pem").c_str());
    dds_qset_prop(qos, "dds.sec.access.governance", file(up + "/governance.p7s").c_str());
    dds_qset_prop(qos, "dds.sec.access.permissions", file(dir + "/permissions.p7s").c_str());
}

// Cyclone on 127.0.0.1 only, as the tests' participants (simsync::dds's
// loopback network).
std::string loopback_config()
{
    return "<CycloneDDS><Domain Id=\"any\"><General><Interfaces><NetworkInterface name=\"lo\"/></Interfaces>"
           "<AllowMulticast>false</AllowMulticast></General><Discovery><ParticipantIndex>auto</ParticipantIndex>"
           "<Peers><Peer Address=\"127.0.0.1\"/></Peers></Discovery></Domain></CycloneDDS>";
}

dds_qos_t* endpoint_qos(const std::vector<std::string>& partitions)
{
    dds_qos_t* q = dds_create_qos();
    dds_qset_reliability(q, DDS_RELIABILITY_RELIABLE, DDS_SECS(5));
    dds_qset_history(q, DDS_HISTORY_KEEP_ALL, 0);
    std::vector<const char*> names;
    for (const std::string& p : partitions) names.push_back(p.c_str());
    dds_qset_partition(q, static_cast<std::uint32_t>(names.size()), names.data());
    return q;
}

std::uint8_t kind_code(const std::string& kind)
{
    if (kind == "announce") return simsync_remote_ANNOUNCE;
    if (kind == "request") return simsync_remote_REQUEST;
    if (kind == "release") return simsync_remote_RELEASE;
    if (kind == "cancel") return simsync_remote_CANCEL;
    if (kind == "leave") return simsync_remote_LEAVE;
    throw po::error("--send: unknown kind '" + kind + "'");
}

bool contains(const std::uint8_t* data, std::size_t size, const std::string& needle)
{
    if (needle.empty() || size < needle.size()) return false;
    return std::search(data, data + size, needle.begin(), needle.end()) != data + size;
}

void wait_for_stdin_end()
{
    std::string line;
    while (std::getline(std::cin, line)) {
    }
}

} // namespace

int main(int argc, char** argv)
{
    std::uint32_t domain = 0;
    std::string identity;
    std::string partition;
    std::string name;
    std::uint64_t incarnation = 0;
    std::uint64_t first_seq = 1;
    std::string send;
    std::string payload;
    double match_timeout = 5;
    po::options_description options("simsync_dds_forger: an attacker's DDS writer or reader for the security tests");
    options.add_options()
        ("help", "this text")
        ("domain", po::value(&domain)->required(), "DDS domain id (loopback)")
        ("identity", po::value(&identity)->default_value(""), "an identity directory of make-dds-certs; none: no security")
        ("partition", po::value(&partition)->default_value("simsync"), "forge: the writer's partition; eavesdrop: the prefix")
        ("name", po::value(&name)->default_value("controller"), "the participant it speaks for")
        ("incarnation", po::value(&incarnation)->default_value(0), "the incarnation it claims (0: random)")
        ("first-seq", po::value(&first_seq)->default_value(1), "the sequence number of its first message")
        ("send", po::value(&send)->default_value("announce,request,release,leave"), "the messages, in order")
        ("payload", po::value(&payload)->default_value("forged"), "a release's payload; eavesdrop: the marker")
        ("match-timeout", po::value(&match_timeout)->default_value(5.0), "seconds to wait for a reader")
        ("eavesdrop", "read both topics instead of writing");
    po::variables_map vm;
    std::vector<std::uint8_t> kinds;
    try {
        po::store(po::parse_command_line(argc, argv, options), vm);
        if (vm.count("help")) {
            std::cout << options << "\n";
            return 0;
        }
        po::notify(vm);
        std::stringstream list(send);
        for (std::string k; std::getline(list, k, ',');) kinds.push_back(kind_code(k));
        if (first_seq == 0) throw po::error("--first-seq must be >= 1");
    } catch (const po::error& e) {
        std::cerr << "simsync_dds_forger: " << e.what() << "\n" << options << "\n";
        return 2;
    }
    if (incarnation == 0) incarnation = std::random_device{}() | 1u;

    const dds_entity_t d = dds_create_domain(domain, loopback_config().c_str());
    if (d < 0) {
        say(std::string("participant-refused ") + dds_strretcode(d));
        return 1;
    }
    dds_qos_t* pq = dds_create_qos();
    if (!identity.empty()) set_security(pq, identity);
    const dds_entity_t pp = dds_create_participant(domain, pq, nullptr);
    dds_delete_qos(pq);
    if (pp < 0) {
        say(std::string("participant-refused ") + dds_strretcode(pp));
        return 1;
    }
    const dds_entity_t to_host =
        dds_create_topic(pp, &simsync_remote_ToHost_desc, "simsync/remote/to_host", nullptr, nullptr);
    const dds_entity_t to_participant =
        dds_create_topic(pp, &simsync_remote_ToParticipant_desc, "simsync/remote/to_participant", nullptr, nullptr);

    if (vm.count("eavesdrop")) {
        dds_qos_t* q = endpoint_qos({partition + "*"});
        const dds_entity_t r1 = dds_create_reader(pp, to_host, q, nullptr);
        const dds_entity_t r2 = dds_create_reader(pp, to_participant, q, nullptr);
        dds_delete_qos(q);
        if (r1 < 0 || r2 < 0) {
            say("reader-refused");
        } else {
            // Matched once a writer of each topic is: the host's, and a participant's.
            const dds_time_t until = dds_time() + static_cast<dds_duration_t>(match_timeout * 1e9);
            dds_subscription_matched_status_t m1{};
            dds_subscription_matched_status_t m2{};
            for (;;) {
                dds_get_subscription_matched_status(r1, &m1);
                dds_get_subscription_matched_status(r2, &m2);
                if ((m1.current_count > 0 && m2.current_count > 0) || dds_time() >= until) break;
                dds_sleepfor(DDS_MSECS(10));
            }
            say(m1.current_count > 0 && m2.current_count > 0 ? "matched" : "unmatched");
        }
        wait_for_stdin_end();
        long read = 0;
        long marked = 0;
        for (;;) {
            void* samples[16] = {};
            dds_sample_info_t infos[16];
            const dds_return_t n1 = r1 > 0 ? dds_take(r1, samples, infos, 16, 16) : 0;
            for (dds_return_t i = 0; i < n1; ++i) {
                if (!infos[i].valid_data) continue;
                const auto* s = static_cast<const simsync_remote_ToHost*>(samples[i]);
                ++read;
                if (contains(s->payload._buffer, s->payload._length, payload)) ++marked;
            }
            if (n1 > 0) dds_return_loan(r1, samples, n1);
            void* samples2[16] = {};
            const dds_return_t n2 = r2 > 0 ? dds_take(r2, samples2, infos, 16, 16) : 0;
            for (dds_return_t i = 0; i < n2; ++i) {
                if (!infos[i].valid_data) continue;
                const auto* s = static_cast<const simsync_remote_ToParticipant*>(samples2[i]);
                ++read;
                if (contains(s->payload._buffer, s->payload._length, payload)) ++marked;
            }
            if (n2 > 0) dds_return_loan(r2, samples2, n2);
            if (n1 <= 0 && n2 <= 0) break;
        }
        say("read " + std::to_string(read) + " marker " + std::to_string(marked));
        dds_delete(d);
        return 0;
    }

    dds_qos_t* wq = endpoint_qos({partition});
    const dds_entity_t w = dds_create_writer(pp, to_host, wq, nullptr);
    dds_delete_qos(wq);
    // Where the host answers: the attacker's partition and its parent.
    const std::string parent = partition.substr(0, partition.rfind('/'));
    dds_qos_t* rq = endpoint_qos({partition, parent});
    const dds_entity_t reply = dds_create_reader(pp, to_participant, rq, nullptr);
    dds_delete_qos(rq);
    dds_guid_t reply_guid{};
    if (reply > 0) dds_get_guid(reply, &reply_guid);
    // Waits up to 10 s for a grant addressed to `name`.
    const auto await_grant = [&] {
        const dds_time_t until = dds_time() + DDS_SECS(10);
        while (reply > 0 && dds_time() < until) {
            void* samples[8] = {};
            dds_sample_info_t infos[8];
            const dds_return_t n = dds_take(reply, samples, infos, 8, 8);
            bool granted = false;
            for (dds_return_t i = 0; i < n; ++i) {
                const auto* s = static_cast<const simsync_remote_ToParticipant*>(samples[i]);
                if (infos[i].valid_data && s->kind == simsync_remote_GRANT && name == s->participant) granted = true;
            }
            if (n > 0) dds_return_loan(reply, samples, n);
            if (granted) return true;
            dds_sleepfor(DDS_MSECS(5));
        }
        return false;
    };
    if (w < 0) {
        say(std::string("writer-refused ") + dds_strretcode(w));
        wait_for_stdin_end();
        dds_delete(d);
        return 0;
    }
    dds_set_status_mask(w, DDS_PUBLICATION_MATCHED_STATUS);
    const dds_time_t deadline = dds_time() + static_cast<dds_duration_t>(match_timeout * 1e9);
    dds_publication_matched_status_t st{};
    while (dds_get_publication_matched_status(w, &st) == 0 && st.current_count == 0 && dds_time() < deadline) {
        dds_sleepfor(DDS_MSECS(10));
    }
    say(st.current_count > 0 ? "matched " + std::to_string(st.current_count) : std::string("unmatched"));

    std::uint64_t seq = first_seq;
    int wrote = 0;
    bool requested = false;
    for (const std::uint8_t kind : kinds) {
        if (kind == simsync_remote_RELEASE && requested && st.current_count > 0) {
            say(await_grant() ? "granted" : "no-grant");
        }
        requested = requested || kind == simsync_remote_REQUEST;
        simsync_remote_ToHost m{};
        std::strncpy(m.participant, name.c_str(), sizeof(m.participant) - 1);
        m.incarnation = incarnation;
        m.seq = seq++;
        m.kind = kind;
        m.time = kind == simsync_remote_ANNOUNCE ? INT64_MIN : 0;
        if (kind == simsync_remote_ANNOUNCE) {
            std::memcpy(m.reply_reader, reply_guid.v, 16);
            if (reply <= 0) m.reply_reader[0] = 1; // never all zero (the host refuses that)
        }
        if (kind == simsync_remote_CANCEL) m.ref = m.seq - 1;
        if (kind == simsync_remote_RELEASE) {
            m.payload._buffer = reinterpret_cast<std::uint8_t*>(payload.data());
            m.payload._length = static_cast<std::uint32_t>(payload.size());
            m.payload._maximum = m.payload._length;
        }
        if (dds_write(w, &m) == 0) ++wrote;
    }
    say("wrote " + std::to_string(wrote));
    say(st.current_count > 0 && dds_wait_for_acks(w, DDS_SECS(10)) == 0 ? "acked yes" : "acked no");
    wait_for_stdin_end();
    dds_delete(d);
    return 0;
}
