"""`locus export-csv`: a canonical data set -> one CSV in the csv source's format -> `locus data csv` rebuilds
the same pool (prompts, models, scores, splits, benchmarks, categories, costs); what the CSV cannot carry is
reported; bad inputs exit 2 with one line."""

from __future__ import annotations

import gzip
import json
import shlex
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from locus.cli import main
from locus.data import canonical, csv_export, csv_source

LLMROUTER_DIR = Path(__file__).resolve().parents[2] / "shared" / "data" / "llmrouter-dc"


def _data(source: str, out: Path, params: dict, *flags: str) -> canonical.EvalData:
    assert main(["data", source, "--out", str(out), "--params", json.dumps(params), *flags]) == 0
    return canonical.read_dataset(out)


def _export(data_dir: Path, out: Path, capsys) -> str:
    capsys.readouterr()
    assert main(["export-csv", "--data", str(data_dir), "--out", str(out)]) == 0
    return capsys.readouterr().out


def _rebuild_args(printed: str, out: Path) -> list[str]:
    """The `locus data csv ...` arguments of the printed rebuild line, with --out `out`."""
    line = next(ln for ln in printed.splitlines() if ln.startswith("rebuild: locus "))
    argv = shlex.split(line.removeprefix("rebuild: locus "))
    argv[argv.index("--out") + 1] = str(out)
    return argv


def _pairs(data: canonical.EvalData) -> set:
    """{(prompt text, split, model name, score)}: the pool without its ids."""
    q = data.queries.set_index("prompt_id")
    names = data.models.set_index("model_id")["name"]
    s = data.scores
    return set(
        zip(
            q["prompt"].reindex(s["prompt_id"]),
            q["split"].reindex(s["prompt_id"]),
            names.reindex(s["model_id"]),
            s["score"].astype(float),
        )
    )


def _by_text(data: canonical.EvalData) -> pd.DataFrame:
    """(prompt, split) -> benchmark, category, sorted; ids dropped."""
    q = data.queries[["prompt", "split", "benchmark", "category"]]
    return q.sort_values(["prompt", "split"]).reset_index(drop=True)


def assert_same_pool(original: canonical.EvalData, rebuilt: canonical.EvalData, same_ids: bool) -> None:
    """Same (prompt, split, model, score) rows, benchmark and category per query, model names, and the values of
    every model column the rebuilt pool has (all those the csv source reads); with `same_ids` the frames too."""
    assert len(rebuilt.queries) == len(original.queries) and len(rebuilt.scores) == len(original.scores)
    assert _pairs(rebuilt) == _pairs(original)
    pd.testing.assert_frame_equal(_by_text(rebuilt), _by_text(original))
    assert sorted(rebuilt.models["name"]) == sorted(original.models["name"])
    carried = [c for c in csv_export.MODEL_COLUMNS if c in original.models.columns]
    assert [c for c in rebuilt.models.columns if c not in ("model_id", "name")] == carried
    for column in carried:
        by_name = lambda d: d.models.set_index("name")[column].sort_index()  # noqa: E731, B023
        pd.testing.assert_series_equal(by_name(rebuilt), by_name(original))
    if same_ids:
        pd.testing.assert_frame_equal(rebuilt.queries, original.queries)
        pd.testing.assert_frame_equal(rebuilt.scores, original.scores)
        pd.testing.assert_frame_equal(rebuilt.models, original.models[list(rebuilt.models.columns)])


# ---------------------------------------------------------------------------------------------------------------
def test_synthetic_pool_round_trip_through_the_csv_source(tmp_path, capsys):
    params = {"n_queries": 150, "n_models": 5, "seed": 3}  # dense: every model scores the first query
    original = _data("synthetic", tmp_path / "syn", params)
    printed = _export(tmp_path / "syn", tmp_path / "pool.csv", capsys)

    header = (tmp_path / "pool.csv").read_text(encoding="utf-8").splitlines()[0].split(",")
    carried = [c for c in csv_source.OPTIONAL if c in ("benchmark", "category", "split", *original.models.columns)]
    assert header == [*csv_source.REQUIRED, *carried]
    assert header[:6] == ["prompt", "model", "score", "benchmark", "category", "split"]
    assert f"wrote {tmp_path / 'pool.csv'}: {len(original.scores)} rows (150 queries x 5 models)" in printed
    # the synthetic pool's model ids are not in name order; first appearance keeps them
    assert list(original.models["name"]) != sorted(original.models["name"])
    assert '"model_order": "appearance"' in printed
    lost = [c for c in original.models.columns if c not in ("model_id", "name", *csv_source.OPTIONAL)]
    assert f"model column(s) {lost} of models.parquet" in printed and "truth.parquet" in printed
    assert "tags" in lost and "size_bucket" in lost

    assert main(_rebuild_args(printed, tmp_path / "back")) == 0
    rebuilt = canonical.read_dataset(tmp_path / "back")
    assert_same_pool(original, rebuilt, same_ids=True)
    assert csv_export.to_csv_frame(rebuilt).equals(csv_export.to_csv_frame(original))

    # the plain command of the README (models numbered by sorted name): the same pool, other model ids
    assert (
        main(
            [
                "data",
                "csv",
                "--out",
                str(tmp_path / "plain"),
                "--params",
                json.dumps({"path": str(tmp_path / "pool.csv")}),
            ]
        )
        == 0
    )
    assert_same_pool(original, canonical.read_dataset(tmp_path / "plain"), same_ids=False)


