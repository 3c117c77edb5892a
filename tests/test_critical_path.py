"""scripts/critical_path.py: the longest chain of dependent jobs and the core use of a run, from its log."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def block(when: str, rule: str, jobid: int, inputs: list[str], outputs: list[str], threads: int) -> str:
    return (
        f"[Thu Nov 26 {when} 2026]\nlocalrule {rule}:\n    input: {', '.join(inputs)}\n"
        f"    output: {', '.join(outputs)}\n    log: results/logs/{rule}.log\n    jobid: {jobid}\n"
        f"    threads: {threads}\n    resources: tmpdir=/tmp\nShell command: python -m locus {rule}\n"
        "Select jobs to execute...\n"
    )


def finished(when: str, jobid: int, rule: str) -> str:
    return f"[Thu Nov 26 {when} 2026]\nFinished jobid: {jobid} (Rule: {rule})\n"


# data (10 s) -> short (20 s, 1 thread) and long (100 s, 1 thread); report reads both (5 s, 2 threads)
LOG = (
    "Building DAG of jobs...\n"
    + block("10:00:00", "data", 1, ["raw.csv"], ["d.parquet"], 2)
    + finished("10:00:10", 1, "data")
    + block("10:00:10", "short", 2, ["d.parquet"], ["s.out"], 1)
    + block("10:00:10", "long", 3, ["d.parquet"], ["l.out", "l2.out"], 1)
    + finished("10:00:30", 2, "short")
    + finished("10:01:50", 3, "long")
    + block("10:01:50", "report", 4, ["s.out", "l2.out"], ["r.pdf"], 2)
    + finished("10:01:55", 4, "report")
)


def run(*args):
    return subprocess.run(
        [sys.executable, str(REPO / "scripts" / "critical_path.py"), *map(str, args)], capture_output=True, text=True
    )


def test_critical_path_follows_the_longest_chain_and_counts_busy_threads(tmp_path):
    log = tmp_path / "run.snakemake.log"
    log.write_text(LOG)
    out = run(log, "--cores", 2)
    assert out.returncode == 0, out.stderr
    assert "4 jobs, wall 115 s" in out.stdout
    assert "critical path 115 s (3 jobs)" in out.stdout  # data 10 + long 100 + report 5, not via short
    chain = [line.split()[2] for line in out.stdout.splitlines() if line.startswith("  ")]
    assert chain == ["data", "long", "report"]
    assert "cores bound: 150 thread-s / 2 cores = 75 s" in out.stdout  # 2*10 + 20 + 100 + 2*5
    assert "seconds with n threads busy: 1: 80, 2: 35" in out.stdout


def test_a_missing_or_empty_log_is_one_clear_line(tmp_path):
    out = run(tmp_path / "nope.log")
    assert out.returncode == 2 and "not found" in out.stderr and "Traceback" not in out.stderr
    empty = tmp_path / "empty.log"
    empty.write_text("Building DAG of jobs...\n")
    out = run(empty)
    assert out.returncode == 2 and "no finished job" in out.stderr and "Traceback" not in out.stderr
