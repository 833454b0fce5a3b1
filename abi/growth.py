#!/usr/bin/env python3
"""abi/growth.py BASE NEW OUT: the growth rule of size-versioned structs, applied to two ABI dumps.

A public struct whose first member is `size` (kc_callbacks_t) is read by the library only up to
the size the caller passes, so members added at its end are a compatible change, although abidiff
sees a changed struct size. This writes NEW to OUT with each such struct cut back to BASE's
members, provided BASE's members are NEW's first ones at the same offsets under the same names;
abidiff of BASE against OUT then reports only the other changes (a reordered, removed or retyped
member of a growable struct is left in place, so abidiff still reports it). Prints one line per
struct that grew. Exit 0; 2 on unreadable input.
"""
import sys
import xml.etree.ElementTree as ET


def members(cls):
    out = []
    for dm in cls.findall("data-member"):
        var = dm.find("var-decl")
        out.append((dm.get("layout-offset-in-bits"), var.get("name") if var is not None else None))
    return out


def growable(cls):
    m = members(cls)
    return bool(m) and m[0] == ("0", "size")


def main(argv):
    if len(argv) != 4:
        print("usage: abi/growth.py BASE NEW OUT", file=sys.stderr)
        return 2
    try:
        base = ET.parse(argv[1])
        new = ET.parse(argv[2])
    except (OSError, ET.ParseError) as exc:
        print(f"abi/growth.py: {exc}", file=sys.stderr)
        return 2
    base_cls = {}
    for cls in base.iter("class-decl"):
        if cls.get("name") and cls.find("data-member") is not None:
            base_cls.setdefault(cls.get("name"), cls)
    for cls in new.iter("class-decl"):
        old = base_cls.get(cls.get("name"))
        if old is None or not growable(cls) or not growable(old):
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