def test_partial_pool_with_hard_cells_costs_and_compression_is_a_fixed_point(tmp_path, capsys):
    prompts = [
        "plain",
        'comma, and "quotes"',
        "line\nbreak",
        "carriage\rreturn",
        "windows\r\nline",
        "  spaces kept  ",
        "tab\there",
        "01",
        "1",
        "1.0",
        "ünïcödé ✓ 数学",
        "None",
    ]
    splits = ["train"] * 8 + ["val", "val", "test", "test"]
    models = ["zeta/b", "alpha", "mid-7b"]
    model_values = {  # every model column the csv source reads (those it does not know are left out)
        "cost": [0.1 + 0.2, 3.0, 0.0],
        "params_b": [1 / 3, 70.0, 7.0],
        "family": ["z fam", "alpha", "mid, with comma"],
        "held_out": [0, 1, 0],
    }
    model_values = {k: v for k, v in model_values.items() if k in csv_export.MODEL_COLUMNS}
    rows = []
    for i, (prompt, split) in enumerate(zip(prompts, splits)):
        for j, model in enumerate(models):
            if (i + j) % 4 == 3:
                continue  # not evaluated
            score = [1.0, 0.0, 1 / 3, 0.6][(i * 3 + j) % 4]
            row = {"prompt": prompt, "model": model, "score": score, "benchmark": f"b{i % 3}"}
            row |= {"category": f"c{i % 2}", "split": split, **{k: v[j] for k, v in model_values.items()}}
            rows.append(row)
    source = tmp_path / "evals.parquet"  # Parquet in: every cell exactly as given
    pd.DataFrame(rows).to_parquet(source, index=False)
    original = _data("csv", tmp_path / "orig", {"path": str(source)})
    assert "cost" in original.models.columns

    for name in ("pool.csv", "pool.csv.gz", "pool.tsv"):
        printed = _export(tmp_path / "orig", tmp_path / name, capsys)
        assert "not carried" not in printed, printed  # everything of this pool is carried
        assert main(_rebuild_args(printed, tmp_path / f"back-{name}")) == 0
        rebuilt = canonical.read_dataset(tmp_path / f"back-{name}")
        assert_same_pool(original, rebuilt, same_ids=True)
        pd.testing.assert_frame_equal(rebuilt.models, original.models)
    # deterministic bytes, and exporting the rebuilt pool gives the same file
    first = (tmp_path / "pool.csv").read_bytes()
    assert "\r" in first.decode() and first.decode().count('"') > 2 * len(rows)  # a CR: every field quoted
    _export(tmp_path / "back-pool.csv", tmp_path / "again.csv", capsys)
    assert (tmp_path / "again.csv").read_bytes() == first
    assert gzip.decompress((tmp_path / "pool.csv.gz").read_bytes()) == first
    assert (tmp_path / "pool.tsv").read_text(encoding="utf-8").startswith('"prompt"\t"model"\t"score"\t')


def test_what_the_csv_cannot_carry_is_reported(tmp_path, capsys):
    queries = pd.DataFrame(
        {
            "prompt_id": [0, 1, 2, 3, 5, 9],
            "prompt": ["same", "same", "x", "shared", "shared", "lonely"],
            "benchmark": [" b ", "b", "b", "b", "b", "b"],
            "category": ["c", "c", "c", "c", "c", "c"],
            "split": ["train", "train", "train", "val", "test", "train"],
        }
    )
    models = pd.DataFrame(
        {"model_id": [0, 1], "name": ["b-model", "a-model"], "params_b": [7.0, np.nan], "tags": ["x", "y;z"]}
    )
    pairs = [(p, m) for p in (0, 1, 2, 3, 5) for m in (0, 1)]
    scores = pd.DataFrame(
        {"prompt_id": [p for p, _ in pairs], "model_id": [m for _, m in pairs], "score": np.linspace(0, 1, len(pairs))}
    )
    data = canonical.write_dataset(tmp_path / "d", queries, models, scores, split_overlap="keep_all")
    params, overlap, notes = csv_export.limits(data)
    assert params == {"model_order": "appearance"} and overlap == "keep_all"
    text = "\n".join(notes)
    lost = ["model column(s) ['tags'] of", "model column 'params_b': 1 model(s) have no value (e.g. ['a-model'])"]
    if "params_b" not in csv_export.MODEL_COLUMNS:  # a csv source without the column
        lost = ["model column(s) ['params_b', 'tags'] of"]
    expected = [*lost, "1 querie(s) without any score", "1 querie(s) repeat the prompt text"]
    for part in (*expected, "spaces around 1 benchmark", "prompt_ids (renumbered 0..4"):
        assert part in text, text

    printed = _export(tmp_path / "d", tmp_path / "d.csv", capsys)
    assert "--split-overlap keep_all" in printed and "not carried by the CSV format:" in printed
    assert main(_rebuild_args(printed, tmp_path / "back")) == 0  # the cross-split copies are kept
    back = canonical.read_dataset(tmp_path / "back")
    assert sorted(back.queries.loc[back.queries["prompt"] == "shared", "split"]) == ["test", "val"]
    assert list(back.models["name"]) == ["b-model", "a-model"]  # ids kept by first appearance
    assert len(back.queries) == 4  # 'same' twice in train became one query; 'lonely' had no score


