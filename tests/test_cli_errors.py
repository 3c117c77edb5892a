"""The command line's own guards: output paths, argument types, OSError about outputs, thin commands.
(The table-driven bad-input cases are in tests/bad_inputs/cases_cli.py.)"""

from __future__ import annotations

import argparse
import errno
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from locus import cli, outputs
from locus.cli import main
from locus.errors import ConfigError, DataError


def metrics_file(tmp_path, method="locus", n=64, dataset="results/data/tiny"):
    block = {"overall": {"routing_acc": 0.6, "correctness_acc": 0.7}, "by_benchmark": {}}
    m = {
        "method": method,
        "params": {},
        "train_size": n,
        "seed": 0,
        "sampling": "shared",
        "encoder": "enc",
        "dataset": dataset,
        "test": block,
        "val": block,
    }
    path = tmp_path / "runs" / method / f"n{n}" / "metrics.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(m))
    return str(path)


# ---------------------------------------------------------------------------------------------- paths
def test_check_output_accepts_new_nested_paths_without_creating_them(tmp_path):
    out = tmp_path / "a" / "b" / "t.tex"
    assert outputs.check_output(out) == out
    assert not (tmp_path / "a").exists()  # created when written, not when checked
    assert outputs.check_output(tmp_path / "run", directory=True) == tmp_path / "run"
    (tmp_path / "run").mkdir()
    assert outputs.check_output(tmp_path / "run", directory=True) == tmp_path / "run"  # replaced later


@pytest.mark.parametrize(
    "make,directory,message",
    [
        (lambda t: (t / "d.tex").mkdir() or t / "d.tex", False, "is a directory"),
        (lambda t: (t / "f").write_text("x") and t / "f" / "sub" / "o.tex", False, "is a file, not a directory"),
        (lambda t: (t / "run").write_text("x") and t / "run", True, "exists and is a file"),
        (lambda t: "", False, "empty output path"),
    ],
)
def test_check_output_refuses(tmp_path, make, directory, message):
    with pytest.raises(ConfigError, match=message):
        outputs.check_output(make(tmp_path), directory=directory)


def test_check_output_without_permission(tmp_path, monkeypatch):
    # the tests may run as root, where permissions are not enforced: simulate a read-only directory
    monkeypatch.setattr(outputs.os, "access", lambda path, mode: Path(path) != tmp_path)
    with pytest.raises(ConfigError, match="no permission to write in"):
        outputs.check_output(tmp_path / "new" / "t.tex")


# ---------------------------------------------------------------------------------------------- types
def test_argument_types():
    assert cli.int_at_least(0)("0") == 0 and cli.positive_int(" 3 ") == 3
    with pytest.raises(argparse.ArgumentTypeError, match=r"must be >= 1, got 0"):
        cli.positive_int("0")
    with pytest.raises(argparse.ArgumentTypeError, match="whole number"):
        cli.positive_int("2.5")
    assert cli.comma_list("a, b,,c") == ["a", "b", "c"]
    with pytest.raises(argparse.ArgumentTypeError, match="names nothing"):
        cli.comma_list(" , ")
    assert cli.device_arg()("CPU") == "cpu"
    with pytest.raises(argparse.ArgumentTypeError, match="unknown device"):
        cli.device_arg(("cpu", "cuda"))("mps")


