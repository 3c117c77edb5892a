"""Small helpers shared by the gradient-trained methods (EmbedLLM, EmbedLLM+, IRT-Net; partly LOCUS).

- :class:`PairTable`: a run's long (prompt, model, score) rows turned into index arrays over the
  unique prompts' encodings, built once so training never touches pandas;
- :class:`ValidationSet`: the validation split as a dense [queries x models] label matrix (NaN =
  not evaluated) plus the metric every trainer selects its checkpoint by;
- :func:`train_early_stopping`: the epoch loop with early stopping on a validation metric,
  remembering the best weights (:class:`EarlyStopping`, which LOCUS's step loop uses too);
- :func:`fit_rows`: fit a few free rows (new model embeddings) with everything else frozen, one model or
  several at once (:class:`EvaluationSets`);
- :func:`state_arrays` / :func:`load_arrays`: a module's state dict as numpy arrays and back (saved by
  :mod:`locus.weights` through :meth:`locus.methods.base.Method.save`);
- :func:`flush_denormals`: the CPU float mode every torch training in locus (LOCUS's too) runs in.

torch is imported here at module level: this module is only imported by the torch methods when they
train, never by ``locus --help``.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd
import torch

from locus import evaluation
from locus.data.canonical import pairs_to_matrix
from locus.errors import DataError
from locus.methods.base import FitData, better


def flush_denormals() -> bool:
    """Treat subnormal floats (|x| < 1.2e-38) as zero in CPU arithmetic (FTZ/DAZ); True where the CPU
    supports it.

    Weight decay shrinks weights that no longer get a gradient (dead ReLU units, Adam's second moments
    of tiny gradients) geometrically until they are subnormal, and x86 CPUs compute on subnormals many
    times slower. Flushed, such a value counts as 0 instead of 1e-39: a change in the last bits at most.
    The mode is per thread: torch's worker threads take it from the thread that starts them, so it is set
    before a fit's first tensor operation. CUDA is not affected."""
    return bool(torch.set_flush_denormal(True))


def setup_torch(seed: int, threads: int) -> torch.Generator:
    """Seed torch, fix the thread count (0 = leave torch's setting) and flush subnormal floats
    (:func:`flush_denormals`); return a seeded generator."""
    if threads:
        torch.set_num_threads(int(threads))
    flush_denormals()
    torch.manual_seed(seed)
    return torch.Generator().manual_seed(int(seed))


@dataclass
class PairTable:
    """Training rows as tensors: ``vectors[query[i]]`` was answered by model ``model[i]`` with ``score[i]``."""

    prompt_ids: np.ndarray  # unique prompts, ascending
    vectors: torch.Tensor  # float32 [n_prompts, d_phi]
    query: torch.Tensor  # int64 [n_rows] row -> prompt position
    model: torch.Tensor  # int64 [n_rows] row -> model position
    score: torch.Tensor  # float32 [n_rows]

    @classmethod
    def from_frame(cls, rows: pd.DataFrame, model_ids: np.ndarray, encodings) -> "PairTable":
        rows = rows[rows["model_id"].isin(model_ids)]
        prompt_ids = np.sort(rows["prompt_id"].unique())
        vectors = encodings.take(prompt_ids)  # DataError names missing prompts
        q = np.searchsorted(prompt_ids, rows["prompt_id"].to_numpy(np.int64))
        m = np.searchsorted(model_ids, rows["model_id"].to_numpy(np.int64))
        return cls(
            prompt_ids,
            torch.from_numpy(np.ascontiguousarray(vectors, dtype=np.float32)),
            torch.from_numpy(q.astype(np.int64)),
            torch.from_numpy(m.astype(np.int64)),
            torch.from_numpy(rows["score"].to_numpy(np.float32)),
        )

    def __len__(self) -> int:
        return int(self.score.shape[0])


