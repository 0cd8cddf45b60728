#!/usr/bin/env python3
"""Lists source files over a line limit and function bodies over a length limit.

    python3 scripts/long_functions.py [--file-limit 1000] [--function-limit 150] [PATH...]

Functions are found by brace matching on the text with comments, strings and character
literals blanked: a `{` whose enclosing scopes are all namespaces, classes or structs and
whose preceding declaration has a parameter list opens a function body (lambdas and local
classes count toward the function that holds them). docs/ARCHITECTURE.md names every function
this lists and why it is long; exit status 1 when a file is over the file limit.
"""
import argparse
import pathlib
import re
import sys


def blank(text):
    """Comments, string and character literals replaced by spaces (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith('R"', i):
            m = re.match(r'R"([^(]*)\(', text[i:])
            end = text.find(")" + m.group(1) + '"', i) if m else -1
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(" " * (min(j, n - 1) + 1 - i))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(path):
    text = blank(path.read_text(errors="replace"))
    stack = []  # (kind, start line, name)
    decl_start, decl = None, ""
    line = 1
    for c in text:
        if c == "\n":
            line += 1
        if c == "{":
            head = decl.strip()
            outer_ok = all(k in ("namespace", "class") for k, _, _ in stack)
            if re.search(r"\b(namespace)\b", head) and "(" not in head:
                kind = "namespace"
            elif re.search(r"\b(class|struct|union|enum)\b", head) and "(" not in head:
                kind = "class"
            elif outer_ok and "(" in head and ")" in head and not head.endswith("="):
                kind = "function"
            else:
                kind = "block"
            name = ""
            if kind == "function":
                m = re.search(r"([~\w:<>]+)\s*\(", head)
                name = m.group(1) if m else head[:40]
            stack.append((kind, decl_start or line, name))
            decl_start, decl = None, ""
        elif c == "}":
            if stack:
                kind, start, name = stack.pop()
                if kind == "function":
                    yield name, start, line
            decl_start, decl = None, ""
        elif c == ";":
            decl_start, decl = None, ""
        else:
            if decl_start is None and not c.isspace():
                decl_start = line
            decl += c


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--file-limit", type=int, default=1000)
    ap.add_argument("--function-limit", type=int, default=150)
    ap.add_argument("paths", nargs="*", default=["src", "include"])
    args = ap.parse_args()
    root = pathlib.Path(__file__).resolve().parent.parent
    files = []
    for p in args.paths:
        p = (root / p) if not pathlib.Path(p).is_absolute() else pathlib.Path(p)
        files += sorted(p.rglob("*.[ch]pp")) if p.is_dir() else [p]
    over = 0
    for f in files:
        lines = f.read_text(errors="replace").count("\n")
        if lines > args.file_limit:
            print(f"file {f.relative_to(root)}: {lines} lines (limit {args.file_limit})")
            over += 1
    for f in files:
        for name, start, end in functions(f):
            if end - start + 1 > args.function_limit:
                print(f"function {f.relative_to(root)}:{start} {name}: {end - start + 1} lines")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