def test_device_cuda_refused_without_cuda(monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(argparse.ArgumentTypeError, match="CUDA is not available.*--device cpu"):
        cli.device_arg()("cuda:0")


def test_main_returns_exit_codes_of_argparse(capsys):
    assert main(["--help"]) == 0
    assert main(["route", "--top-k", "0"]) == 2
    assert "error: argument" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------- OSError
def test_oserror_about_an_output_is_one_line(tmp_path, monkeypatch, capsys):
    import locus.atomic
    import locus.experiments.tables as tables

    out = tmp_path / "tables" / "t.tex"

    def full_disk(path, text):
        raise OSError(errno.ENOSPC, "No space left on device", str(Path(path).parent / ".t.tex.tmp"))

    monkeypatch.setattr(locus.atomic, "write_text", full_disk)
    monkeypatch.setattr(tables, "query_values", lambda *args, **kwargs: None)  # no runs' scores here
    assert (
        main(["table", "routing", "--metrics", metrics_file(tmp_path), "--out", str(out), "--data", str(tmp_path)]) == 2
    )
    err = capsys.readouterr().err
    assert err.count("error:") == 1 and "Traceback" not in err
    assert f"cannot write {out}: No space left on device" in err


def test_other_oserrors_keep_their_traceback(tmp_path, monkeypatch):
    import locus.experiments.tables as tables

    def bug(*args, **kwargs):
        raise FileNotFoundError(errno.ENOENT, "No such file", "/somewhere/else/cache.bin")

    monkeypatch.setattr(tables, "collect", bug)
    with pytest.raises(FileNotFoundError):
        main(["table", "routing", "--metrics", metrics_file(tmp_path), "--out", str(tmp_path / "t.tex")])


# ---------------------------------------------------------------------------------------------- commands
# (that commands never import each other is a contract of `lint-imports`: pyproject.toml, tests/test_lint.py)
def test_command_choices_come_from_the_package_vocabularies():
    """Commands take their choices from locus.constants, as the package does; building every parser still
    imports no numeric library (why those vocabularies live in a module without imports)."""
    from locus import constants
    from locus.commands import figure, table
    from locus.data import canonical
    from locus.experiments import ablation, figures, tables

    assert tables.KINDS is constants.TABLE_KINDS is table.TABLE_KINDS
    assert ablation.KINDS is constants.ABLATION_KINDS is table.ABLATION_KINDS
    assert figures.KINDS is constants.FIGURE_KINDS is figure.FIGURE_KINDS
    assert canonical.DUPLICATE_POLICIES is constants.DUPLICATE_POLICIES
    code = (
        "import sys; from locus import cli; cli.build_parser(); "
        "print(sorted(m for m in ('numpy', 'pandas', 'scipy', 'torch') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_every_output_option_is_checked():
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    mine = ("bench", "embed", "encode", "figure", "table", "train")
    for name in mine:
        p = sub.choices[name]
        outs = [a for a in p._actions if a.dest in ("out", "json")]
        assert outs and all(getattr(a.type, "locus_output", False) for a in outs), name


def test_parse_params_lives_in_the_package():
    from locus.params import method_params, parse_params

    assert parse_params('{"dim": 4}', "x") == {"dim": 4}
    with pytest.raises(ConfigError, match="JSON object"):
        parse_params("[1]", "x")
    assert method_params("locus", "{}", dim=16) == {"dim": 16}
    assert method_params("knn_router", "{}", dim=16) == {}  # no embedding dimension


# ---------------------------------------------------------------------------------------------- embed input
def test_score_file_with_a_model_column(tmp_path):
    from locus.inference import read_score_file

    path = tmp_path / "s.csv"
    pd.DataFrame({"prompt": ["a", "b", "c", "d"], "score": [1, 0, 1, 2], "model": ["x", "y", "x", "y"]}).to_csv(
        path, index=False
    )
    prompts, scores, model = read_score_file(path, "x")
    assert prompts == ["a", "c"] and scores.tolist() == [1.0, 1.0] and model == "x"
    with pytest.raises(DataError, match=r"row\(s\) \[5\]"):  # y's bad score keeps its file row number
        read_score_file(path, "y")
    with pytest.raises(DataError, match="scores of 2 models"):
        read_score_file(path)
    single = tmp_path / "one.csv"
    pd.DataFrame({"prompt": ["a"], "score": [1], "model": ["org/m"]}).to_csv(single, index=False)
    assert read_score_file(single)[2] == "org/m"


def test_query_file_not_utf8(tmp_path):
    from locus.inference import read_query_file

    path = tmp_path / "q.txt"
    path.write_bytes("first\ncaf\u00e9\n".encode("latin-1"))
    with pytest.raises(DataError, match=r"not UTF-8 text \(byte 0xe9 on line 2\).*iconv"):
        read_query_file(path)
    path.write_text("\ufeffone\n\n two \n", encoding="utf-8")
    assert read_query_file(path) == ["one", "two"]
