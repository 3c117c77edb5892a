"""Using a trained run: embed a new model from its scored prompts (``locus embed``), rank a run's models
for query texts and decide where each goes (``locus route``: argmax, selective routing with a threshold
certified on the run's validation split, or cost-aware routing; :mod:`locus.decisions`).

Input files are checked here and every problem names the file, the rows and the fix
(:class:`~locus.errors.DataError`). Texts are encoded with :func:`locus.checkpoint.encode_queries`
(looked up at call time, so tests can replace the sentence encoder).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from locus.errors import DataError, require_file

SCORE_COLUMNS = ("prompt", "score")


# --------------------------------------------------------------------------------------------------
# locus embed
# --------------------------------------------------------------------------------------------------
def read_score_file(
    path: Path, model: str | None = None, duplicates: str = "error"
) -> tuple[list[str], np.ndarray, str | None]:
    """(prompts, scores float32, model name or None) from a CSV, TSV (``.tsv``/``.tab``: tab-separated) or Parquet
    (``.parquet``/``.pq``) file with columns prompt, score and optionally model. A file with the scores of several models needs `model` to pick one (one
    embedding is one model); :class:`DataError` names the file and rows otherwise. A prompt given more
    than once is resolved by the data sets' duplicate policy `duplicates` (last / max / mean; ``error``,
    the default, refuses it)."""
    import pandas as pd

    path = Path(path)
    formats = "CSV (.csv), tab-separated (.tsv, .tab) or Parquet (.parquet, .pq)"
    require_file(path, f"give a {formats} file with columns prompt, score.")
    suffix = path.suffix.lower()
    kind = "Parquet" if suffix in (".parquet", ".pq") else "tab-separated" if suffix in (".tsv", ".tab") else "CSV"
    try:
        if kind == "Parquet":
            df = pd.read_parquet(path)
        else:
            df = pd.read_csv(path, sep="\t" if kind == "tab-separated" else ",")
    except UnicodeDecodeError:
        raise DataError(
            f"{path}: not UTF-8 text; convert it, e.g. `iconv -f latin1 -t utf-8 {path} > "
            f"{path.with_name(path.stem + '-utf8' + path.suffix)}`."
        ) from None
    except Exception as exc:  # pandas/pyarrow raise many types
        raise DataError(f"{path}: not a readable {kind} file ({exc}); give a {formats} file.") from exc
    missing = [c for c in SCORE_COLUMNS if c not in df.columns]
    if missing and kind == "CSV" and len(df.columns) == 1 and "\t" in str(df.columns[0]):
        raise DataError(
            f"{path}: read as CSV (comma-separated) by its name, but its header is tab-separated; name it .tsv "
            f"(or give a {formats} file)."
        )
    if missing:
        raise DataError(f"{path}: missing column(s) {missing}; found {list(df.columns)}. Needed: prompt, score.")
    df, model = _select_model(df, path, model)
    if len(df) == 0:
        raise DataError(f"{path}: no rows; give at least one scored prompt (more gives a better embedding).")
    rows = df.index.to_numpy() + 2  # file rows, 1 = header
    empty = df["prompt"].isna() | (df["prompt"].astype(str).str.strip() == "")
    if empty.any():
        raise DataError(
            f"{path}: empty prompt in row(s) {rows[empty.to_numpy()][:5].tolist()} (1 = header); "
            "fill them in or drop them."
        )
    score = pd.to_numeric(df["score"], errors="coerce").to_numpy(np.float64)
    bad = ~((score >= 0) & (score <= 1))
    if bad.any():
        raise DataError(
            f"{path}: score must be a number in [0, 1] (1 = correct); row(s) {rows[bad][:5].tolist()} "
            f"(1 = header) have {df['score'].to_numpy()[bad][:5].tolist()}."
        )
    prompts = df["prompt"].astype(str)
    dup = prompts.duplicated(keep=False).to_numpy()
    if dup.any():
        from locus.data.canonical import check_option, resolve_duplicates

        check_option("duplicates", duplicates, "--duplicates")
        if duplicates == "error":
            first = prompts[dup].iloc[0]
            same = (prompts == first).to_numpy()
            raise DataError(
                f"{path}: {int(prompts[dup].nunique())} prompt(s) are given more than once, e.g. "
                f"{first[:60]!r} in rows {rows[same][:5].tolist()} (1 = header) with scores "
                f"{score[same][:5].tolist()}; keep one row per prompt or choose --duplicates last, max or mean."
            )
        codes, uniques = pd.factorize(prompts)
        frame = pd.DataFrame({"prompt_id": codes, "model_id": 0, "score": score})
        frame = resolve_duplicates(frame, duplicates, str(path)).sort_values("prompt_id")
        return [uniques[i] for i in frame["prompt_id"]], frame["score"].to_numpy(np.float32), model
    return prompts.tolist(), score.astype(np.float32), model


def _select_model(df, path: Path, model: str | None):
    """Rows of one model: `model` if given, else the only model of the file's `model` column."""
    if "model" not in df.columns:
        if model is not None:
            raise DataError(
                f"{path}: --model {model} given but the file has no 'model' column; leave --model out "
                "(all rows are one model) or add the column."
            )
        return df, None
    names = df["model"].astype(str)
    distinct = list(dict.fromkeys(names[df["model"].notna()]))
    if model is None:
        if len(distinct) > 1:
            shown = ", ".join(distinct[:5]) + (", ..." if len(distinct) > 5 else "")
            raise DataError(
                f"{path}: scores of {len(distinct)} models in column 'model' ({shown}); one embedding is "
                f"one model: pick one with --model NAME."
            )
        if df["model"].isna().any() and distinct:
            rows = (df.index[df["model"].isna()].to_numpy() + 2).tolist()[:5]
            raise DataError(f"{path}: empty model in row(s) {rows} (1 = header); fill them in or drop the column.")
        return df, (distinct[0] if distinct else None)
    if model not in distinct:
        shown = ", ".join(distinct[:5]) + (", ..." if len(distinct) > 5 else "")
        raise DataError(f"{path}: no rows of model {model!r} in column 'model' (found: {shown}); check --model.")
    return df[names == model], model


