#!/usr/bin/env python3
"""Checks one kconsume metrics text (argv[1], kc_metrics or the CLI's --metrics-port) with the
Prometheus reference parser (prometheus_client.parser): it must parse whole, carry the families
the README's Metrics section names, every sample's client_id label must be exactly the client.id
(--client-id-hex: its bytes in hex, since quotes, backslashes and newlines cannot cross a shell),
and with --records N the workers' records add up to N and no partition lags (everything was
consumed); --share: a share group's member, whose share sessions and partitions' share counters
must be there too, labelled by broker and by partition. Exit 0 when all hold; prints what
failed."""
import argparse
import sys

from prometheus_client.parser import text_string_to_metric_families

FAMILIES = {
    "kconsume_consumer_buffered_bytes": "gauge",
    "kconsume_broker_fetch_requests": "counter",
    "kconsume_broker_info": "gauge",
    "kconsume_partition_lag": "gauge",
    "kconsume_partition_position": "gauge",
    "kconsume_group_rebalances": "counter",
    "kconsume_group_info": "gauge",
    "kconsume_worker_records": "counter",
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("path")
    ap.add_argument("--client-id-hex", required=True)
    ap.add_argument("--records", type=int)
    ap.add_argument("--share", action="store_true")
    args = ap.parse_args()
    if args.share:
        FAMILIES.update({"kconsume_share_accepted": "gauge",
                         "kconsume_share_session_requests": "gauge",
                         "kconsume_share_session_held": "gauge",
                         "kconsume_partition_share_accepted": "gauge",
                         "kconsume_partition_share_held": "gauge"})
    client_id = bytes.fromhex(args.client_id_hex).decode()
    text = open(args.path, encoding="utf-8").read()
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    for name, typ in FAMILIES.items():
        if name not in fams:
            print(f"missing family {name}; have {sorted(fams)}")
            return 1
        if fams[name].type != typ:
            print(f"{name}: type {fams[name].type}, want {typ}")
            return 1
    n = 0
    for f in fams.values():
        for s in f.samples:
            n += 1
            if s.labels.get("client_id") != client_id:
                print(f"{s.name}: client_id {s.labels.get('client_id')!r}, want {client_id!r}")
                return 1
    if args.share:
        for name, label in (("kconsume_share_session_requests", "broker"),
                            ("kconsume_partition_share_accepted", "partition")):
            if not fams[name].samples or any(label not in s.labels for s in fams[name].samples):
                print(f"{name}: samples {fams[name].samples}, each wants a {label} label")
                return 1
    lags = {(s.labels["topic"], s.labels["partition"]): s.value
            for s in fams["kconsume_partition_lag"].samples}
    if not lags:
        print("no partition lag samples")
        return 1
    if args.records is not None:
        recs = sum(s.value for s in fams["kconsume_worker_records"].samples)
        if recs != args.records:
            print(f"workers' records add up to {recs}, want {args.records}")
            return 1
        if any(v != 0 for v in lags.values()):
            print(f"lag after consuming everything: {lags}")
            return 1
    print(f"{len(fams)} families, {n} samples parse; lag {lags}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
