# Finds every library kconsume links, each by pkg-config, and fails configure with the Debian
# package to install when one is missing (tests/testkit/install-deps installs them all).
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)

set(KC_DEP_TARGETS Threads::Threads m)
# The pkg-config modules behind KC_DEP_TARGETS: kconsume.pc's Requires.private, and what
# kconsumeConfig.cmake looks up again for a program that links the static library.
set(KC_DEP_MODULES "")

# kc_find_module(<pkg-config module> <Debian package>): PkgConfig::KCDEP_<module> and its
# KCDEP_<module>_* variables in the caller's scope, or configure fails naming the package.
macro(kc_find_module module debian)
    string(MAKE_C_IDENTIFIER "KCDEP_${module}" var)
    pkg_check_modules(${var} QUIET IMPORTED_TARGET GLOBAL ${module})
    if(NOT ${var}_FOUND)
        message(FATAL_ERROR "kconsume needs ${module}: install the Debian package '${debian}' "
                            "(or run tests/testkit/install-deps, which installs everything)")
    endif()
endmacro()

# kc_require(<pkg-config module> <Debian package>): a library kconsume links.
function(kc_require module debian)
    kc_find_module(${module} ${debian})
    set(KC_DEP_TARGETS ${KC_DEP_TARGETS} PkgConfig::${var} PARENT_SCOPE)
    set(KC_DEP_MODULES ${KC_DEP_MODULES} ${module} PARENT_SCOPE)
endfunction()

kc_require(liburing liburing-dev)
kc_require(ck libck-dev)
kc_require(openssl libssl-dev)
kc_require(libzstd libzstd-dev)
kc_require(zlib zlib1g-dev)
kc_require(liblz4 liblz4-dev)
kc_require(snappy libsnappy-dev)
# kc_metrics reads the stats JSON back to render it (runtime/metrics.c).
kc_require(jansson libjansson-dev)
# kc_require_headers(<pkg-config module> <Debian package>): a library kconsume loads when a
# login first needs it (io/base/dynlib.h) instead of linking it; only its headers are needed to
# build (KC_DEP_INCLUDES), and neither kconsume.pc nor a static link asks for it.
set(KC_DEP_INCLUDES "")
set(KC_DEP_CFLAGS "")
function(kc_require_headers module debian)
    kc_find_module(${module} ${debian})
    set(KC_DEP_INCLUDES ${KC_DEP_INCLUDES} ${${var}_INCLUDE_DIRS} PARENT_SCOPE)
    # pkg-config's -isystem (krb5-gssapi's /usr/include/mit-krb5) lands in CFLAGS_OTHER
    set(KC_DEP_CFLAGS ${KC_DEP_CFLAGS} ${${var}_CFLAGS_OTHER} PARENT_SCOPE)
endfunction()
# dlopen and dlsym for those (in glibc's libc since 2.34; CMAKE_DL_LIBS names libdl before).
set(KC_DEP_TARGETS ${KC_DEP_TARGETS} ${CMAKE_DL_LIBS})
# SASL OAUTHBEARER's OIDC client: the token endpoint over HTTPS (runtime/oidc.c). The OpenSSL
# flavour, so the endpoint's certificate is checked with the same library and CA files as the
# brokers'.
kc_require_headers(libcurl libcurl4-openssl-dev)
# SASL GSSAPI (Kerberos): MIT krb5's GSS-API library (io/sasl_gssapi.c), and libkrb5, with which
# its private ticket caches are destroyed.
kc_require_headers(krb5-gssapi libkrb5-dev)
kc_require_headers(krb5 libkrb5-dev)

# The CLI only (--metrics-port's HTTP listener, tools/app/metrics_http.c); not the library's.
pkg_check_modules(KCDEP_microhttpd QUIET IMPORTED_TARGET GLOBAL libmicrohttpd)
if(NOT KCDEP_microhttpd_FOUND)
    message(FATAL_ERROR "the kconsume CLI needs libmicrohttpd: install the Debian package "
                        "'libmicrohttpd-dev' (or run tests/testkit/install-deps)")
endif()

if(KC_BUILD_TESTS)
    pkg_check_modules(KCDEP_cmocka QUIET IMPORTED_TARGET GLOBAL cmocka)
    if(NOT KCDEP_cmocka_FOUND)
        message(FATAL_ERROR "the tests need cmocka: install the Debian package 'libcmocka-dev' "
                            "(or configure with -DKC_BUILD_TESTS=OFF)")
    endif()
endif()