def nearest(z, pool_ids, pool_z, top: int):
    """[(model_id, cosine similarity)] of the `top` pool models closest to z."""
    zn = z / max(float(np.linalg.norm(z)), 1e-12)
    pn = pool_z / np.maximum(np.linalg.norm(pool_z, axis=1, keepdims=True), 1e-12)
    sim = pn @ zn
    order = np.argsort(-sim, kind="stable")[: max(0, top)]
    return [(int(pool_ids[i]), float(sim[i])) for i in order]


@dataclass
class Embedded:
    """A new model's embedding and what to tell the user about it."""

    z: np.ndarray
    name: str
    n_evaluations: int
    mean_score: float
    nearest: list = field(default_factory=list)  # [(model_id, model name, cosine similarity)]


def set_precision(run_dir, precision: str | None, checkpoint) -> None:
    """Run the loaded method's forward passes in `precision` (LOCUS's parameter; None = the run's own)."""
    if precision is None:
        return
    if "precision" not in run_dir.method.params.names():
        raise DataError(
            f"{checkpoint}: method {run_dir.method.name!r} has no precision option; leave out "
            "--precision or give a LOCUS run."
        )
    run_dir.method.params = run_dir.method.params.replace(precision=precision)


def embed_new_model(
    checkpoint: Path,
    scores: Path,
    encoder: str | None = None,
    model: str | None = None,
    top: int = 5,
    out: Path | None = None,
    name: str | None = None,
    precision: str | None = None,
    duplicates: str = "error",
) -> Embedded:
    """Embed the model scored in `scores` with the LOCUS run `checkpoint` (one forward pass, the run is
    not changed; in `precision` when given); optionally write the embedding to `out` (Parquet)."""
    from locus import run_artifacts as ra
    from locus.data.encodings import write_vectors

    run_dir = ra.load_checkpoint(checkpoint)  # checks that its files belong to one run
    set_precision(run_dir, precision, checkpoint)
    if not hasattr(run_dir.method, "embed"):
        raise DataError(f"{checkpoint}: method {run_dir.method.name!r} cannot embed new models; give a LOCUS run.")
    prompts, values, found = read_score_file(scores, model, duplicates)
    encoder = encoder or run_dir.encoder
    z = run_dir.method.embed(encode_checked(run_dir, prompts, encoder, str(scores)), values)
    name = name or found or "new-model"
    result = Embedded(z, name, len(prompts), float(np.mean(values)))
    if top > 0:
        pool_ids, pool_z = run_dir.method.model_embeddings()
        result.nearest = [(mid, run_dir.name(mid), sim) for mid, sim in nearest(z, pool_ids, pool_z, top)]
    if out is not None:
        write_vectors(
            out,
            "model_id",
            [-1],
            z[None, :],
            {"name": name, "checkpoint": str(checkpoint), "encoder": encoder, "n_evaluations": len(prompts)},
        )
    return result


