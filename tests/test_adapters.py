"""Adapters for real data sources (EmbedLLM CSVs, LLMRouter DC, bring-your-own CSV) and the download helper."""

from __future__ import annotations

import hashlib
import http.server
import socket
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from locus.data import canonical, csv_source, download, embedllm, llmrouter
from locus.errors import ConfigError, DataError

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fixtures_embedllm import write_embedllm_fixture  # noqa: E402

LLMROUTER_DIR = Path(__file__).resolve().parents[2] / "shared" / "data" / "llmrouter-dc"


def _valid(result, duplicates="error", split_overlap="error") -> canonical.EvalData:
    queries, models, scores = result
    return canonical.validate(queries, models, scores, duplicates=duplicates, split_overlap=split_overlap)


def _without_origin(frames):
    """Adapter frames without the provenance columns (they name the input directory)."""
    return [f.drop(columns=[canonical.ORIGIN, canonical.ORIGIN_ROW], errors="ignore") for f in frames]


# ---------------------------------------------------------------------------------------------
# EmbedLLM
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def embedllm_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("embedllm")
    return write_embedllm_fixture(path, n_models=6, n_prompts=60, seed=0)


def test_embedllm_counts_benchmarks_and_splits(embedllm_dir):
    info = embedllm_dir
    raw = embedllm.build({"dir": str(info.directory)})
    assert len(raw[2]) == info.n_rows  # raw rows: the duplicated GPQA rows are all returned
    data = _valid(raw, duplicates="last")
    assert len(data.models) == 6
    assert data.models["name"].iloc[0] == "Qwen/Qwen1.5-7B-Chat"
    assert len(data.queries) == 60
    assert len(data.scores) == 60 * 6  # dense, the duplicated GPQA rows collapsed
    assert info.n_rows == 60 * 6 + 6
    assert set(data.queries["benchmark"]) == {
        "MathQA",
        "LogiQA",
        "MedMCQA",
        "PIQA",
        "TruthfulQA",
        "MMLU",
        "GSM8K",
        "GPQA",
        "ASDiv",
        "SocialIQA",
    }
    q = data.queries.set_index("prompt_id")
    assert q["split"].to_dict() == info.split_of
    assert q["category"].to_dict() == info.category_of  # raw label, first row for the duplicated prompt
    assert q["benchmark"].to_dict() == info.benchmark_of
    assert q.loc[info.dup_prompt_id, "category"] == "gpqa_main_zeroshot"
    assert q.loc[0, "prompt"].startswith("Question 0:") and "\n" in q.loc[0, "prompt"]


@pytest.mark.parametrize("policy, expected", [("last", 0.0), ("max", 1.0), ("mean", 0.5)])
def test_embedllm_duplicate_policies(embedllm_dir, policy, expected):
    assert embedllm_dir.dup_labels == (1, 0)
    scores = _valid(embedllm.build({"dir": str(embedllm_dir.directory)}), duplicates=policy).scores
    row = scores[(scores["prompt_id"] == embedllm_dir.dup_prompt_id) & (scores["model_id"] == 0)]
    assert row["score"].tolist() == [expected]


def test_embedllm_duplicates_error_names_file_and_rows(embedllm_dir):
    with pytest.raises(
        DataError,
        match=r"train.csv: 6 \(prompt, model\) pair\(s\) have more than one score.*"
        r"prompt_id 3 .* x model_id 0 .*train.csv rows \d+, \d+",
    ):
        _valid(embedllm.build({"dir": str(embedllm_dir.directory)}), duplicates="error")


def test_embedllm_prompt_id_in_two_split_files(tmp_path):
    write_embedllm_fixture(tmp_path, n_prompts=24)
    val = pd.read_csv(tmp_path / "val.csv")
    moved = val[val["prompt_id"] == val["prompt_id"].iloc[0]].assign(label=1)
    pd.concat([pd.read_csv(tmp_path / "test.csv"), moved]).to_csv(tmp_path / "test.csv", index=False)
    pid = int(moved["prompt_id"].iloc[0])
    for policy in ("error", "keep_all"):
        with pytest.raises(DataError, match=rf"1 prompt_id\(s\) are listed in more than one.*{pid} in val/test"):
            embedllm.build({"dir": str(tmp_path), "split_overlap": policy})
    data = _valid(embedllm.build({"dir": str(tmp_path), "split_overlap": "keep_test"}), duplicates="last")
    assert data.queries.set_index("prompt_id").loc[pid, "split"] == "test"
    assert data.scores.loc[data.scores["prompt_id"] == pid, "score"].tolist() == [1.0] * 6  # test.csv's rows
    data = _valid(embedllm.build({"dir": str(tmp_path), "split_overlap": "keep_train"}), duplicates="last")
    assert data.queries.set_index("prompt_id").loc[pid, "split"] == "val"
    with pytest.raises(ConfigError, match="split_overlap"):
        embedllm.build({"dir": str(tmp_path), "split_overlap": "both"})


