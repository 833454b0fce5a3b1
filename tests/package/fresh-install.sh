#!/usr/bin/env bash
# `make install` on a fresh Debian system that has only the build tools, and programs built
# against what it installed (make test-fresh-install; needs root and mmdebstrap):
#  - an empty tree of this machine's Debian release (mmdebstrap, minbase) with exactly the
#    packages `tests/testkit/install-deps --list-build` names: no JDK, no Maven, no clang;
#  - the checkout's files copied in (tests/package/copy-tree), and `make install
#    PREFIX=/usr/local` run there (chroot): it must need nothing else and run no package manager;
#  - in the same tree, tests/unit/install.test.sh on /usr/local: a program and every examples/*.c
#    build against the installed library with pkg-config and with CMake and run.
# The tree is kept in OUT (default build/fresh-install) for a look afterwards; the next run
# replaces it.
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=$(realpath -m "${1:-$src/build/fresh-install}")
fail() { echo "FAIL: $*" >&2; exit 1; }
[[ $(id -u) -eq 0 ]] || fail "needs root (a chroot)"
command -v mmdebstrap >/dev/null || fail "mmdebstrap is missing (apt-get install mmdebstrap)"
# shellcheck source=/dev/null
suite=$(. /etc/os-release && echo "$VERSION_CODENAME")
[[ -n $suite ]] || fail "this machine's Debian release is unknown (/etc/os-release)"
pkgs=$("$src/tests/testkit/install-deps" --list-build | paste -sd, -)

root=$out/root
if mountpoint -q "$root/proc" 2>/dev/null; then
    umount "$root/proc" || fail "$root/proc is still mounted"
fi
rm -rf --one-file-system "$out"
mkdir -p "$out"
echo "fresh-install: a $suite tree with $pkgs" >&2
mmdebstrap --variant=minbase --include="$pkgs" "$suite" "$root" >"$out/mmdebstrap.log" 2>&1 ||
    { tail -30 "$out/mmdebstrap.log" >&2; fail "mmdebstrap failed (log: $out/mmdebstrap.log)"; }
for tool in java mvn clang; do
    [[ ! -e $root/usr/bin/$tool ]] || fail "the fresh tree has $tool: it is not build-only"
done

mkdir -p "$root/src"
"$src/tests/package/copy-tree" "$src" "$root/src"
mount -t proc proc "$root/proc"
trap 'umount "$root/proc" 2>/dev/null || true' EXIT
# A clean environment: nothing of this machine's PATH or variables leaks in.
in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root bash -c "$1"; }
in_root 'cd /src && make install PREFIX=/usr/local' >"$out/install.log" 2>&1 ||
    { tail -40 "$out/install.log" >&2; fail "make install failed in the fresh tree (log: $out/install.log)"; }
echo "ok   make install in a fresh $suite tree with only the build packages" >&2
in_root 'ldconfig && KC_INSTALLED_PREFIX=/usr/local KC_SOURCE_DIR=/src bash /src/tests/unit/install.test.sh' ||
    fail "programs do not build against the installed library in the fresh tree"
echo "ok   programs and examples/ build and run against /usr/local in the fresh tree" >&2
