#!/usr/bin/env python3
"""The marginal instruction cost of one call, herta vs a bare semaphore.

`profile_call`'s totals (BENCHMARKS.md) divide everything the process did by
the number of calls: the runtimes' setup and teardown are spread over the
calls, in both workloads, and hide part of the difference between them. Here
each workload runs under callgrind twice, with N and with 2N calls, and the
marginal cost of a call is

    (instructions(2N) - instructions(N)) / N

which removes everything done once (process start, runtime builds, binding,
teardown). Instruction counts are exact, so the figures do not depend on the
machine's load; they move by a few instructions per call between builds
that the compiler inlined differently.

    cargo build --release -p herta --example profile_call --example profile_keyed
    python3 benches/marginal.py                 # N = 100 000
    cargo build --release -p herta --example profile_breaker
    python3 benches/marginal.py --only breaker --calls 20000
    python3 benches/marginal.py --calls 50000 --bin-dir target/notrace/release/examples

Python 3 standard library and valgrind only. Prints a Markdown table: per
workload, the totals for N and 2N calls, the marginal instructions per call,
the amortized figure (total / N, what `profile_call` reports) and the ratio of
herta's marginal cost to the semaphore's.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

# (label, binary, arguments before the number of calls)
WORKLOADS = [
    ("semaphore", "profile_call", ["semaphore"]),
    ("herta", "profile_call", ["herta"]),
    ("herta, keyed (8 keys, Wait)", "profile_keyed", []),
    # The circuit breaker's paths (BENCHMARKS.md, "Circuit breakers"):
    # `--only breaker`.
    ("breaker: none", "profile_breaker", ["plain"]),
    ("breaker: closed, time window", "profile_breaker", ["closed"]),
    ("breaker: closed, count window", "profile_breaker", ["count"]),
    ("breaker: open, refused", "profile_breaker", ["open"]),
    ("breaker: none, Reject refused", "profile_breaker", ["reject"]),
]


def instructions(binary: Path, args: list, calls: int) -> int:
    """The total instructions of one run under callgrind."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        run = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
             str(binary), *args, str(calls)],
            capture_output=True, text=True, check=False,
        )
        if run.returncode != 0:
            sys.exit(f"{binary} failed ({run.returncode}):\n{run.stderr}")
        found = re.search(r"^(?:summary|totals):\s*(\d+)", out.read_text(), re.M)
        if not found:
            sys.exit(f"no totals in callgrind's output for {binary}")
        return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=100_000, help="N (default 100 000)")
    parser.add_argument("--bin-dir", default="target/release/examples",
                        help="where the profile examples are (default target/release/examples)")
    parser.add_argument("--only", default="",
                        help="run only the workloads whose label contains this")
    opts = parser.parse_args()
    n = opts.calls
    rows = []
    for label, name, args in WORKLOADS:
        if opts.only not in label:
            continue
        binary = Path(opts.bin_dir) / name
        if not os.access(binary, os.X_OK):
            print(f"skipped {label}: no {binary} (build it first)", file=sys.stderr)
            continue
        once, twice = instructions(binary, args, n), instructions(binary, args, 2 * n)
        rows.append((label, once, twice, (twice - once) / n, once / n))
    marginal = {label: m for label, _, _, m, _ in rows}
    floor = marginal.get("semaphore")
    print(f"| workload | instructions, {n} calls | {2 * n} calls "
          "| marginal per call | amortized per call | ÷ semaphore (marginal) |")
    print("|---|---|---|---|---|---|")
    for label, once, twice, m, amortized in rows:
        ratio = f"{m / floor:.3f}×" if floor else "—"
        print(f"| {label} | {once} | {twice} | {m:.1f} | {amortized:.1f} | {ratio} |")


if __name__ == "__main__":
    main()