def test_embedllm_reads_text_as_written(tmp_path):
    info = write_embedllm_fixture(tmp_path, n_prompts=24)
    df = pd.read_csv(tmp_path / "train.csv")
    df.loc[df["prompt_id"] == 0, "prompt"] = "None"
    df.loc[df["prompt_id"] == 1, "prompt"] = "NA"
    df.to_csv(tmp_path / "train.csv", index=False)
    q = _valid(embedllm.build({"dir": str(info.directory)}), duplicates="last").queries.set_index("prompt_id")
    assert q.loc[0, "prompt"] == "None" and q.loc[1, "prompt"] == "NA"
    with open(tmp_path / "val.csv", "a") as fh:
        fh.write("1,2,x,1,text,3,MMLU,extra\n")
    with pytest.raises(DataError, match=r"val.csv: ragged row \(row \d+ has 8 fields, the header 7\)"):
        embedllm.build({"dir": str(tmp_path)})


def test_embedllm_chunked_read_equals_whole_read(embedllm_dir):
    whole = embedllm.build({"dir": str(embedllm_dir.directory), "chunksize": 10_000})  # origin rows included
    chunked = embedllm.build({"dir": str(embedllm_dir.directory), "chunksize": 7})
    for a, b in zip(whole, chunked):
        pd.testing.assert_frame_equal(a, b)


def test_embedllm_maps_model_names_when_model_id_missing(tmp_path, embedllm_dir):
    write_embedllm_fixture(tmp_path, model_id_column=False, name_style="org__name")
    assert "model_id" not in pd.read_csv(tmp_path / "val.csv", nrows=0).columns
    got = embedllm.build({"dir": str(tmp_path)})
    ref = embedllm.build({"dir": str(embedllm_dir.directory)})
    for a, b in zip(_without_origin(got), _without_origin(ref)):
        pd.testing.assert_frame_equal(a, b)


def test_embedllm_errors(tmp_path):
    with pytest.raises(DataError, match="download: true"):
        embedllm.build({"dir": str(tmp_path)})
    write_embedllm_fixture(tmp_path)
    with pytest.raises(ConfigError, match="unknown parameter"):
        embedllm.build({"dir": str(tmp_path), "splits": "x"})
    df = pd.read_csv(tmp_path / "test.csv")
    df.loc[3, "label"] = 7
    df.to_csv(tmp_path / "test.csv", index=False)
    with pytest.raises(DataError, match=r"test.csv: column 'label'.*row\(s\) \[5\]"):
        embedllm.build({"dir": str(tmp_path)})
    df.loc[3, "label"] = 1
    df.loc[4, "model_id"] = np.nan
    df.loc[4, "model_name"] = "someone/unknown-model"
    df.to_csv(tmp_path / "test.csv", index=False)
    with pytest.raises(DataError, match="someone/unknown-model"):
        embedllm.build({"dir": str(tmp_path)})


def test_benchmark_of_merges_subcategories():
    assert embedllm.benchmark_of("mmlu_high_school_physics") == "MMLU"
    assert embedllm.benchmark_of("GPQA_diamond_cot_n_shot") == "GPQA"
    assert embedllm.benchmark_of("TruthfulQA_MC1") == "TruthfulQA"
    assert embedllm.benchmark_of("social_iqa") == "SocialIQA"
    assert embedllm.benchmark_of("medmcqa") == "MedMCQA"
    assert embedllm.benchmark_of("hellaswag") is None


# ---------------------------------------------------------------------------------------------
# bring-your-own CSV
# ---------------------------------------------------------------------------------------------
def _evals(n_prompts=30, models=("zeta", "alpha", "mid")) -> pd.DataFrame:
    rng = np.random.default_rng(1)
    rows = [
        {"prompt": f"q{i} text", "model": m, "score": float(rng.integers(0, 2))}
        for i in range(n_prompts)
        for m in models
    ]
    return pd.DataFrame(rows)


def test_csv_ids_and_drawn_splits(tmp_path):
    path = tmp_path / "evals.csv"
    _evals().to_csv(path, index=False)
    q, m, s = csv_source.build({"path": str(path), "seed": 3})
    _valid((q, m, s))
    assert m["name"].tolist() == ["alpha", "mid", "zeta"]  # sorted names
    assert q["prompt"].tolist()[:3] == ["q0 text", "q1 text", "q2 text"]  # first appearance
    assert set(q["benchmark"]) == {"all"} and set(q["category"]) == {"all"}
    assert q["split"].value_counts().to_dict() == {"train": 24, "val": 3, "test": 3}
    again = csv_source.build({"path": str(path), "seed": 3})[0]
    assert again["split"].tolist() == q["split"].tolist()
    other = csv_source.build({"path": str(path), "seed": 4})[0]
    assert other["split"].tolist() != q["split"].tolist()
    _, m2, _ = csv_source.build({"path": str(path), "model_order": "appearance"})
    assert m2["name"].tolist() == ["zeta", "alpha", "mid"]


