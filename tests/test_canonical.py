"""The canonical data format: every documented bad input gives its documented error, nothing is written."""

from __future__ import annotations

import os
import stat

import numpy as np
import pandas as pd
import pytest

from locus import atomic
from locus.data import canonical
from locus.data.canonical import pairs_to_matrix, read_dataset, resolve_duplicates, validate, write_dataset
from locus.errors import ConfigError, DataError

SET = ["dataset.json", "models.parquet", "queries.parquet", "scores.parquet"]


def tiny_frames():
    queries = pd.DataFrame(
        {
            "prompt_id": [0, 1, 2, 3, 4, 5],
            "prompt": [f"question {i}" for i in range(6)],
            "benchmark": ["A", "A", "B", "B", "A", "B"],
            "category": ["a1", "a2", "B", "B", "a1", "B"],
            "split": ["train", "train", "train", "val", "test", "test"],
        }
    )
    models = pd.DataFrame({"model_id": [0, 1], "name": ["m0", "m1"], "params_b": [7.0, 13.0]})
    scores = pd.DataFrame(
        {
            "prompt_id": [0, 1, 2, 3, 4, 5, 0, 2, 3, 5],
            "model_id": [0, 0, 0, 0, 0, 0, 1, 1, 1, 1],  # model 1 is partially evaluated
            "score": [1, 0, 1, 1, 0, 1, 0.5, 1, 0, 1],
        }
    )
    return queries, models, scores


def test_round_trip_and_partial_evaluations(tmp_path):
    q, m, s = tiny_frames()
    write_dataset(tmp_path / "d", q, m, s)
    data = read_dataset(tmp_path / "d")
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == SET
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
    _expect(
        tmp_path,
        (q, m, s),
        r"scores.parquet: column 'score' must be a number in \[0, 1\]; 1 row\(s\).*prompt_id=3, model_id=0, score=1.5",
    )
    s.loc[3, "score"] = np.nan
    _expect(tmp_path, (q, m, s), r"NaN, infinite, text or out of range.*row 3 \(prompt_id=3, model_id=0, score=nan\)")


def test_duplicates_policies(tmp_path):
    q, m, s = tiny_frames()
    s = pd.concat([s, pd.DataFrame({"prompt_id": [0], "model_id": [1], "score": [1.0]})], ignore_index=True)
    with pytest.raises(
        DataError,
        match=r"1 \(prompt, model\) pair\(s\) have more than one score, e.g. prompt_id 0 "
        r"\('question 0'\) x model_id 1 \('m1'\): 2 rows",
    ):
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
    _expect(
        tmp_path,
        (q, m, s),
        r"column 'split' has unknown value\(s\) \['dev'\] in 1 row\(s\), prompt_id 2; allowed: train, val, test",
    )


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
    with pytest.raises(
        DataError,
        match=r"scores.parquet: file missing.*found: dataset.json, models.parquet, queries.parquet\)\. Rebuild",
    ):
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
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == SET


def test_pairs_to_matrix_ignores_unrequested():
    pairs = pd.DataFrame({"prompt_id": [1, 2, 9], "model_id": [0, 1, 0], "score": [1.0, 0.0, 1.0]})
    mat = pairs_to_matrix(pairs, [2, 1], [1, 0])
    assert mat[0, 0] == 0.0 and mat[1, 1] == 1.0 and np.isnan(mat[0, 1])


# ----------------------------------------------------------------------------------------------
# the data set is written as one set: a manifest ties the three files together
# ----------------------------------------------------------------------------------------------
def test_mixed_generations_are_refused(tmp_path):
    q, m, s = tiny_frames()
    write_dataset(tmp_path / "d", q, m, s)
    old_scores = (tmp_path / "d" / "scores.parquet").read_bytes()
    write_dataset(tmp_path / "d", q, m, s.assign(score=1.0))
    (tmp_path / "d" / "scores.parquet").write_bytes(old_scores)  # a file of the previous write
    with pytest.raises(
        DataError,
        match=r"scores.parquet differs from the version recorded in dataset.json.*"
        r"Rebuild the data set",
    ):
        read_dataset(tmp_path / "d")
    (tmp_path / "d" / "dataset.json").write_text("{not json")
    with pytest.raises(DataError, match=r"dataset.json: manifest is not readable JSON.*Rebuild"):
        read_dataset(tmp_path / "d")
    (tmp_path / "d" / "dataset.json").unlink()  # no manifest (hand-made or older locus): read unchecked
    assert read_dataset(tmp_path / "d").scores["score"].tolist() == validate(q, m, s).scores["score"].tolist()


