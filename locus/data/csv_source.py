"""Bring your own evaluations: one CSV or Parquet file of ``prompt, model, score`` rows -> canonical data set.

Columns (header names are matched exactly):

* required: ``prompt`` (the query text), ``model`` (a model name), ``score`` (a number in [0, 1];
  1 = correct; ``true``/``false`` in any letter case are read as 1/0, also mixed with numbers);
* optional: ``benchmark`` (default ``all``), ``category`` (default: the benchmark), ``split``
  (``train``/``val``/``test``, any letter case; drawn when the column is absent), and the model's own columns
  (:data:`MODEL_COLUMNS`), each the same on every row of a model, an empty cell allowed where another row of
  the model gives it, written to models.parquet: ``cost`` (cost per query in any unit, a number >= 0; for
  cost-aware routing), ``params_b`` (parameters in billions, a number >= 0; the portfolio's budgets and the
  cost proxy), ``family`` (text; the families figure) and ``held_out`` (0/1, true/false; the models the
  onboarding figures embed as new).

How cells are read, how queries, model ids and splits are formed and how errors name rows: :func:`build`.
Duplicate pairs and split overlaps are resolved by the data-set options (:mod:`locus.data.canonical`).
"""

from __future__ import annotations

import csv
import gzip
import logging
from pathlib import Path

import numpy as np
import pandas as pd

from locus.data.canonical import ORIGIN, ORIGIN_ROW, SPLITS
from locus.data.validation import Param, check_params, defaults_of
from locus.errors import ConfigError, DataError, require_file

log = logging.getLogger(__name__)

NAME = "csv"
REQUIRED = ("prompt", "model", "score")
# a model's own columns: name -> (kind, what it is, for the error message)
MODEL_COLUMNS = {
    "cost": ("number", "cost per query, any unit"),
    "params_b": ("number", "parameters in billions"),
    "family": ("text", "the model's family"),
    "held_out": ("flag", "1 for a model the onboarding figures embed as new, else 0"),
}
OPTIONAL = ("benchmark", "category", "split", *MODEL_COLUMNS)
DEFAULT_BENCHMARK = "all"
PARAMS = {
    "path": Param(
        None, "the CSV (.csv, .csv.gz, .tsv, .tsv.gz, .txt) or Parquet (.parquet, .pq) file; required", "path"
    ),
    "seed": Param(0, "seed of the split draw, used only when there is no `split` column", "int", at_least=0),
    "split_fractions": Param(
        [0.8, 0.1, 0.1],
        "train, val, test shares of the queries for the draw, summing to 1",
        "float_list",
        at_least=0,
        length=3,
    ),
    "model_order": Param(
        "sorted", "model_id by sorted name or by first appearance", "str", choices=("sorted", "appearance")
    ),
}
DEFAULTS = defaults_of(PARAMS)
BOOLEAN_SCORES = {"true": 1.0, "false": 0.0}
FIELD_SIZE_LIMIT = 64 * 2**20  # characters per CSV field (Python's csv default, 131,072, refuses long prompts)
_SHOW = 5


