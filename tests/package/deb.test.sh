#!/usr/bin/env bash
# The Debian packages make package built (tests/package/build) install into a clean tree and
# work there:
#  - each package holds its part: libkconsume0 the shared library under its SONAME,
#    libkconsume-dev the header, the .so link, the static library, kconsume.pc and the CMake
#    package, kconsume the CLI and its manual page;
#  - unpacked together (dpkg -x) into an empty directory, a program and every examples/*.c
#    build against them with pkg-config and with CMake and run (tests/unit/install.test.sh on
#    that tree), and the CLI runs.
# Usage: deb.test.sh [DIR] (default build/package, where tests/package/build left the .debs).
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dir=$(realpath "${1:-$src/build/package}")
fail() { echo "FAIL: $*" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/kc-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT

deb() { ls "$dir"/"$1"_*.deb 2>/dev/null | head -1 || true; }
lib=$(deb libkconsume0) dev=$(deb libkconsume-dev) cli=$(deb kconsume)
[[ -n $lib && -n $dev && -n $cli ]] || fail "$dir lacks libkconsume0, libkconsume-dev or kconsume .deb"
files() { dpkg-deb -c "$1" | awk '{ print $6 }' | sed 's|^\./|/|' | grep -v '/$' | grep -v '^/usr/share/doc/'; }
expect() { # PACKAGE-DEB PATTERN...: every pattern matches one of its files, and every file one pattern
    local d=$1 f p ok
    shift
    local list
    list=$(files "$d")
    for p in "$@"; do grep -qE "^$p\$" <<<"$list" || fail "$(basename "$d") has no $p"; done
    while read -r f; do
        ok=0
        for p in "$@"; do [[ $f =~ ^$p$ ]] && ok=1; done
        ((ok)) || fail "$(basename "$d") holds $f, which belongs elsewhere"
    done <<<"$list"
}
ma='/usr/lib/[a-z0-9_]+-linux-gnu[a-z0-9_]*'
expect "$lib" "$ma/libkconsume\.so\.0" "$ma/libkconsume\.so\.0\.[0-9]+\.[0-9]+"
expect "$dev" '/usr/include/kconsume\.h' "$ma/libkconsume\.so" "$ma/libkconsume\.a" \
    "$ma/pkgconfig/kconsume\.pc" "$ma/cmake/kconsume/kconsume[A-Za-z-]*\.cmake"
expect "$cli" '/usr/bin/kconsume' '/usr/share/man/man1/kconsume\.1\.gz'
dpkg-deb -f "$dev" Depends | grep -q 'libkconsume0 (= ' || fail "libkconsume-dev does not depend on its libkconsume0"
dpkg-deb -f "$lib" Depends | grep -q 'liburing' || fail "libkconsume0's Depends lacks liburing (shlibs)"
# libcurl and krb5 are loaded on use (io/base/dynlib.h), so shlibs no longer names them
dpkg-deb -f "$lib" Recommends | grep -q 'libgssapi-krb5-2' || fail "libkconsume0 does not recommend libgssapi-krb5-2"
dpkg-deb -f "$lib" Recommends | grep -q 'libcurl4' || fail "libkconsume0 does not recommend libcurl4"
echo "ok   each package holds its files; the -dev package depends on its library"

root=$work/root
mkdir -p "$root"
for d in "$lib" "$dev" "$cli"; do dpkg -x "$d" "$root"; done
out=$("$root/usr/bin/kconsume" --version) || fail "the packaged CLI does not run"
want=$(sed -n 's/^project(kconsume VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
[[ $out == "kconsume $want" ]] || fail "the packaged CLI says '$out', not kconsume $want"
echo "ok   the packaged CLI runs: $out"
KC_INSTALLED_PREFIX=$root/usr KC_SOURCE_DIR=$src bash "$src/tests/unit/install.test.sh" ||
    fail "programs do not build against the unpacked packages"
echo "ok   programs and examples/ build and run against the unpacked packages"
