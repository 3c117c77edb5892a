"""Adapter for LLMRouter's DC-router data (``ulab-uiuc/LLMRouter``, MIT): 9 models x 6,108 items, 14 tasks.

Files (in ``dir``; fetched from the public repository with ``download: true``):

* ``train.json`` / ``test.json``: JSON lists of ``{"question", "scores": {model_name: float}, "cluster_id"}``
  (5,608 / 500 items; test items have no ``cluster_id``);
* ``query_train.jsonl`` / ``query_test.jsonl`` (upstream ``default_query_{train,test}.jsonl``): one object
  per line with ``task_name`` and ``query``. Joining ``question == query`` over both files names every
  item's task; the task is the benchmark (and the category: there is no finer label).

The choices (splits, train/test overlap, fractional scores, items under two tasks, ids): :func:`build`.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import numpy as np
import pandas as pd

from locus.data import download as dl
from locus.data.canonical import ORIGIN, ORIGIN_ROW
from locus.data.validation import Param, check_params, defaults_of
from locus.errors import ConfigError, DataError

log = logging.getLogger(__name__)

NAME = "llmrouter"
FILES = ("train.json", "test.json", "query_train.jsonl", "query_test.jsonl")
PARAMS = {
    "dir": Param(
        None,
        "directory with the four files; null = <cache>/llmrouter-dc/<commit> (see download.cache_dir)",
        "path",
        nullable=True,
    ),
    "download": Param(False, "fetch missing files from GitHub (ulab-uiuc/LLMRouter @ 4e7a796)", "bool"),
    "val_fraction": Param(0.1, "share of train.json items moved to the val split", "float", above=0, below=1),
    "seed": Param(0, "seed of the val draw", "int", at_least=0),
    "binarize": Param(
        False, "false: keep partial-credit scores as soft targets; true: score >= 0.5 -> 1 else 0", "bool"
    ),
}
DEFAULTS = defaults_of(PARAMS)
# data-set options (applied by `locus data` / canonical.write_dataset) whose default differs for this source
DATASET_DEFAULTS = {"split_overlap": "keep_train"}
RENAMED_PARAMS = {
    "drop_test_overlap": "the data-set option split_overlap (true -> keep_train, the default for "
    "this source; false -> keep_all)"
}
DEPRIORITISED_TASKS = ("mmlu",)


def build(params: dict) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Return raw canonical ``(queries, models, scores)`` frames: every item, test copies of training texts
    included (see :data:`DATASET_DEFAULTS`).

    Choices (each a parameter; see ``DEFAULTS``):

    * **Splits.** ``test.json`` is the test split. The validation split is drawn from ``train.json``:
      ``round(val_fraction * n_train)`` items chosen uniformly with ``numpy.random.default_rng(seed)``.
    * **Train/test overlap.** 119 test texts also occur in train (69 with identical scores). The adapter
      returns every item; the data-set option ``split_overlap`` resolves the copies when the data set is
      written (:func:`locus.data.canonical.resolve_split_overlap`). For this source it defaults to
      ``keep_train`` (:data:`DATASET_DEFAULTS`): the test copies are dropped, so no test query was seen in
      training, and train keeps them. ``keep_all`` keeps all 6,108 items, ``keep_test`` keeps the test
      copies and drops the training ones. (The former parameter ``drop_test_overlap`` true/false is
      ``split_overlap: keep_train`` / ``keep_all``.)
    * **Fractional scores.** About 3% of cells hold partial credit (e.g. 1/3, 0.6). By default they are kept
      as soft targets in [0, 1]; ``binarize: true`` maps ``score >= 0.5`` to 1 and the rest to 0.
    * **Items listed under two tasks.** Six query texts appear under ``mmlu`` and also under ``openbook_qa``
      or ``arc_challenge``; they get the non-mmlu task (the more specific source), so mmlu has 494 train items
      and openbook_qa / arc_challenge 500 each. Other ties (none in this data) take the first match in file order.
    * **Ids.** prompt_id = position in train.json, then 5,608 + position in test.json (stable whether or
      not overlap items are dropped). model_id = rank of the model name in sorted order (the key order of
      ``scores`` varies between items, so models are always looked up by name)."""
    p = validate_params(params)
    directory = _resolve_dir(p)
    train = _read_items(directory / "train.json")
    test = _read_items(directory / "test.json")
    task_of = _task_index([directory / "query_train.jsonl", directory / "query_test.jsonl"])

    items = []
    for split, rows, first_id in (("train", train, 0), ("test", test, len(train))):
        for i, item in enumerate(rows):
            items.append((first_id + i, item["question"], split, item["scores"], rows is train, i))
    questions = [it[1] for it in items]
    missing = [(("train.json" if it[4] else "test.json"), it[5]) for it in items if it[1] not in task_of]
    if missing:
        where = ", ".join(f"{f} item {i}" for f, i in missing[:5])
        raise DataError(
            f"{directory}: {len(missing)} item(s) have no matching `query` in query_train.jsonl / query_test.jsonl "
            f"({where}); use the query files of the same LLMRouter commit ({dl.LLMROUTER_COMMIT[:7]})."
        )
    queries = pd.DataFrame(
        {
            "prompt_id": np.array([it[0] for it in items], dtype=np.int64),
            "prompt": questions,
            "benchmark": [task_of[q] for q in questions],
            "split": [it[2] for it in items],
        }
    )
    queries["category"] = queries["benchmark"]
    queries[ORIGIN] = [str(directory / ("train.json" if it[4] else "test.json")) for it in items]
    queries[ORIGIN_ROW] = [it[5] for it in items]  # item index in that JSON list

    names = sorted({name for it in items for name in it[3]})
    models = pd.DataFrame(
        {
            "model_id": np.arange(len(names), dtype=np.int64),
            "name": names,
            "params_b": [params_from_name(n) for n in names],
        }
    )
    scores = _score_frame(items, names, directory)

    queries = _draw_val(queries, p["val_fraction"], p["seed"])
    if p["binarize"]:
        scores = scores.assign(score=(scores["score"] >= 0.5).astype(np.float64))
    columns = ["prompt_id", "prompt", "benchmark", "category", "split", ORIGIN, ORIGIN_ROW]
    return queries[columns].reset_index(drop=True), models, scores.reset_index(drop=True)


