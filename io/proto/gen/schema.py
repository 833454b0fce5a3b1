"""Kafka message-schema model: parses one JSON message definition into structs and fields."""
import re

MAXV = 0x7fff
C_KEYWORDS = {"default", "int", "char", "long", "short", "struct", "union", "static", "register",
              "switch", "case", "for", "while", "do", "if", "else", "return", "const", "auto",
              "unsigned", "signed", "float", "double", "void", "enum", "extern", "goto", "break",
              "continue", "sizeof", "typedef", "volatile", "inline", "bool"}


def snake(name):
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", s)
    s = s.lower()
    return s + "_" if s in C_KEYWORDS else s


def parse_range(s):
    """'0+' -> (0, MAXV); '1-3' -> (1, 3); '5' -> (5, 5); 'none'/None -> None."""
    if s is None or s == "none":
        return None
    if s.endswith("+"):
        return (int(s[:-1]), MAXV)
    if "-" in s:
        a, b = s.split("-")
        return (int(a), int(b))
    return (int(s), int(s))


def intersect(a, b):
    if a is None or b is None:
        return None
    lo, hi = max(a[0], b[0]), min(a[1], b[1])
    return (lo, hi) if lo <= hi else None


PRIMS = {"bool", "int8", "int16", "uint16", "int32", "uint32", "int64", "float64", "uuid",
         "string", "bytes", "records"}


class Struct:
    def __init__(self, name, fields, versions):
        self.name = name          # schema name, e.g. "PartitionData"
        self.fields = fields
        self.versions = versions  # (lo, hi) in which this struct can appear


class Field:
    pass


class Message:
    pass


def load_message(js):
    m = Message()
    m.name = js["name"]
    m.kind = js["type"]  # request | response | header | data
    m.api_key = js.get("apiKey")
    m.versions = parse_range(js["validVersions"])
    m.flex = parse_range(js.get("flexibleVersions", "none"))
    m.unstable_latest = bool(js.get("latestVersionUnstable", False))
    m.structs = []  # in dependency order: children before parents
    common = {c["name"]: c for c in js.get("commonStructs", [])}
    done = {}

    def struct_of(name, fields_js, versions):
        if name in done:
            return done[name]
        st = Struct(name, None, versions)
        done[name] = st
        st.fields = [field_of(f, versions) for f in fields_js]
        m.structs.append(st)
        return st

    def field_of(fj, outer):
        f = Field()
        f.name = fj["name"]
        f.cname = snake(f.name)
        f.type = fj["type"]
        f.versions = intersect(parse_range(fj["versions"]), outer)
        f.nullable = intersect(parse_range(fj.get("nullableVersions")), f.versions)
        f.tagged = intersect(parse_range(fj.get("taggedVersions")), f.versions)
        f.tag = fj.get("tag")
        f.flex_override = "flexibleVersions" in fj and fj["flexibleVersions"] == "none"
        f.default = fj.get("default")
        f.array = f.type.startswith("[]")
        f.elem = f.type[2:] if f.array else f.type
        f.struct = None
        if f.elem not in PRIMS:
            fv = f.versions if f.versions else outer
            if "fields" in fj:
                f.struct = struct_of(f.elem, fj["fields"], fv)
            elif f.elem in common:
                f.struct = struct_of(f.elem, common[f.elem]["fields"], m.versions)
            else:
                raise SystemExit("%s: unknown type %s" % (m.name, f.type))
        return f

    m.root = struct_of(m.name, js["fields"], m.versions)
    return m
