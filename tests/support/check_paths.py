#!/usr/bin/env python3
"""Every repository path that a Markdown file or a C comment names exists.

    tests/support/check_paths.py [SOURCE_DIR]      (default: the checkout holding this file)

Exit 0 when every named path exists; else exit 1 and print each missing one as
`file:line: path`. A reference that names a moved or deleted file misleads every reader after
the move, and nothing else notices it.

What counts as a path (chosen for few false positives):
- a token with a slash whose first component is a folder or file this checkout has, either at
  the top (`io/base/buf.h`, `tests/`) or next to the naming file or one of the folders above it,
  or under a layer root the sources include from (`base/log.h` from engine/ means io/base/log.h);
  prose such as "and/or" or a jar's `common/message/` has no such first component and is skipped;
- a bare file name with a source or document extension (`conf_keys.h`, `LATEST.md`): it must be
  the name of some file of the checkout;
- `*`, `?`, `[ch]`, `{a,b}` and `<placeholder>` are wildcards: at least one file must match;
  a last component without an extension names a module or a program (`engine/session` for
  session.[ch], `tests/support/g848_member`): some `name.*` must exist.
Not references to this checkout: URLs, absolute paths, `~/...`, `$VAR/...`, names inside C
string literals, system headers (`<stdio.h>`, or a bare `stdlib.h` that /usr/include has), a
struct member that reads like a file (`kc_app.c` next to `kc_app.a`), and a pair of layers
(`runtime/engine`). Build outputs (ALLOW below) are named without existing in a fresh checkout.
"""
import fnmatch
import os
import re
import sys

# Prefixes of paths that only exist after a build or a run: named in docs, never committed
# (perf/kc_consume and perf/alloc_count.so are named relative to the build folder).
ALLOW = ("build/", "build-", "perf/results/raw/", "Testing/", "perf/kc_consume",
         "perf/alloc_count.so")
# Where the sources' quoted includes are resolved from (CMake's include directories).
LAYER_ROOTS = ("include", "io", "engine", "runtime", "tools", "tests/support", "tests/testkit")
EXTENSIONS = ("md", "c", "h", "py", "sh", "java", "json", "inc", "cmake", "txt", "xml", "in",
              "supp", "png")
SKIP_DIRS = {".git", "build", "Testing", "__pycache__"}
TOP_DIRS = set()  # the checkout's top-level folders, filled by main()

TOKEN = re.compile(r"(?:\{[^{}\s]*\}|[A-Za-z0-9_.+<>\[\]*?$~/-])+")
URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://\S+")
STRING = re.compile(r'"(?:\\.|[^"\\\n])*"')
SYSTEM_INCLUDE = re.compile(r"<[A-Za-z0-9_./+-]+\.h>")


def repo_files(root):
    files, names = set(), set()
    for d, subdirs, fs in os.walk(root):
        rel = os.path.relpath(d, root)
        subdirs[:] = [s for s in subdirs if s not in SKIP_DIRS and not s.startswith("build-")]
        for f in fs:
            p = f if rel == "." else os.path.join(rel, f)
            files.add(p)
            names.add(f)
    return files, names


def c_comments(text):
    """(line, comment text) for each /* */ and // comment, string literals blanked first."""
    out = []
    i, n, line = 0, len(text), 1
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif c == '"' or c == "'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j
            for k, part in enumerate(text[i + 2:j].split("\n")):
                out.append((line + k, part))
            line += text.count("\n", i, j)
            i = j + 2
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append((line, text[i + 2:j]))
            i = j
        else:
            i += 1
    return out


def expand_braces(p):
    m = re.search(r"\{([^{}]*)\}", p)
    if not m:
        return [p]
    out = []
    for alt in m.group(1).split(","):
        out += expand_braces(p[:m.start()] + alt + p[m.end():])
    return out


def exists(path, files, dirs):
    """path relative to the root: a file, a folder (with or without the trailing slash), or a
    wildcard pattern matching at least one of them."""
    for p in expand_braces(path):
        p = re.sub(r"<[^<>/]*>", "*", p).rstrip("/")
        if not p:
            continue
        if re.search(r"[*?\[]", p):
            if any(fnmatch.fnmatchcase(f, p) for f in files) or \
               any(fnmatch.fnmatchcase(d, p) for d in dirs):
                return True
        elif p in files or p in dirs:
            return True
        elif "." not in os.path.basename(p) and \
                any(fnmatch.fnmatchcase(f, glob_escape(p) + ".*") for f in files):
            return True
    return False