# --------------------------------------------------------------------------------------------------
# locus route
# --------------------------------------------------------------------------------------------------
def read_query_file(path: Path) -> list[str]:
    """Non-blank lines of a UTF-8 text file; :class:`DataError` when missing or not UTF-8."""
    path = Path(path)
    require_file(path, "give a text file with one query per line.")
    data = path.read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        fixed = path.with_name(path.stem + "-utf8" + path.suffix)
        raise DataError(
            f"{path}: not UTF-8 text (byte 0x{data[exc.start]:02x} on line {line}); convert it, e.g. "
            f"`iconv -f latin1 -t utf-8 {path} > {fixed}`, and pass the converted file."
        ) from None
    return [line.strip() for line in text.splitlines() if line.strip()]


def gather_queries(queries, file: Path | None = None) -> list[str]:
    """Query texts from the command line and/or a file; at least one."""
    out = [q for q in queries if q.strip()]
    if file is not None:
        out += read_query_file(file)
    if not out:
        raise DataError("no query given; pass query texts or --file queries.txt (one query per line).")
    return out


@dataclass
class Ranking:
    query: str
    models: list  # [(model_id, model name, probability of a correct answer)], best first


def route(
    checkpoint: Path,
    queries,
    file: Path | None = None,
    models: list[str] | None = None,
    top_k: int = 3,
    encoder: str | None = None,
    precision: str | None = None,
    calibrated: bool = False,
) -> list[Ranking]:
    """The `top_k` most likely correct models (of `models`, default all) of the run for each query (LOCUS
    runs: predicted in `precision` when given; probabilities from the run's calibration.json with
    `calibrated`)."""
    run_dir, texts, candidates, logits, probs = _predict(
        checkpoint, queries, file, models, encoder, precision, calibrated
    )
    # ranked by the logits themselves: the sigmoid can tie distinct large logits, a calibration map's flat steps
    # tie whole ranges of them
    return rank(texts, logits, candidates, run_dir.name, top_k, probs if calibrated else None)


def _predict(checkpoint, queries, file, models, encoder, precision, calibrated):
    """(checkpoint, query texts, candidate model ids, logits and P(correct) [queries x candidates])."""
    from locus import run_artifacts as ra

    run_dir = ra.load_checkpoint(checkpoint)  # checks that its files belong to one run
    set_precision(run_dir, precision, checkpoint)
    texts = gather_queries(queries, file)
    candidates = run_dir.resolve_models(",".join(models) if models else None)
    if len(candidates) == 0:
        raise DataError("--models names no model; give model ids or names, or leave --models out for all.")
    vectors = encode_checked(run_dir, texts, encoder, "route")
    logits = run_dir.method.predict_logits(vectors, candidates)
    return run_dir, texts, candidates, logits, probability_map(checkpoint, calibrated)(logits)


def probability_map(checkpoint, calibrated: bool):
    """logits -> P(correct): the run's calibration.json with `calibrated` (a DataError naming the fix when it
    is missing), else the sigmoid of the logit."""
    from locus import run_artifacts as ra

    if not calibrated:
        return lambda logits: 1.0 / (1.0 + np.exp(-np.clip(np.asarray(logits, dtype=np.float64), -40, 40)))
    cal = ra.read_calibration(checkpoint)
    if cal is None:
        raise DataError(
            f"{Path(checkpoint) / ra.calibration_file}: missing; --calibrated needs the run's calibration: run "
            f"`locus calibrate --run {checkpoint}` first (or leave out --calibrated)."
        )
    return cal.probabilities


@dataclass
class Decision:
    """One query's routing decision: the chosen model (None: abstained), whether the policy fell back, why,
    and the ranking of the candidates."""

    query: str
    chosen: tuple | None  # (model_id, name, probability) or None when abstaining
    fell_back: bool
    reason: str
    ranking: Ranking


