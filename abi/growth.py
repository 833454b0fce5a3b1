#!/usr/bin/env python3
"""abi/growth.py BASE NEW OUT [LIST]: the growth rule of size-versioned structs, applied to two ABI dumps.

A public struct whose first member is `size` (kc_callbacks_t) is read by the library only up to
the size the caller passes, and one that only kconsume allocates and the application only reads
through a pointer (the names in abi/growable, e.g. kc_event_t) keeps every earlier member where an
older program reads it: members added at the end of either are a compatible change, although
abidiff sees a changed struct size. This writes NEW to OUT with each such struct cut back to BASE's
members, provided BASE's members are NEW's first ones at the same offsets under the same names;
abidiff of BASE against OUT then reports only the other changes (a reordered, removed or retyped
member of a growable struct is left in place, so abidiff still reports it). Prints one line per
struct that grew. Exit 0; 2 on unreadable input.
"""
import os
import sys
import xml.etree.ElementTree as ET


def members(cls):
    out = []
    for dm in cls.findall("data-member"):
        var = dm.find("var-decl")
        out.append((dm.get("layout-offset-in-bits"), var.get("name") if var is not None else None))
    return out


def library_allocated(path):
    """Struct names from LIST, by default abi/growable (one per line, # comments)."""
    path = path or os.path.join(os.path.dirname(os.path.abspath(__file__)), "growable")
    names = set()
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                line = line.split("#", 1)[0].strip()
                if line:
                    names.add(line)
    return names


def growable(cls, listed):
    m = members(cls)
    return bool(m) and (m[0] == ("0", "size") or cls.get("name") in listed)


def main(argv):
    if len(argv) not in (4, 5):
        print("usage: abi/growth.py BASE NEW OUT [LIST]", file=sys.stderr)
        return 2
    try:
        base = ET.parse(argv[1])
        new = ET.parse(argv[2])
    except (OSError, ET.ParseError) as exc:
        print(f"abi/growth.py: {exc}", file=sys.stderr)
        return 2
    listed = library_allocated(argv[4] if len(argv) == 5 else None)
    base_cls = {}
    for cls in base.iter("class-decl"):
        if cls.get("name") and cls.find("data-member") is not None:
            base_cls.setdefault(cls.get("name"), cls)
    for cls in new.iter("class-decl"):
        old = base_cls.get(cls.get("name"))
        if old is None or not growable(cls, listed) or not growable(old, listed):
            continue
        om, nm = members(old), members(cls)
        if len(nm) <= len(om) or nm[: len(om)] != om:
            continue
        added = [name for _, name in nm[len(om):]]
        for dm in cls.findall("data-member")[len(om):]:
            cls.remove(dm)
        cls.set("size-in-bits", old.get("size-in-bits"))
        print(f"grown at the end: {cls.get('name')} (+{', '.join(added)})")
    new.write(argv[3], encoding="unicode")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
