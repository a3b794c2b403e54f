#!/usr/bin/env python3
"""Parity: mlbert's PyRandom against CPython's random.Random, call for call.

Builds a random script of calls (random, getrandbits, randbelow, randint, randrange, shuffle) for
many seeds, including 0, negative, 32-bit boundary and >32-bit seeds, replays it through the
`data_rng_dump` helper and through CPython, and compares every result exactly (floats by repr).
Exit 0 pass, 1 fail (also when the data_rng_dump helper is not built: it is the project's own).
"""
import os
import random
import subprocess
import sys


def main():
    binary_dir = os.environ.get("MLBERT_BINARY_DIR", "")
    helper = os.path.join(binary_dir, "bin", "data_rng_dump")
    if not os.path.exists(helper):  # the project's own binary: its absence is a failure
        print(f"FAILED: {helper} is not built (MLBERT_BINARY_DIR={binary_dir!r})")
        return 1
    script_rng = random.Random(4242)
    seeds = [0, 1, 12345, 42, -7, 2**31 - 1, 2**32 - 1, 2**32, 2**40 + 3, 2**63 - 1, -(2**62)]
    seeds += [script_rng.randrange(0, 2**48) for _ in range(40)]
    commands = []
    expected = []
    for seed in seeds:
        commands.append(f"seed {seed}")
        expected.append("seeded")
        rng = random.Random(seed)
        for _ in range(300):
            kind = script_rng.randrange(7)
            if kind == 0:
                commands.append("random")
                expected.append(repr(rng.random()))
            elif kind == 1:
                k = script_rng.choice([0, 1, 5, 31, 32, 33, 40, 63, 64])
                commands.append(f"getrandbits {k}")
                expected.append(str(rng.getrandbits(k)))
            elif kind == 2:
                n = script_rng.choice([1, 2, 3, 7, 100, 2**31, 2**32 + 5, 30522])
                commands.append(f"randbelow {n}")
                expected.append(str(rng._randbelow(n)))
            elif kind == 3:
                a = script_rng.randrange(-50, 50)
                b = a + script_rng.choice([0, 1, 2, 508, 10**6])
                commands.append(f"randint {a} {b}")
                expected.append(str(rng.randint(a, b)))
            elif kind == 4:
                a = script_rng.randrange(-50, 50)
                b = a + script_rng.choice([1, 2, 9, 512])
                commands.append(f"randrange {a} {b}")
                expected.append(str(rng.randrange(a, b)))
            else:
                n = script_rng.choice([0, 1, 2, 10, 77, 509])
                v = list(range(n))
                rng.shuffle(v)
                commands.append(f"shuffle {n}")
                expected.append(" ".join(map(str, v)))
    out = subprocess.run([helper], input="\n".join(commands) + "\n", capture_output=True,
                         text=True, check=False)
    if out.returncode != 0:
        print("helper failed:", out.stderr)
        return 1
    got = out.stdout.splitlines()
    if len(got) != len(expected):
        print(f"expected {len(expected)} lines, got {len(got)}")
        return 1
    for i, (cmd, e, g) in enumerate(zip(commands, expected, got)):
        if cmd == "random":
            same = float(g) == float(e)
        else:
            same = g == e
        if not same:
            print(f"mismatch at call {i} ({cmd}): CPython {e}, mlbert {g}")
            return 1
    print(f"data_rng_parity: {len(commands)} calls over {len(seeds)} seeds identical "
          f"(Python {sys.version.split()[0]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
