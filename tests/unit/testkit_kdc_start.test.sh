#!/usr/bin/env bash
# The testkit's KDC start-up (tests/testkit/cluster-kerberos.sh, krb_up) waits for a krb5kdc that
# is slow to get going. On a loaded machine the background child can still be bash or setsid,
# not yet krb5kdc, when krb_up first looks at it; krb_up must keep waiting then, not report that
# krb5kdc exited. Here a krb5kdc on PATH sleeps before it execs the real one, so the first looks
# always see the child before its exec. The real krb5kdc then serves the realm: kinit with the
# client keytab gets a ticket.
set -euo pipefail
src=${KC_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
real=$(PATH=$PATH:/usr/sbin:/sbin command -v krb5kdc) || {
    echo "SKIP: no krb5kdc (tests/testkit/install-deps installs krb5-kdc)"
    exit 77
}
tmp=$(mktemp -d)
trap 'krb_down >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT

mkdir -p "$tmp/bin"
cat >"$tmp/bin/krb5kdc" <<EOF
#!/usr/bin/env bash
sleep 1
exec $real "\$@"
EOF
chmod +x "$tmp/bin/krb5kdc"
export PATH=$tmp/bin:$PATH:/usr/sbin:/sbin

# What cluster-kerberos.sh takes from `cluster` (its definitions, reduced to what krb_up and
# krb_down use).
prog=testkit_kdc_start
dir=$tmp/cluster
mkdir -p "$dir"
listeners=gssapi
die() { echo "$prog: $*" >&2; exit 1; }
note() { echo "$prog: $*" >&2; }
has_listener() { [[ ,$listeners, == *,$1,* ]]; }
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
stop_pids() { kill "$@" 2>/dev/null || true; for _ in $(seq 50); do kill -0 "$@" 2>/dev/null || return 0; sleep 0.1; done; kill -9 "$@" 2>/dev/null || true; }
# A port base whose KDC port (base + 31) is free.
for _ in $(seq 20); do
    port_base=$((30000 + RANDOM % 20000))
    port_open $((port_base + 31)) || break
done
# shellcheck source=../testkit/cluster-kerberos.sh
source "$src/tests/testkit/cluster-kerberos.sh"

t0=$SECONDS
krb_up
((SECONDS - t0 >= 1)) || { echo "FAIL: the delayed krb5kdc was not the one started" >&2; exit 1; }
[[ -n $(krb_pid) ]] || { echo "FAIL: krb5kdc listens but krb_pid does not recognise it" >&2; exit 1; }
kinit -c "FILE:$tmp/ccache" -k -t "$(krb_dir)/client.keytab" "kconsume-client@$krb_realm" ||
    { echo "FAIL: kinit against the KDC" >&2; cat "$(krb_dir)/kdc.log" >&2; exit 1; }
krb_down
[[ -z $(krb_pid) ]] || { echo "FAIL: krb5kdc still runs after krb_down" >&2; exit 1; }
echo "ok: krb_up waited $((SECONDS - t0)) s for a krb5kdc slow to exec; kinit got a ticket"
