#!/usr/bin/env python3
"""Checks stats JSON lines (one object per line, argv[1]) against the stats' public contract (the
README's Stats table): every contracted name present with the right JSON type. Exit 0 when all
lines pass; prints what failed.

--member-id-prefix-hex HEX: also require a line whose group member_id, decoded, starts with the
bytes HEX spells (a client.id with quotes, backslashes or control characters cannot travel through
a shell as it is)."""
import argparse
import json
import sys

TOP = {"ts_ms": int, "brokers": list, "partitions": list, "group": dict, "workers": list,
       "connections": dict, "telemetry": dict}
CONNECTIONS = {"idle_closes": int}
TELEMETRY = {"state": str, "stopped": str, "client_instance_id": str, "subscription_id": int,
             "push_interval_ms": int, "requested_metrics": int, "compression": int,
             "subscription_requests": int, "pushes": int, "push_errors": int,
             "pushes_skipped": int, "last_push_bytes": int, "last_push_metrics": int}
TELEMETRY_STATES = {"off", "asking", "subscribed", "pushing", "stopped"}
BROKER = {"id": int, "state": str, "fetch_requests": int, "fetch_request_bytes": int,
          "fetch_partitions_sent": int, "fetch_forgotten_sent": int, "fetch_session_id": int,
          "fetch_session_epoch": int, "fetch_request_bytes_min": int, "fetch_request_bytes_max": int,
          "fetch_request_bytes_last": int, "fetch_request_parts_last": int, "connects": int,
          "reauths": int, "io_backend": str}
PART = {"topic": str, "partition": int, "position": int, "committed": int,
        "high_watermark": int, "lag": int, "buffered_bytes": int, "worker": int}
GROUP = {"protocol": str, "state": str, "member_id": str, "epoch": int, "assignment": list,
         "rebalances": int}
WORKER = {"id": int, "callbacks": int, "records": int, "busy_ns": int}
# A broker's state is its data connection's (engine/brokers.c kc_engine_conn_state_name).
BROKER_STATES = {"idle", "connecting", "tls", "apiversions", "auth", "up", "backoff", "down",
                 "failed"}


def check(obj, spec, where):
    for k, t in spec.items():
        if k not in obj:
            raise ValueError(f"{where}: missing {k!r}")
        if not isinstance(obj[k], t) or (t is int and isinstance(obj[k], bool)):
            raise ValueError(f"{where}.{k}: {type(obj[k]).__name__}, want {t.__name__}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("path")
    ap.add_argument("--member-id-prefix-hex")
    args = ap.parse_args()
    prefix = bytes.fromhex(args.member_id_prefix_hex).decode() if args.member_id_prefix_hex else None
    matched = 0
    lines = [ln for ln in open(args.path, encoding="utf-8") if ln.strip()]
    if not lines:
        print("no stats lines")
        return 1
    for i, ln in enumerate(lines):
        o = json.loads(ln)
        check(o, TOP, f"line {i}")
        for b in o["brokers"]:
            check(b, BROKER, f"line {i} broker")
            if b["state"] not in BROKER_STATES:
                raise ValueError(f"line {i} broker {b['id']}: state {b['state']!r}")
        for p in o["partitions"]:
            check(p, PART, f"line {i} partition")
        check(o["group"], GROUP, f"line {i} group")
        check(o["connections"], CONNECTIONS, f"line {i} connections")
        check(o["telemetry"], TELEMETRY, f"line {i} telemetry")
        if o["telemetry"]["state"] not in TELEMETRY_STATES:
            raise ValueError(f"line {i} telemetry: state {o['telemetry']['state']!r}")
        for a in o["group"]["assignment"]:
            if not (isinstance(a, list) and len(a) == 2 and isinstance(a[0], str)
                    and isinstance(a[1], int)):
                raise ValueError(f"line {i}: assignment entry {a!r}")
        for w in o["workers"]:
            check(w, WORKER, f"line {i} worker")
        if prefix is not None and o["group"]["member_id"].startswith(prefix):
            matched += 1
    if prefix is not None:
        if not matched:
            print(f"no member_id starts with {prefix!r}")
            return 1
        print(f"{matched} objects carry a member_id starting with {prefix!r}")
    print(f"{len(lines)} stats objects match the contract")
    return 0


if __name__ == "__main__":
    sys.exit(main())
