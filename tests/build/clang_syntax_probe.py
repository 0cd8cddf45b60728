#!/usr/bin/env python3
"""scripts/clang_syntax.py catches what clang 14 rejects and g++ accepts: a lambda capturing a
structured binding (what broke the fuzz build once, in src/esm/arrays.cpp). Run by ctest as
clang_syntax_probe; skipped (exit 77) without clang++."""
import json, os, shutil, subprocess, sys, tempfile

script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "clang_syntax.py")
if shutil.which("clang++") is None:
    print("clang++ not found")
    sys.exit(77)
with tempfile.TemporaryDirectory() as d:
    os.makedirs(os.path.join(d, "src"))
    sources = {
        "bad.cpp": "#include <utility>\nint f() { auto [a, b] = std::pair<int, int>{1, 2};\n"
                   "  return [&] { return a + b; }(); }\n",
        "good.cpp": "#include <utility>\nint g() { auto [a, b] = std::pair<int, int>{1, 2};\n"
                    "  return [a = a, b = b] { return a + b; }(); }\n",
    }
    entries = []
    for name, text in sources.items():
        path = os.path.join(d, "src", name)
        open(path, "w").write(text)
        entries.append({"directory": d, "file": path, "command": f"/usr/bin/c++ -std=c++20 -O2 -c {path} -o {name}.o"})
    json.dump(entries, open(os.path.join(d, "compile_commands.json"), "w"))
    clang_version = subprocess.run(["clang++", "--version"], capture_output=True, text=True).stdout
    r = subprocess.run([sys.executable, script, d, "--jobs", "2"], capture_output=True, text=True)
    print(r.stdout, r.stderr)
    if "version 14" not in clang_version and r.returncode == 0:
        print("this clang accepts the capture (C++20 allows it from clang 16): nothing to catch")
        sys.exit(77)
    ok = r.returncode == 1 and "bad.cpp does not compile with clang" in r.stderr and "good.cpp" not in r.stderr
    ok = ok and "1 of 2 source files parse" in r.stdout
    sys.exit(0 if ok else 1)