@dataclass
class Policy:
    """A routing policy of `locus route`: selective (alpha, delta, fallback) or cost-aware (cost_weight or
    min_prob); `data`: the data set for validation labels and costs (default: the one the run records).
    `alphas`: the selective-routing table's risk levels (`locus decisions selective`): tau is certified over
    them and alpha together, so it is the table's tau (the smallest level fixes which thresholds are skipped)."""

    alpha: float | None = None
    delta: float = 0.1
    fallback: str = "best_single"
    cost_weight: float | None = None
    min_prob: float | None = None
    data: Path | None = None
    alphas: tuple[float, ...] = ()

    def kind(self) -> str:
        given = [
            k
            for k, v in (("selective", self.alpha), ("cost-weight", self.cost_weight), ("min-prob", self.min_prob))
            if v is not None
        ]
        if len(given) > 1:
            from locus.errors import ConfigError

            raise ConfigError(
                f"give one routing policy, not {' and '.join(given)}: --alpha (selective), --cost-weight or --min-prob."
            )
        return given[0] if given else "argmax"


def _run_data(checkpoint, run_dir, data: Path | None):
    """The data set of the run: `data`, else the directory recorded in its config.json (checked by fingerprint)."""
    from locus import run_artifacts as ra
    from locus.data.canonical import read_dataset
    from locus.data.encodings import data_fingerprint

    where = Path(data) if data is not None else Path(str(run_dir.config.get("dataset", "")))
    if data is None and not where.is_dir():
        raise DataError(
            f"{checkpoint}: the data set it records ({where}) is not here; pass the run's data set with --data DIR "
            "(validation labels and model costs are read from it)."
        )
    dataset = read_dataset(where)
    fingerprint = data_fingerprint(dataset.queries["prompt_id"], dataset.queries["prompt"])
    ra.check_same_data(
        checkpoint, run_dir.config.get("data_fingerprint"), fingerprint, where, "pass its own data set with --data"
    )
    return where, dataset


