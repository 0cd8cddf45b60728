#!/usr/bin/env python3
"""A clang syntax-only pass over the sources a build compiles (its compile_commands.json).

The main build uses g++; the fuzz build (scripts/fuzz.sh) uses clang 14, which rejects some
C++20 that g++ accepts (lambdas capturing structured bindings). This pass catches that in the
everyday test command at a fraction of a clang build's cost: no code generation, no linking.

    python3 scripts/clang_syntax.py BUILD_DIR [--jobs N]

Exits 0 when every file parses (or clang++ is absent: says so), 1 with clang's messages when
one does not. A first pass takes about a minute on two cores (nlohmann/json is parsed once, as
a clang precompiled header); later passes recheck only the files whose own text or project
headers or flags changed (BUILD_DIR/clang_syntax/stamps.json).
"""
import hashlib, json, os, shlex, shutil, subprocess, sys
from concurrent.futures import ThreadPoolExecutor

JSON_HEADER = "/usr/include/nlohmann/json.hpp"


def digest(paths):
    h = hashlib.sha1()
    for p in sorted(paths):
        try:
            with open(p, "rb") as f:
                h.update(p.encode() + b"\0" + f.read())
        except OSError:
            h.update(p.encode() + b"\0missing")
    return h.hexdigest()


def project_deps(depfile, source):
    """The non-system files a depfile lists (system headers change only with packages)."""
    try:
        text = open(depfile).read().replace("\\\n", " ")
    except OSError:
        return [source]
    deps = text.split(":", 1)[1].split() if ":" in text else []
    return [d for d in deps if not d.startswith("/usr/")] or [source]


def clang_command(entry, clang, pch, depfile):
    args = shlex.split(entry["command"]) if "command" in entry else list(entry["arguments"])
    out, skip = [clang, "-fsyntax-only", "-MD", "-MF", depfile], False
    if pch:
        out += ["-include-pch", pch]
    for i, a in enumerate(args[1:], 1):
        if skip:
            skip = False
            continue
        if a in ("-o", "-include") and i + 1 < len(args) and (a == "-o" or "cmake_pch" in args[i + 1]):
            skip = True  # the object file; g++'s precompiled header
            continue
        if a in ("-c", "-Winvalid-pch") or a.startswith("-g") or a.startswith("-O"):
            continue
        out.append(a)
    return out


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    build = sys.argv[1]
    jobs = int(sys.argv[sys.argv.index("--jobs") + 1]) if "--jobs" in sys.argv else os.cpu_count() or 1
    clang = shutil.which("clang++")
    if clang is None:
        print("clang_syntax: clang++ not found; the clang syntax pass is skipped")
        return 0
    with open(os.path.join(build, "compile_commands.json")) as f:
        entries = [e for e in json.load(f) if "/src/" in e["file"]]
    work = os.path.join(os.path.abspath(build), "clang_syntax")
    os.makedirs(work, exist_ok=True)
    stamps_path = os.path.join(work, "stamps.json")
    try:
        stamps = json.load(open(stamps_path))
    except (OSError, ValueError):
        stamps = {}
    # nlohmann/json as a precompiled header, with the standard and defines every file uses.
    pch = os.path.join(work, "json.pch")
    if not os.path.exists(pch) or os.path.getmtime(pch) < os.path.getmtime(JSON_HEADER):
        r = subprocess.run([clang, "-std=c++20", "-DNDEBUG", "-x", "c++-header", JSON_HEADER, "-o", pch],
                           capture_output=True, text=True)
        if r.returncode != 0:
            pch = None

    def check(entry):
        source = entry["file"]
        key = source
        command = " ".join(clang_command(entry, clang, pch, "-"))
        old = stamps.get(key)
        if old and old.get("command") == command and digest(old["deps"]) == old["digest"]:
            return source, 0, "", old, True
        depfile = os.path.join(work, hashlib.sha1(source.encode()).hexdigest() + ".d")
        r = subprocess.run(clang_command(entry, clang, pch, depfile), cwd=entry["directory"],
                           capture_output=True, text=True)
        if r.returncode != 0 and pch and "PCH" in r.stderr:  # a PCH clang would not take
            r = subprocess.run(clang_command(entry, clang, None, depfile), cwd=entry["directory"],
                               capture_output=True, text=True)
        deps = project_deps(depfile, source)
        return source, r.returncode, r.stderr, {"command": command, "deps": deps, "digest": digest(deps)}, False

    failed = checked = 0
    fresh = {}
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for path, code, err, stamp, cached in pool.map(check, entries):
            checked += 0 if cached else 1
            if code != 0:
                failed += 1
                print(f"clang_syntax: {path} does not compile with clang:\n{err}", file=sys.stderr)
            else:
                fresh[path] = stamp
    with open(stamps_path, "w") as f:
        json.dump(fresh, f)
    print(f"clang_syntax: {len(entries) - failed} of {len(entries)} source files parse with {clang} "
          f"({checked} checked now, the others unchanged since they last did)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
