#pragma once
// A throwaway TLS certificate for the web console's tests, made when the test
// runs with the openssl program (no key in the repository): self-signed, EC
// P-256, valid for the given IP addresses, in a fresh directory removed after.

#include <boost/asio/ssl.hpp>

#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace simsync::web::test {

class TestCertificate {
public:
    explicit TestCertificate(const std::vector<std::string>& addresses = {"127.0.0.1"})
    {
        char dir[] = "/tmp/simsync-web-tls-XXXXXX";
        if (::mkdtemp(dir) == nullptr) return;
        dir_ = dir;
        std::string names;
        for (const auto& a : addresses) names += (names.empty() ? "IP:" : ",IP:") + a;
        const std::string command = "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
                                    "-days 2 -subj /CN=simsync-web-test -addext subjectAltName=" +
                                    names + " -keyout " + key() + " -out " + certificate() + " >" + dir_.string() +
                                    "/openssl.log 2>&1";
        made_ = std::system(command.c_str()) == 0 && std::filesystem::exists(certificate());
    }
    ~TestCertificate()
    {
        std::error_code ignored;
        if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
    }
    TestCertificate(const TestCertificate&) = delete;
    TestCertificate& operator=(const TestCertificate&) = delete;

    bool made() const { return made_; }
    std::string certificate() const { return (dir_ / "cert.pem").string(); }
    std::string key() const { return (dir_ / "key.pem").string(); }
    std::string directory() const { return dir_.string(); }

    // A client context that trusts this certificate and nothing else.
    boost::asio::ssl::context client_context() const
    {
        boost::asio::ssl::context c(boost::asio::ssl::context::tls_client);
        c.load_verify_file(certificate());
        c.set_verify_mode(boost::asio::ssl::verify_peer);
        return c;
    }

private:
    std::filesystem::path dir_;
    bool made_ = false;
};

} // namespace simsync::web::test
