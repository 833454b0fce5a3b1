#!/usr/bin/env python3
"""Writes LINES JSON-like documents of about SIZE bytes each, one per line, for the producer's
--payload-file (perf/run, T2). Fields and words vary per line like an event stream, so the
compression ratio is that of real JSON logs (about 5-10x), not of random bytes (1x) or of one
repeated value (hundreds x). Deterministic (fixed seed): every run compresses alike."""
import json
import random
import sys

lines, size = int(sys.argv[1]), int(sys.argv[2])
rnd = random.Random(42)
words = ("order payment user session click view cart checkout search product category price "
         "shipping address country city device browser mobile desktop campaign referrer status "
         "pending complete failed retry warehouse inventory discount coupon currency").split()
for i in range(lines):
    doc = {
        "id": 10_000_000 + i * 7919 % 1_000_000,
        "ts": f"2026-11-29T{rnd.randrange(24):02d}:{rnd.randrange(60):02d}:"
              f"{rnd.randrange(60):02d}.{rnd.randrange(1000):03d}Z",
        "event": rnd.choice(words),
        "user": {"id": f"u-{rnd.randrange(100000)}", "country": rnd.choice(["DE", "FR", "US", "JP", "BR"]),
                 "device": rnd.choice(["ios", "android", "web"])},
        "amount": round(rnd.uniform(1, 500), 2),
        "tags": rnd.sample(words, 4),
        "items": [],
    }
    while len(json.dumps(doc)) < size - 60:
        doc["items"].append({"sku": f"SKU-{rnd.randrange(5000):05d}", "qty": rnd.randrange(1, 5),
                             "name": " ".join(rnd.sample(words, 3))})
    text = json.dumps(doc, separators=(",", ":"))
    text = (text[:-1] + ',"pad":"' + "x" * max(0, size - len(text) - 9) + '"}')[:size] \
        if len(text) < size else text[:size]
    print(text)
