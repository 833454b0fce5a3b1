#!/usr/bin/env bash
# Assignor equivalence: kconsume's range, roundrobin, sticky and cooperative-sticky assignors
# must give exactly what Java's (kafka-clients, the jar tests/testkit/fetch-kafka provides) give
# for the same members, subscriptions, ownership, generations and racks.
#
# AssignorDriver.java (compiled here against the Kafka jars) generates the cases from a fixed
# seed -- random groups plus chains of successive rebalances fed with Java's own previous output
# -- and the hand-written edge cases in assignor-edge-cases.txt are added. Both drivers print
# every assignor's result per case in one canonical form; every block must be identical.
#   KC_ASSIGN_SEED / KC_ASSIGN_CASES / KC_ASSIGN_CHAINS override the defaults.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=${KC_SOURCE_DIR:-$(cd "$here/../.." && pwd)}
build=${KC_BUILD_DIR:?KC_BUILD_DIR must point at the CMake build tree (ctest sets it)}
cdriver="$build/tests/interop/assign_driver"
[[ -x "$cdriver" ]] || { echo "assignors: $cdriver not built" >&2; exit 1; }
command -v javac >/dev/null || { echo "assignors: javac not found (tests/testkit/install-deps)" >&2; exit 1; }
jars=$("$src/tests/testkit/fetch-kafka")

work=$(mktemp -d "${TMPDIR:-/tmp}/kc-assign.XXXXXX")
trap 'rm -rf "$work"' EXIT
javac -J-Xmx256m -nowarn -cp "$jars/*" -d "$work" "$here/AssignorDriver.java"
java_run() { java -Xmx384m -cp "$jars/*:$work" AssignorDriver "$@" >"$work/java.log" 2>&1; }

seed=${KC_ASSIGN_SEED:-20261129}
java_run gen "$seed" "${KC_ASSIGN_CASES:-700}" "${KC_ASSIGN_CHAINS:-60}" "$work/cases.txt"
cat "$here/assignor-edge-cases.txt" >>"$work/cases.txt"

java_run run "$work/cases.txt" "$work/java.out"
"$cdriver" "$work/cases.txt" >"$work/c.out"

# Compare block by block ("case <id> <assignor>" and its lines) and count per assignor.
awk '
    FNR == 1 { f++ }
    /^case / { key = $2 " " $3; name[key] = $3; blk[f, key] = ""; if (f == 1) order[++n] = key; next }
    { blk[f, key] = blk[f, key] $0 "\n" }
    END {
        bad = 0
        for (i = 1; i <= n; i++) {
            k = order[i]; a = name[k]; total[a]++
            if (blk[1, k] == "ERROR\n") errs[a]++
            if (!((2, k) in blk) || blk[1, k] != blk[2, k]) {
                mism[a]++; bad++
                if (shown++ < 5) printf "MISMATCH %s\n--- java\n%s--- kconsume\n%s", k, blk[1, k], blk[2, k]
            }
        }
        for (a in total)
            printf "assignors: %-18s %5d cases, %d mismatches (%d where Java throws)\n", a, total[a], mism[a] + 0, errs[a] + 0
        if (n < 4 * 500) { print "assignors: too few cases generated"; exit 1 }
        exit bad > 0
    }' "$work/java.out" "$work/c.out"