def build(params: dict) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Return raw canonical ``(queries, models, scores)`` frames (every score row, duplicates included).

    Reading is explicit. A CSV is read with Python's ``csv`` module (UTF-8, a leading BOM ignored; ``,``
    separated, ``\t`` for ``.tsv``; double quotes around fields that contain the separator, quotes or line
    breaks); every cell is text exactly as written, so the prompts ``01``, ``1`` and ``1.0`` are three
    queries and the models ``7`` and ``07`` two models; ``None``, ``NA`` or ``null`` are ordinary text. Only an
    empty cell (or one of spaces) is empty. Model names and the optional columns are stripped of
    surrounding spaces; prompts are kept exactly. A row with more or fewer fields than the header is a
    *ragged row* and refused with its line number. In a Parquet file, non-text prompt / model values are
    converted with ``str`` and missing values are empty.

    Rules:

    * A query is a prompt text (with its split, when the file gives one). prompt_ids are 0, 1, 2, ... in
      order of first appearance, so they are stable as long as the file's row order is. Benchmark and
      category of a query come from its first row.
    * The same prompt text given different splits is a *split overlap*, resolved by the data-set option
      ``split_overlap`` (default ``error``; see :mod:`locus.data.canonical`).
    * model_ids: ``model_order: sorted`` (default) numbers models by sorted name, so ids do not depend on row
      order; ``appearance`` numbers them in order of first appearance.
    * Splits, when the column is absent, are drawn per query (never per row) with
      ``numpy.random.default_rng(seed)``: a random permutation of the queries is cut into val / test / train
      by ``split_fractions`` (train, val, test; rounded counts, at least one query in each split).
    * A (prompt, model) pair listed more than once is returned as is (every row) and resolved once, by the
      data-set option ``duplicates`` (last / max / mean / error) when the data set is written.
    * Missing pairs are fine: a model need not be evaluated on every query.

    A CSV field may hold up to :data:`FIELD_SIZE_LIMIT` characters (64 Mi; Python's own limit, 131,072, is
    too small for long prompts). A file whose content is not what its name says (gzip or Parquet named
    ``.csv``) and a header separated by another character (``;``, tab) are refused with what was seen.

    Error messages name the file and the rows: CSV rows are numbered as in a spreadsheet (the header is
    row 1), Parquet rows from 0; ragged rows are reported by line."""
    p = validate_params(params)
    path = Path(p["path"]).expanduser()
    df, rows, first_row = read_table(path)
    _check_columns(df, path)
    where = _Where(path, rows, first_row)

    prompt = _text(df, "prompt", where, strip=False)
    model = _text(df, "model", where)
    score = _scores(df["score"], where)
    benchmark = (
        _text(df, "benchmark", where)
        if "benchmark" in df.columns
        else pd.Series(DEFAULT_BENCHMARK, index=df.index, dtype=object)
    )
    category = _text(df, "category", where) if "category" in df.columns else benchmark
    split = _splits(df, where) if "split" in df.columns else None

    # a query = a prompt text (per split when the file gives splits; copies across splits are resolved
    # by the canonical `split_overlap` option)
    key = prompt if split is None else pd.Series(list(zip(prompt, split)), index=df.index, dtype=object)
    prompt_codes, _ = pd.factorize(key, sort=False)  # first-appearance order
    first_rows = np.unique(prompt_codes, return_index=True)[1]
    queries = pd.DataFrame(
        {
            "prompt_id": np.arange(len(first_rows), dtype=np.int64),
            "prompt": prompt.to_numpy()[first_rows],
            "benchmark": benchmark.to_numpy()[first_rows],
            "category": category.to_numpy()[first_rows],
        }
    )
    if split is None:
        queries["split"] = draw_splits(len(queries), p["split_fractions"], p["seed"])
    else:
        queries["split"] = split.to_numpy()[first_rows]
        _every_split_present(queries["split"], path)
    queries[ORIGIN] = str(path)
    queries[ORIGIN_ROW] = rows[first_rows]

    names = sorted(model.unique()) if p["model_order"] == "sorted" else list(pd.unique(model))
    models = pd.DataFrame({"model_id": np.arange(len(names), dtype=np.int64), "name": names})
    model_ids = pd.Index(names).get_indexer(model)
    for column in MODEL_COLUMNS:
        if column in df.columns:
            models[column] = _model_values(df[column], column, model_ids, names, where)
    scores = pd.DataFrame(
        {
            "prompt_id": prompt_codes.astype(np.int64),
            "model_id": model_ids.astype(np.int64),
            "score": score,
            ORIGIN: pd.Categorical.from_codes(np.zeros(len(df), dtype=np.int8), [str(path)]),
            ORIGIN_ROW: rows,
        }
    )
    return queries, models, scores


def draw_splits(n: int, fractions, seed: int) -> np.ndarray:
    """Assign `n` queries to train/val/test: a seeded permutation cut by the (train, val, test) fractions."""
    if n < 3:
        raise DataError(f"only {n} distinct prompt(s); at least 3 are needed to form train, val and test splits.")
    n_val = max(1, int(round(fractions[1] * n)))
    n_test = max(1, int(round(fractions[2] * n)))
    if n_val + n_test >= n:
        raise ConfigError(f"split_fractions {list(fractions)} leave no training query out of {n}.")
    order = np.random.default_rng(seed).permutation(n)
    out = np.full(n, "train", dtype=object)
    out[order[:n_val]] = "val"
    out[order[n_val : n_val + n_test]] = "test"
    return out


def read_table(path: Path) -> tuple[pd.DataFrame, np.ndarray, int]:
    """The file as a frame, the number of each data row as shown in messages, and the first such number.

    CSV: every cell as text (see :func:`build`), rows numbered as in a spreadsheet (header = 1).
    Parquet: columns as stored, rows numbered from 0.
    """
    require_file(path, "set the csv source's `path` to your evaluations file.")
    name = path.name.lower()
    _check_compression(path, name)
    if name.endswith((".parquet", ".pq")):
        try:
            df = pd.read_parquet(path)
        except Exception as exc:  # pyarrow raises many types
            raise DataError(
                f"{path}: not a readable Parquet file ({exc}); write it again or export it as CSV."
            ) from None
        first = 0
    elif name.endswith((".csv", ".csv.gz", ".tsv", ".tsv.gz", ".txt")):
        df, first = _read_csv(path, "\t" if ".tsv" in name else ","), 2
    else:
        raise DataError(f"{path}: unknown file type; use .csv, .csv.gz, .tsv or .parquet.")
    if len(df) == 0:
        raise DataError(f"{path}: has no data rows (columns: {list(df.columns)}); add one row per (prompt, model).")
    return df, np.arange(first, first + len(df), dtype=np.int64), first


def _check_compression(path: Path, name: str) -> None:
    """Refuse a file whose content is not what its name says (gzip or Parquet named .csv, text named .gz)."""
    with open(path, "rb") as fh:
        head = fh.read(4)
    gz, parquet = head[:2] == b"\x1f\x8b", head == b"PAR1"
    if gz and not name.endswith(".gz"):
        raise DataError(
            f"{path}: looks gzip-compressed (starts with the gzip magic bytes 1f 8b) but its name does not end in "
            f".gz; rename it to {path.name}.gz (e.g. .csv.gz) or decompress it with `gunzip -c`."
        )
    if parquet and not name.endswith((".parquet", ".pq")):
        raise DataError(f"{path}: is a Parquet file (starts with PAR1); rename it to end in .parquet.")
    if name.endswith(".gz") and head and not gz:
        raise DataError(f"{path}: named .gz but not gzip-compressed; remove the .gz from its name.")


def _read_csv(path: Path, sep: str) -> pd.DataFrame:
    opener = gzip.open if path.name.lower().endswith(".gz") else open
    csv.field_size_limit(FIELD_SIZE_LIMIT)
    header, records, ragged = None, [], []
    start = 1  # line on which the current record starts
    try:
        with opener(path, "rt", encoding="utf-8-sig", newline="") as fh:
            reader = csv.reader(fh, delimiter=sep)
            for record in reader:
                line, start = start, reader.line_num + 1
                if not record:  # blank line
                    continue
                if header is None:
                    header = record
                elif len(record) != len(header):
                    ragged.append((line, len(record)))
                else:
                    records.append(record)
    except UnicodeDecodeError as exc:
        raise DataError(
            f"{path}: is not UTF-8 text ({exc.reason} at byte {exc.start}); save it as UTF-8 "
            f'("CSV UTF-8" in spreadsheet programs).'
        ) from None
    except csv.Error as exc:
        if "field limit" in str(exc):
            raise DataError(
                f"{path}: line {start}: a field is longer than {FIELD_SIZE_LIMIT:,} characters (the reader's limit); "
                f"shorten it, or look for an unclosed double quote before that line."
            ) from None
        raise DataError(f"{path}: line {start}: not valid CSV ({exc}); check the quoting of that row.") from None
    except (OSError, EOFError) as exc:
        raise DataError(f"{path}: cannot be read ({exc}).") from None
    if header is None:
        raise DataError(f"{path}: the file is empty; it needs a header line `prompt,model,score` and data rows.")
    named = [h for h in header if h.strip()]
    repeated = sorted({h for h in named if named.count(h) > 1})
    if repeated:
        raise DataError(
            f"{path}: column name(s) {repeated} appear more than once in the header (line 1); "
            f"give every column its own name."
        )
    if ragged:
        shown = ", ".join(f"line {ln} has {n}" for ln, n in ragged[:_SHOW])
        more = f" and {len(ragged) - _SHOW} more" if len(ragged) > _SHOW else ""
        raise DataError(
            f"{path}: {len(ragged)} ragged row(s) with the wrong number of fields: {shown}{more}; the header has "
            f"{len(header)} ({sep.join(header)}). Put double quotes around fields that contain {sep!r}, quotes or "
            f"line breaks, or fix those lines."
        )
    return pd.DataFrame(records, columns=header, dtype=object)


# ---------------------------------------------------------------------------------------------
class _Where:
    """Formats row numbers for messages: 'CSV row(s) 3, 9 (header = row 1)' or 'row(s) 3 (0-based)'."""

    def __init__(self, path: Path, rows: np.ndarray, first_row: int):
        self.path, self.rows, self.csv = path, rows, first_row > 0

    def __call__(self, mask: np.ndarray) -> str:
        rows = self.rows[np.asarray(mask, dtype=bool)]
        shown = ", ".join(str(int(r)) for r in rows[:_SHOW])
        more = f" and {len(rows) - _SHOW} more" if len(rows) > _SHOW else ""
        return f"CSV row(s) {shown}{more} (header = row 1)" if self.csv else f"row(s) {shown}{more} (0-based)"


def validate_params(params: dict | None) -> dict:
    """The defaults with `params` over them, every name and value checked (one-line ConfigError)."""
    params = dict(params or {})
    unknown = sorted(set(params) - set(DEFAULTS))
    if unknown:
        raise ConfigError(
            f"csv: unknown parameter(s) {unknown}; known: {sorted(DEFAULTS)} (duplicates and "
            f"split_overlap are data-set options: give them to `locus data`)."
        )
    p = {**DEFAULTS, **params}
    if p["path"] is None or p["path"] == "":
        raise ConfigError("csv: parameter `path` (the CSV or Parquet file with prompt, model, score) is required.")
    check_params("csv", PARAMS, p)
    if abs(sum(p["split_fractions"]) - 1) > 1e-6:
        raise ConfigError(
            f"csv: split_fractions must be three non-negative numbers (train, val, test) summing to 1, "
            f"got {p['split_fractions']!r}."
        )
    return p


def _check_columns(df: pd.DataFrame, path: Path) -> None:
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing:
        near = {c: h for c in missing for h in map(str, df.columns) if h.strip().lower() == c}
        seen = [s for s in (";", "\t", ",", "|") if len(df.columns) == 1 and s in str(df.columns[0])]
        if seen:
            sep = {";": "semicolon", "\t": "tab", ",": "comma", "|": "pipe"}[seen[0]]
            raise DataError(
                f"{path}: the header {str(df.columns[0])[:80]!r} is one column: its fields are separated by "
                f"{sep}s ({seen[0]!r}), but this reader splits {'.tsv files on tabs' if path.name.lower().endswith(('.tsv', '.tsv.gz')) else '.csv files on commas'}; "
                f"save the file comma-separated as .csv{' or tab-separated as .tsv' if seen[0] == chr(9) else ''}."
            )
        hint = (
            f" (found {', '.join(repr(h) for h in near.values())}: write the names in lower case without spaces)"
            if near
            else " Rename your columns (e.g. question -> prompt, correct -> score)."
        )
        raise DataError(
            f"{path}: missing column(s) {missing}; required: {list(REQUIRED)}, optional: {list(OPTIONAL)}; "
            f"found: {list(map(str, df.columns))}.{hint}"
        )


def _as_text(values: pd.Series) -> pd.Series:
    """Cells as text: strings unchanged, missing -> '', anything else (Parquet numbers) via str()."""
    objects = values.to_numpy(dtype=object)
    return pd.Series(
        [
            v if isinstance(v, str) else ("" if v is None or (isinstance(v, float) and np.isnan(v)) else str(v))
            for v in objects
        ],
        index=values.index,
        dtype=object,
    )


def _text(df: pd.DataFrame, col: str, where: _Where, strip: bool = True) -> pd.Series:
    text = _as_text(df[col])
    empty = (text.str.strip() == "").to_numpy()
    if empty.any():
        raise DataError(f"{where.path}: column {col!r} is empty in {where(empty)}; fill it in or drop those rows.")
    return text.str.strip() if strip else text


def _scores(values: pd.Series, where: _Where) -> np.ndarray:
    """Numbers in [0, 1]; the words true/false (any case) are 1/0, also mixed with numbers in one column."""
    if pd.api.types.is_bool_dtype(values):
        return values.to_numpy(np.float64)
    if pd.api.types.is_numeric_dtype(values):
        num = values.to_numpy(np.float64, na_value=np.nan)
        raw = values
    else:
        raw = _as_text(values).str.strip()
        words = raw.str.lower().map(BOOLEAN_SCORES)
        numbers = pd.to_numeric(raw.where(words.isna()), errors="coerce")
        num = words.fillna(numbers).to_numpy(np.float64, na_value=np.nan)
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(num) | (num < 0) | (num > 1)
    if bad.any():
        rows = np.flatnonzero(bad)
        examples = ", ".join(repr(raw.iloc[r]) for r in rows[:_SHOW])
        raise DataError(
            f"{where.path}: column 'score' must be a number in [0, 1] (1 = correct) or true/false; {len(rows)} bad "
            f"value(s) in {where(bad)}: {examples}. Rescale scores to [0, 1], and drop the rows of unevaluated "
            f"pairs instead of leaving the score empty."
        )
    return num


def _model_values(values: pd.Series, column: str, model_ids: np.ndarray, names, where: _Where) -> np.ndarray:
    """One value per model from the rows' cells of a model column (:data:`MODEL_COLUMNS`; empty cells ignored),
    the same on every row of a model; a bad value, or a model whose rows disagree or give none, is refused,
    naming the rows."""
    kind, what = MODEL_COLUMNS[column]
    text = values.astype(str).str.strip() if not pd.api.types.is_numeric_dtype(values) else values.astype(str)
    empty = (text == "").to_numpy() | pd.isna(values).to_numpy()
    if kind == "text":
        parsed, bad, allowed = text.to_numpy(object), np.zeros(len(values), bool), "text"
    elif kind == "flag":
        flags = {"1": 1.0, "0": 0.0, "1.0": 1.0, "0.0": 0.0, "true": 1.0, "false": 0.0}
        parsed = text.str.lower().map(flags).to_numpy(np.float64, na_value=np.nan)
        bad, allowed = ~empty & np.isnan(parsed), "0 or 1 (true or false)"
    else:
        parsed = pd.to_numeric(text.where(~empty), errors="coerce").to_numpy(np.float64, na_value=np.nan)
        with np.errstate(invalid="ignore"):
            bad, allowed = ~empty & ~(np.isfinite(parsed) & (parsed >= 0)), "a number >= 0"
    if bad.any():
        shown = ", ".join(repr(v) for v in values[bad].tolist()[:_SHOW])
        raise DataError(
            f"{where.path}: column {column!r} must be {allowed} ({what}); bad value(s) {shown} in {where(bad)}. "
            f"Fix them, or leave the cell empty where another row of the model gives its {column}."
        )
    out = []
    for m, name in enumerate(names):
        rows = (model_ids == m) & ~empty
        distinct = pd.unique(parsed[rows])
        if len(distinct) == 0:
            raise DataError(
                f"{where.path}: model {name!r} has no {column} on any of its rows ({where(model_ids == m)}); give it "
                f"on at least one row, or drop the {column!r} column."
            )
        if len(distinct) > 1:
            raise DataError(
                f"{where.path}: column {column!r} must be constant per model, but model {name!r} has "
                f"{len(distinct)} values {pd.Series(distinct[:_SHOW]).tolist()} in {where(rows)}; give one {column} per model."
            )
        out.append(distinct[0])
    return np.array(out, dtype={"text": object, "flag": np.int64}.get(kind, np.float64))


def _splits(df: pd.DataFrame, where: _Where) -> pd.Series:
    split = _text(df, "split", where).str.lower()
    unknown = ~split.isin(SPLITS)
    if unknown.any():
        values = sorted(split[unknown].unique())[:_SHOW]
        raise DataError(
            f"{where.path}: column 'split' has unknown value(s) {values} in {where(unknown.to_numpy())}; "
            f"allowed: {', '.join(SPLITS)} (rename e.g. 'dev'/'validation' to 'val')."
        )
    return split


def _every_split_present(per_query: pd.Series, path: Path) -> None:
    missing = [s for s in SPLITS if s not in set(per_query)]
    if missing:
        raise DataError(
            f"{path}: no query is in split(s) {missing}; every split needs at least one query "
            f"(or drop the `split` column to have splits drawn)."
        )
