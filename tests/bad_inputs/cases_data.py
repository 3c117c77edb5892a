"""Bad inputs of the data layer: `locus data csv|embedllm|synthetic ...` and `locus summary ...`.

Classes: ``csv-reading`` (how an evaluations file is read), ``duplicates`` (several scores of one
(prompt, model)), ``split-overlap`` (one prompt in several splits), ``mixed-generation`` (data set files
that do not belong together), ``canonical`` (invalid canonical Parquet files), ``synthetic`` (generator
parameters that leave a split too small), ``truth`` (a synthetic data set's truth.parquet that does not
belong to it, as read by `summary` and `table --truth`).

``before`` was measured by running each case against the code before the fix (a worktree of the
commit before, same inputs): traceback = an exception escaped; silent = exit 0 (the mistake was
ignored); poor-message = exit 2 but the line misleads or does not say what to do; late = the error came
only after the expensive work; ok = already handled as required.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from bad_inputs.harness import Case, tiny_frames


# --------------------------------------------------------------------------------------------------
# inputs
# --------------------------------------------------------------------------------------------------
def evals_csv(
    ws, *extra_lines: str, name: str = "evals.csv", header: str = "prompt,model,score,split", n: int = 12
) -> str:
    """A valid evaluations CSV (n prompts x 2 models, splits given) followed by `extra_lines`."""
    splits = ["train"] * (n - 4) + ["val"] * 2 + ["test"] * 2
    rows = [header] + [
        f"What is {i} plus {i + 1}?,{m},{(i + j) % 2},{splits[i]}"
        for i in range(n)
        for j, m in enumerate(("org/a", "org/b"))
    ]
    return str(ws.write(name, "\n".join(rows + list(extra_lines)) + "\n"))


def data_csv(ws, path: str, *extra: str, params: dict | None = None) -> list[str]:
    return ["data", "csv", "--out", "out", "--params", json.dumps({"path": path, **(params or {})}), *extra]


def hand_made(ws, change=None, name: str = "data") -> str:
    """A canonical data set directory written by hand (no manifest), with `change(frames)` applied."""
    queries, models, scores = tiny_frames()
    frames = {"queries": queries, "models": models, "scores": scores}
    if change:
        change(frames)
    out = ws.path(name)
    out.mkdir()
    for key, frame in frames.items():
        frame.to_parquet(out / f"{key}.parquet", index=False)
    return str(out)


def hand_made_truth(ws, truth: pd.DataFrame) -> str:
    """A hand-made data set (no manifest) with `truth` as its truth.parquet."""
    data = hand_made(ws)
    truth.to_parquet(ws.path("data/truth.parquet"), index=False)
    return data


def summary(data: str) -> list[str]:
    return ["summary", "--data", data, "--out", "summary.md"]


def written(ws, name: str = "data", change=None) -> str:
    """A data set written by `locus data` (with its manifest), `change(frames)` applied to the frames."""
    from locus.data.canonical import write_dataset

    queries, models, scores = tiny_frames()
    frames = {"queries": queries, "models": models, "scores": scores}
    if change:
        change(frames)
    write_dataset(ws.path(name), frames["queries"], frames["models"], frames["scores"])
    return str(ws.path(name))


def truth_of(scores: pd.DataFrame, p: float = 0.5) -> pd.DataFrame:
    """A generator truth for every scored pair (a synthetic data set's truth.parquet)."""
    return scores[["prompt_id", "model_id"]].assign(p_correct=p)


def with_truth(ws, name: str = "data") -> str:
    """A data set written with a truth file (as `locus data synthetic` writes it)."""
    from locus.data.canonical import write_dataset

    queries, models, scores = tiny_frames()
    write_dataset(ws.path(name), queries, models, scores, truth=truth_of(scores))
    return str(ws.path(name))


def tampered_truth(ws) -> str:
    data = with_truth(ws)
    truth_of(tiny_frames()[2], p=0.25).to_parquet(ws.path("data/truth.parquet"), index=False)
    return data


def stray_truth(ws) -> str:
    """The shared data set (csv source: no truth) with a truth file copied in."""
    data = ws.copy("data")
    truth_of(tiny_frames()[2]).to_parquet(data / "truth.parquet", index=False)
    return str(data)


def table_with_truth(ws, data: str, truth: str | None = None, kind: str = "routing") -> list[str]:
    run = ws.copy("locus_run")
    return [
        "table",
        kind,
        "--metrics",
        str(run / "metrics.json"),
        "--data",
        data,
        "--truth",
        truth or f"{data}/truth.parquet",
        "--out",
        "t.tex",
    ]


def mixed_generation(ws) -> str:
    """A data set whose scores.parquet is the one of an earlier write (an interrupted or partial update)."""
    written(ws, "old")
    new = written(ws, "data", change=lambda f: f.__setitem__("scores", f["scores"].assign(score=1.0)))
    ws.write_bytes("data/scores.parquet", ws.path("old/scores.parquet").read_bytes())
    return new


def damaged_manifest(ws) -> str:
    data = written(ws)
    ws.write("data/dataset.json", '{"files": ')
    return data


def incomplete_set(ws) -> str:
    data = written(ws)
    ws.path("data/models.parquet").unlink()
    return data


def directory_as_path(ws) -> str:
    ws.path("evals.csv").mkdir()
    return str(ws.path("evals.csv"))


def embedllm(ws, edit=None) -> list[str]:
    """The EmbedLLM fixture (tests/fixtures_embedllm.py) with `edit(directory)` applied."""
    from fixtures_embedllm import write_embedllm_fixture

    info = write_embedllm_fixture(ws.path("embedllm"), n_models=3, n_prompts=24)
    if edit:
        edit(info.directory)
    return ["data", "embedllm", "--out", "out", "--params", json.dumps({"dir": str(info.directory)})]


def _move_prompt(directory, src: str, dst: str, same_id: bool) -> None:
    """Copy the rows of one prompt of `src`.csv into `dst`.csv (under its id, or under a new id)."""
    a = pd.read_csv(directory / f"{src}.csv")
    rows = a[a["prompt_id"] == a["prompt_id"].iloc[0]]
    if not same_id:
        rows = rows.assign(prompt_id=999)
    pd.concat([pd.read_csv(directory / f"{dst}.csv"), rows]).to_csv(directory / f"{dst}.csv", index=False)


def _append(directory, fname: str, line: str) -> None:
    with open(directory / fname, "a", encoding="utf-8") as fh:
        fh.write(line + "\n")


def _set(frame_key: str, column: str, values):
    return lambda f: f[frame_key].__setitem__(column, values)


N = len(tiny_frames()[0])  # 60 queries, 5 models, dense scores


# --------------------------------------------------------------------------------------------------
# cases
# --------------------------------------------------------------------------------------------------
CASES = [
    # --- reading an evaluations CSV -----------------------------------------------------------------
    Case(
        "data-csv-ragged-short-row",
        "csv-reading",
        "poor-message",
        lambda ws: data_csv(ws, evals_csv(ws, "What is 99?,org/a")),
        r"evals\.csv: 1 ragged row\(s\) with the wrong number of fields: line 26 has 2; the header has 4",
    ),
    Case(
        "data-csv-ragged-long-row",
        "csv-reading",
        "poor-message",
        lambda ws: data_csv(ws, evals_csv(ws, "What is 1, or 2?,org/a,1,train")),
        r"evals\.csv: 1 ragged row\(s\).*line 26 has 5.*double quotes around fields that contain ','",
    ),
    Case(
        "data-csv-not-utf8",
        "csv-reading",
        "poor-message",
        lambda ws: data_csv(
            ws, str(ws.write("latin1.csv", "prompt,model,score\nCaf\u00e9?,a,1\n", encoding="latin-1"))
        ),
        r"latin1\.csv: is not UTF-8 text .*save it as UTF-8",
    ),
    Case(
        "data-csv-repeated-column-name",
        "csv-reading",
        "silent",
        lambda ws: data_csv(ws, evals_csv(ws, header="prompt,model,score,score")),
        r"evals\.csv: column name\(s\) \['score'\] appear more than once in the header",
    ),
    Case(
        "data-csv-empty-score-cell",
        "csv-reading",
        "ok",
        lambda ws: data_csv(ws, evals_csv(ws, "What is 99?,org/a,,train")),
        r"evals\.csv: column 'score' must be a number in \[0, 1\].*CSV row\(s\) 26 \(header = row 1\)",
    ),
    Case(
        "data-csv-path-is-directory",
        "csv-reading",
        "poor-message",
        lambda ws: data_csv(ws, directory_as_path(ws)),
        r"evals\.csv: is a directory, not a file",
    ),
    Case(
        "data-csv-header-capitalised",
        "csv-reading",
        "ok",
        lambda ws: data_csv(ws, evals_csv(ws, header="Prompt,model,score,split")),
        r"missing column\(s\) \['prompt'\].*found 'Prompt': write the names in lower case",
    ),
    Case(
        "data-csv-blank-prompt",
        "csv-reading",
        "ok",
        lambda ws: data_csv(ws, evals_csv(ws, "   ,org/a,1,train")),
        r"evals\.csv: column 'prompt' is empty in CSV row\(s\) 26",
    ),
    # --- duplicates: one policy, applied when the data set is written ---------------------------------
    Case(
        "data-csv-duplicates-error-flag",
        "duplicates",
        "silent",
        lambda ws: data_csv(ws, evals_csv(ws, "What is 0 plus 1?,org/a,0,train"), "--duplicates", "error"),
        r"evals\.csv: 1 \(prompt, model\) pair\(s\) have more than one score, e\.g\. prompt_id 0 "
        r"\('What is 0 plus 1\?'\) x model_id 0 \('org/a'\): 2 rows \(.*evals\.csv rows 2, 26\)",
    ),
    Case(
        "data-csv-duplicates-error-param",
        "duplicates",
        "ok",
        lambda ws: data_csv(ws, evals_csv(ws, "What is 0 plus 1?,org/a,0,train"), params={"duplicates": "error"}),
        r"evals\.csv: 1 \(prompt, model\) pair\(s\) have more than one score.*duplicates last, max or mean",
    ),
    Case(
        "data-embedllm-duplicates-error-flag",
        "duplicates",
        "silent",
        lambda ws: embedllm(ws) + ["--duplicates", "error"],
        r"train\.csv: 3 \(prompt, model\) pair\(s\) have more than one score, e\.g\. prompt_id 3 ",
    ),
    Case(
        "data-embedllm-ragged-row",
        "csv-reading",
        "silent",
        lambda ws: embedllm(ws, lambda d: _append(d, "val.csv", "16,0,org/x,1,What?,3,MMLU,surplus")),
        r"val\.csv: ragged row \(row 14 has 8 fields, the header 7\)",
    ),
    Case(
        "data-embedllm-repeated-model-name",
        "csv-reading",
        "poor-message",
        lambda ws: embedllm(ws, lambda d: _append(d, "model_order.csv", "3,3,Qwen/Qwen1.5-7B-Chat")),
        r"model_order\.csv: model_name not unique: \['Qwen/Qwen1\.5-7B-Chat'\] in CSV row\(s\) \[2, 5\]",
    ),
    Case(
        "data-csv-duplicates-bad-policy",
        "duplicates",
        "ok",
        lambda ws: data_csv(ws, evals_csv(ws), params={"duplicates": "first"}),
        r"duplicates must be one of last, max, mean, error, got 'first'",
    ),
    # --- one prompt in several splits -----------------------------------------------------------------
    Case(
        "data-csv-prompt-in-train-and-test",
        "split-overlap",
        "ok",
        lambda ws: data_csv(ws, evals_csv(ws, "What is 0 plus 1?,org/a,1,test")),
        r"evals\.csv: 1 prompt text\(s\) occur in more than one split, e\.g\. 'What is 0 plus 1\?' in train "
        r"\(prompt_id 0, .*evals\.csv row 2\), test \(prompt_id 12, .*evals\.csv row 26\).*keep_test",
    ),
    Case(
        "data-embedllm-prompt-id-in-two-files",
        "split-overlap",
        "silent",
        lambda ws: embedllm(ws, lambda d: _move_prompt(d, "val", "test", same_id=True)),
        r"1 prompt_id\(s\) are listed in more than one of train\.csv, val\.csv, test\.csv \(16 in val/test\)",
    ),
    Case(
        "data-embedllm-prompt-text-in-two-files",
        "split-overlap",
        "silent",
        lambda ws: embedllm(ws, lambda d: _move_prompt(d, "train", "test", same_id=False)),
        r"test\.csv, .*train\.csv: 1 prompt text\(s\) occur in more than one split.*in train \(prompt_id 0, .*"
        r"train\.csv row 2\), test \(prompt_id 999",
    ),
    # --- files of different writes (interrupted or partial updates) -----------------------------------
    Case(
        "data-summary-mixed-generation",
        "mixed-generation",
        "silent",
        lambda ws: summary(mixed_generation(ws)),
        r"data: scores\.parquet differs from the version recorded in dataset\.json.*Rebuild the data set",
    ),
    Case(
        "data-summary-manifest-damaged",
        "mixed-generation",
        "silent",
        lambda ws: summary(damaged_manifest(ws)),
        r"dataset\.json: manifest is not readable JSON.*Rebuild the data set",
    ),
    Case(
        "data-summary-file-of-set-missing",
        "mixed-generation",
        "ok",
        lambda ws: summary(incomplete_set(ws)),
        r"models\.parquet: file missing.*found: dataset\.json, queries\.parquet, scores\.parquet",
    ),
    Case(
        "data-out-is-a-file",
        "mixed-generation",
        "traceback",
        lambda ws: [
            "data",
            "csv",
            "--out",
            str(ws.write("out", "not a directory")),
            "--params",
            json.dumps({"path": evals_csv(ws)}),
        ],
        r"out exists and is a file; give a directory path",
    ),
    # --- the synthetic generator's truth beside a data set (new file: nothing checked it before) -------
    Case(
        "data-truth-tampered",
        "truth",
        "silent",
        lambda ws: summary(tampered_truth(ws)),
        r"data: truth\.parquet differs from the version recorded in dataset\.json.*Rebuild the data set",
    ),
    Case(
        "table-truth-stray-file",
        "truth",
        "silent",
        lambda ws: table_with_truth(ws, stray_truth(ws)),
        r"truth\.parquet: not part of this data set: .*dataset\.json records no truth file.*Delete it, or rebuild",
    ),
    Case(
        "table-truth-of-another-data-set",
        "truth",
        "silent",
        lambda ws: table_with_truth(ws, str(ws.copy("data")), truth=f"{with_truth(ws, 'other')}/truth.parquet"),
        r"--truth .*other/truth\.parquet: not the truth file of the table's data set",
    ),
    Case(
        "table-truth-out-of-range",
        "truth",
        "silent",
        lambda ws: table_with_truth(
            ws,
            hand_made_truth(
                ws, truth_of(tiny_frames()[2]).assign(p_correct=lambda t: t["p_correct"].where(t.index != 2, 1.5))
            ),
        ),
        r"truth\.parquet: column 'p_correct' must be a probability in \[0, 1\].*row 2: 1\.5",
    ),
    Case(
        "table-truth-for-correctness",
        "truth",
        "silent",
        lambda ws: table_with_truth(ws, with_truth(ws), kind="correctness-by-dataset"),
        r"--truth gives expected routing accuracies: it applies to the routing tables",
    ),
    # --- invalid canonical files (a data set written by hand) -----------------------------------------
    Case(
        "data-canonical-nan-model-id",
        "canonical",
        "poor-message",
        lambda ws: summary(
            hand_made(
                ws,
                lambda f: f["scores"].__setitem__(
                    "model_id", f["scores"]["model_id"].where(f["scores"].index != 7, np.nan)
                ),
            )
        ),
        r"scores\.parquet: column 'model_id' must hold whole-number ids.*row 7: nan\. Give every row an integer id",
    ),
    Case(
        "data-canonical-infinite-prompt-id",
        "canonical",
        "traceback",
        lambda ws: summary(
            hand_made(
                ws,
                lambda f: f["scores"].__setitem__(
                    "prompt_id", f["scores"]["prompt_id"].where(f["scores"].index != 3, np.inf)
                ),
            )
        ),
        r"scores\.parquet: column 'prompt_id' must hold whole-number ids.*row 3: inf",
    ),
    Case(
        "data-canonical-fractional-prompt-id",
        "canonical",
        "poor-message",
        lambda ws: summary(hand_made(ws, _set("queries", "prompt_id", np.arange(N) + 0.5))),
        r"queries\.parquet: column 'prompt_id' must hold whole-number ids.*row 0: 0\.5.*integer id",
    ),
    Case(
        "data-canonical-duplicate-model-names",
        "canonical",
        "poor-message",
        lambda ws: summary(hand_made(ws, _set("models", "name", ["org/a", "org/a", "org/c", "org/d", "org/e"]))),
        r"models\.parquet: model name\(s\) not unique: \['org/a'\] \(model_id 0, 1\); give each model one row",
    ),
    Case(
        "data-canonical-missing-model-name",
        "canonical",
        "silent",
        lambda ws: summary(hand_made(ws, _set("models", "name", ["org/a", None, "org/c", "org/d", "org/e"]))),
        r"models\.parquet: column 'name' is empty in 1 row\(s\), model_id 1",
    ),
    Case(
        "data-canonical-numeric-prompts",
        "canonical",
        "silent",
        lambda ws: summary(hand_made(ws, _set("queries", "prompt", np.arange(N)))),
        r"queries\.parquet: column 'prompt' must hold text, found int value\(s\) in 60 row\(s\)",
    ),
    Case(
        "data-canonical-blank-prompt",
        "canonical",
        "silent",
        lambda ws: summary(
            hand_made(
                ws,
                lambda f: f["queries"].__setitem__(
                    "prompt", f["queries"]["prompt"].where(f["queries"].index != 4, "  ")
                ),
            )
        ),
        r"queries\.parquet: column 'prompt' is empty in 1 row\(s\), prompt_id 4",
    ),
    Case(
        "data-canonical-capitalised-split",
        "canonical",
        "poor-message",
        lambda ws: summary(
            hand_made(
                ws, lambda f: f["queries"].__setitem__("split", f["queries"]["split"].replace({"train": "Train"}))
            )
        ),
        r"column 'split' has unknown value\(s\) \['Train'\].*write split names in lower case",
    ),
    Case(
        "data-canonical-split-without-scores",
        "canonical",
        "traceback",
        lambda ws: summary(
            hand_made(ws, lambda f: f.__setitem__("scores", f["scores"][f["scores"]["prompt_id"] < 50]))
        ),
        r"queries\.parquet: split 'test' has 10 queries but none of them has a score",
    ),
    Case(
        "data-canonical-text-params-b",
        "canonical",
        "traceback",
        lambda ws: summary(hand_made(ws, _set("models", "params_b", ["7B", "13B", "70B", "8B", "2B"]))),
        r"models\.parquet: column 'params_b' \(parameters in billions\) must be a number >= 0 or empty",
    ),
    Case(
        "data-canonical-infinite-score",
        "canonical",
        "ok",
        lambda ws: summary(
            hand_made(
                ws,
                lambda f: f["scores"].__setitem__("score", f["scores"]["score"].where(f["scores"].index != 2, np.inf)),
            )
        ),
        r"scores\.parquet: column 'score' must be a number in \[0, 1\].*score=inf",
    ),
    Case(
        "data-canonical-data-is-a-file",
        "canonical",
        "poor-message",
        lambda ws: summary(str(ws.write("data.parquet", "x"))),
        r"data\.parquet: is a file, not a data set directory",
    ),
    # --- synthetic generator parameters ---------------------------------------------------------------
    Case(
        "data-synthetic-test-split-too-small",
        "synthetic",
        "silent",
        lambda ws: ["data", "synthetic", "--out", "out", "--params", json.dumps({"n_queries": 40, "n_models": 3})],
        r"n_queries=40 .* gives train 34, val 4, test 2 queries; every split needs at least 3 .*"
        r"Raise n_queries to at least 43",
    ),
    Case(
        "data-synthetic-val-fraction-tiny",
        "synthetic",
        "silent",
        lambda ws: [
            "data",
            "synthetic",
            "--out",
            "out",
            "--params",
            json.dumps({"n_queries": 300, "n_models": 3, "split_fractions": [0.89, 0.01, 0.1]}),
        ],
        r"too small: val\)",
    ),
]
