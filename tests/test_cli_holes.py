"""Holes a new user found in the command line (issue 50), each closed with one clear error line, exit code 2
and nothing written: options that mean something only beside another one, negative seeds, and the portfolio's
budget message on a csv pool. Also the shared option helpers: one --threads type and one seed type everywhere.
The CLI runs as a subprocess (`python -m locus ...`) in an empty working directory."""

from __future__ import annotations

import argparse
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from locus import cli


def locus(cwd, *argv):
    """(exit code, stdout, stderr) of `python -m locus ARGV` run in `cwd`."""
    done = subprocess.run(
        [sys.executable, "-m", "locus", *map(str, argv)], cwd=cwd, capture_output=True, text=True, timeout=300
    )
    return done.returncode, done.stdout, done.stderr


def files_under(root) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def refused(root, argv, message: str) -> str:
    """Run `argv` in `root` and check the refusal: exit 2, exactly one error line matching `message`, no
    traceback, and nothing written or changed under `root`."""
    before = files_under(root)
    code, _, err = locus(root, *argv)
    lines = [line for line in err.splitlines() if "error:" in line]
    assert code == 2 and "Traceback" not in err, err
    assert len(lines) == 1 and message in lines[0], err
    assert files_under(root) == before
    return lines[0]


@pytest.fixture
def ws(tmp_path):
    """An empty working directory with an (empty) run and data set directory: every refusal below happens
    before either is read."""
    (tmp_path / "run").mkdir()
    (tmp_path / "data").mkdir()
    return tmp_path


# ---------------------------------------------------------------------------------------------- options
@pytest.mark.parametrize(
    "argv,message",
    [
        # route: selective options without --alpha, --data without a policy
        (["route", "--checkpoint", "run", "q", "--delta", "0.2"], "--delta applies only with --alpha"),
        (["route", "--checkpoint", "run", "q", "--fallback", "abstain"], "--fallback applies only with --alpha"),
        (["route", "--checkpoint", "run", "q", "--min-prob", "0.5", "--alphas", "0.1"], "--alphas applies only"),
        (["route", "--checkpoint", "run", "q", "--data", "data"], "--data applies only with a routing policy"),
        # decisions: one experiment's options given to the other
        (
            ["decisions", "cost", "--runs", "run", "--data", "data", "--table", "t.tex", "--figure", "f.pdf"]
            + ["--alphas", "0.1", "--delta", "0.2"],
            "--alphas and --delta apply only with `locus decisions selective`",
        ),
        (
            ["decisions", "selective", "--runs", "run", "--data", "data", "--table", "t.tex", "--figure", "f.pdf"]
            + ["--lambdas", "5"],
            "--lambdas applies only with `locus decisions cost`",
        ),
        # portfolio: one mode's options given in another
        (["portfolio", "--run", "run", "--k", "3", "--trials", "5"], "--trials applies only with --figure"),
        (
            ["portfolio", "--run", "run", "--data", "data", "--figure", "p.pdf", "--method", "k-center"],
            "--method applies only with --k",
        ),
        (["portfolio", "--run", "run", "--k", "2", "--method", "k-center", "--max-iter", "3"], "--max-iter applies"),
        # bench: one measurement's options given to another
        (["bench", "--seed", "3"], "--seed applies only with --time-to-accuracy"),
        (["bench", "--data", "data"], "--data applies only with --time-to-accuracy DIR or --precision-effect"),
        (["bench", "--bfloat16-on-cpu", "always"], "--bfloat16-on-cpu applies only with --time-complexity"),
        # encode: the runs' options without --for-train-sizes
        (["encode", "--data", "data", "--out", "e.parquet", "--sampling", "per_model"], "--sampling applies only"),
        # onboard: --encodings without --data, --epsilon without --answers
        (
            ["onboard", "--run", "run", "--budget", "3", "--data", "data", "--epsilon", "0.1"],
            "--epsilon applies only with --answers",
        ),
        # geometry and figure: one kind's options given to another
        (
            ["geometry", "neighbours", "--runs", "run", "--data", "data", "--out", "n.pdf", "--n-perm", "5"],
            "--n-perm applies only to families",
        ),
        (
            ["figure", "time-to-accuracy", "--runs", "run", "--out", "f.pdf", "--bootstrap-seed", "1"],
            "--bootstrap-seed applies only to sample-efficiency",
        ),
    ],
)
def test_an_option_without_what_it_needs_is_refused(ws, argv, message):
    refused(ws, argv, message)


