"""The Snakemake DAG: dry run of the default config, a real run of the data + encodings stages on the
tiny config, a no-op second run, and config validation errors."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = [sys.executable, "-m", "snakemake"]
TINY = REPO / "tests" / "configs" / "tiny.yaml"


def snakemake(*args, cwd=REPO, timeout=600):
    cmd = [*SNAKEMAKE, "-s", str(REPO / "Snakefile"), *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def test_dry_run_default_config(tmp_path):
    res = snakemake("-n", "--directory", str(tmp_path))
    assert res.returncode == 0, res.stderr + res.stdout
    out = res.stdout
    for rule in ("data", "encode", "summary", "train_run", "routing_table"):
        assert rule in out
    assert "results/encodings/synthetic/all-MiniLM-L6-v2.parquet" in out
    assert "results/runs/synthetic/all-MiniLM-L6-v2/locus/n1024/d128/s0/metrics.json" in out
    # the sample-efficiency figure covers the paper's grid up to 4,096
    assert "results/runs/synthetic/all-MiniLM-L6-v2/locus/n4096/d128/s0/metrics.json" in out


def test_seed_bands_config_adds_seeds_to_the_figure_only(tmp_path):
    res = snakemake("-n", "results/figures/train_sample_eff.pdf", "results/tables/routing.tex",
                    "--directory", str(tmp_path), "--configfile", str(REPO / "config" / "seed-bands.yaml"))
    assert res.returncode == 0, res.stderr + res.stdout
    out = res.stdout
    for seed in (0, 1, 2):
        assert f"results/runs/synthetic/all-MiniLM-L6-v2/irt_net/n64/d232/s{seed}/metrics.json" in out
    # routing.tex needs only its own methods (LOCUS, EmbedLLM, IRT-Net), not the by-dataset ones
    assert "results/runs/synthetic/all-MiniLM-L6-v2/locus/n256/d128/s0/metrics.json" in out
    assert "knn_router" not in out and "embedllm_plus" not in out


def test_invalid_config_is_refused(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("train_sizes: [0]\n")
    res = snakemake("-n", "--directory", str(tmp_path), "--configfile", str(bad))
    assert res.returncode != 0
    assert "train_sizes" in res.stderr + res.stdout
    bad.write_text("dataset: nowhere\n")
    res = snakemake("-n", "--directory", str(tmp_path), "--configfile", str(bad))
    assert res.returncode != 0
    assert "dataset 'nowhere' is not a key of `datasets`" in res.stderr + res.stdout


def test_encodings_stage_runs_and_is_idempotent(tmp_path):
    targets = ["results/encodings/synthetic/all-MiniLM-L6-v2.parquet", "results/data/synthetic/summary.md"]
    # targets first: --configfile takes several values and would swallow them
    res = snakemake(*targets, "--cores", "2", "--directory", str(tmp_path), "--configfile", str(TINY))
    assert res.returncode == 0, res.stderr[-4000:]
    enc = pd.read_parquet(tmp_path / targets[0])
    queries = pd.read_parquet(tmp_path / "results/data/synthetic/queries.parquet")
    assert len(enc) == len(queries) == 600
    assert len(enc["embedding"].iloc[0]) == 384
    summary = (tmp_path / targets[1]).read_text()
    assert "models: 12" in summary and "synthetic" in summary
    assert (tmp_path / "results/benchmarks/encode/synthetic/all-MiniLM-L6-v2.tsv").is_file()
    assert (tmp_path / "results/logs/encode/synthetic/all-MiniLM-L6-v2.log").is_file()
    again = snakemake(*targets, "--cores", "2", "--directory", str(tmp_path), "--configfile", str(TINY))
    assert again.returncode == 0
    assert "Nothing to be done" in again.stdout + again.stderr


def test_figure_seeds_are_separate_from_table_seeds(tmp_path):
    own = tmp_path / "figure-seeds.yaml"
    own.write_text("sample_efficiency:\n  methods: [locus, irt_net, embedllm]\n"
                   "  train_sizes: [64, 128, 256, 512, 1024, 2048, 4096]\n  seeds: [5]\n")
    res = snakemake("-n", "results/figures/train_sample_eff.pdf", "--directory", str(tmp_path), "--configfile", str(own))
    assert res.returncode == 0, res.stderr + res.stdout
    assert "results/runs/synthetic/all-MiniLM-L6-v2/locus/n64/d128/s5/metrics.json" in res.stdout
    assert "/s0/metrics.json" not in res.stdout
    res = snakemake("-n", "results/tables/routing.tex", "--directory", str(tmp_path), "--configfile", str(own))
    assert res.returncode == 0, res.stderr + res.stdout
    assert "/s5/" not in res.stdout and "locus/n256/d128/s0/metrics.json" in res.stdout
