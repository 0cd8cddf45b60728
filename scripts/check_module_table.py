#!/usr/bin/env python3
"""Checks docs/ARCHITECTURE.md's module table against the code: every public header a module
includes (`#include "esi/<other>/..."` under src/<module>/) must belong to a module its row names
under "may depend on", and every src/ folder must have a row. Exit 1 with the offending includes.

    python3 scripts/check_module_table.py [REPO_ROOT]
"""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent.parent)
text = (root / "docs" / "ARCHITECTURE.md").read_text()
section = text.split("## Modules", 1)[1].split("\n## ", 1)[0]
allowed = {}
for line in section.splitlines():
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if len(cells) != 4 or cells[0] in ("module", "") or set(cells[0]) <= set("-"):
        continue
    deps = re.sub(r"\([^)]*\)", "", cells[3])  # "(NetCDF-C)" names a package, not a module
    allowed[cells[0]] = {d.strip() for d in deps.split(",") if d.strip() and d.strip() != "none"}

problems = []
modules = sorted(p.name for p in (root / "src").iterdir() if p.is_dir())
for m in modules:
    if m not in allowed:
        problems.append(f"src/{m}/ has no row in the module table")
        continue
    for f in sorted((root / "src" / m).rglob("*.[ch]pp")):
        for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
            inc = re.match(r'\s*#\s*include\s+"esi/([a-z_]+)/', line)
            if inc and inc.group(1) != m and inc.group(1) not in allowed[m]:
                problems.append(f"{f.relative_to(root)}:{n}: {m} includes esi/{inc.group(1)}/ "
                                f"but its row allows only: {', '.join(sorted(allowed[m])) or 'none'}")
for m in allowed:
    if m not in modules:
        problems.append(f"the module table names '{m}', which has no folder under src/")
print("\n".join(problems) if problems else
      f"module table: {len(modules)} modules, every include within its row's dependencies")
sys.exit(1 if problems else 0)