def glob_escape(p):
    return re.sub(r"([*?\[])", r"[\1]", p)


def clean(tok):
    tok = tok.strip("`'\"(),;:!")
    # Brackets around the token are punctuation; a `[ch]` class at its end is a wildcard.
    tok = tok.lstrip("[")
    while tok.endswith("]") and tok.count("[") < tok.count("]"):
        tok = tok[:-1]
    while tok and tok[-1] in ".,;:":
        tok = tok[:-1]
    return tok


def bases_for(src):
    """Folders a path named in `src` may be relative to: the file's folder and those above it,
    then, for a C file, the layer roots."""
    out, d = [], os.path.dirname(src)
    while True:
        out.append(d)
        if not d:
            break
        d = os.path.dirname(d)
    if not src.endswith(".md"):
        out += [r for r in LAYER_ROOTS if r not in out]
    return out


def check_token(tok, src, line, files, names, dirs):
    """None when fine or not a reference, else the missing path."""
    if not tok or tok.startswith(("/", "~", "$", "-", ".", "<", "*")) or "$" in tok:
        return None
    if "/" not in tok:
        m = re.fullmatch(r"([A-Za-z0-9_+-][A-Za-z0-9_.+-]*)\.(%s)" % "|".join(EXTENSIONS), tok)
        if not m or tok in names:
            return None
        if m.group(2) == "h" and os.path.exists(os.path.join("/usr/include", tok)):
            return None
        if re.search(r"(?<![\w.])%s\.(?!%s\b)\w" % (re.escape(m.group(1)), m.group(2)), line):
            return None  # kc_app.a, kc_app.c: members of a struct, not files
        return tok
    if tok.startswith(ALLOW):
        return None
    parts = [x for x in tok.split("/") if x]
    if all(x in TOP_DIRS for x in parts) and len(parts) > 1 and tok.rstrip("/") not in dirs:
        return None  # "runtime/engine": the layers, not a path
    first = re.split(r"[/*?\[{<]", tok, maxsplit=1)[0]
    if not first or not re.fullmatch(r"[A-Za-z0-9_.+-]+", first):
        return None
    bases = [b for b in bases_for(src) if os.path.join(b, first).lstrip("/") in dirs
             or os.path.join(b, first) in files]
    if not bases:
        return None  # not a path of this checkout ("and/or", a jar's folder, a URL's tail)
    for b in bases:
        if exists(os.path.join(b, tok) if b else tok, files, dirs):
            return None
    return tok


def scan_text(src, lines, files, names, dirs, missing):
    for line, text in lines:
        text = URL.sub(" ", text)
        text = SYSTEM_INCLUDE.sub(" ", text)
        for m in TOKEN.finditer(text):
            tok = clean(m.group(0))
            bad = check_token(tok, src, text, files, names, dirs)
            if bad:
                missing.append("%s:%d: %s" % (src, line, bad))


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), "..", ".."))
    files, names = repo_files(root)
    dirs = set()
    for f in files:
        d = os.path.dirname(f)
        while d:
            dirs.add(d)
            d = os.path.dirname(d)
    TOP_DIRS.update(d for d in dirs if "/" not in d)
    missing = []
    for src in sorted(files):
        if src.endswith(".md"):
            with open(os.path.join(root, src), errors="replace") as fh:
                body = fh.read()
            # Markdown links name their target in (...): keep it, drop the scheme-less anchors.
            body = re.sub(r"\]\(([^)#\s]*)(#[^)]*)?\)", r"] \1 ", body)
            scan_text(src, enumerate(body.split("\n"), 1), files, names, dirs, missing)
        elif src.endswith((".c", ".h", ".inc")):
            with open(os.path.join(root, src), errors="replace") as fh:
                body = fh.read()
            scan_text(src, c_comments(body), files, names, dirs, missing)
    if missing:
        print("check_paths: %d named path(s) do not exist in %s:" % (len(missing), root))
        for m in missing:
            print("  " + m)
        return 1
    print("check_paths: every path named by the Markdown files and C comments exists")
    return 0


if __name__ == "__main__":
    sys.exit(main())
