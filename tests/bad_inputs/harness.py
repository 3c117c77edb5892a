"""Harness for the table of bad inputs: every case must end in one clear error line, exit code 2,
no traceback, and leave the workspace exactly as it was (nothing written, nothing damaged).

A case builds its inputs in a fresh workspace (a temporary directory that is also the working
directory) and returns the argv of one `locus` command. Shared inputs that are costly to make (a tiny
canonical data set, its encodings, a trained LOCUS run and a kNN run) are built once per test session
with the real command line and copied into each workspace on request.

Case tables live in ``cases_*.py`` beside this file (one per area: data, runs, cli); each module
defines ``CASES``, a list of :class:`Case`. ``before`` records what the same input did before it was
fixed, so the closing notes can count the cases by class with before/after.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import shutil
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

BEFORE = ("traceback", "silent", "poor-message", "late", "leftover", "ok")

# Tiny LOCUS: a few steps on 384-d MiniLM encodings (the shape of a real run, in a few seconds).
TINY_LOCUS = {
    "dim": 8,
    "heads": 2,
    "layers": 1,
    "latents": 4,
    "decoder_hidden": 8,
    "max_steps": 10,
    "eval_every": 5,
    "model_batch": 4,
    "max_tokens": 16,
}
N_QUERIES, N_MODELS = 60, 5
ENCODER = "all-MiniLM-L6-v2"
D_PHI = 384


@dataclass(frozen=True)
class Case:
    id: str  # unique, short, used as the pytest id
    klass: str  # the class of problem, e.g. "csv-reading", "checkpoint", "cli"
    before: str  # one of BEFORE: what happened before the fix
    argv: Callable[["Workspace"], list[str]]  # builds the inputs in ws.root, returns `locus` argv
    message: str  # regex that must match the error line (case-insensitive)
    fake_encoder: bool = True  # replace the sentence encoder by a deterministic hash encoder
    env: dict = field(default_factory=dict)  # environment variables set while the command runs

    def __post_init__(self):
        if self.before not in BEFORE:
            raise ValueError(f"case {self.id}: before must be one of {BEFORE}, got {self.before!r}")


class Workspace:
    """A fresh directory for one case, with shortcuts to the shared inputs."""

    def __init__(self, root: Path, base: Path):
        self.root = root
        self._base = base

    def path(self, name: str) -> Path:
        return self.root / name

    def write(self, name: str, text: str, encoding: str = "utf-8") -> Path:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding=encoding)
        return path

    def write_bytes(self, name: str, data: bytes) -> Path:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return path

    def copy(self, what: str, name: str | None = None) -> Path:
        """Copy a shared input into the workspace: 'data' (canonical data set dir), 'encodings'
        (its MiniLM encodings Parquet), 'locus_run', 'knn_run' (finished run directories)."""
        src = self._base / BASE_NAMES[what]
        dst = self.root / (name or BASE_NAMES[what])
        if src.is_dir():
            shutil.copytree(src, dst)
        else:
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
        return dst

    # frames of the shared data set, for cases that build variants of it
    def frames(self) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
        d = self._base / BASE_NAMES["data"]
        return (
            pd.read_parquet(d / "queries.parquet"),
            pd.read_parquet(d / "models.parquet"),
            pd.read_parquet(d / "scores.parquet"),
        )


BASE_NAMES = {"data": "data", "encodings": "encodings.parquet", "locus_run": "run_locus", "knn_run": "run_knn"}


def tiny_frames(seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    queries = pd.DataFrame(
        {
            "prompt_id": np.arange(N_QUERIES),
            "prompt": [f"What is {i} plus {i + 1}?" for i in range(N_QUERIES)],
            "benchmark": ["math" if i % 2 else "trivia" for i in range(N_QUERIES)],
            "category": ["math" if i % 2 else "trivia" for i in range(N_QUERIES)],
            "split": ["train"] * 40 + ["val"] * 10 + ["test"] * 10,
        }
    )
    models = pd.DataFrame({"model_id": np.arange(N_MODELS), "name": [f"org/model-{i}" for i in range(N_MODELS)]})
    pid, mid = np.meshgrid(np.arange(N_QUERIES), np.arange(N_MODELS), indexing="ij")
    scores = pd.DataFrame(
        {"prompt_id": pid.ravel(), "model_id": mid.ravel(), "score": (rng.random(pid.size) < 0.5).astype(float)}
    )
    return queries, models, scores


def build_base(base: Path) -> Path:
    """Make the shared inputs with the real command line (data via the csv adapter, real MiniLM encodings)."""
    from locus.cli import main

    queries, models, scores = tiny_frames()
    rows = scores.merge(queries, on="prompt_id").merge(models, on="model_id")
    csv = base / "evaluations.csv"
    rows.rename(columns={"name": "model"})[["prompt", "model", "score", "benchmark", "split"]].to_csv(csv, index=False)
    steps = [
        ["data", "csv", "--out", str(base / "data"), "--params", json.dumps({"path": str(csv)})],
        [
            "encode",
            "--data",
            str(base / "data"),
            "--encoder",
            ENCODER,
            "--out",
            str(base / "encodings.parquet"),
            "--no-progress",
            "--threads",
            "1",
        ],
        [
            "train",
            "--method",
            "locus",
            "--data",
            str(base / "data"),
            "--encodings",
            str(base / "encodings.parquet"),
            "--train-size",
            "20",
            "--seed",
            "0",
            "--params",
            json.dumps(TINY_LOCUS),
            "--out",
            str(base / "run_locus"),
        ],
        [
            "train",
            "--method",
            "knn_router",
            "--data",
            str(base / "data"),
            "--encodings",
            str(base / "encodings.parquet"),
            "--train-size",
            "20",
            "--seed",
            "0",
            "--out",
            str(base / "run_knn"),
        ],
    ]
    for argv in steps:
        rc = main(argv)
        if rc != 0:
            raise RuntimeError(f"building the bad-input base failed: locus {' '.join(argv)} -> {rc}")
    return base


def fake_encode(encoder, texts, batch_size=64):
    """Deterministic stand-in for the sentence encoder: a hash of the text -> a unit vector (384-d)."""
    out = []
    for t in texts:
        seed = int.from_bytes(hashlib.sha256(str(t).encode()).digest()[:4], "little")
        v = np.random.default_rng(seed).normal(size=D_PHI)
        out.append(v / np.linalg.norm(v))
    return np.asarray(out, dtype=np.float32)


def snapshot(root: Path) -> dict[str, tuple]:
    """Every path under root with its kind, mode and content hash."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        st = path.lstat()
        if path.is_file():
            out[rel] = ("file", st.st_mode, hashlib.sha256(path.read_bytes()).hexdigest())
        else:
            out[rel] = ("dir", st.st_mode, None)
    return out


