#!/usr/bin/env python3
"""Generates kconsume's Kafka message codec (io/proto/*.gen.[ch]) from Kafka's own schemas.

The schemas are the common/message/*.json files inside the kafka-clients jar of the schema
release (`tests/testkit/fetch-kafka --schemas` prints the folder holding it; pinned apart from the
brokers the suites run); they are read straight from the jar and never committed. The share-group
APIs (KIP-932) are read from the share-group release's jar instead (`fetch-kafka --share`): they
became production-ready after the schema release, which lacks their newer versions. Extra schemas written in the same format (layouts Kafka defines only in
Java code) live in io/proto/gen/extra/. Output is deterministic: same jar, same bytes.

Usage: python3 io/proto/gen/generate.py [--out DIR] [--libs LIBS]
  (no arguments: what `make codegen` runs; writes into this checkout)
  --out DIR    write the same files under DIR instead (DIR/io/proto/..., DIR/tests/unit/...),
               so a check can compare them with the committed ones (tests/unit/codegen.test.sh)
  --libs LIBS  the folder holding the kafka-clients jar, instead of asking fetch-kafka --schemas
  --share-libs LIBS  the same for the share-group release (default: fetch-kafka --share)
"""
import argparse
import json
import os
import re
import subprocess
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, HERE)

import kafka_errors  # noqa: E402
from emit_c import emit_message_files, emit_apis, emit_fill  # noqa: E402
from schema import load_message  # noqa: E402

# (file stem, schema base name). Both Request and Response of each are generated.
APIS = [
    ("api_versions", "ApiVersions"), ("metadata", "Metadata"),
    ("find_coordinator", "FindCoordinator"), ("fetch", "Fetch"), ("list_offsets", "ListOffsets"),
    ("offset_for_leader_epoch", "OffsetForLeaderEpoch"), ("offset_commit", "OffsetCommit"),
    ("offset_fetch", "OffsetFetch"), ("join_group", "JoinGroup"), ("sync_group", "SyncGroup"),
    ("heartbeat", "Heartbeat"), ("leave_group", "LeaveGroup"),
    ("consumer_group_heartbeat", "ConsumerGroupHeartbeat"),
    ("consumer_group_describe", "ConsumerGroupDescribe"), ("describe_groups", "DescribeGroups"),
    ("list_groups", "ListGroups"), ("sasl_handshake", "SaslHandshake"),
    ("sasl_authenticate", "SaslAuthenticate"), ("describe_configs", "DescribeConfigs"),
    ("get_telemetry_subscriptions", "GetTelemetrySubscriptions"), ("push_telemetry", "PushTelemetry"),
]
# From the share-group release's jar (module docstring).
SHARE_APIS = [
    ("share_group_heartbeat", "ShareGroupHeartbeat"), ("share_group_describe", "ShareGroupDescribe"),
    ("share_fetch", "ShareFetch"), ("share_acknowledge", "ShareAcknowledge"),
]
# Single-message files: headers and the versioned consumer-protocol payloads.
SINGLES = [
    ("request_header", ["RequestHeader"]), ("response_header", ["ResponseHeader"]),
    ("consumer_protocol", ["ConsumerProtocolSubscription", "ConsumerProtocolAssignment"]),
    ("sticky_assignor_user_data", ["extra/StickyAssignorUserData"]),
]


def strip_comments(text):
    # Kafka's schemas use whole-line and trailing // comments; no string holds "//" except URLs
    # in "about" text, so only strip // outside string literals.
    out = []
    for line in text.splitlines():
        in_str = False
        esc = False
        cut = len(line)
        for i, ch in enumerate(line):
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = not in_str
            elif not in_str and line.startswith("//", i):
                cut = i
                break
        out.append(line[:cut])
    return "\n".join(out)


def clients_jar(libs):
    """The kafka-clients jar in `libs` and its version."""
    jars = sorted(f for f in os.listdir(libs) if re.match(r"kafka-clients-.*\.jar$", f))
    if not jars:
        sys.exit("generate.py: no kafka-clients jar in " + libs)
    return os.path.join(libs, jars[-1]), jars[-1][len("kafka-clients-"):-len(".jar")]


def main():
    ap = argparse.ArgumentParser(description="Generates io/proto/*.gen.[ch] from Kafka's schemas")
    ap.add_argument("--out", default=ROOT, help="root to write under (default: this checkout)")
    ap.add_argument("--libs", help="folder holding the kafka-clients jar (default: fetch-kafka --schemas)")
    ap.add_argument("--share-libs",
                    help="the same for the share-group release (default: fetch-kafka --share)")
    args = ap.parse_args()
    fetch = os.path.join(ROOT, "tests", "testkit", "fetch-kafka")
    libs = args.libs or subprocess.run([fetch, "--schemas"], check=True, capture_output=True,
                                       text=True).stdout.strip()
    share_libs = args.share_libs or subprocess.run([fetch, "--share"], check=True,
                                                   capture_output=True, text=True).stdout.strip()
    proto = os.path.join(args.out, "io", "proto")
    fill = os.path.join(args.out, "tests", "unit", "proto_fill.gen.inc")
    os.makedirs(proto, exist_ok=True)
    os.makedirs(os.path.dirname(fill), exist_ok=True)
    jar, version = clients_jar(libs)
    share_jar, share_version = clients_jar(share_libs)
    with zipfile.ZipFile(jar) as z, zipfile.ZipFile(share_jar) as zs:
        def read(name, jar=z):
            if name.startswith("extra/"):
                with open(os.path.join(HERE, name + ".json")) as f:
                    return json.loads(strip_comments(f.read()))
            return json.loads(strip_comments(jar.read("common/message/%s.json" % name).decode()))

        source = "kafka-clients-%s.jar" % version
        apis = []
        for stem, base in APIS:
            req = load_message(read(base + "Request"))
            resp = load_message(read(base + "Response"))
            emit_message_files(proto, stem, [req, resp], source)
            apis.append((stem, req, resp))
        for stem, base in SHARE_APIS:
            req = load_message(read(base + "Request", zs))
            resp = load_message(read(base + "Response", zs))
            emit_message_files(proto, stem, [req, resp], "kafka-clients-%s.jar" % share_version)
            apis.append((stem, req, resp))
        singles = []
        for stem, names in SINGLES:
            msgs = [load_message(read(n)) for n in names]
            emit_message_files(proto, stem, msgs, source)
            singles.append((stem, msgs))
        emit_apis(proto, apis, source)
        emit_fill(fill, apis, singles, source)
    kafka_errors.generate(libs, proto, HERE)


if __name__ == "__main__":
    main()
