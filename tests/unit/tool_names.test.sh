#!/usr/bin/env bash
# Tests call the testkit's tools by their short names (`cluster tool ConfigCommand ...`), which
# the testkit resolves to the class the cluster's Kafka version holds (tests/testkit/cluster,
# tool_class): a class name written out holds for the versions its author ran and breaks on the
# others (kafka.admin.ConfigCommand is gone from 4.4, org.apache.kafka.tools.ConfigCommand is not
# in 3.9). This fails on any test that passes the testkit one of those tools' classes.
set -euo pipefail
src=${KC_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
cluster=$src/tests/testkit/cluster
# Every candidate class of every tool the testkit resolves (the tool_candidates table).
classes=$(sed -n '/^tool_candidates() {/,/^}/p' "$cluster" | grep -oE '(org\.apache\.kafka|kafka)\.[A-Za-z0-9_.]+' | sort -u)
[[ -n $classes ]] || { echo "FAIL: no tool classes read from $cluster" >&2; exit 1; }
bad=0
for cls in $classes; do
    if hits=$(grep -rnF "tool $cls " "$src/tests" --include='*.c' --include='*.h' --include='*.sh' \
        --exclude='tool_names.test.sh'); then
        echo "FAIL: call the testkit tool by its short name, not $cls:" >&2
        echo "$hits" >&2
        bad=1
    fi
done
((bad == 0)) || exit 1
echo "tool_names: $(wc -w <<<"$classes") tool classes, none written out in tests/"
