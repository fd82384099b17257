#!/usr/bin/env python3
"""Writes a .ab program with many functions, for measuring compile time (docs/performance.md).

  gen_calls.py chain N   f0 -> f1 -> ... -> f(N-1): each calls the next once; no recursion
  gen_calls.py ring N    f0 -> f1 -> ... -> f(N-1) -> f0: one mutually recursive cycle; each
                         call lowers n, so a lane recurses n deep before it returns

The text equals tests/support/program_gen.cpp's call_chain_program / call_ring_program, which the
tests use. Run it with e.g. `autobatch run chain.ab --input n=range:0:20 --backend vulkan`.
"""
import sys


def function(i, n, ring):
    nxt = f"f{i + 1}" if i + 1 < n else ("f0" if ring else None)
    if nxt is None:
        return f"fn f{i}(n: int) -> int {{\n    return n * 3 + {i};\n}}\n"
    guard = "    if n <= 0 { return " + str(i) + "; }\n" if ring else ""
    arg = "n - 1" if ring else f"n + {i % 7}"
    return (f"fn f{i}(n: int) -> int {{\n{guard}"
            f"    let r = {nxt}({arg});\n"
            f"    return r * 3 + {i};\n}}\n")


def program(kind, n):
    ring = kind == "ring"
    text = f"// {kind} of {n} functions, written by scripts/gen_calls.py\n"
    for i in range(n):
        text += function(i, n, ring)
    return text + "fn main(n: int) -> int {\n    return f0(n);\n}\n"


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("chain", "ring") or int(sys.argv[2]) < 1:
        sys.exit("usage: gen_calls.py chain|ring N")
    sys.stdout.write(program(sys.argv[1], int(sys.argv[2])))
