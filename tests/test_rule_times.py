"""scripts/rule_times.py: the per-job and per-rule times of a run from its benchmark files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"


def bench(root: Path, name: str, wall: float, cpu: float) -> None:
    path = root / "benchmarks" / f"{name}.tsv"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HEADER + f"{wall}\t0:00:01\t1\t1\t1\t1\t0\t0\t50\t{cpu}\n")


def run(*args):
    return subprocess.run(
        [sys.executable, str(REPO / "scripts" / "rule_times.py"), *map(str, args)], capture_output=True, text=True
    )


def test_jobs_sorted_by_wall_time_and_summed_per_rule(tmp_path):
    bench(tmp_path, "train/a/locus/n1024", 100.0, 90.0)
    bench(tmp_path, "train/a/knn/n1024", 10.0, 5.0)
    bench(tmp_path, "encode/a/mini", 50.0, 95.5)
    out = run(tmp_path)
    assert out.returncode == 0, out.stderr
    jobs = [line.split()[-1] for line in out.stdout.splitlines()[1:4]]
    assert jobs == ["train/a/locus/n1024", "encode/a/mini", "train/a/knn/n1024"]
    assert "3 jobs: wall 160 s summed, CPU 190 s summed" in out.stdout  # 90 + 5 + 95.5 = 190.5 -> 190
    assert "    2    110.0     95.0  train" in out.stdout and "    1     50.0     95.5  encode" in out.stdout


def test_missing_or_foreign_files_are_one_clear_line(tmp_path):
    out = run(tmp_path)
    assert out.returncode != 0 and "benchmarks not found" in out.stderr and "Traceback" not in out.stderr
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "x.tsv").write_text("a\tb\n1\t2\n")
    out = run(tmp_path)
    assert "is not a Snakemake benchmark file" in out.stderr and "Traceback" not in out.stderr