_SIZE = re.compile(r"(?:^|[-_/])(\d+(?:\.\d+)?)b(?=$|[-_])", re.IGNORECASE)


def params_from_name(name: str) -> float:
    """Parameters in billions from a model name's size token (``llama3-chatqa-1.5-70b`` -> 70.0; NaN without
    one): the cost proxy of cost-aware routing, as LLMRouter's data carries no cost."""
    sizes = _SIZE.findall(str(name))
    return float(sizes[-1]) if sizes else float("nan")


# ---------------------------------------------------------------------------------------------
def validate_params(params: dict | None) -> dict:
    """The defaults with `params` over them, every name and value checked (one-line ConfigError)."""
    params = dict(params or {})
    unknown = sorted(set(params) - set(DEFAULTS))
    if unknown:
        renamed = "".join(f"; {k} is now {RENAMED_PARAMS[k]}" for k in unknown if k in RENAMED_PARAMS)
        raise ConfigError(f"llmrouter: unknown parameter(s) {unknown}; known: {sorted(DEFAULTS)}{renamed}")
    p = {**DEFAULTS, **params}
    check_params("llmrouter", PARAMS, p)
    return p


def _resolve_dir(p: dict) -> Path:
    directory = Path(p["dir"]).expanduser() if p["dir"] else dl.cache_dir("llmrouter-dc", dl.LLMROUTER_COMMIT[:7])
    missing = [f for f in FILES if not (directory / f).is_file()]
    if missing and p["download"]:
        dl.download_files(
            dl.LLMROUTER_URL,
            dl.LLMROUTER_FILES,
            directory,
            dl.LLMROUTER_SIZES,
            param_hint="the `dir` parameter of the llmrouter source",
        )
        missing = []
    if missing:
        raise DataError(
            f"{directory}: missing {', '.join(missing)}. Set `download: true` to fetch them from "
            f"{dl.LLMROUTER_URL} or place the files there by hand ({', '.join(f'{k} <- {v}' for k, v in dl.LLMROUTER_FILES.items())}); "
            f"set `dir` to use another directory."
        )
    return directory


def _read_items(path: Path) -> list[dict]:
    try:
        with open(path, encoding="utf-8") as fh:
            items = json.load(fh)
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: not valid JSON ({exc}); download it again.") from None
    if not isinstance(items, list) or not items:
        raise DataError(f"{path}: expected a non-empty JSON list of items.")
    for i, item in enumerate(items):
        if (
            not isinstance(item, dict)
            or not isinstance(item.get("question"), str)
            or not isinstance(item.get("scores"), dict)
            or not item["scores"]
        ):
            raise DataError(f"{path}: item {i} lacks a `question` string or a non-empty `scores` object.")
    return items


def _task_index(paths: list[Path]) -> dict[str, str]:
    """query text -> task name; the fixed tie rule prefers a task not in DEPRIORITISED_TASKS."""
    tasks: dict[str, list[str]] = {}
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            for line_no, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                    query, task = obj["query"], obj["task_name"]
                except (json.JSONDecodeError, KeyError, TypeError) as exc:
                    raise DataError(
                        f"{path}: line {line_no} is not a JSON object with `query` and `task_name` ({exc})."
                    ) from None
                seen = tasks.setdefault(query, [])
                if task not in seen:
                    seen.append(task)
    out = {}
    for query, names in tasks.items():
        preferred = [t for t in names if t not in DEPRIORITISED_TASKS]
        out[query] = (preferred or names)[0]
    return out


def _score_frame(items: list, names: list[str], directory: Path) -> pd.DataFrame:
    col = {n: j for j, n in enumerate(names)}
    pid, mid, val = [], [], []
    for prompt_id, _, split, scores, _, i in items:
        for name, value in scores.items():
            if (
                value is None
                or isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not 0.0 <= float(value) <= 1.0
            ):
                raise DataError(
                    f"{directory}/{split}.json: item {i}, model {name!r}: score {value!r} is not a number in [0, 1]."
                )
            pid.append(prompt_id)
            mid.append(col[name])
            val.append(float(value))
    return pd.DataFrame(
        {
            "prompt_id": np.array(pid, dtype=np.int64),
            "model_id": np.array(mid, dtype=np.int64),
            "score": np.array(val, dtype=np.float64),
        }
    )


def _draw_val(queries: pd.DataFrame, fraction: float, seed: int) -> pd.DataFrame:
    train_idx = np.flatnonzero((queries["split"] == "train").to_numpy())
    n_val = int(round(fraction * len(train_idx)))
    if not 0 < n_val < len(train_idx):
        raise ConfigError(f"llmrouter: val_fraction {fraction} leaves an empty train or val split.")
    chosen = np.random.default_rng(seed).choice(train_idx, size=n_val, replace=False)
    queries = queries.copy()
    queries.iloc[chosen, queries.columns.get_loc("split")] = "val"
    return queries
