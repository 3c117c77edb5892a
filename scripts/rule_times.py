"""Per-job wall and CPU time of a finished run, from Snakemake's `benchmark:` files.

    python scripts/rule_times.py results [--top 25]

Prints the jobs by wall time (longest first), the sums, and the time per rule (a rule's jobs summed).
Compare runs only on the same machine; give the machine (CPU model and its measured matmul peak, or GPU)
with every figure.
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections import defaultdict
from pathlib import Path


def read_benchmarks(results: Path) -> list[tuple[str, float, float]]:
    """(job, wall s, CPU s) of every benchmark file under results/benchmarks (the last repeat of each)."""
    root = results / "benchmarks"
    if not root.is_dir():
        raise SystemExit(f"rule_times: {root} not found; give the results directory of a finished run")
    jobs = []
    for path in sorted(root.rglob("*.tsv")):
        with open(path, newline="", encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh, delimiter="\t"))
        if not rows or "s" not in rows[-1] or "cpu_time" not in rows[-1]:
            raise SystemExit(f"rule_times: {path} is not a Snakemake benchmark file (columns s, cpu_time)")
        jobs.append((str(path.relative_to(root).with_suffix("")), float(rows[-1]["s"]), float(rows[-1]["cpu_time"])))
    return jobs


def by_rule(jobs) -> dict[str, tuple[int, float, float]]:
    """{group: (jobs, wall s, CPU s)} with a job's group = the first folder of its benchmark path."""
    out = defaultdict(lambda: [0, 0.0, 0.0])
    for name, wall, cpu in jobs:
        group = out[name.split("/")[0]]
        group[0] += 1
        group[1] += wall
        group[2] += cpu
    return {k: tuple(v) for k, v in out.items()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args(argv)
    jobs = sorted(read_benchmarks(args.results), key=lambda j: -j[1])
    print(f"{'wall s':>8} {'CPU s':>8}  job")
    for name, wall, cpu in jobs[: args.top]:
        print(f"{wall:8.1f} {cpu:8.1f}  {name}")
    print(f"{len(jobs)} jobs: wall {sum(j[1] for j in jobs):.0f} s summed, CPU {sum(j[2] for j in jobs):.0f} s summed")
    print(f"\n{'jobs':>5} {'wall s':>8} {'CPU s':>8}  group")
    for group, (n, wall, cpu) in sorted(by_rule(jobs).items(), key=lambda kv: -kv[1][2]):
        print(f"{n:5d} {wall:8.1f} {cpu:8.1f}  {group}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
