#!/usr/bin/env bash
# `cmake --install` of a build tree puts everything a program needs under a prefix, and a
# program builds and runs against it the two ways users add a library:
#  - pkg-config (kconsume.pc, found through PKG_CONFIG_PATH): compile, link the shared library,
#    run (LD_LIBRARY_PATH), and link the static one with the modules kconsume.pc requires;
#  - CMake (find_package(kconsume CONFIG), through CMAKE_PREFIX_PATH): one program on
#    kconsume::kconsume, one on kconsume::kconsume_static.
# The program is a small one written here (kc_version, a consumer created and closed) and
# every examples/*.c, compiled and linked. Only installed files are used: the include
# path is the prefix's, never the source tree's. Needs KC_BUILD_DIR (its library is what is
# installed; a sanitized build's programs are compiled with the same sanitizer flags), or
# KC_INSTALLED_PREFIX: a tree installed already, checked as it is (tests/package/deb.test.sh
# passes the Debian packages unpacked, whose library directory is multiarch).
set -euo pipefail
src=${KC_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
fail() { echo "FAIL: $*" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/kc-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
if [[ -n ${KC_INSTALLED_PREFIX:-} ]]; then
    prefix=$KC_INSTALLED_PREFIX
    build=""
else
    build=${KC_BUILD_DIR:?KC_BUILD_DIR or KC_INSTALLED_PREFIX is required}
    prefix=$work/prefix
    cmake --install "$build" --prefix "$prefix" >"$work/install.log" 2>&1 ||
        { cat "$work/install.log" >&2; fail "cmake --install failed"; }
fi
libdir=$(find "$prefix" -name libkconsume.so -printf '%h\n' | head -1)
[[ -n $libdir ]] || fail "no libkconsume.so under $prefix"
for f in include/kconsume.h bin/kconsume; do [[ -f $prefix/$f ]] || fail "$f not installed"; done
for f in libkconsume.so libkconsume.a pkgconfig/kconsume.pc cmake/kconsume/kconsumeConfig.cmake \
         cmake/kconsume/kconsumeConfigVersion.cmake cmake/kconsume/kconsumeTargets.cmake; do
    [[ -e $libdir/$f ]] || fail "$libdir/$f not installed"
done
soname=$(objdump -p "$libdir/libkconsume.so" | awk '$1 == "SONAME" {print $2}')
[[ -e $libdir/$soname ]] || fail "the SONAME link $soname is not installed"
echo "installed: $(cd "$prefix" && find . -type f -o -type l | sort | tr '\n' ' ')"

san=$([[ -n $build ]] && sed -n 's/^KC_SANITIZE:[A-Z]*=//p' "$build/CMakeCache.txt" || true)
case $san in
    address) sflags="-fsanitize=address,undefined" ;;
    thread) sflags="-fsanitize=thread" ;;
    *) sflags="" ;;
esac

cat >"$work/app.c" <<'C'
#include <stdio.h>
#include <string.h>

#include <kconsume.h>

int main(void)
{
    kc_conf_t *conf = kc_conf_new();
    kc_error_t err;
    if (kc_conf_set(conf, "bootstrap.servers", "127.0.0.1:1", &err) != KC_OK)
        return 2;
    kc_callbacks_t cbs = {.size = sizeof cbs};
    kc_consumer_t *c;
    if (kc_consumer_new(conf, &cbs, &c, &err) != KC_OK) {
        fprintf(stderr, "kc_consumer_new: %s\n", err.msg);
        return 3;
    }
    if (kc_close(c, 2000, &err) != KC_OK)
        return 4;
    kc_destroy(c);
    printf("kconsume %s\n", kc_version());
    return 0;
}
C

# pkg-config, shared and static.
export PKG_CONFIG_PATH=$libdir/pkgconfig
cflags=$(pkg-config --cflags kconsume)
[[ $cflags == *"$prefix"* ]] || fail "pkg-config --cflags does not point into the prefix: $cflags"
# shellcheck disable=SC2086
cc -std=c11 -Wall -Werror $sflags $cflags "$work/app.c" -o "$work/app_pc" $(pkg-config --libs kconsume) ||
    fail "building against the installed library with pkg-config failed"
out=$(LD_LIBRARY_PATH=$libdir "$work/app_pc") || fail "the pkg-config program failed: $out"
[[ $out == "kconsume "* ]] || fail "unexpected output: $out"
deps=$(LD_LIBRARY_PATH=$libdir ldd "$work/app_pc") # whole, then matched: grep -q could end ldd early (pipefail)
[[ $deps == *"$libdir/$soname"* ]] || fail "app_pc did not load the installed $soname"
# shellcheck disable=SC2086
# The archive with its dependencies as shared libraries (what kconsume::kconsume_static does):
# the modules kconsume.pc requires privately, linked the usual way. (`pkg-config --static`
# would ask for every dependency's own static dependencies too.)
private=$(pkg-config --print-requires-private kconsume | awk '{print $1}' | tr '\n' ' ')
[[ -n $private ]] || fail "kconsume.pc has no Requires.private"
cc -std=c11 -Wall -Werror $sflags $cflags "$work/app.c" -o "$work/app_pc_static" \
    "$libdir/libkconsume.a" $(pkg-config --libs $private) -lpthread -lm -ldl ||
    fail "building against the installed static library with kconsume.pc's modules failed"
"$work/app_pc_static" >/dev/null || fail "the statically linked program failed"
n_ex=0
for ex in "$src"/examples/*.c; do
    name=$(basename "$ex" .c)
    # shellcheck disable=SC2086
    cc -std=c11 -Wall -Werror $sflags $cflags -c "$ex" -o "$work/$name.o" ||
        fail "examples/$name.c does not compile against the installed header"
    # shellcheck disable=SC2086
    cc $sflags "$work/$name.o" -o "$work/$name" $(pkg-config --libs kconsume) -lpthread ||
        fail "examples/$name.c does not link against the installed library"
    n_ex=$((n_ex + 1))
done
((n_ex > 0)) || fail "no examples/*.c"
echo "pkg-config: shared and static programs built and ran; $n_ex examples built"

# CMake.
mkdir -p "$work/proj"
cat >"$work/proj/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.20)
project(uses_kconsume C)
find_package(kconsume 0 CONFIG REQUIRED)
add_executable(app_shared app.c)
target_link_libraries(app_shared PRIVATE kconsume::kconsume)
add_executable(app_static app.c)
target_link_libraries(app_static PRIVATE kconsume::kconsume_static)
CM
cp "$work/app.c" "$work/proj/app.c"
cmake -S "$work/proj" -B "$work/proj/build" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_C_FLAGS="$sflags" -DCMAKE_EXE_LINKER_FLAGS="$sflags" >"$work/cmake.log" 2>&1 ||
    { cat "$work/cmake.log" >&2; fail "find_package(kconsume CONFIG) failed"; }
cmake --build "$work/proj/build" >"$work/build.log" 2>&1 ||
    { cat "$work/build.log" >&2; fail "building against kconsume::kconsume(_static) failed"; }
grep -rq -- "-I$src\|$src/include" "$work/proj/build/CMakeFiles" &&
    fail "the CMake package points into the source tree"
LD_LIBRARY_PATH=$libdir "$work/proj/build/app_shared" >/dev/null || fail "app_shared failed"
"$work/proj/build/app_static" >/dev/null || fail "app_static failed"
echo "cmake: kconsume::kconsume and kconsume::kconsume_static programs built and ran"
