#!/usr/bin/env python3
"""Checks Doxygen's XML for the public header (docs/api/Doxyfile, GENERATE_XML): every KC_API
function of the header and every kc_ typedef and enum has its documentation, and Doxygen warned
about nothing. (Struct members are not checked: a comment above several of them documents the
first only.) Usage: check.py HEADER XML_DIR WARNINGS_LOG. Prints one line per
problem and exits 1 when there is any."""
import re
import sys
import xml.etree.ElementTree as ET


def text(node):
    return "".join(node.itertext()).strip() if node is not None else ""


def documented(member):
    return bool(text(member.find("briefdescription")) or text(member.find("detaileddescription")))


def main(header, xml_dir, warnings):
    src = open(header, encoding="utf-8").read()
    functions = set(re.findall(r"^KC_API\s[^;(]*?\b(kc_\w+)\s*\(", src, re.M))
    problems = []
    if not functions:
        problems.append(f"{header}: no KC_API function found")
    tree = ET.parse(f"{xml_dir}/kconsume_8h.xml")
    seen = {}
    for m in tree.iter("memberdef"):
        seen.setdefault(m.get("kind"), {})[text(m.find("name"))] = m
    for name in sorted(functions):
        m = seen.get("function", {}).get(name)
        if m is None:
            problems.append(f"{name}: not in the API reference")
        elif not documented(m):
            problems.append(f"{name}: in the API reference without a description")
    for kind in ("typedef", "enum"):
        for name, m in seen.get(kind, {}).items():
            if name.startswith("kc_") and not documented(m):
                problems.append(f"{kind} {name}: without a description")
    log = open(warnings, encoding="utf-8", errors="replace").read().strip()
    if log:
        problems.append("Doxygen warned:\n" + log)
    for p in problems:
        print(p)
    print(f"{len(functions)} functions checked, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