def decide(
    checkpoint: Path,
    queries,
    policy: Policy,
    file: Path | None = None,
    models: list[str] | None = None,
    top_k: int = 3,
    encoder: str | None = None,
    precision: str | None = None,
    calibrated: bool = False,
) -> tuple[list[Decision], str]:
    """Decisions of `policy` for each query, and one line saying how (the certified threshold, where the
    costs were read). Selective: tau certified now by Learn-then-Test on the run's validation split (its
    scores_val.parquet and the data set's labels) exactly as the selective-routing table certifies it
    (:func:`locus.decisions.learn_then_test_thresholds` over ``policy.alphas`` and alpha, the pairs without a
    label masked), so with `calibrated` tau is the table's for the same run and candidates."""
    from locus import decisions
    from locus import run_artifacts as ra
    from locus.data.canonical import model_costs, resolve_model
    from locus.errors import ConfigError
    from locus.evaluation import best_single_model

    kind = policy.kind()
    run_dir, texts, candidates, logits, probs = _predict(
        checkpoint, queries, file, models, encoder, precision, calibrated
    )
    rankings = rank(texts, logits, candidates, run_dir.name, top_k, probs)
    what = "calibrated" if calibrated else "uncalibrated (sigmoid of the logit; --calibrated uses calibration.json)"
    if kind == "argmax":
        cols, fell, note = (
            decisions.top_choice(probs, logits)[0],
            np.zeros(len(texts), bool),
            f"most likely model, {what} probabilities",
        )
    else:
        where, data = _run_data(checkpoint, run_dir, policy.data)
        if kind == "selective":
            val_ids, val_models, val_logits = ra.read_scores(checkpoint, "val")
            expected = data.split_queries("val")["prompt_id"].to_numpy(np.int64)
            if not np.array_equal(val_ids, expected):
                raise DataError(
                    f"{checkpoint}: its {len(val_ids)} scored validation queries are not the {len(expected)} "
                    f"validation queries of {where}; pass the data set the run was trained on with --data."
                )
            pos = np.searchsorted(val_models, candidates)
            labels = data.label_matrix(val_ids, candidates)
            unlabelled = np.isnan(labels)  # as the table: pairs without a label are never chosen
            val_probs = np.where(unlabelled, np.nan, probability_map(checkpoint, calibrated)(val_logits[:, pos]))
            val_logits = np.where(unlabelled, np.nan, val_logits[:, pos])
            # one grid with the table's levels: its smallest level sets the skipped thresholds, as in the table
            levels = sorted({float(policy.alpha), *map(float, policy.alphas)})
            taus = decisions.learn_then_test_thresholds(val_probs, labels, levels, policy.delta, logits=val_logits)
            tau = float(taus[levels.index(float(policy.alpha))])
            skipped = decisions.min_routed(levels[0], policy.delta)
            if policy.fallback == "abstain":
                fb, fb_text = "abstain", "abstain"
            else:
                if policy.fallback == "best_single":
                    fb = best_single_model(labels)
                else:
                    names = {int(m): run_dir.name(m) for m in candidates}
                    try:
                        fb = int(np.flatnonzero(candidates == resolve_model(policy.fallback, names, "--fallback"))[0])
                    except ConfigError as exc:
                        raise DataError(f"{exc} (the candidates of --models, or every model of the run)") from None
                fb_text = run_dir.name(candidates[fb])
            cols, routed = decisions.selective_choice(probs, tau, fb, logits)
            fell = ~routed
            tau_text = "none certified: every query falls back" if tau == decisions.NONE else f"tau = {tau:.2f}"
            note = (
                f"selective routing: {tau_text} (Learn-then-Test on the {len(val_ids)} validation queries of "
                f"{checkpoint}, alpha = {policy.alpha:g}, delta = {policy.delta:g}, thresholds routing fewer than "
                f"{skipped} skipped (alpha = {levels[0]:g}, the smallest level); {what} probabilities); fallback: {fb_text}"
            )
        else:
            costs, column = model_costs(data.models, candidates, f"{where}/models.parquet")
            if kind == "cost-weight":
                cols = decisions.choose_cost_weighted(probs, costs, policy.cost_weight, logits)
                fell = np.zeros(len(texts), bool)
                rule = f"max P - {policy.cost_weight:g} x cost"
            else:
                cols = decisions.choose_cheapest_above(probs, costs, policy.min_prob, logits)
                fell = ~(probs >= policy.min_prob).any(axis=1)  # no model reaches p: the most likely one
                rule = f"cheapest model with P >= {policy.min_prob:g} (else the most likely)"
            note = (
                f"cost-aware routing: {rule}; costs: column {column!r} of {where}/models.parquet; {what} probabilities"
            )
    out = []
    for q, text in enumerate(texts):
        c = int(cols[q])
        chosen = (
            None if c == decisions.ABSTAIN else (int(candidates[c]), run_dir.name(candidates[c]), float(probs[q, c]))
        )
        reason = "abstained" if chosen is None else ("fell back" if fell[q] else "routed")
        out.append(Decision(text, chosen, bool(fell[q]), reason, rankings[q]))
    return out, note


def encode_checked(run_dir, texts, encoder: str | None, what: str) -> np.ndarray:
    """Texts encoded with `encoder` (default: the run's), checked against the run's encoding dimension."""
    from locus import checkpoint as ckpt

    return ckpt.check_dim(ckpt.encode_queries(encoder or run_dir.encoder, list(texts)), run_dir, what)


def rank(texts, logits: np.ndarray, candidates, name, top_k: int, probs: np.ndarray | None = None) -> list[Ranking]:
    """Rankings of the `top_k` `candidates` (model ids; `name(id)` gives the name) per query, best first, by
    their logits [queries x candidates] (ties: candidate order), with the probability of a correct answer:
    `probs` (e.g. calibrated) or the sigmoid of the logit. A calibration map is monotone, so the logits order
    the calibrated probabilities too, and break the ties of their flat steps by the model's own score."""
    if probs is None:
        probs = 1.0 / (1.0 + np.exp(-np.clip(logits.astype(np.float64), -40, 40)))
    prob = np.asarray(probs, dtype=np.float64)
    k = max(1, min(top_k, len(candidates)))
    out = []
    for qi, text in enumerate(texts):
        order = np.argsort(-np.asarray(logits[qi], dtype=np.float64), kind="stable")[:k]
        out.append(Ranking(text, [(int(candidates[j]), name(candidates[j]), float(prob[qi, j])) for j in order]))
    return out
