// SPDX-License-Identifier: BSL-1.0
/// What a library built with `-Dtls=disabled -Dredis=disabled` does when asked for what it
/// left out (docs/architecture.md#modules-of-the-build): it refuses at start, naming the
/// option and the build, instead of failing to link or quietly serving something else.
///
/// How, in the suites' own build (which has both): this program links the stand-in units
/// (tls_without.cpp, jwks_without_tls.cpp, without_redis.cpp) ahead of the library, so
/// the linker takes their definitions and never pulls the real ones from the archive.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include <unistd.h>

#include <droid/adapters/primary/transport/http/http.hpp>
#include <droid/adapters/secondary/auth/jwt.hpp>
#include <droid/application/server/server.hpp>

TEST_SUITE("a build without TLS or Redis") {
  TEST_CASE("a listener given certificate files refuses to start, naming -Dtls") {
    droid::server srv{droid::server_info{.name = "small", .version = "1"}};
    droid::http::options o;
    o.tls_certificate_chain = "server.pem";
    o.tls_private_key = "server.key";
    CHECK_THROWS_WITH_AS(droid::http::listener(srv, o), doctest::Contains("-Dtls=disabled"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(droid::http::listener(srv, o), doctest::Contains("tls_certificate_chain"),
                         std::invalid_argument);
  }

  TEST_CASE("a listener given a redis_url refuses to start, naming -Dredis") {
    droid::server srv{droid::server_info{.name = "small", .version = "1"}};
    droid::http::options o;
    o.cluster.redis_url = "redis://127.0.0.1:6379";
    CHECK_THROWS_WITH_AS(droid::http::listener(srv, o), doctest::Contains("-Dredis=disabled"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(droid::http::listener(srv, o), doctest::Contains("cluster.redis_url"), std::invalid_argument);
  }

  TEST_CASE("a plain HTTP listener still serves") {
    droid::server srv{droid::server_info{.name = "small", .version = "1"}};
    droid::http::options o;
    droid::http::listener l(srv, o);
    CHECK(l.url().rfind("http://127.0.0.1:", 0) == 0);
  }

  TEST_CASE("a verifier given a jwks_url is refused with the way out; a jwks_file still works") {
    droid::auth::jwt_options o;
    o.issuer = "https://auth.example.com";
    o.audience = "https://mcp.example.com";
    o.jwks_url = "https://auth.example.com/jwks";
    CHECK_THROWS_WITH_AS(static_cast<void>(droid::auth::make_jwt_verifier(o)), doctest::Contains("jwks_file"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(static_cast<void>(droid::auth::make_jwt_verifier(o)), doctest::Contains("-Dtls=disabled"),
                         std::invalid_argument);

    // An RSA public key in JWK form (the modulus of a throwaway 2048-bit key, made with
    // `openssl genrsa 2048`).
    const std::filesystem::path file = std::filesystem::temp_directory_path() /
                                            ("droid-without-modules-" + std::to_string(::getpid()) + ".json");
    {
      std::ofstream out(file);
      out << R"({"keys":[{"kty":"RSA","kid":"k1","alg":"RS256","use":"sig","e":"AQAB","n":")"
          << "wVlq1otjLKVA02ch3rfO6yYh8WXITtUtcyagYNCL2jvzRTBNuDKqZfnT7vd5VesbjjMBYXDS3l_lS6iAkeDpGe_k6gi_xYJx"
          << "KfSnb0JUBVYK2lDbM2qy8GQZBUgnF2tlfytloCyp5Tnxy43cvP6WsCF2rT5ALsk_932Wby17ylaa2Z_awRqoq0zT0W60rCA7"
          << "cw9qXyUVqbPe5_npB-zepRAkHCo3G3-QHuDCPmRRQkpmC1sXPLfUqSF5WBhRLpYDjuE51xmwW862GVgof-8URbTOHGhYp_BR"
          << "lQq8uJ-00GCSFjBEe-esnzUCmbrj62JcJnjpOaGtKK738qO26sxKWw"
          << R"("}]})";
    }
    o.jwks_url.clear();
    o.jwks_file = file.string();
    CHECK(droid::auth::make_jwt_verifier(o) != nullptr);
    std::filesystem::remove(file);
  }
}