@pytest.mark.parametrize(
    "setup, argv, message",
    [
        (None, ["--data", "{t}/nowhere", "--out", "{t}/o.csv"], "{t}/nowhere: data set directory does not exist"),
        ("empty", ["--data", "{t}/d", "--out", "{t}/o.csv"], "{t}/d/queries.parquet: file missing"),
        ("corrupt", ["--data", "{t}/d", "--out", "{t}/o.csv"], "are not one consistent data set"),
        (
            "good",
            ["--data", "{t}/d", "--out", "{t}/missing/dir/o.csv"],
            "the directory {t}/missing/dir does not exist; create it first (mkdir -p {t}/missing/dir)",
        ),
        ("good", ["--data", "{t}/d", "--out", "{t}/o.xlsx"], "expected a path ending in .csv"),
        ("good", ["--data", "{t}/d", "--out", "{t}/d.csv"], "{t}/d.csv is a directory; give a file path"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, setup, argv, message):
    t = str(tmp_path)
    if setup in ("good", "corrupt"):
        _data("csv", tmp_path / "d", {"path": str(_tiny_csv(tmp_path))})
    if setup == "corrupt":
        (tmp_path / "d" / "scores.parquet").write_bytes(b"PAR1 not really")
    if setup == "empty":
        (tmp_path / "d").mkdir()
    if "{t}/d.csv" in argv:
        (tmp_path / "d.csv").mkdir()
    capsys.readouterr()
    assert main(["export-csv", *(a.format(t=t) for a in argv)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("locus export-csv: error: ") and message.format(t=t) in err[-1], err
    assert "Traceback" not in "\n".join(err) and len([ln for ln in err if "error:" in ln]) == 1, err
    assert not (tmp_path / "o.csv").exists() and not (tmp_path / "missing").exists()


def _tiny_csv(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.csv"
    path.write_text("prompt,model,score,split\nq0,a,1,train\nq1,a,0,val\nq2,a,1,test\nq0,b,0,train\n")
    return path


# ---------------------------------------------------------------------------------------------------------------
def test_llmrouter_pool_round_trip(tmp_path, capsys):
    """The real LLMRouter DC pool (only on the development machines): `locus data llmrouter` drops the 119 test
    copies of training texts (split_overlap keep_train); the CSV carries the resolved pool, which the csv source
    rebuilds as it is (no overlap left), with prompt_ids renumbered (the dropped test ids leave gaps); the
    models' params_b is carried where the csv source reads that column."""
    if not (LLMROUTER_DIR / "train.json").is_file():
        pytest.skip(f"LLMRouter DC copy not found at {LLMROUTER_DIR} (only on the development machines)")
    original = _data("llmrouter", tmp_path / "lr", {"dir": str(LLMROUTER_DIR)})
    printed = _export(tmp_path / "lr", tmp_path / "lr.csv", capsys)
    assert "prompt_ids (renumbered" in printed and "--split-overlap" not in printed
    assert ("['params_b']" in printed) == ("params_b" not in csv_export.MODEL_COLUMNS)
    assert main(_rebuild_args(printed, tmp_path / "back")) == 0
    rebuilt = canonical.read_dataset(tmp_path / "back")
    assert (len(rebuilt.queries), len(rebuilt.models), len(rebuilt.scores)) == (5989, 9, 5989 * 9)
    assert_same_pool(original, rebuilt, same_ids=False)
    assert list(rebuilt.models["name"]) == list(original.models["name"])  # sorted names: model ids kept
    rank = original.queries["prompt_id"].rank(method="first").astype(np.int64) - 1
    assert rebuilt.queries["prompt_id"].tolist() == rank.tolist()  # renumbered in the same order
    assert rebuilt.queries["prompt"].tolist() == original.queries["prompt"].tolist()
