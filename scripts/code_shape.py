#!/usr/bin/env python3
"""The codebase's shape in numbers: lines per folder, long files, long functions, big classes,
the files that spell `OpCode::` and includes that reach upward. Issue 41's targets are read from
here (docs/architecture.md, "Keeping the shape"); `--check` exits 1 when one is missed.

Usage: scripts/code_shape.py [--check] [--top N]   (from the repository root; needs ctags)
"""
import argparse
import collections
import json
import pathlib
import re
import subprocess
import sys

SOURCE_DIRS = ["lang", "ir", "passes", "cpu", "trace", "core", "codegen", "engine", "sampler",
               "tools", "bench", "debugger", "include", "shaders", "python", "samples", "fuzz"]
SUFFIXES = {".cpp", ".h", ".glsl", ".comp", ".in"}
GENERATED = re.compile(r"(^|/)(third_party|build)/")
LONG_FILE, LONG_FUNCTION, BIG_CLASS, OPCODE_FILES = 1000, 100, 60, 10


def sources(root):
    for top in SOURCE_DIRS:
        for path in sorted((root / top).rglob("*")):
            rel = path.relative_to(root).as_posix()
            if path.is_file() and path.suffix in SUFFIXES and not GENERATED.search(rel):
                yield rel


def ctags(paths):
    out = subprocess.run(["ctags", "--output-format=json", "--fields=+neKZ", "-f", "-",
                          "--languages=C++", "--map-C++=+.h"] + paths,
                         capture_output=True, text=True, check=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--top", type=int, default=15, help="rows per list")
    args = parser.parse_args()
    root = pathlib.Path(".")
    files = list(sources(root))
    lines = {f: sum(1 for _ in open(f, errors="replace")) for f in files}

    per_folder = collections.Counter()
    for f, n in lines.items():
        per_folder["/".join(f.split("/")[:2]) if "/" in f[len(f.split("/")[0]) + 1:] else f.split("/")[0]] += n
    print(f"{len(files)} files, {sum(lines.values())} lines (tests not counted)")
    for folder, n in sorted(per_folder.items()):
        print(f"  {folder:28} {n:6}")

    long_files = sorted(((n, f) for f, n in lines.items() if n > LONG_FILE), reverse=True)
    print(f"files over {LONG_FILE} lines: {len(long_files)}")
    for n, f in long_files:
        print(f"  {n:6} {f}")

    opcode = sorted(f for f in files if "OpCode::" in open(f, errors="replace").read())
    print(f"files spelling OpCode:: {len(opcode)}")
    for f in opcode:
        print(f"  {f}")

    cpp = [f for f in files if f.endswith((".cpp", ".h"))]
    tags = ctags(cpp)
    functions = sorted(((t["end"] - t["line"] + 1, t["path"], t.get("scope", ""), t["name"])
                        for t in tags if t.get("kind") == "function" and "end" in t),
                       reverse=True)
    long_functions = [x for x in functions if x[0] > LONG_FUNCTION]
    print(f"functions over {LONG_FUNCTION} lines: {len(long_functions)}")
    for n, path, scope, name in long_functions[: args.top]:
        print(f"  {n:5} {path}: {scope + '::' if scope else ''}{name}")

    members = collections.Counter()
    for t in tags:
        if t.get("kind") in ("member", "function", "prototype") and t.get("scopeKind") in ("class", "struct"):
            members[t["scope"]] += 1
    big = [(n, c) for c, n in members.most_common() if n > BIG_CLASS]
    print(f"classes over {BIG_CLASS} members: {len(big)}")
    for n, c in big[: args.top]:
        print(f"  {n:5} {c}")

    layer = {name: i for i, name in enumerate(
        ["include", "shaders", "ir", "passes", "lang", "cpu", "core", "trace", "codegen",
         "engine", "sampler", "bench", "debugger", "tools"])}
    upward = []
    for f in cpp:
        top = f.split("/")[0]
        for inc in re.findall(r'#include "([a-z_]+)/', open(f, errors="replace").read()):
            if inc in layer and top in layer and layer[inc] > layer[top] and inc != "autobatch":
                upward.append(f"{f} -> {inc}/")
    print(f"upward includes: {len(upward)}")
    for u in upward[: args.top]:
        print(f"  {u}")

    missed = (len(long_files) > 0) + (len(opcode) > OPCODE_FILES) + (len(long_functions) > 0) + (len(upward) > 0)
    if args.check and missed:
        print(f"{missed} target(s) missed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