class ValidationSet:
    """The validation split as dense matrices, scored in one vectorised pass per epoch."""

    def __init__(self, val: pd.DataFrame, model_ids: np.ndarray, encodings):
        val = val[val["model_id"].isin(model_ids)]
        if val.empty:
            raise DataError(
                "validation split has no evaluations of the fitted models; early stopping needs some "
                "(give the `val` split queries scored by these models)."
            )
        self.prompt_ids = np.sort(val["prompt_id"].unique())
        self.vectors = torch.from_numpy(np.ascontiguousarray(encodings.take(self.prompt_ids), dtype=np.float32))
        self.labels = pairs_to_matrix(val, self.prompt_ids, model_ids)

    def metrics(self, logits: np.ndarray) -> dict:
        """val_routing (hit@1), val_acc and val_bce: :func:`locus.evaluation.validation_metrics`."""
        return evaluation.validation_metrics(logits, self.labels)


def train_early_stopping(
    module: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    batches: Callable[[], list],
    loss_of_batch: Callable[[object], torch.Tensor],
    validate: Callable[[], dict],
    *,
    max_epochs: int,
    patience: int,
    select_by: str,
    on_epoch_end: Callable[[dict], None] | None = None,
) -> pd.DataFrame:
    """Train for at most `max_epochs`, keep the weights of the best epoch by `select_by`, restore them.

    `batches()` returns the (shuffled) batches of one epoch; `validate()` returns the metrics dict of
    :meth:`ValidationSet.metrics` (the module is put in eval mode around it). Stops after `patience`
    epochs without improvement. Returns the per-epoch history.
    """
    stopper, rows = EarlyStopping(select_by, patience), []
    t0 = time.perf_counter()
    for epoch in range(1, max_epochs + 1):
        module.train()
        total, count = 0.0, 0
        for batch in batches():
            optimizer.zero_grad(set_to_none=True)
            loss = loss_of_batch(batch)
            loss.backward()
            optimizer.step()
            total += float(loss.detach())
            count += 1
        module.eval()
        with torch.no_grad():
            metrics = validate()
        row = {
            "epoch": epoch,
            "train_loss": total / max(count, 1),
            **metrics,
            "seconds": round(time.perf_counter() - t0, 3),
        }
        if on_epoch_end is not None:
            on_epoch_end(row)
        row["best"] = stopper.update(epoch, metrics[select_by], module)
        rows.append(row)
        if stopper.should_stop(epoch):
            break
    stopper.restore(module)
    module.eval()
    return pd.DataFrame(rows)


class EarlyStopping:
    """The best weights so far by the validation metric `select_by`, and when to stop: once `patience`
    steps (or epochs) have passed since the best one, but never before step `min_steps`."""

    def __init__(self, select_by: str, patience: int, min_steps: int = 0):
        self.select_by, self.patience, self.min_steps = select_by, patience, min_steps
        self.value: float | None = None  # the best value so far
        self.step = 0  # the step (epoch) it was measured at
        self.row: dict = {}  # what was logged with it
        self.state = None  # a copy of the weights then

    def update(self, step: int, value: float, module: torch.nn.Module, row: dict | None = None) -> bool:
        """Keep a copy of `module`'s weights when `value` is better (:func:`locus.methods.base.better`:
        a strict improvement; NaN always counts); True if it was."""
        if not better(self.select_by, value, self.value):
            return False
        self.value, self.step, self.row = value, step, row if row is not None else {}
        self.state = copy.deepcopy(module.state_dict())
        return True

    def should_stop(self, step: int) -> bool:
        return step >= self.min_steps and step - self.step >= self.patience

    def restore(self, module: torch.nn.Module) -> None:
        """Load the best weights back into `module`."""
        module.load_state_dict(self.state)


@dataclass
class QueryBatch:
    """All training rows of a few queries: ``queries`` (prompt positions), ``rows`` (row indices) and
    ``local`` (position of each row's query within ``queries``)."""

    queries: torch.Tensor
    rows: torch.Tensor
    local: torch.Tensor