def run_case(case: Case, ws: Workspace, monkeypatch) -> tuple[int, str, str]:
    """Run one case in its workspace; return (exit code, stdout, stderr). Asserts the invariants."""
    from locus import checkpoint
    from locus.cli import main

    argv = case.argv(ws)
    before = snapshot(ws.root)
    monkeypatch.chdir(ws.root)
    for key, value in case.env.items():
        monkeypatch.setenv(key, value)
    if case.fake_encoder:
        monkeypatch.setattr(checkpoint, "encode_queries", fake_encode)
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            rc = main(argv)
        except SystemExit as exc:  # argparse usage errors exit 2 by themselves
            rc = exc.code
    stderr = err.getvalue()
    assert "Traceback" not in stderr, f"{case.id}: traceback\n{stderr}"
    assert rc == 2, f"{case.id}: exit code {rc}, expected 2\nstdout:\n{out.getvalue()}\nstderr:\n{stderr}"
    lines = [line for line in stderr.splitlines() if line.strip()]
    error_lines = [line for line in lines if "error:" in line]
    assert len(error_lines) == 1, f"{case.id}: expected exactly one error line, got:\n{stderr}"
    assert re.search(case.message, error_lines[0], flags=re.IGNORECASE), (
        f"{case.id}: message does not match {case.message!r}:\n{error_lines[0]}"
    )
    after = snapshot(ws.root)
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    assert not changed, f"{case.id}: the failed command wrote or changed {changed[:10]}"
    return rc, out.getvalue(), stderr
