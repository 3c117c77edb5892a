"""A trained run's pool taking in a new model with any training-free method of :mod:`locus.onboarding_rivals`
instead of LOCUS's forward pass (issue 49, "serve what wins"): ``locus embed --onboarding`` and ``locus serve
--onboarding``.

The pool a method is fitted on is the run's models with every training-split score of theirs in the run's data
set, over the training queries that have a stored encoding (``pool="split"`` of
:mod:`locus.experiments.onboarding_rivals`), seeded by the run's seed: a refit gives the same method, so a model
re-onboarded from the same scored prompts predicts the same. A new model is onboarded from the *encodings* of its
scored prompts, which may be any texts; :meth:`~locus.onboarding_rivals.OnboardingMethod.onboard` takes pool
query ids only, so :func:`onboard_vectors` hands the method the vectors itself. A prompt of the data set keeps
its prompt id (kNN on agreement then reads the pool's real scores on it); any other text gets an id no pool
query has (the pool models' votes stand in for their scores).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from locus import onboarding_rivals as rivals
from locus.errors import ConfigError, DataError

DEFAULT = "locus"  # LOCUS's one forward pass: the run's own encoder and decoder, no data set needed
NO_ID = rivals.NEW_QUERY  # a prompt the data set lacks
_META_PREFIX = "locus."


def names() -> list[str]:
    """The onboarding methods `--onboarding` accepts, LOCUS first: the run's own and the training-free ones
    (an embedding fit of another method needs that method's run, which a served run is not)."""
    return ["locus", *rivals.training_free()]


def check_method(name: str) -> str:
    rivals.method_class(name)  # a ConfigError naming the known methods
    if name not in names():
        raise ConfigError(
            f"--onboarding {name}: fits a vector in another trained method's space; a served run onboards with "
            f"{', '.join(names())}."
        )
    return name


# --------------------------------------------------------------------------------------------------
# the run's data set and its encodings
# --------------------------------------------------------------------------------------------------
def default_data_paths(run) -> tuple[Path | None, Path | None]:
    """The run's data set directory (its config's ``dataset``: as given, else under the project holding the
    run's ``results/``) and its encodings ``results/encodings/{dataset}/{encoder}.parquet`` beside it."""
    recorded = run.config.get("dataset")
    if not isinstance(recorded, str) or not recorded:
        return None, None
    data = Path(recorded)
    if not data.is_absolute() and not data.is_dir():
        parts = Path(run.directory).resolve().parts
        if "results" in parts:  # results/runs/...: the project root is above results/
            root = Path(*parts[: len(parts) - parts[::-1].index("results") - 1])
            data = root / recorded
    if not data.is_dir():
        return None, None
    return data, data.parent.parent / "encodings" / data.name / f"{run.encoder}.parquet"


def data_paths(run, method: str, data: Path | None = None, encodings: Path | None = None) -> tuple[Path, Path]:
    """`data` and `encodings`, each defaulting to the run's own (:func:`default_data_paths`); a DataError
    naming the option to give when the run's is not here."""
    default_data, default_enc = default_data_paths(run)
    data = Path(data) if data is not None else default_data
    encodings = Path(encodings) if encodings is not None else default_enc
    for option, path in (("--data", data), ("--encodings", encodings)):
        if path is None or (option == "--encodings" and not path.is_file()):
            shown = "records none" if path is None else f"has none at {path}"
            raise DataError(
                f"--onboarding {method} is fitted on the run's data set and its encodings, but the run "
                f"{run.directory} {shown} here; give {option}."
            )
    return data, encodings


@dataclass
class RunPool:
    """A run's pool as the onboarding methods see it (`context`), with the data set and encodings it came from."""

    run: object  # locus.checkpoint.Checkpoint
    data_dir: Path
    queries: pd.DataFrame  # the data set's queries (prompt_id, prompt, split, ...); its scores are in `context`
    encodings: object  # locus.data.encodings.Encodings
    context: rivals.PoolContext
    ids_by_text: dict = field(repr=False, default_factory=dict)  # prompt text -> its first prompt id with an encoding

    def prompt_ids(self, prompts) -> np.ndarray:
        """Each prompt's id in the data set (:data:`NO_ID` for a text it lacks or holds no encoding of)."""
        return np.asarray([self.ids_by_text.get(str(p), NO_ID) for p in prompts], dtype=np.int64)


def read_run_pool(run, data: Path, encodings: Path) -> RunPool:
    """The pool of the run `run` (a loaded checkpoint) from its data set `data` and that data set's
    `encodings`, both checked to be the run's (data fingerprint, encoder)."""
    from locus import run_artifacts as ra
    from locus.data.canonical import read_dataset
    from locus.data.encodings import check_matches, read_encodings

    dataset = read_dataset(data)
    enc = read_encodings(encodings)
    fingerprint = check_matches(enc, dataset.queries, str(data))
    ra.check_same_data(
        run.directory, run.config.get("data_fingerprint"), fingerprint, data, "give --data the run's own data set."
    )
    if enc.encoder != run.encoder:
        raise DataError(
            f"--encodings {encodings}: made with encoder {enc.encoder}, but the run uses {run.encoder}; give the "
            "encodings of the run's encoder (a new model's prompts are encoded with it)."
        )
    train_ids = dataset.split_queries("train")["prompt_id"].to_numpy(np.int64)
    train_ids = train_ids[np.isin(train_ids, enc.prompt_ids)]  # a --for-train-sizes file holds only some
    train = dataset.split_scores("train")
    pairs = train[train["model_id"].isin(np.asarray(run.model_ids)) & train["prompt_id"].isin(train_ids)]
    if pairs.empty:
        raise DataError(
            f"{data}: no training-split score of the run's {len(run.model_ids)} models on an encoded query; an "
            "onboarding method is fitted on them: give the run's own data set and encodings."
        )
    seed = int(run.config.get("seed", 0) or 0)
    context = rivals.pool_from_pairs(pairs, train_ids, enc.take(train_ids), seed=seed)
    queries = dataset.queries[np.isin(dataset.queries["prompt_id"].to_numpy(np.int64), enc.prompt_ids)]
    ids_by_text: dict[str, int] = {}
    for pid, text in zip(queries["prompt_id"].to_numpy(np.int64), queries["prompt"].astype(str)):
        ids_by_text.setdefault(text, int(pid))
    return RunPool(run, Path(data), dataset.queries, enc, context, ids_by_text)


# --------------------------------------------------------------------------------------------------
# fitting and onboarding
# --------------------------------------------------------------------------------------------------
def fit_method(name: str, pool: RunPool) -> rivals.OnboardingMethod:
    """The training-free method `name` fitted on the run's pool (LOCUS needs no fitting: the run is its model)."""
    check_method(name)
    if name == DEFAULT:
        raise ValueError("LOCUS onboards with the run's own network; fit_method is for the training-free methods")
    return rivals.create(name).fit(pool.context)


def onboard_vectors(method: rivals.OnboardingMethod, vectors, scores, prompt_ids=None) -> rivals.OnboardedModel:
    """A new model onboarded by the fitted `method` from the encodings `vectors` [k, d] of its scored prompts,
    with the checks of ``onboard()``. `prompt_ids`: each prompt's id in the data set, :data:`NO_ID` for any
    other text (the default for all)."""
    return method.onboard_vectors(vectors, scores, prompt_ids)


def setting_text(details: dict) -> str:
    """What the method chose (λ, K, voters), as ``lambda = 4``; empty when it chooses nothing."""
    keys = ("lambda", "clusters", "voters")
    return ", ".join(f"{k} = {details[k]:g}" for k in keys if k in details)


def voters(onboarded: rivals.OnboardedModel, run) -> list[tuple[int, str, float]]:
    """[(model id, name, agreement)] of the pool models that vote for a kNN-on-agreement model, best first."""
    ids = onboarded.details.get("nearest", [])
    agreement = onboarded.details.get("agreement", [])
    return [(int(m), run.name(m), float(a)) for m, a in zip(ids, agreement)]


# --------------------------------------------------------------------------------------------------
# locus embed --onboarding METHOD
# --------------------------------------------------------------------------------------------------
@dataclass
class Onboarded:
    """A new model onboarded from a score file with a training-free method, and what to tell the user."""

    name: str
    method: str
    model: rivals.OnboardedModel
    n_evaluations: int
    mean_score: float
    reused: int  # prompts whose stored encoding was used
    pool: RunPool
    n_test: int = 0  # test-split queries of the data set it was scored on
    mean_p_test: float = float("nan")  # its mean P(correct) there
    wins_test: float = float("nan")  # share of them where its P(correct) is above every pool model's
    voters: list = field(default_factory=list)  # kNN on agreement: [(model id, name, agreement)]


def onboard_score_file(
    checkpoint: Path,
    scores: Path,
    method: str,
    data: Path | None = None,
    encodings: Path | None = None,
    encoder: str | None = None,
    model: str | None = None,
    name: str | None = None,
    duplicates: str = "error",
    out: Path | None = None,
) -> Onboarded:
    """Onboard the model scored in `scores` with the training-free `method` fitted on the pool of the run
    `checkpoint` (its data set `data` and `encodings`, by default the run's own); summarise it on the data
    set's test split against the run's models (their stored test logits, calibrated when the run is); with
    `out`, write its P(correct) on every encoded query of the data set (Parquet ``prompt_id, split,
    p_correct``). The run is not changed."""
    from locus import inference
    from locus import run_artifacts as ra

    check_method(method)
    if method == DEFAULT:
        raise ValueError("LOCUS onboards with `locus embed` itself (locus.inference.embed_new_model)")
    run = ra.load_checkpoint(checkpoint)
    prompts, values, found = inference.read_score_file(scores, model, duplicates)
    data, encodings = data_paths(run, method, data, encodings)
    pool = read_run_pool(run, data, encodings)
    if encoder is not None and encoder != pool.encodings.encoder:
        raise ConfigError(
            f"--encoder {encoder}: the pool's stored encodings are of {pool.encodings.encoder}, and --onboarding "
            f"{method} compares the new model's prompts with them; leave --encoder out."
        )
    ids = pool.prompt_ids(prompts)
    known = ids != NO_ID
    vectors = np.empty((len(prompts), pool.encodings.dim), dtype=np.float32)
    if known.any():
        vectors[known] = pool.encodings.take(ids[known])
    if not known.all():
        texts = [p for p, k in zip(prompts, known) if not k]
        vectors[~known] = inference.encode_checked(run, texts, None, str(scores))
    fitted = fit_method(method, pool)
    onboarded = onboard_vectors(fitted, vectors, values, ids)
    result = Onboarded(
        name or found or "new-model", method, onboarded, len(prompts), float(np.mean(values)), int(known.sum()), pool
    )
    result.voters = voters(onboarded, run)
    _summarise_on_test(result, checkpoint)
    if out is not None:
        write_predictions(out, result, checkpoint)
    return result


def _summarise_on_test(result: Onboarded, checkpoint: Path) -> None:
    """The new model's mean P(correct) on the data set's test queries, and the share of them where it is above
    every run model's P(correct) (their logits of the run's ``scores_test.parquet``)."""
    from locus import run_artifacts as ra
    from locus.inference import probability_map

    test_ids, _, logits = ra.read_scores(checkpoint, "test")
    have = np.isin(test_ids, result.pool.encodings.prompt_ids)
    if not have.any():
        return
    calibration = ra.read_calibration(checkpoint)
    to_p = calibration.probabilities if calibration is not None else probability_map(checkpoint, False)
    pool_p = np.asarray(to_p(logits[have]), dtype=np.float64)
    mine = result.model.predict(result.pool.encodings.take(test_ids[have]))
    result.n_test = int(have.sum())
    result.mean_p_test = float(np.mean(mine))
    result.wins_test = float(np.mean(mine > pool_p.max(axis=1)))


def write_predictions(out: Path, result: Onboarded, checkpoint: Path) -> None:
    """`result`'s P(correct) on every encoded query of the data set, Parquet ``prompt_id, split, p_correct``
    with what made it in the file's metadata (``locus.*`` keys), written atomically."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from locus.atomic import atomic_path

    queries = result.pool.queries
    queries = queries[np.isin(queries["prompt_id"].to_numpy(np.int64), result.pool.encodings.prompt_ids)]
    queries = queries.sort_values("prompt_id")
    ids = queries["prompt_id"].to_numpy(np.int64)
    frame = pd.DataFrame(
        {
            "prompt_id": ids,
            "split": queries["split"].astype(str).to_numpy(),
            "p_correct": result.model.predict(result.pool.encodings.take(ids)),
        }
    )
    meta = {
        "name": result.name,
        "onboarding": result.method,
        "setting": setting_text(result.model.details),
        "checkpoint": str(checkpoint),
        "dataset": str(result.pool.data_dir),
        "n_evaluations": result.n_evaluations,
        "mean_score": result.mean_score,
    }
    table = pa.Table.from_pandas(frame, preserve_index=False)
    table = table.replace_schema_metadata({f"{_META_PREFIX}{k}": str(v) for k, v in meta.items()})
    with atomic_path(out) as tmp:
        pq.write_table(table, tmp)