def query_batches(table: PairTable, batch_size: int, generator: torch.Generator) -> list[QueryBatch]:
    """One epoch of batches made of *whole queries*: shuffle the training queries, then group them so a
    batch holds about `batch_size` rows (all evaluations of each of its queries).

    Grouping by query lets the query side (input noise, projection, IRT-Net's mixture of experts) run
    once per query per step instead of once per row, which is what makes CPU training fast; the input
    noise is therefore drawn per query and step, shared by that query's rows in the step.
    """
    n_prompts = int(table.vectors.shape[0])
    order = torch.argsort(table.query, stable=True)
    counts = torch.bincount(table.query, minlength=n_prompts)
    starts = torch.cat([torch.zeros(1, dtype=torch.int64), torch.cumsum(counts, 0)])
    per_batch = max(1, int(round(batch_size / max(len(table) / max(n_prompts, 1), 1.0))))
    perm = torch.randperm(n_prompts, generator=generator)
    batches = []
    for chunk in torch.split(perm, per_batch):
        sizes = counts[chunk]
        rows = torch.cat([order[starts[q] : starts[q + 1]] for q in chunk.tolist()])
        local = torch.repeat_interleave(torch.arange(len(chunk)), sizes)
        batches.append(QueryBatch(chunk, rows, local))
    return batches


def fit_rows(
    init: torch.Tensor,
    logits_of: Callable[[torch.Tensor], torch.Tensor],
    targets: torch.Tensor,
    weights: torch.Tensor,
    *,
    steps: int,
    lr: float,
    weight_decay: float,
) -> torch.Tensor:
    """Fit free rows `init` [k, dim] (new model embeddings) by full-batch Adam on a weighted sum of BCE.

    `logits_of(params)` must compute the logits of every target with all other weights frozen. With each
    row's targets weighted 1 / (their count) (:class:`EvaluationSets`), k rows are fitted together exactly
    as each alone on its mean BCE would be: Adam updates every element on its own gradient. Weight decay
    is Adam's L2 term, as in training. Returns the fitted tensor (detached).
    """
    params = init.clone().requires_grad_(True)
    opt = torch.optim.Adam([params], lr=lr, weight_decay=weight_decay, fused=True)
    for _ in range(int(steps)):
        opt.zero_grad(set_to_none=True)
        logits = logits_of(params)
        loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, targets, weight=weights, reduction="sum")
        loss.backward()
        opt.step()
    return params.detach()