def test_the_refusal_names_every_idle_option_as_typed(ws):
    line = refused(ws, ["route", "--checkpoint", "run", "q", "--fallback", "abstain", "--delta", "0.3"], "--alpha")
    assert "--delta and --fallback apply only with --alpha; leave them out or give --alpha ALPHA" in line


# ---------------------------------------------------------------------------------------------- seeds
def _options(kind: str):
    """(command, flag) of every seed option (`kind` "seed") or --threads option of every command."""
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, p in sorted(sub.choices.items()):
        for action in p._actions:
            flags = [f for f in action.option_strings if f.startswith("--")]
            if kind == "seed" and action.dest.endswith("seed") and action.type is not None:
                yield name, flags[0], action
            elif kind == "threads" and action.dest == "threads":
                yield name, flags[0], action


SEEDS = [(name, flag) for name, flag, _ in _options("seed")]


def test_every_command_with_a_seed_is_covered():
    # onboard and bench took any integer; encode's --for-seeds is a list (number_list, low 0)
    assert {"bench", "onboard", "portfolio", "views", "regenerate", "decisions", "figure"} <= {n for n, _ in SEEDS}


@pytest.mark.parametrize("command,flag", SEEDS, ids=[f"{n} {f}" for n, f in SEEDS])
def test_a_negative_seed_is_one_line(ws, command, flag):
    # the flag comes first: argparse converts options in order, so its error is the first one
    line = refused(ws, [command, flag, "-1"], "must be >= 0, got -1")
    assert f"argument {flag}" in line


def test_seed_and_threads_types_are_shared():
    for name, flag, action in _options("seed"):
        assert action.type(" 3 ") == 3, (name, flag)
        with pytest.raises(argparse.ArgumentTypeError, match="must be >= 0"):
            action.type("-1")
    # one --threads type: a whole number >= 0, 0 = torch's default
    kinds = {name: action.type for name, _, action in _options("threads")}
    assert {"bench", "encode", "onboarding", "views", "regenerate", "active-onboarding", "onboarding-rivals"} <= set(
        kinds
    )
    assert all(t is cli.threads_arg for t in kinds.values()), kinds


# ---------------------------------------------------------------------------------------------- portfolio
TINY_LOCUS = {
    "dim": 8,
    "heads": 2,
    "layers": 1,
    "latents": 4,
    "decoder_hidden": 8,
    "max_steps": 4,
    "min_steps": 1,
    "patience": 4,
    "eval_every": 2,
    "threads": 1,
}


def test_portfolio_budget_on_a_csv_pool_says_how_to_give_params_b(tmp_path):
    """A csv pool without params_b: the message names the evaluations file's column and `locus data csv`
    (models.parquet is covered by the data set's digests, so editing it is not the way)."""
    pytest.importorskip("torch")
    from locus.data.canonical import read_dataset
    from locus.data.encodings import data_fingerprint, write_encodings
    from locus.runs import execute

    rng = np.random.default_rng(0)
    n_q, models = 40, [f"org/m{i}" for i in range(4)]
    split = ["train"] * 20 + ["val"] * 10 + ["test"] * 10
    rows = pd.DataFrame(
        [
            {"prompt": f"question {q}", "model": m, "score": float(rng.random() < 0.5), "split": split[q]}
            for q in range(n_q)
            for m in models
        ]
    )
    rows.to_csv(tmp_path / "evals.csv", index=False)
    code, _, err = locus(tmp_path, "data", "csv", "--out", "data", "--params", '{"path": "evals.csv"}')
    assert code == 0, err
    queries = read_dataset(tmp_path / "data").queries
    vectors = rng.normal(size=(len(queries), 6)).astype(np.float32)
    fingerprint = data_fingerprint(queries["prompt_id"], queries["prompt"])
    write_encodings(tmp_path / "enc.parquet", queries["prompt_id"], vectors, "toy", False, fingerprint)
    execute("locus", TINY_LOCUS, tmp_path / "data", tmp_path / "enc.parquet", 8, 0, tmp_path / "run")
    line = refused(
        tmp_path, ["portfolio", "--run", "run", "--data", "data", "--budget-b", "10"], "has no params_b column"
    )
    assert "add a params_b column to the pool's evaluations file" in line and "`locus data csv`" in line
    assert "select by --k" in line
