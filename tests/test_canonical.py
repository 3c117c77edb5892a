"""The canonical data format: every documented bad input gives its documented error, nothing is written."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from locus.data.canonical import pairs_to_matrix, read_dataset, resolve_duplicates, validate, write_dataset
from locus.errors import DataError


def tiny_frames():
    queries = pd.DataFrame({
        "prompt_id": [0, 1, 2, 3, 4, 5],
        "prompt": [f"question {i}" for i in range(6)],
        "benchmark": ["A", "A", "B", "B", "A", "B"],
        "category": ["a1", "a2", "B", "B", "a1", "B"],
        "split": ["train", "train", "train", "val", "test", "test"],
    })
    models = pd.DataFrame({"model_id": [0, 1], "name": ["m0", "m1"], "params_b": [7.0, 13.0]})
    scores = pd.DataFrame({
        "prompt_id": [0, 1, 2, 3, 4, 5, 0, 2, 3, 5],
        "model_id": [0, 0, 0, 0, 0, 0, 1, 1, 1, 1],  # model 1 is partially evaluated
        "score": [1, 0, 1, 1, 0, 1, 0.5, 1, 0, 1],
    })
    return queries, models, scores


def test_round_trip_and_partial_evaluations(tmp_path):
    q, m, s = tiny_frames()
    write_dataset(tmp_path / "d", q, m, s)
    data = read_dataset(tmp_path / "d")
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == ["models.parquet", "queries.parquet", "scores.parquet"]
    labels = data.label_matrix([0, 1, 4], [0, 1])
    assert labels[0].tolist() == [1.0, 0.5]
    assert labels[1, 0] == 0.0 and np.isnan(labels[1, 1])  # missing pair stays missing, never 0
    assert np.isnan(labels[2, 1])
    assert data.split_queries("test")["prompt_id"].tolist() == [4, 5]
    assert len(data.split_scores("train")) == 5


def _expect(tmp_path, frames, match):
    with pytest.raises(DataError, match=match):
        write_dataset(tmp_path / "out", *frames)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir()), "nothing may be written"


def test_missing_column(tmp_path):
    q, m, s = tiny_frames()
    _expect(tmp_path, (q.drop(columns="benchmark"), m, s), r"queries.parquet: missing column\(s\) \['benchmark'\]")


def test_score_out_of_range_and_nan(tmp_path):
    q, m, s = tiny_frames()
    s.loc[3, "score"] = 1.5
    _expect(tmp_path, (q, m, s), r"scores.parquet: column 'score' must be a number in \[0, 1\]; 1 row\(s\).*prompt_id=3, model_id=0, score=1.5")
    s.loc[3, "score"] = np.nan
    _expect(tmp_path, (q, m, s), r"NaN or out of range.*row 3")


def test_duplicates_policies(tmp_path):
    q, m, s = tiny_frames()
    s = pd.concat([s, pd.DataFrame({"prompt_id": [0], "model_id": [1], "score": [1.0]})], ignore_index=True)
    with pytest.raises(DataError, match=r"1 duplicate \(prompt_id, model_id\) pair\(s\), e.g. \(prompt_id=0, model_id=1\)"):
        validate(q, m, s, duplicates="error")
    last = validate(q, m, s, duplicates="last").label_matrix([0], [1])[0, 0]
    mean = validate(q, m, s, duplicates="mean").label_matrix([0], [1])[0, 0]
    high = validate(q, m, s, duplicates="max").label_matrix([0], [1])[0, 0]
    assert (last, mean, high) == (1.0, 0.75, 1.0)
    first_wins = resolve_duplicates(pd.concat([s, s.iloc[[6]]]), "last")
    assert len(first_wins) == len(s) - 1


def test_unknown_split(tmp_path):
    q, m, s = tiny_frames()
    q.loc[2, "split"] = "dev"
    _expect(tmp_path, (q, m, s), r"column 'split' has unknown value\(s\) \['dev'\] in 1 row\(s\), prompt_id 2; allowed: train, val, test")


def test_empty_split(tmp_path):
    q, m, s = tiny_frames()
    q.loc[3, "split"] = "train"
    _expect(tmp_path, (q, m, s), r"split 'val' has no queries")


def test_model_without_scores(tmp_path):
    q, m, s = tiny_frames()
    m = pd.concat([m, pd.DataFrame({"model_id": [7], "name": ["lonely"], "params_b": [1.0]})])
    _expect(tmp_path, (q, m, s), r"models.parquet: 1 model\(s\) have no scores in scores.parquet: 7 \(lonely\)")


def test_unknown_prompt_and_model_ids(tmp_path):
    q, m, s = tiny_frames()
    s2 = pd.concat([s, pd.DataFrame({"prompt_id": [99], "model_id": [0], "score": [1.0]})])
    _expect(tmp_path, (q, m, s2), r"refer to prompt_id\(s\) not in queries.parquet: 99")
    s3 = pd.concat([s, pd.DataFrame({"prompt_id": [0], "model_id": [5], "score": [1.0]})])
    _expect(tmp_path, (q, m, s3), r"refer to model_id\(s\) not in models.parquet: 5")


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(DataError, match="data set directory does not exist"):
        read_dataset(tmp_path / "nope")
    q, m, s = tiny_frames()
    write_dataset(tmp_path / "d", q, m, s)
    (tmp_path / "d" / "scores.parquet").unlink()
    with pytest.raises(DataError, match=r"scores.parquet: file missing.*found: models.parquet, queries.parquet"):
        read_dataset(tmp_path / "d")


def test_failed_write_keeps_previous_files(tmp_path):
    q, m, s = tiny_frames()
    write_dataset(tmp_path / "d", q, m, s)
    before = (tmp_path / "d" / "scores.parquet").read_bytes()
    bad = s.copy()
    bad.loc[0, "score"] = -1
    with pytest.raises(DataError):
        write_dataset(tmp_path / "d", q, m, bad)
    assert (tmp_path / "d" / "scores.parquet").read_bytes() == before
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == ["models.parquet", "queries.parquet", "scores.parquet"]


def test_pairs_to_matrix_ignores_unrequested():
    pairs = pd.DataFrame({"prompt_id": [1, 2, 9], "model_id": [0, 1, 0], "score": [1.0, 0.0, 1.0]})
    mat = pairs_to_matrix(pairs, [2, 1], [1, 0])
    assert mat[0, 0] == 0.0 and mat[1, 1] == 1.0 and np.isnan(mat[0, 1])