def distinct_rows(vectors: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(the distinct rows of `vectors` [n, d], compared byte for byte; the index [n] of each row among them)."""
    array = np.ascontiguousarray(vectors.numpy())
    keys = array.view(np.dtype((np.void, array.dtype.itemsize * array.shape[1]))).ravel()
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    return torch.from_numpy(array[first]), torch.from_numpy(inverse.ravel().astype(np.int64))


@dataclass
class EvaluationSets:
    """Several models' evaluation sets stacked for one batched fit: every set's rows one after another,
    `owner` = the set each row belongs to, `weight` = 1 / (its set's size)."""

    vectors: torch.Tensor  # [rows, d_phi]
    scores: torch.Tensor  # [rows]
    owner: torch.Tensor  # [rows] int64
    weight: torch.Tensor  # [rows]

    @classmethod
    def stack(cls, sets: list[tuple[np.ndarray, np.ndarray]]) -> "EvaluationSets":
        sizes = np.array([len(s) for _, s in sets], dtype=np.int64)
        owner = np.repeat(np.arange(len(sets), dtype=np.int64), sizes)
        return cls(
            torch.from_numpy(np.ascontiguousarray(np.concatenate([v for v, _ in sets]), dtype=np.float32)),
            torch.from_numpy(np.concatenate([s for _, s in sets]).astype(np.float32)),
            torch.from_numpy(owner),
            torch.from_numpy((1.0 / sizes[owner]).astype(np.float32)),
        )


def state_arrays(module: torch.nn.Module) -> dict[str, np.ndarray]:
    """The module's state dict as contiguous numpy arrays (CPU copies), ready for :mod:`locus.weights`."""
    return {k: v.detach().cpu().contiguous().numpy().copy() for k, v in module.state_dict().items()}


def load_arrays(module: torch.nn.Module, arrays: dict[str, np.ndarray], device=None) -> None:
    """Load numpy arrays into the module (strict: missing or unexpected keys and wrong shapes raise)."""
    module.load_state_dict(
        {k: torch.from_numpy(np.ascontiguousarray(v)).to(device or "cpu") for k, v in arrays.items()}
    )


def fit_model_ids(data: FitData) -> np.ndarray:
    return np.asarray(data.model_ids, dtype=np.int64)


class NetMethod:
    """Shared by the torch embedding baselines (EmbedLLM, IRT-Net) that keep one module ``self.net``,
    built by ``self._build(n_models, d_phi)``, whose ``model_table`` (an nn.Embedding) holds one vector
    per model and whose ``matrix_logits(x, z)`` scores queries against model vectors: prediction,
    model embeddings, new models' embeddings fitted with the network frozen (:meth:`_fit_embeddings`), and
    the state saved by :meth:`locus.methods.base.Method.save`."""

    def predict_logits(self, query_vectors: np.ndarray, model_ids=None) -> np.ndarray:
        pos = self._model_positions(model_ids)
        x = torch.from_numpy(self._check_query_dim(query_vectors, self.d_phi))
        self.net.eval()
        with torch.no_grad():
            z = self.net.model_table.weight[torch.from_numpy(pos)]
            return self.net.matrix_logits(x, z).numpy().astype(np.float32)

    def logits_for_embeddings(self, query_vectors: np.ndarray, z: np.ndarray) -> np.ndarray:
        """Logits [queries x k] of query encodings against k model vectors `z` [k, dim] (e.g. new models'
        from :meth:`embed`), through the frozen network."""
        x = torch.from_numpy(self._check_query_dim(query_vectors, self.d_phi))
        self.net.eval()
        with torch.no_grad():
            return (
                self.net.matrix_logits(x, torch.from_numpy(np.asarray(z, dtype=np.float32))).numpy().astype(np.float32)
            )

    def _embed(self, query_vectors: np.ndarray, scores: np.ndarray) -> np.ndarray:
        return self._embed_many([(query_vectors, scores)])[0]

    def _fit_embeddings(self, sets, features_of, logits_of) -> np.ndarray:
        """One new model vector per set, fitted together (each as if alone) from the seed's N(0, 1) start
        with the network frozen: `features_of(vectors)` gives the frozen per-row features once,
        `logits_of(features, z_rows)` the logits of every row against its own set's vector."""
        batch = EvaluationSets.stack(sets)
        self.net.eval()
        unique, rows = distinct_rows(batch.vectors)
        with torch.no_grad():  # once per distinct query: the sets of onboarding sweeps share most of theirs
            features = features_of(unique)
        features = tuple(f[rows] for f in features) if isinstance(features, tuple) else features[rows]
        gen = torch.Generator().manual_seed(self.seed)
        init = torch.randn(self.params.dim, generator=gen).expand(len(sets), -1)
        frozen = [param for param in self.net.parameters() if param.requires_grad]
        for param in frozen:  # no gradients flow into the network
            param.requires_grad_(False)
        try:
            z = fit_rows(
                init,
                lambda z: logits_of(features, z[batch.owner]),
                batch.scores,
                batch.weight,
                steps=self.params.embed_steps,
                lr=self.params.embed_lr,
                weight_decay=self.params.weight_decay,
            )
        finally:
            for param in frozen:
                param.requires_grad_(True)
        return z.numpy().astype(np.float32)

    def model_embeddings(self) -> tuple[np.ndarray, np.ndarray]:
        self._resolve_model_ids(None)
        return self.model_ids.copy(), self.net.model_table.weight.detach().numpy().astype(np.float32).copy()

    def get_state(self) -> tuple[dict, dict[str, np.ndarray]]:
        return {"d_phi": self.d_phi}, state_arrays(self.net)

    def set_state(self, config: dict, arrays: dict[str, np.ndarray]) -> None:
        self.d_phi = int(config["d_phi"])
        self.net = self._build(len(self.model_ids), self.d_phi)
        load_arrays(self.net, arrays)
        self.net.eval()