def test_csv_given_columns_and_parquet(tmp_path):
    df = _evals(6)
    df["benchmark"] = ["A" if i < 3 else "B" for i in df["prompt"].str[1:2].astype(int)]
    df["category"] = df["benchmark"].str.lower() + "_sub"
    df["split"] = df["prompt"].map(
        {
            "q0 text": "train",
            "q1 text": "train",
            "q2 text": "val",
            "q3 text": "test",
            "q4 text": "train",
            "q5 text": "TEST",
        }
    )
    df = pd.concat([df, df.iloc[[0]].assign(score=0.25)], ignore_index=True)  # one duplicate pair
    path = tmp_path / "evals.parquet"
    df.to_parquet(path)
    q, m, s = csv_source.build({"path": str(path)})
    with pytest.raises(DataError, match=r"evals.parquet: 1 \(prompt, model\) pair.*rows 0, 18"):
        _valid((q, m, s))
    data = _valid((q, m, s), duplicates="mean")
    s = data.scores
    assert data.queries["split"].tolist() == ["train", "train", "val", "test", "train", "test"]
    assert data.queries["benchmark"].tolist() == ["A", "A", "A", "B", "B", "B"]
    assert data.queries["category"].iloc[0] == "a_sub"
    first = df.iloc[0]
    mid = m.set_index("name").loc[first["model"], "model_id"]
    assert s[(s["prompt_id"] == 0) & (s["model_id"] == mid)]["score"].item() == pytest.approx(
        (first["score"] + 0.25) / 2
    )


def test_csv_model_columns(tmp_path):
    """params_b, family and held_out (like cost) are one value per model, empty cells filled from its other rows."""
    df = _evals(4)
    info = {"zeta": (70, "llama", "1"), "alpha": (7, "qwen", "false"), "mid": (13.5, "llama", "0")}
    for i, column in enumerate(("params_b", "family", "held_out")):
        df[column] = [str(info[m][i]) for m in df["model"]]
    df.loc[0, ["params_b", "family", "held_out"]] = ""  # zeta's first row: given by its other rows
    path = tmp_path / "evals.csv"
    df.to_csv(path, index=False)
    m = _valid(csv_source.build({"path": str(path)})).models.set_index("name")
    assert m["params_b"].to_dict() == {"alpha": 7.0, "mid": 13.5, "zeta": 70.0}
    assert m["family"].to_dict() == {"alpha": "qwen", "mid": "llama", "zeta": "llama"}
    assert m["held_out"].to_dict() == {"alpha": 0, "mid": 0, "zeta": 1}
    df.loc[1, "held_out"] = "maybe"
    df.to_csv(path, index=False)
    with pytest.raises(DataError, match=r"column 'held_out' must be 0 or 1.*'maybe'.*row\(s\) 3\b"):
        csv_source.build({"path": str(path)})
    df.loc[1, "held_out"] = "0"
    df.loc[4, "family"] = "gemma"  # alpha's second row disagrees with its first
    df.to_csv(path, index=False)
    with pytest.raises(DataError, match=r"'family' must be constant per model, but model 'alpha' has 2 values"):
        csv_source.build({"path": str(path)})


@pytest.mark.parametrize(
    "mutate, pattern",
    [
        (lambda df: df.drop(columns="score"), r"missing column\(s\) \['score'\]"),
        (lambda df: df.assign(score=df["score"].where(df.index != 4, 1.5)), r"'score'.*row\(s\) 6\b"),
        (lambda df: df.assign(score=df["score"].where(df.index != 2, np.nan)), r"'score'.*row\(s\) 4\b"),
        (
            lambda df: df.assign(split=np.where(df.index == 0, "dev", "train")),
            r"unknown value\(s\) \['dev'\].*row\(s\) 2\b",
        ),
        (lambda df: df.assign(model=df["model"].where(df.index != 7, None)), r"'model' is empty in CSV row\(s\) 9\b"),
    ],
)
def test_csv_errors_name_file_row_and_column(tmp_path, mutate, pattern):
    path = tmp_path / "bad.csv"
    mutate(_evals()).to_csv(path, index=False)
    with pytest.raises(DataError, match=pattern) as err:
        csv_source.build({"path": str(path)})
    assert "bad.csv" in str(err.value)