def test_interrupted_write_is_refused_and_leaves_no_temporaries(tmp_path, monkeypatch):
    q, m, s = tiny_frames()
    write_dataset(tmp_path / "d", q, m, s)
    real_replace, calls = os.replace, []

    def replace_then_die(src, dst):  # the process dies after the manifest and one file were renamed
        calls.append(dst)
        if len(calls) > 2:
            raise KeyboardInterrupt
        return real_replace(src, dst)

    monkeypatch.setattr(atomic.os, "replace", replace_then_die)
    with pytest.raises(KeyboardInterrupt):
        write_dataset(tmp_path / "d", q.assign(prompt=q["prompt"] + "?"), m, s.assign(score=0.0))
    monkeypatch.undo()
    assert [os.path.basename(c) for c in calls[:2]] == ["dataset.json", "queries.parquet"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d"]
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == SET  # no staging leftovers
    with pytest.raises(DataError, match=r"differs from the version recorded in dataset.json"):
        read_dataset(tmp_path / "d")


def test_new_directory_appears_whole_or_not_at_all(tmp_path, monkeypatch):
    q, m, s = tiny_frames()

    def broken(self, *args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(pd.DataFrame, "to_parquet", broken)
    with pytest.raises(OSError):
        write_dataset(tmp_path / "new", q, m, s)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("mask, file_mode, dir_mode", [(0o022, 0o644, 0o755), (0o027, 0o640, 0o750)])
def test_outputs_get_the_umask_permissions(tmp_path, mask, file_mode, dir_mode):
    q, m, s = tiny_frames()
    old = os.umask(mask)
    try:
        write_dataset(tmp_path / "d", q, m, s)
        write_dataset(tmp_path / "d", q, m, s)  # rewrite into the existing directory
        atomic.write_text(tmp_path / "note.txt", "x")
        with atomic.atomic_dir(tmp_path / "run") as tmp:
            (tmp / "a.txt").write_text("a")
    finally:
        os.umask(old)
    mode = lambda p: stat.S_IMODE(p.stat().st_mode)  # noqa: E731
    assert mode(tmp_path / "d") == dir_mode and mode(tmp_path / "run") == dir_mode
    assert {mode(p) for p in (tmp_path / "d").iterdir()} == {file_mode}
    assert mode(tmp_path / "note.txt") == file_mode


def test_atomic_dir_replaces_an_existing_directory(tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "old.txt").write_text("old")
    with atomic.atomic_dir(tmp_path / "run") as tmp:
        (tmp / "new.txt").write_text("new")
    assert [p.name for p in (tmp_path / "run").iterdir()] == ["new.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]
    with pytest.raises(RuntimeError):
        with atomic.atomic_dir(tmp_path / "run") as tmp:
            (tmp / "half.txt").write_text("x")
            raise RuntimeError("failed run")
    assert [p.name for p in (tmp_path / "run").iterdir()] == ["new.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


# ----------------------------------------------------------------------------------------------
# the same prompt text in several splits
# ----------------------------------------------------------------------------------------------
def _overlapping():
    q, m, s = tiny_frames()
    q.loc[5, "prompt"] = "question 0"  # test copy of train prompt 0
    return q, m, s


def test_split_overlap_policies(tmp_path):
    q, m, s = _overlapping()
    _expect(
        tmp_path,
        (q, m, s),
        r"1 prompt text\(s\) occur in more than one split, e.g. 'question 0' in train "
        r"\(prompt_id 0\), test \(prompt_id 5\).*keep_test",
    )
    keep_test = validate(q, m, s, split_overlap="keep_test")
    assert 0 not in keep_test.queries["prompt_id"].tolist() and 0 not in keep_test.scores["prompt_id"].tolist()
    keep_train = validate(q, m, s, split_overlap="keep_train")
    assert 5 not in keep_train.queries["prompt_id"].tolist() and 5 not in keep_train.scores["prompt_id"].tolist()
    assert len(validate(q, m, s, split_overlap="keep_all").queries) == 6
    assert len(validate(q, m, s).queries) == 6  # the reader does not re-check (the writer's option decides)
    data = write_dataset(tmp_path / "d", q, m, s, split_overlap="keep_test")
    assert read_dataset(tmp_path / "d").queries.equals(data.queries)
    assert canonical.pick_split(["train", "val"], "keep_test") == "val"
    assert canonical.pick_split(["test", "val"], "keep_train") == "val"
    with pytest.raises(ConfigError, match="split_overlap must be one of"):
        write_dataset(tmp_path / "e", q, m, s, split_overlap="drop")


# ----------------------------------------------------------------------------------------------
# bad canonical files: each a DataError naming the file, the column, the rows / ids and the fix
# ----------------------------------------------------------------------------------------------
def _write_raw(directory, q, m, s):
    directory.mkdir()
    q.to_parquet(directory / "queries.parquet")
    m.to_parquet(directory / "models.parquet")
    s.to_parquet(directory / "scores.parquet")
    return directory


def _frames_with(change):
    q, m, s = tiny_frames()
    frames = {"q": q, "m": m, "s": s}
    change(frames)
    return frames["q"], frames["m"], frames["s"]


BAD_FILES = [
    (
        "non-integer prompt id",
        lambda f: f["q"].__setitem__("prompt_id", [0, 1, 2, 3, 4, 5.5]),
        r"queries.parquet: column 'prompt_id' must hold whole-number ids.*row 5: 5.5",
    ),
    (
        "NaN model id",
        lambda f: f["s"].__setitem__("model_id", [0, 0, 0, 0, 0, 0, 1, 1, 1, np.nan]),
        r"scores.parquet: column 'model_id' must hold whole-number ids.*row 9: nan",
    ),
    (
        "infinite prompt id",
        lambda f: f["s"].__setitem__("prompt_id", [0, 1, 2, 3, 4, 5, 0, 2, np.inf, 5]),
        r"scores.parquet: column 'prompt_id' must hold whole-number ids.*row 8: inf",
    ),
    (
        "text prompt id",
        lambda f: f["q"].__setitem__("prompt_id", ["0", "1", "2", "x", "4", "5"]),
        r"column 'prompt_id' must hold whole-number ids.*row 3: 'x'",
    ),
    (
        "boolean model id",
        lambda f: f["m"].__setitem__("model_id", [False, True]),
        r"models.parquet: column 'model_id' must hold whole-number ids",
    ),
    (
        "duplicated model names",
        lambda f: f["m"].__setitem__("name", ["m0", "m0"]),
        r"models.parquet: model name\(s\) not unique: \['m0'\] \(model_id 0, 1\)",
    ),
    (
        "missing model name",
        lambda f: f["m"].__setitem__("name", ["m0", None]),
        r"models.parquet: column 'name' is empty in 1 row\(s\), model_id 1",
    ),
    (
        "numeric prompts",
        lambda f: f["q"].__setitem__("prompt", [1, 2, 3, 4, 5, 6]),
        r"queries.parquet: column 'prompt' must hold text, found int.* value\(s\) in 6 row\(s\)",
    ),
    (
        "blank prompt",
        lambda f: f["q"].__setitem__("prompt", ["a", "b", "  ", "d", "e", "f"]),
        r"queries.parquet: column 'prompt' is empty in 1 row\(s\), prompt_id 2",
    ),
    (
        "infinite score",
        lambda f: f["s"].__setitem__("score", [1, 0, 1, np.inf, 0, 1, 0.5, 1, 0, 1]),
        r"scores.parquet: column 'score' must be a number in \[0, 1\].*row 3 \(prompt_id=3, model_id=0, score=inf\)",
    ),
    (
        "text score",
        lambda f: f["s"].__setitem__("score", ["1", "0", "1", "yes", "0", "1", "0.5", "1", "0", "1"]),
        r"column 'score' must be a number in \[0, 1\].*score='yes'",
    ),
    (
        "capitalised split",
        lambda f: f["q"].__setitem__("split", ["Train", "train", "train", "val", "test", "test"]),
        r"column 'split' has unknown value\(s\) \['Train'\].*write split names in lower case",
    ),
    (
        "split without scores",
        lambda f: f.__setitem__("s", f["s"][f["s"]["prompt_id"] != 3]),
        r"queries.parquet: split 'val' has 1 queries but none of them has a score",
    ),
    (
        "non-numeric params_b",
        lambda f: f["m"].__setitem__("params_b", ["7B", "13"]),
        r"models.parquet: column 'params_b' .* must be a number >= 0 or empty; bad for model_id 0",
    ),
]


@pytest.mark.parametrize("name, change, pattern", BAD_FILES, ids=[b[0] for b in BAD_FILES])
def test_bad_canonical_files(tmp_path, name, change, pattern):
    directory = _write_raw(tmp_path / "d", *_frames_with(change))
    with pytest.raises(DataError, match=pattern):
        read_dataset(directory)


def test_valid_variants_still_read(tmp_path):
    def change(f):
        f["q"]["prompt_id"] = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]  # integral floats
        f["s"]["score"] = f["s"]["score"] == 1  # boolean scores
        f["m"]["params_b"] = [7.0, np.nan]  # unknown size

    data = read_dataset(_write_raw(tmp_path / "d", *_frames_with(change)))
    assert data.queries["prompt_id"].dtype == np.int64 and data.scores["score"].isin([0.0, 1.0]).all()