def test_csv_empty_and_conflicting_files(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(DataError, match="empty.csv: the file is empty"):
        csv_source.build({"path": str(empty)})
    header = tmp_path / "header.csv"
    header.write_text("prompt,model,score\n")
    with pytest.raises(DataError, match="no data rows"):
        csv_source.build({"path": str(header)})
    with pytest.raises(ConfigError, match="path"):
        csv_source.build({})
    with pytest.raises(ConfigError, match="data-set options"):
        csv_source.build({"path": str(header), "duplicates": "mean"})


def test_csv_cells_are_text_exactly_as_written(tmp_path):
    path = tmp_path / "evals.csv"
    path.write_text(
        "prompt,model,score\n"
        + "".join(
            f"{p},{m},{v}\n"
            for p, v in (
                ("01", "true"),
                ("1", "FALSE"),
                ("1.0", "1"),
                ("None", "0.5"),
                ("NA", "True"),
                ("null", "0"),
                (' "spaced" ', "false"),
            )
            for m in ("7", "07", "7.0")
        ),
        encoding="utf-8",
    )
    q, m, s = csv_source.build({"path": str(path), "model_order": "appearance"})
    assert q["prompt"].tolist() == ["01", "1", "1.0", "None", "NA", "null", ' "spaced" ']
    assert m["name"].tolist() == ["7", "07", "7.0"]
    assert s["score"].tolist()[::3] == [1.0, 0.0, 1.0, 0.5, 1.0, 0.0, 0.0]


def test_csv_ragged_rows_are_reported_by_line(tmp_path):
    path = tmp_path / "ragged.csv"
    path.write_text('prompt,model,score\n"two\nlines",a,1\nq2,a\nq3,a,1,extra\nq4,a,1\n')
    with pytest.raises(
        DataError,
        match=r"ragged.csv: 2 ragged row\(s\) with the wrong number of fields: line 4 has 2, "
        r"line 5 has 4; the header has 3 \(prompt,model,score\)\. Put double quotes",
    ):
        csv_source.build({"path": str(path)})


@pytest.mark.parametrize(
    "content, pattern",
    [
        (b"prompt,model,score\n\xff\xfe,a,1\n", r"bad.csv: is not UTF-8 text"),
        (b"prompt,model,score,model\nq,a,1,b\n", r"bad.csv: column name\(s\) \['model'\] appear more than once"),
        (
            b"Prompt,model,score\nq,a,1\n",
            r"missing column\(s\) \['prompt'\].*found 'Prompt': write the names in lower case",
        ),
        (b"prompt,model,score\nq,a,\n", r"'score' must be a number in \[0, 1\].*CSV row\(s\) 2 \(header = row 1\): ''"),
        (b"prompt,model,score\n  ,a,1\n", r"'prompt' is empty in CSV row\(s\) 2"),
    ],
)
def test_csv_reading_errors(tmp_path, content, pattern):
    path = tmp_path / "bad.csv"
    path.write_bytes(content)
    with pytest.raises(DataError, match=pattern):
        csv_source.build({"path": str(path)})


def test_csv_bom_and_gzip(tmp_path):
    import gzip

    text = "prompt,model,score\n" + "".join(f"q{i},m,{i % 2}\n" for i in range(10))
    (tmp_path / "bom.csv").write_bytes(b"\xef\xbb\xbf" + text.encode())
    with gzip.open(tmp_path / "z.csv.gz", "wt") as fh:
        fh.write(text)
    a = csv_source.build({"path": str(tmp_path / "bom.csv")})
    b = csv_source.build({"path": str(tmp_path / "z.csv.gz")})
    for x, y in zip(_without_origin(a), _without_origin(b)):
        pd.testing.assert_frame_equal(x, y)


# ---------------------------------------------------------------------------------------------
# `locus data`: the data-set options are applied once, for every source
# ---------------------------------------------------------------------------------------------
def _locus(*argv) -> int:
    from locus.cli import main

    return main(list(argv))


def _duplicated_csv(tmp_path):
    path = tmp_path / "dup.csv"
    rows = [
        "prompt,model,score,split",
        "q0,a,1,train",
        "q0,b,0,train",
        "q1,a,0,val",
        "q1,b,1,val",
        "q2,a,1,test",
        "q2,b,1,test",
        "q0,a,0,train",
        "q0,a,0.5,train",
    ]  # (q0, a) three times: 1, 0, 0.5
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.mark.parametrize("policy, expected", [("last", 0.5), ("max", 1.0), ("mean", 0.5)])
def test_data_command_duplicates_policy_on_csv(tmp_path, policy, expected):
    path = _duplicated_csv(tmp_path)
    assert (
        _locus("data", "csv", "--out", str(tmp_path / "d"), "--params", f'{{"path": "{path}"}}', "--duplicates", policy)
        == 0
    )
    s = canonical.read_dataset(tmp_path / "d").scores
    assert s.query("prompt_id == 0 and model_id == 0")["score"].item() == pytest.approx(expected)
    assert len(s) == 6


def test_data_command_duplicates_error_names_file_and_rows(tmp_path, capsys):
    path = _duplicated_csv(tmp_path)
    argv = ["data", "csv", "--out", str(tmp_path / "d"), "--params"]
    assert _locus(*argv, f'{{"path": "{path}", "duplicates": "error"}}') == 2
    err = capsys.readouterr().err
    assert "dup.csv: 1 (prompt, model) pair(s) have more than one score" in err
    assert "prompt_id 0 ('q0') x model_id 0 ('a'): 3 rows (" in err and "dup.csv rows 2, 8, 9)" in err
    assert not (tmp_path / "d").exists()
    # the data set's own parameter wins over the command-line flag
    assert _locus(*argv, f'{{"path": "{path}", "duplicates": "error"}}', "--duplicates", "max") == 2
    assert _locus(*argv, f'{{"path": "{path}", "duplicates": "max"}}', "--duplicates", "error") == 0


def test_data_command_split_overlap_and_source_defaults(tmp_path, capsys):
    path = tmp_path / "overlap.csv"
    path.write_text("prompt,model,score,split\nq0,a,1,train\nq1,a,0,train\nq2,a,1,val\nq3,a,1,test\nq0,a,0,test\n")
    out = str(tmp_path / "d")
    params = f'{{"path": "{path}"}}'
    assert _locus("data", "csv", "--out", out, "--params", params) == 2
    assert "overlap.csv: 1 prompt text(s) occur in more than one split" in capsys.readouterr().err
    assert _locus("data", "csv", "--out", out, "--params", params, "--split-overlap", "keep_test") == 0
    q = canonical.read_dataset(out).queries
    assert q.loc[q["prompt"] == "q0", "split"].tolist() == ["test"]
    assert canonical.atomic.read_manifest(out, canonical.MANIFEST)["options"] == {
        "duplicates": "last",
        "split_overlap": "keep_test",
    }
    assert _locus("data", "llmrouter", "--out", out, "--params", '{"drop_test_overlap": false}') == 2
    assert "drop_test_overlap is now the data-set option split_overlap" in capsys.readouterr().err


def test_data_command_options_agree_with_canonical():
    from locus.commands import data as data_command

    assert {k: tuple(v) for k, v in data_command.OPTION_CHOICES.items()} == canonical.DATASET_OPTIONS
    assert data_command.OPTION_DEFAULTS == {
        "duplicates": canonical.DEFAULT_DUPLICATE_POLICY,
        "split_overlap": canonical.DEFAULT_SPLIT_OVERLAP,
    }


# ---------------------------------------------------------------------------------------------
# LLMRouter DC (real data, present only on the development machines)
# ---------------------------------------------------------------------------------------------
SPEC_MEANS = {  # all 6,108 items, fractional scores kept (data-and-encoders.md, section C)
    "llama3-chatqa-1.5-8b": 0.173,
    "llama3-chatqa-1.5-70b": 0.200,
    "codegemma-7b": 0.298,
    "mistral-7b-instruct-v0.3": 0.363,
    "qwen2.5-7b-instruct": 0.512,
    "gemma-2-9b-it": 0.528,
    "llama-3.1-8b-instruct": 0.556,
    "llama-3.3-nemotron-super-49b-v1": 0.573,
    "llama-3.1-nemotron-51b-instruct": 0.617,
}


@pytest.fixture(scope="module")
def llmrouter_dir():
    if not (LLMROUTER_DIR / "train.json").is_file():
        pytest.skip(f"LLMRouter DC copy not found at {LLMROUTER_DIR} (only on the development machines)")
    return LLMROUTER_DIR


def test_llmrouter_all_items(llmrouter_dir):
    data = _valid(llmrouter.build({"dir": str(llmrouter_dir)}), split_overlap="keep_all")
    assert len(data.models) == 9 and len(data.queries) == 6108
    assert data.queries["benchmark"].nunique() == 14
    assert len(data.scores) == 9 * 6108
    split = data.queries.set_index("prompt_id")["split"]
    assert (split != "test").sum() == 5608 and (split == "test").sum() == 500
    assert (split == "val").sum() == 561
    means = data.scores.groupby("model_id")["score"].mean()
    for mid, name in zip(data.models["model_id"], data.models["name"]):
        assert means[mid] == pytest.approx(SPEC_MEANS[name], abs=1e-3), name
    per_task = data.queries.groupby("benchmark").size()
    assert per_task["mmlu"] == 494 + 50 and per_task["openbook_qa"] == 500 and per_task["arc_challenge"] == 500


def test_llmrouter_defaults_drop_overlap_and_binarize(llmrouter_dir):
    q, m, s = llmrouter.build({"dir": str(llmrouter_dir)})
    assert llmrouter.DATASET_DEFAULTS == {"split_overlap": "keep_train"}
    data = _valid((q, m, s), split_overlap="keep_train")
    test = data.split_queries("test")
    assert len(test) == 500 - 119
    assert not set(test["prompt"]) & set(data.queries.loc[data.queries["split"] != "test", "prompt"])
    assert ((s["score"] > 0) & (s["score"] < 1)).any()  # soft targets kept by default
    again = llmrouter.build({"dir": str(llmrouter_dir)})[0]
    assert again["split"].tolist() == q["split"].tolist()
    _, _, sb = llmrouter.build({"dir": str(llmrouter_dir), "binarize": True})
    assert set(sb["score"].unique()) == {0.0, 1.0}
    assert ((sb["score"] == 1) == (s["score"] >= 0.5)).all()


def test_llmrouter_missing_dir_names_files(tmp_path):
    with pytest.raises(DataError, match="train.json.*download: true"):
        llmrouter.build({"dir": str(tmp_path)})


# ---------------------------------------------------------------------------------------------
# download helper, against a local HTTP server
# ---------------------------------------------------------------------------------------------
PAYLOAD = bytes(range(256)) * 40  # 10,240 bytes


class _Handler(http.server.BaseHTTPRequestHandler):
    files: dict = {}
    log: list = []
    honour_range = True
    cut_after: int | None = None  # send only this many bytes of the body, then close

    def do_GET(self):  # noqa: N802
        name = self.path.lstrip("/")
        self.log.append((name, self.headers.get("Range")))
        if name not in self.files:
            self.send_error(404)
            return
        body = self.files[name]
        start = 0
        rng = self.headers.get("Range")
        if rng and self.honour_range:
            start = int(rng.split("=")[1].split("-")[0])
            if start >= len(body):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(body)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        else:
            self.send_response(200)
        part = body[start:]
        self.send_header("Content-Length", str(len(part)))
        self.end_headers()
        self.wfile.write(part if self.cut_after is None else part[: self.cut_after])

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    _Handler.files = {"data/a.bin": PAYLOAD, "data/b.txt": b"hello\n"}
    _Handler.log = []
    _Handler.honour_range = True
    _Handler.cut_after = None
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()


def test_download_files_and_skip_present(server, tmp_path):
    sha = hashlib.sha256(PAYLOAD).hexdigest()
    paths = download.download_files(
        server,
        ["data/a.bin", "data/b.txt"],
        tmp_path,
        {"a.bin": len(PAYLOAD)},
        expected_sha256={"a.bin": sha},
        progress=False,
    )
    assert [p.name for p in paths] == ["a.bin", "b.txt"]
    assert (tmp_path / "a.bin").read_bytes() == PAYLOAD and (tmp_path / "b.txt").read_bytes() == b"hello\n"
    assert not list(tmp_path.glob("*.part"))
    n = len(_Handler.log)
    download.download_files(server, {"a.bin": "data/a.bin"}, tmp_path, progress=False)
    assert len(_Handler.log) == n  # already present: no request


def test_download_resumes_truncated_part(server, tmp_path):
    (tmp_path / "a.bin.part").write_bytes(PAYLOAD[:3000])
    download.download_files(server, ["data/a.bin"], tmp_path, {"a.bin": len(PAYLOAD)}, progress=False)
    assert _Handler.log == [("data/a.bin", "bytes=3000-")]
    assert (tmp_path / "a.bin").read_bytes() == PAYLOAD


def test_download_restarts_when_server_ignores_range(server, tmp_path):
    _Handler.honour_range = False
    (tmp_path / "a.bin.part").write_bytes(b"x" * 100)
    download.download_files(server, ["data/a.bin"], tmp_path, progress=False)
    assert (tmp_path / "a.bin").read_bytes() == PAYLOAD


def test_download_interrupted_then_resumed(server, tmp_path):
    _Handler.cut_after = 4000
    with pytest.raises(DataError, match="interrupted.*run the same command again"):
        download.download_files(server, ["data/a.bin"], tmp_path, progress=False)
    assert not (tmp_path / "a.bin").exists()
    assert (tmp_path / "a.bin.part").stat().st_size == 4000
    _Handler.cut_after = None
    download.download_files(server, ["data/a.bin"], tmp_path, progress=False)
    assert _Handler.log[-1] == ("data/a.bin", "bytes=4000-")
    assert (tmp_path / "a.bin").read_bytes() == PAYLOAD


def test_download_size_and_checksum_mismatch(server, tmp_path):
    with pytest.raises(DataError, match="announces 10,240 bytes but 999 are expected"):
        download.download_files(server, ["data/a.bin"], tmp_path, {"a.bin": 999}, progress=False)
    assert not (tmp_path / "a.bin").exists()
    with pytest.raises(DataError, match="SHA-256"):
        download.download_files(server, ["data/b.txt"], tmp_path, expected_sha256={"b.txt": "0" * 64}, progress=False)
    assert not (tmp_path / "b.txt").exists() and not (tmp_path / "b.txt.part").exists()
    with pytest.raises(DataError, match="HTTP 404"):
        download.download_files(server, ["data/missing.csv"], tmp_path, progress=False)


def test_download_offline_message_is_quick_and_helpful(tmp_path):
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    start = time.monotonic()
    with pytest.raises(DataError) as err:
        download.download_files(
            f"http://127.0.0.1:{port}/repo/",
            {"train.csv": "train.csv", "val.csv": "v/val.csv"},
            tmp_path / "dest",
            param_hint="the `dir` parameter of the embedllm source",
            progress=False,
        )
    assert time.monotonic() - start < 5
    msg = str(err.value)
    assert "offline" in msg and "train.csv" in msg and "val.csv" in msg and str(tmp_path / "dest") in msg
    assert "`dir` parameter of the embedllm source" in msg


def test_download_part_already_complete(server, tmp_path):
    (tmp_path / "a.bin.part").write_bytes(PAYLOAD)  # server answers 416: nothing left to send
    download.download_files(server, ["data/a.bin"], tmp_path, {"a.bin": len(PAYLOAD)}, progress=False)
    assert (tmp_path / "a.bin").read_bytes() == PAYLOAD and not (tmp_path / "a.bin.part").exists()


# ---------------------------------------------------------------------------------------------
# adapters with `download: true`, served locally (also covers llmrouter where the real copy is absent)
# ---------------------------------------------------------------------------------------------
def _tiny_llmrouter_files() -> dict:
    """A 12-item train / 4-item test LLMRouter-format set: 3 models, 3 tasks, one test text also in
    train, one text listed under mmlu and openbook_qa, model keys in varying order, a partial score."""
    import json

    names = ["m-b", "m-a", "m-c"]
    train, test, qtrain, qtest = [], [], [], []
    for i in range(12):
        task = ("gsm8k", "mmlu", "natural_qa")[i % 3]
        text = f"train question {i}"
        order = names if i % 2 else names[::-1]
        train.append(
            {"question": text, "scores": {n: float((i + k) % 2) for k, n in enumerate(order)}, "cluster_id": i % 3}
        )
        qtrain.append(
            {"task_name": task, "query": text, "ground_truth": "x", "metric": "em_mc", "choices": None, "task_id": i}
        )
    qtrain.append(
        {
            "task_name": "openbook_qa",
            "query": "train question 1",
            "ground_truth": "x",
            "metric": "em_mc",
            "choices": None,
            "task_id": 99,
        }
    )  # also listed under mmlu
    train[0]["scores"]["m-a"] = 2 / 3
    for i in range(4):
        text = "train question 5" if i == 0 else f"test question {i}"
        test.append({"question": text, "scores": {n: float(i % 2) for n in names}})
        if i:
            qtest.append(
                {
                    "task_name": "gsm8k",
                    "query": text,
                    "ground_truth": "y",
                    "metric": "GSM8K",
                    "choices": None,
                    "task_id": i,
                }
            )
    lines = lambda rows: "".join(json.dumps(r) + "\n" for r in rows).encode()  # noqa: E731
    return {
        "train.json": json.dumps(train).encode(),
        "test.json": json.dumps(test).encode(),
        "query_train.jsonl": lines(qtrain),
        "query_test.jsonl": lines(qtest),
    }


def test_llmrouter_download_and_rules_on_tiny_data(server, tmp_path, monkeypatch):
    files = _tiny_llmrouter_files()
    _Handler.files = {f"repo/{rel}": files[name] for name, rel in download.LLMROUTER_FILES.items()}
    monkeypatch.setattr(download, "LLMROUTER_URL", server + "repo/")
    monkeypatch.setattr(download, "LLMROUTER_SIZES", {"train.json": len(files["train.json"])})
    dest = tmp_path / "llmrouter"
    q, m, s = llmrouter.build({"dir": str(dest), "download": True, "val_fraction": 0.25, "seed": 1})
    with pytest.raises(
        DataError,
        match=r"1 prompt text\(s\) occur in more than one split.*'train question 5' in "
        r"val \(prompt_id 5, .*train.json row 5\), test \(prompt_id 12, .*test.json row 0\)",
    ):
        _valid((q, m, s))
    data = _valid((q, m, s), split_overlap="keep_train")
    assert sorted(p.name for p in dest.iterdir()) == sorted(files)
    assert data.models["name"].tolist() == ["m-a", "m-b", "m-c"]  # sorted, whatever the key order
    qq = data.queries.set_index("prompt")
    assert qq.loc["train question 1", "benchmark"] == "openbook_qa"  # non-mmlu task preferred
    assert qq.loc["train question 4", "benchmark"] == "mmlu"
    assert data.queries["split"].value_counts().to_dict() == {"train": 9, "val": 3, "test": 3}  # overlap dropped
    assert not (set(data.split_queries("test")["prompt"]) & set(qq.index[qq["split"] != "test"]))
    ma = data.models.set_index("name").loc["m-a", "model_id"]
    assert data.scores.query("prompt_id == 0 and model_id == @ma", local_dict={"ma": ma})[
        "score"
    ].item() == pytest.approx(2 / 3)
    n_requests = len(_Handler.log)
    full = _valid(llmrouter.build({"dir": str(dest), "download": True}), split_overlap="keep_all")
    assert len(_Handler.log) == n_requests  # files present: nothing fetched again
    assert len(full.split_queries("test")) == 4 and len(full.queries) == 16


def test_embedllm_download_from_mirror(server, tmp_path, monkeypatch):
    src = write_embedllm_fixture(tmp_path / "src", n_prompts=24)
    _Handler.files = {f"rev1/{p.name}": p.read_bytes() for p in src.directory.iterdir()}
    monkeypatch.setattr(download, "EMBEDLLM_URL", server + "{revision}/")
    got = embedllm.build({"dir": str(tmp_path / "dst"), "download": True, "revision": "rev1"})
    ref = embedllm.build({"dir": str(src.directory)})
    for a, b in zip(_without_origin(got), _without_origin(ref)):
        pd.testing.assert_frame_equal(a, b)


def test_summary_shows_the_given_label(tmp_path):
    path = tmp_path / "evals.csv"
    _evals().to_csv(path, index=False)
    out = str(tmp_path / "mine")
    assert _locus("data", "csv", "--out", out, "--params", f'{{"path": "{path}"}}') == 0
    assert _locus("summary", "--data", out, "--out", str(tmp_path / "s.md"), "--label", "My evaluations") == 0
    text = (tmp_path / "s.md").read_text()
    assert text.startswith("# Data summary: My evaluations\n") and "synthetic" not in text.lower()
    assert "- written with: duplicates: last, split_overlap: error" in text
    assert _locus("summary", "--data", out, "--out", str(tmp_path / "t.md")) == 0
    assert (tmp_path / "t.md").read_text().startswith("# Data summary: mine\n")


# ---------------------------------------------------------------------------------------------
# typed parameters: every adapter declares each parameter once and checks it before any work
# ---------------------------------------------------------------------------------------------
def test_every_adapter_declares_each_parameter_with_type_and_doc():
    from locus.params import SOURCES, adapter

    for source in SOURCES:
        module = adapter(source)
        assert set(module.PARAMS) == set(module.DEFAULTS), source
        assert all(p.doc for p in module.PARAMS.values()), source


@pytest.mark.parametrize(
    "source, params, message",
    [
        ("csv", {"path": "x.csv", "seed": "abc"}, "csv: seed must be an integer >= 0, got 'abc'"),
        ("csv", {"path": "x.csv", "seed": -1}, "csv: seed must be an integer >= 0, got -1"),
        ("csv", {"path": "x.csv", "seed": 1.5}, "csv: seed must be an integer >= 0, got 1.5"),
        ("csv", {"path": 5}, "csv: path must be a non-empty text (a file path), got 5"),
        ("csv", {"path": ["a.csv"]}, "csv: path must be a non-empty text (a file path), got ['a.csv']"),
        ("csv", {"path": "x.csv", "split_fractions": [1, "a", 0]}, "split_fractions must be a list of 3 numbers"),
        ("csv", {"path": "x.csv", "model_order": 1}, "model_order must be one of ['sorted', 'appearance'], got 1"),
        ("llmrouter", {"binarize": "yes"}, "llmrouter: binarize must be true or false, got 'yes'"),
        ("llmrouter", {"seed": None}, "llmrouter: seed must be an integer >= 0, got None"),
        ("llmrouter", {"dir": 3}, "llmrouter: dir must be a non-empty text (a file path) or null, got 3"),
        ("embedllm", {"chunksize": 0}, "embedllm: chunksize must be an integer >= 1, got 0"),
        ("embedllm", {"download": 1}, "embedllm: download must be true or false, got 1"),
        ("synthetic", {"seed": "abc"}, "synthetic data: seed must be an integer >= 0, got 'abc'"),
        ("synthetic", {"n_models": 113}, "synthetic data: n_models must be an integer >= 1 and <= 112, got 113"),
        ("synthetic", {"duplicates": "first"}, "duplicates must be one of"),
        ("synthetic", [1], "parameters must be a mapping"),
    ],
)
def test_bad_adapter_parameter_is_one_line_before_any_work(source, params, message):
    from locus.params import source_params

    with pytest.raises(ConfigError) as info:
        source_params(source, params)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_data_command_refuses_a_bad_seed_without_reading_the_file(tmp_path, capsys):
    from locus.cli import main

    out = tmp_path / "out"
    rc = main(["data", "csv", "--out", str(out), "--params", '{"path": "missing.csv", "seed": "abc"}'])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and "seed must be an integer >= 0, got 'abc'" in err
    assert not out.exists()


def test_a_very_long_prompt_is_valid(tmp_path):
    """A 200,000-character prompt (beyond Python's csv default field limit of 131,072) is read as written."""
    from locus.data import csv_source

    long = "x" * 200_000
    path = tmp_path / "evals.csv"
    rows = [f"{long if i == 0 else f'q{i}'},m{j},{(i + j) % 2}" for i in range(12) for j in range(2)]
    path.write_text("prompt,model,score\n" + "\n".join(rows) + "\n", encoding="utf-8")
    queries, _, _ = csv_source.build({"path": str(path)})
    assert long in set(queries["prompt"]) and csv_source.FIELD_SIZE_LIMIT >= 2**20


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("codegemma-7b", 7.0),
        ("gemma-2-9b-it", 9.0),
        ("llama-3.1-nemotron-51b-instruct", 51.0),
        ("llama3-chatqa-1.5-70b", 70.0),
        ("Qwen/Qwen1.5-0.5B-Chat", 0.5),
        ("gpt-4o", None),
    ],
)
def test_llmrouter_parameter_count_from_the_model_name(name, params):
    got = llmrouter.params_from_name(name)
    assert np.isnan(got) if params is None else got == params
