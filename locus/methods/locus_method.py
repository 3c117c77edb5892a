"""LOCUS as a :class:`~locus.methods.base.EmbeddingMethod`: training loop, prediction, onboarding, save/load.

The recipe follows the authors' code (reference-implementation.md §3) with CPU-oriented changes, each a
parameter (defaults in :attr:`LocusMethod.defaults`):

- AdamW with separate encoder / decoder learning rates, weight decay on every parameter, gradient
  clipping, BCE with logits (soft labels allowed), Gaussian noise on query encodings annealed from
  ``noise_start`` to ``noise_end`` (cosine over ``noise_anneal_steps``); constant learning rates as the
  authors, or a linear warm-up (``lr_warmup_steps``) and a cosine decay to 0 (``lr_decay_steps``);
- decoder targets of a model = its own training queries (as the authors), at most ``max_targets`` of
  them per step (a fresh random subset; default 1,024, so the authors' behaviour up to n = 1,024 and a
  step cost that stops growing with n above it). With ``encoder_fraction`` < 1
  each step splits every model's evaluations at random into encoder tokens (that fraction, at most
  ``max_tokens``) and decoder targets (the rest), so the network cannot score a target by copying its
  label from an encoder token; 1.0 = the authors' behaviour (targets = all, encoder = up to max_tokens);
- a step takes ``model_batch`` models (the authors: all models, one step per epoch) and at most
  ``max_tokens`` of each model's evaluations as encoder tokens (random subset per model and step; the
  authors subsample only above 1,024). Embeddings at evaluation always use *all* training evaluations;
- noise is drawn per (model, query) pair as the authors (``noise_per_pair``); False draws it once per
  query and step, shared by the models of the step (cheaper: tokenizer and decoder query part stay
  per-query computations; on the embedded default it overfitted earlier);
- ``max_seconds`` > 0 stops training after that wall time (not deterministic; off by default);
- validation every ``eval_every`` steps (the authors: every epoch) on the metric named by ``select_by``
  (default ``val_routing`` = hit@1 on the validation split; ``val_bce`` or ``val_acc``: the vocabulary of
  every method, :mod:`locus.methods.base`), early stopping after ``patience`` steps without a strict
  improvement, the best checkpoint restored; test data is never touched while training. Early stopping
  never fires before ``min_steps`` (default 600): the first few hundred steps are a plateau where the
  network routes every query to the same model (val hit@1 = the best single model's, unchanged), and at
  n = 4,096 a patience of 400 counted from step 25 stopped training before it started (test hit@1 67.3%
  after 425 steps vs 71.2% after 800 steps, same seed).

The options that were measured against these defaults, and why none is the default, are in docs/methods.md
("LOCUS: what was measured").
"""
from __future__ import annotations

import contextlib
import copy
import logging
import math
import os
import time

import numpy as np
import pandas as pd

from locus import evaluation
from locus.data.canonical import pairs_to_matrix
from locus.errors import ConfigError, DataError
from locus.methods.base import EmbeddingMethod, FitData, better

log = logging.getLogger(__name__)

EMBEDDINGS_KEY = "model_embeddings"
PRECISIONS = ("float32", "bfloat16")  # values of the `precision` parameter (embedding and prediction)
# passes without autograd, in chunks: tokens when embedding every model (`eval_chunk_tokens` 0), and
# (query, model) pairs when scoring a grid on CUDA; small on a CPU (caches), large on a GPU (launches)
CPU_CHUNK_TOKENS, CUDA_CHUNK_TOKENS, CUDA_CHUNK_PAIRS = 8192, 1 << 20, 1 << 22


def _torch():
    import torch
    return torch


def noise_std(step: int, start: float, end: float, anneal_steps: int) -> float:
    """Cosine annealing from `start` (step 0) to `end` (step >= anneal_steps), as the authors' schedule."""
    if anneal_steps <= 0 or step >= anneal_steps:
        return float(end)
    w = 0.5 * (1.0 + math.cos(math.pi * step / anneal_steps))
    return float(end + (start - end) * w)


def lr_factor(step: int, warmup_steps: int, decay_steps: int) -> float:
    """Multiplier of the learning rates for the step after `step` completed ones: a linear warm-up over
    `warmup_steps` (1/warmup, 2/warmup, ... 1), then, when `decay_steps` > 0, a cosine decay from 1 at
    the end of the warm-up to 0 at step `decay_steps` (0 after it); 1 throughout with both 0 (the authors)."""
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    if decay_steps <= 0:
        return 1.0
    if step >= decay_steps:
        return 0.0
    return 0.5 * (1.0 + math.cos(math.pi * (step - warmup_steps) / (decay_steps - warmup_steps)))


class ModelSets:
    """Each model's evaluations as padded index/score tensors into one query table.

    idx [M, n_max] (positions in `prompt_ids`), y [M, n_max], mask [M, n_max] (True = real evaluation).
    """

    def __init__(self, pairs: pd.DataFrame, model_ids: np.ndarray):
        torch = _torch()
        self.prompt_ids = np.sort(pairs["prompt_id"].unique())
        m_pos = np.searchsorted(model_ids, pairs["model_id"].to_numpy())
        q_pos = np.searchsorted(self.prompt_ids, pairs["prompt_id"].to_numpy())
        order = np.lexsort((q_pos, m_pos))
        m_pos, q_pos = m_pos[order], q_pos[order]
        scores = pairs["score"].to_numpy(np.float32)[order]
        counts = np.bincount(m_pos, minlength=len(model_ids))
        if (counts == 0).any():
            missing = model_ids[counts == 0][:5].tolist()
            raise DataError(f"locus: model(s) {missing} have no training evaluations; every model needs at least one.")
        n_max = int(counts.max())
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        col = np.arange(len(m_pos)) - starts[m_pos]
        idx = np.zeros((len(model_ids), n_max), dtype=np.int64)
        y = np.zeros((len(model_ids), n_max), dtype=np.float32)
        mask = np.zeros((len(model_ids), n_max), dtype=bool)
        idx[m_pos, col], y[m_pos, col], mask[m_pos, col] = q_pos, scores, True
        self.idx, self.y, self.mask = torch.from_numpy(idx), torch.from_numpy(y), torch.from_numpy(mask)
        self.counts = counts

    def to(self, device) -> "ModelSets":
        """The padded tensors on `device` (built once, so a training step never copies them)."""
        self.idx, self.y, self.mask = (t.to(device) for t in (self.idx, self.y, self.mask))
        return self


# Named schedules (parameter `recipe`): applied over the class defaults, under the user's own parameters.
# `paper` is the authors' training exactly as reference-implementation.md §3 describes it: every model in
# every step (one step = one epoch), at most 2,500 steps, validation on the whole validation split after
# every step, early stopping after 500 steps without a strict improvement of val hit@1 (from the start),
# all evaluations as decoder targets, all as encoder tokens up to 1,024 and K ~ U[1,024, n] shared
# positions above, noise 0.10 -> 0.05 per (model, query) pair over 500 steps.
# `fast` is the default, measured against `paper` in docs/results.md ("Time to accuracy").
# what both recipes set alike (the authors' optimisation and noise), so a recipe never inherits a value
# the user changed in the class defaults by accident
_SHARED_SCHEDULE = {
    "encoder_fraction": 1.0, "min_tokens": 1024,
    "noise_start": 0.10, "noise_end": 0.05, "noise_anneal_steps": 500, "noise_per_pair": True,
    "enc_lr": 2e-4, "dec_lr": 8e-4, "weight_decay": 0.05, "grad_clip": 1.0, "select_by": "val_routing",
    "label_smoothing": 0.0, "query_weight_decay": -1.0, "query_dropout": 0.0, "ema_decay": 0.0,
    "lr_warmup_steps": 0, "lr_decay_steps": 0,
}
PAPER_RECIPE = {**_SHARED_SCHEDULE, "model_batch": 0, "max_steps": 2500, "min_steps": 0, "patience": 500,
                "eval_every": 1, "max_tokens": 0, "token_draw": "shared", "max_targets": 0}
FAST_RECIPE = {**_SHARED_SCHEDULE, "model_batch": 16, "max_steps": 800, "min_steps": 600, "patience": 400,
               "eval_every": 25, "max_tokens": 256, "token_draw": "per_model", "max_targets": 1024}
RECIPES = {"fast": FAST_RECIPE, "paper": PAPER_RECIPE}


class LocusMethod(EmbeddingMethod):
    """LOCUS: attention encoder over a model's scored evaluations + MLP correctness predictor."""

    name = "locus"
    label = "LOCUS"
    latex_label = "\\textsc{Locus} (ours)"
    color = "#d62728"
    order = 10
    uses_torch = True
    defaults = {
        # architecture (paper / authors' CLI defaults); internal widths follow `dim`
        "dim": 128, "heads": 4, "layers": 2, "latents": 64, "decoder_hidden": 64, "decoder_dropout": 0.1,
        "encoder_kind": "isab", "query_dropout": 0.0,
        # optimisation (authors' values)
        "enc_lr": 2e-4, "dec_lr": 8e-4, "weight_decay": 0.05, "grad_clip": 1.0,
        "noise_start": 0.10, "noise_end": 0.05, "noise_anneal_steps": 500, "noise_per_pair": True,
        # schedule: CPU-oriented (authors: all models per step, <= 2,500 steps, patience 500, validate every step)
        "max_steps": 800, "min_steps": 600, "patience": 400, "eval_every": 25, "model_batch": 16, "max_tokens": 256,
        "max_targets": 1024, "encoder_fraction": 1.0, "token_draw": "per_model", "min_tokens": 1024,
        "eval_chunk_tokens": 0, "max_seconds": 0.0, "recipe": "fast", "precision": "float32",
        "select_by": "val_routing", "label_smoothing": 0.0, "query_weight_decay": -1.0, "ema_decay": 0.0,
        "lr_warmup_steps": 0, "lr_decay_steps": 0,
        "threads": 0, "device": "auto", "deterministic": False, "tf32": False,
    }

    param_docs = {
        "dim": "model embedding size d; attention/FFN widths follow it (FFN 2d)",
        "heads": "attention heads (dim must be divisible by it)", "layers": "number of ISAB/SAB blocks L",
        "latents": "learned latents r per ISAB block", "decoder_hidden": "hidden units of the decoder MLP",
        "decoder_dropout": "dropout before the decoder's output layer",
        "query_dropout": "dropout on the decoder's query projection u = U phi (training only)", "encoder_kind": "isab (default) or sab",
        "enc_lr": "AdamW learning rate of the encoder", "dec_lr": "AdamW learning rate of the decoder",
        "weight_decay": "AdamW weight decay (all parameters)", "grad_clip": "max gradient norm (0 = off)",
        "noise_start": "std of Gaussian noise on query encodings at step 0",
        "noise_end": "noise std after noise_anneal_steps (cosine schedule)",
        "noise_anneal_steps": "steps of the cosine noise schedule",
        "noise_per_pair": "True: one noise draw per (model, query) pair (authors); False: per query and step",
        "max_steps": "maximum optimiser steps", "patience": "stop after this many steps without a better val hit@1",
        "min_steps": "never stop early before this step (the first hundreds of steps can be a flat plateau)",
        "eval_every": "validate every this many steps", "model_batch": "models per step (0 = all)",
        "max_tokens": "max encoder tokens per model and step (random subset; 0 = all)",
        "token_draw": "per_model: each model's encoder tokens are its own random subset (of at most max_tokens); "
                      "shared: the authors' draw, K ~ U[min(min_tokens, n), n] (n capped by max_tokens when > 0) and "
                      "one random set of K positions for every model of the step",
        "min_tokens": "token_draw shared: the smallest K drawn (the authors' --encoder-min-anchors, 1,024)",
        "recipe": "a named preset of schedule parameters applied under your own (RECIPES): fast (default, "
                  "for CPUs) or paper (the authors' schedule exactly)",
        "max_targets": "max decoder targets per model and step (random subset; 0 = all, the authors)",
        "encoder_fraction": "< 1: split each set per step into encoder tokens (this fraction) and decoder targets",
        "eval_chunk_tokens": "tokens per chunk when embedding all models without autograd (0 = by device: 8,192 "
                             "on a CPU, where the chunk's activations stay in the caches and 65,536 was 1.6x "
                             "slower on 2 cores; 1,048,576 on CUDA, where small chunks leave the GPU waiting for "
                             "kernel launches)",
        "precision": "float32 (default) or bfloat16: arithmetic of embedding and prediction outside training "
                     "(torch.autocast; 1.5-4x faster on CPUs with AVX512-BF16/AMX, accuracy effect in "
                     "results/tables/precision_effect.csv); training and its validation always run in float32",
        "max_seconds": "stop after this wall time (0 = off; not deterministic)",
        "threads": "torch threads (0 = leave torch's default)",
        "device": "auto (CUDA when available, else CPU), cpu or cuda: where training and prediction run",
        "deterministic": "torch.use_deterministic_algorithms while training (bit-reproducible CUDA runs, slower)",
        "tf32": "CUDA only: float32 matrix products of training steps, embedding and prediction on TF32 tensor "
                "cores (10-bit mantissa, faster); validation, which selects the checkpoint, stays float32",
        "select_by": "validation metric for checkpoint selection and early stopping: val_routing (hit@1), "
                     "val_bce or val_acc (correctness accuracy)",
        "label_smoothing": "training targets y -> y (1 - s) + s / 2 (0 = off)",
        "query_weight_decay": "AdamW weight decay of the decoder's query projection U (< 0 = weight_decay)",
        "ema_decay": "> 0: validate, select and keep an exponential moving average of the weights "
                     "(torch.optim.swa_utils, this decay per step) instead of the raw weights (0 = off)",
        "lr_warmup_steps": "linear learning-rate warm-up over this many steps (0 = off, the authors)",
        "lr_decay_steps": "> 0: cosine decay of the learning rates from the end of the warm-up to 0 at this "
                          "step (0 = constant, the authors)",
    }

    def __init__(self, params: dict | None = None, seed: int = 0):
        params = dict(params or {})
        recipe = params.get("recipe", self.defaults["recipe"])
        if recipe not in RECIPES:
            raise ConfigError(f"method 'locus': recipe must be one of {sorted(RECIPES)}, got {recipe!r}")
        super().__init__({**RECIPES[recipe], **params}, seed)  # the user's own values win over the recipe
        p = self.params
        if p["token_draw"] not in ("per_model", "shared"):
            raise ConfigError(f"method 'locus': token_draw must be per_model or shared, got {p['token_draw']!r}")
        for key in ("max_tokens", "min_tokens", "max_targets", "model_batch", "min_steps", "patience",
                    "lr_warmup_steps", "lr_decay_steps"):
            if int(p[key]) < 0:
                raise ConfigError(f"method 'locus': {key} must be >= 0, got {p[key]}")
        for key in ("dim", "heads", "layers", "latents", "decoder_hidden", "max_steps", "eval_every"):
            if int(p[key]) < 1:
                raise ConfigError(f"method 'locus': {key} must be >= 1, got {p[key]}")
        if int(p["dim"]) % int(p["heads"]):
            raise ConfigError(f"method 'locus': dim ({p['dim']}) must be divisible by heads ({p['heads']})")
        if p["encoder_kind"] not in ("isab", "sab"):
            raise ConfigError(f"method 'locus': encoder_kind must be isab or sab, got {p['encoder_kind']!r}")
        if p["precision"] not in PRECISIONS:
            raise ConfigError(f"method 'locus': precision must be one of {list(PRECISIONS)}, got {p['precision']!r}")
        if int(p["eval_chunk_tokens"]) < 0:
            raise ConfigError("method 'locus': eval_chunk_tokens must be >= 0 (0 = by device), "
                              f"got {p['eval_chunk_tokens']}")
        if not 0.0 <= float(p["ema_decay"]) < 1.0:
            raise ConfigError(f"method 'locus': ema_decay must be in [0, 1), got {p['ema_decay']}")
        if 0 < int(p["lr_decay_steps"]) <= int(p["lr_warmup_steps"]):
            raise ConfigError(f"method 'locus': lr_decay_steps ({p['lr_decay_steps']}) must be 0 (no decay) or "
                              f"larger than lr_warmup_steps ({p['lr_warmup_steps']})")
        if p["device"] not in ("auto", "cpu", "cuda"):
            raise ConfigError(f"method 'locus': device must be auto, cpu or cuda, got {p['device']!r}")
        self.net = None
        self.z = None  # [M, dim] float32 numpy, embeddings of the fitted models
        self.d_phi: int | None = None
        self.encoder_name = "unknown"
        self.summary: dict = {}

    # ------------------------------------------------------------------------------------------
    # construction and device
    # ------------------------------------------------------------------------------------------
    def _build(self, d_phi: int):
        from locus.methods.locus_net import LocusNet
        p = self.params
        self.d_phi = int(d_phi)
        self.net = LocusNet(d_phi, p["dim"], p["heads"], p["layers"], p["latents"], p["decoder_hidden"],
                            p["decoder_dropout"], p["encoder_kind"], p["query_dropout"]).to(self.device)
        return self.net

    @property
    def device(self):
        """Where the network runs: the `device` parameter; auto (and a loaded CUDA checkpoint on a machine
        without CUDA) = CUDA when available, else CPU. Training refuses `cuda` without CUDA (fit)."""
        torch = _torch()
        want = self.params["device"]
        if want == "cpu":
            return torch.device("cpu")
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")

    def _training_device(self):
        torch = _torch()
        if self.params["device"] == "cuda" and not torch.cuda.is_available():
            raise ConfigError("method 'locus': device 'cuda' was asked for but torch sees no CUDA device "
                              f"(torch {torch.__version__}); use device auto or cpu, or install a CUDA build of torch")
        return self.device

    # ------------------------------------------------------------------------------------------
    # forward passes without autograd
    # ------------------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _arithmetic(self, device, exact: bool = False, autocast: bool = True):
        """The arithmetic of a pass on `device`: bfloat16 autocast when `precision` is bfloat16 (`autocast`),
        TF32 matrix products on CUDA when `tf32`; plain float32 when `exact` (validation). Restores torch's
        float32 matmul setting afterwards (it is process-wide)."""
        torch = _torch()
        device = torch.device(device)
        low = autocast and self.params["precision"] == "bfloat16" and not exact
        tf32 = bool(self.params["tf32"]) and device.type == "cuda" and not exact
        saved = torch.get_float32_matmul_precision()
        torch.set_float32_matmul_precision("high" if tf32 else "highest")
        try:
            with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=low):
                yield
        finally:
            torch.set_float32_matmul_precision(saved)

    def _embed_sets(self, phi, sets: ModelSets, exact: bool = False, net=None):
        """Embeddings [M, d] (float32) of every model from all its evaluations (eval mode, chunks of models
        of about `eval_chunk_tokens` tokens; `exact`: float32 whatever the precision) by `net` (default: the
        fitted network)."""
        torch = _torch()
        net = net if net is not None else self.net
        was_training = net.training
        net.eval()
        n_max = sets.idx.shape[1]
        tokens = int(self.params["eval_chunk_tokens"]) or (CUDA_CHUNK_TOKENS if phi.device.type == "cuda" else
                                                           CPU_CHUNK_TOKENS)
        chunk = max(1, tokens // max(n_max, 1))
        out = []
        with torch.no_grad(), self._arithmetic(phi.device, exact):
            proj = net.encoder.tokenizer.project(phi)
            for s in range(0, sets.idx.shape[0], chunk):
                idx, y, mask = (t[s:s + chunk].to(phi.device) for t in (sets.idx, sets.y, sets.mask))
                out.append(net.encoder(proj[idx], y, mask).float())
        net.train(was_training)
        return torch.cat(out)

    def _grid_logits(self, z, phi, exact: bool = False, net=None):
        """Logits [Q, M] (float32) of queries phi against embeddings z (`exact`: float32 whatever the precision)
        by `net` (default: the fitted network), in chunks of queries: 1,024 on a CPU, about CUDA_CHUNK_PAIRS
        (query, model) pairs on CUDA."""
        torch = _torch()
        net = net if net is not None else self.net
        was_training = net.training
        net.eval()
        query_chunk = max(1, CUDA_CHUNK_PAIRS // max(z.shape[0], 1)) if phi.device.type == "cuda" else 1024
        out = []
        with torch.no_grad(), self._arithmetic(phi.device, exact):
            for s in range(0, phi.shape[0], query_chunk):
                out.append(net.logits(z, phi[s:s + query_chunk]).float())
        net.train(was_training)
        return torch.cat(out) if out else torch.zeros((0, z.shape[0]), device=z.device)

    # ------------------------------------------------------------------------------------------
    # training
    # ------------------------------------------------------------------------------------------
    def fit(self, data: FitData) -> "LocusMethod":
        """Train on the run's pairs; every random draw of a step comes from one generator on the training
        device, seeded from the run's seed, so a run is reproducible on the same device type."""
        from locus.methods.torch_utils import setup_torch

        torch = _torch()
        p = self.params
        # threads, subnormals flushed, and the global seed: weight initialisation (on the CPU, then
        # moved) and dropout
        setup_torch(self.seed, int(p["threads"]))
        device = self._training_device()
        gen = torch.Generator(device=device).manual_seed(self.seed + 1)  # model order, subsets, noise
        host_gen = torch.Generator().manual_seed(self.seed + 2)  # sizes the host needs (shared token count)
        self.model_ids = np.asarray(data.model_ids, dtype=np.int64)
        self.encoder_name = data.encodings.encoder
        log.info("locus: training on %s with %d thread(s)", device, torch.get_num_threads())

        sets = ModelSets(data.train, self.model_ids).to(device)
        phi = torch.from_numpy(np.ascontiguousarray(data.encodings.take(sets.prompt_ids))).to(device)
        net = self._build(phi.shape[1])
        val_ids = np.sort(data.val["prompt_id"].unique()) if len(data.val) else np.zeros(0, np.int64)
        val_labels = pairs_to_matrix(data.val, val_ids, self.model_ids)
        val_phi = torch.from_numpy(np.ascontiguousarray(data.encodings.take(val_ids))).to(device)

        enc_params = list(net.encoder.parameters())
        query_params = list(net.decoder.query.parameters())
        dec_params = [t for n, t in net.decoder.named_parameters() if not n.startswith("query.")]
        query_wd = p["weight_decay"] if p["query_weight_decay"] < 0 else p["query_weight_decay"]
        opt = torch.optim.AdamW([{"params": enc_params, "lr": p["enc_lr"]}, {"params": dec_params, "lr": p["dec_lr"]},
                                 {"params": query_params, "lr": p["dec_lr"], "weight_decay": query_wd}],
                                fused=True, weight_decay=p["weight_decay"])
        warmup, decay = int(p["lr_warmup_steps"]), int(p["lr_decay_steps"])
        scheduler = (torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, warmup, decay))
                     if warmup or decay else None)
        n_models = len(self.model_ids)
        batch = max(1, min(int(p["model_batch"]) or n_models, n_models))
        select_by = p["select_by"]
        history, best = [], {"value": None, "step": 0, "state": None}
        deterministic = torch.are_deterministic_algorithms_enabled()
        if p["deterministic"]:
            os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # needed by deterministic cuBLAS
            torch.use_deterministic_algorithms(True)
        ema = None
        if float(p["ema_decay"]) > 0:  # the averaged copy is validated, selected and kept
            from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn
            ema = AveragedModel(net, multi_avg_fn=get_ema_multi_avg_fn(float(p["ema_decay"])), use_buffers=True)
        scored = ema.module if ema is not None else net  # the weights validation sees
        t0 = time.perf_counter()
        order, pos, step, loss_n, last_report = None, n_models, 0, 0, 0.0
        loss_sum = torch.zeros((), device=device)  # summed on the device: no host sync per step
        net.train()
        # TF32 matrix products in the steps on CUDA when `tf32` (validation inside stays float32)
        with self._arithmetic(device, autocast=False):
            try:
                while step < int(p["max_steps"]):
                    if batch == n_models:  # every model in every step (the authors' epoch)
                        models = torch.arange(n_models, device=device)
                    else:
                        if pos + batch > n_models:  # a new pass over the models, in a fresh random order
                            order, pos = torch.randperm(n_models, generator=gen, device=device), 0
                        models = order[pos:pos + batch].sort().values
                        pos += batch
                    std = noise_std(step, p["noise_start"], p["noise_end"], p["noise_anneal_steps"])
                    loss_sum += self._train_step(net, opt, phi, sets, models, std, gen, host_gen)
                    if scheduler is not None:
                        scheduler.step()
                    if ema is not None:
                        ema.update_parameters(net)
                    step += 1
                    loss_n += 1
                    last = step == int(p["max_steps"]) or (p["max_seconds"]
                                                           and time.perf_counter() - t0 > p["max_seconds"])
                    if step % int(p["eval_every"]) == 0 or last:
                        row = {"step": step, "train_loss": float(loss_sum) / loss_n, "noise_std": std}
                        row.update(self._validate(scored, phi, sets, val_phi, val_labels))
                        row["seconds"] = time.perf_counter() - t0
                        history.append(row)
                        loss_sum.zero_()
                        loss_n = 0
                        value = row.get(select_by, math.nan)
                        if better(select_by, value, best["value"]):  # NaN (no validation split): keep the latest
                            best = {"value": value, "step": step, "state": copy.deepcopy(scored.state_dict()),
                                    "row": row}
                        progress = row["seconds"] - last_report >= 60  # a line a minute at INFO: long runs
                        last_report = row["seconds"] if progress else last_report
                        log.log(logging.INFO if progress else logging.DEBUG,
                                "locus: step %d loss %.4f val hit@1 %.4f bce %.4f (best %.4f at step %d; %.1f s)",
                                step, row["train_loss"], row.get("val_routing", math.nan),
                                row.get("val_bce", math.nan), best["value"] if best["value"] is not None else math.nan,
                                best["step"], row["seconds"])
                        if step >= int(p["min_steps"]) and step - best["step"] >= int(p["patience"]):
                            break
                    if last:
                        break
            finally:
                torch.use_deterministic_algorithms(deterministic)
        net.load_state_dict(best["state"])
        net.eval()
        self.z = self._embed_sets(phi, sets).cpu().numpy().astype(np.float32)
        self.history = pd.DataFrame(history)
        seconds = time.perf_counter() - t0
        best_row = best.get("row", {})
        self.summary = {"best_step": int(best["step"]), "select_by": select_by, "steps": int(step),
                        **{f"best_{k}": float(best_row.get(k, math.nan)) for k in evaluation.VALIDATION_METRICS},
                        "seconds": round(seconds, 3),
                        "seconds_to_best": round(float(best_row.get("seconds", seconds)), 3),
                        "device": str(device), "threads": int(torch.get_num_threads())}
        log.info("locus: %d steps in %.1f s; best val hit@1 %.4f at step %d", step, seconds,
                 self.summary["best_val_routing"], best["step"])
        return self

    def _train_step(self, net, opt, phi, sets: ModelSets, models, std: float, gen, host_gen=None):
        """One optimiser step on the models `models` (a device tensor); returns the mean BCE as a detached
        device scalar. Everything stays on phi's device: subsets and noise come from `gen` (a generator on
        that device), shapes are known on the host (padded width, k, t), and the loss is a masked mean,
        so no step waits for the device (the `encoder_fraction` < 1 option excepted: it reads one size).
        `host_gen` (CPU) draws host-side sizes: the shared token count K of `token_draw` shared."""
        torch = _torch()
        p = self.params
        device = phi.device
        idx, y, mask = sets.idx[models], sets.y[models], sets.mask[models]
        width = idx.shape[1]
        tok_idx, tok_y, tok_mask = idx, y, mask
        k = int(p["max_tokens"])
        frac = float(p["encoder_fraction"])

        def random_keys():  # random order of each model's real evaluations first, padding last
            return torch.rand(idx.shape, generator=gen, device=device) + (~mask).float() * 2.0

        if frac < 1.0:  # disjoint: encoder tokens = a random part of each set, decoder targets = the rest
            order = random_keys().argsort(dim=1)
            idx, y, mask = idx.gather(1, order), y.gather(1, order), mask.gather(1, order)
            n_real = mask.sum(1, keepdim=True)
            n_enc = torch.clamp(torch.ceil(n_real * frac), min=1)
            if k > 0:
                n_enc = torch.clamp(n_enc, max=k)
            n_enc = torch.minimum(n_enc, torch.clamp(n_real - 1, min=1))  # keep >= 1 target when possible
            col = torch.arange(width, device=device).unsqueeze(0)
            enc_width = int(n_enc.max())  # the one host read of this option
            tok_idx, tok_y = idx[:, :enc_width], y[:, :enc_width]
            tok_mask = (col[:, :enc_width] < n_enc) & mask[:, :enc_width]
            mask = mask & ((col >= n_enc) | (n_real == 1))  # decoder targets: the rest of the set
        elif p["token_draw"] == "shared":  # the authors: K ~ U[min(min_tokens, n), n], same positions for all
            upper = min(k, width) if k > 0 else width
            lower = max(1, min(int(p["min_tokens"]), upper))
            host_gen = host_gen if host_gen is not None else torch.Generator().manual_seed(self.seed + 2)
            size = int(torch.randint(lower, upper + 1, (1,), generator=host_gen)) if lower < upper else upper
            if size < width:
                keys = torch.rand((1, width), generator=gen, device=device) + (~mask).float() * 2.0
                pick = keys.argsort(dim=1)[:, :size]
                tok_idx, tok_y, tok_mask = idx.gather(1, pick), y.gather(1, pick), mask.gather(1, pick)
        elif 0 < k < width:  # random subset of at most k real evaluations per model
            pick = random_keys().argsort(dim=1)[:, :k]
            tok_idx, tok_y, tok_mask = idx.gather(1, pick), y.gather(1, pick), mask.gather(1, pick)
        t = int(p["max_targets"])
        if 0 < t < idx.shape[1]:  # random subset of at most t decoder targets per model (own draw)
            pick = random_keys().argsort(dim=1)[:, :t]
            idx, y, mask = idx.gather(1, pick), y.gather(1, pick), mask.gather(1, pick)
        if std > 0 and p["noise_per_pair"]:  # the authors' noise: one draw per (model, query) pair
            enc_phi, dec_phi = phi[tok_idx], phi[idx]
            enc_phi = enc_phi + std * torch.randn(enc_phi.shape, generator=gen, device=device)
            dec_phi = dec_phi + std * torch.randn(dec_phi.shape, generator=gen, device=device)
            z = net.encoder(net.encoder.tokenizer.project(enc_phi), tok_y, tok_mask)
            u, uh = net.decoder.query_features(dec_phi)
        else:  # one draw per query, shared by the models of the step: per-query projections only
            enc_q, dec_q = phi, phi
            if std > 0:
                enc_q = phi + std * torch.randn(phi.shape, generator=gen, device=device)
                dec_q = phi + std * torch.randn(phi.shape, generator=gen, device=device)
            z = net.encoder(net.encoder.tokenizer.project(enc_q)[tok_idx], tok_y, tok_mask)
            u, uh = net.decoder.query_features(dec_q)
            u, uh = u[idx], uh[idx]
        logits = net.decoder.pair_logits(z, u, uh)
        target = y
        if p["label_smoothing"]:
            target = target * (1.0 - p["label_smoothing"]) + 0.5 * p["label_smoothing"]
        weight = mask.to(logits.dtype)  # masked mean over real targets (no boolean indexing: no sync)
        pair_loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, target, reduction="none")
        loss = (pair_loss * weight).sum() / weight.sum().clamp(min=1.0)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if p["grad_clip"] and p["grad_clip"] > 0:
            torch.nn.utils.clip_grad_norm_(net.parameters(), p["grad_clip"])
        opt.step()
        return loss.detach()

    def _validate(self, net, phi, sets, val_phi, val_labels) -> dict:
        """Validation metrics of `net` (the raw weights, or their moving average with `ema_decay`), in float32."""
        if val_phi.shape[0] == 0:
            return {}
        z = self._embed_sets(phi, sets, exact=True, net=net)
        return evaluation.validation_metrics(self._grid_logits(z, val_phi, exact=True, net=net).cpu().numpy(),
                                             val_labels)

    # ------------------------------------------------------------------------------------------
    # prediction and onboarding
    # ------------------------------------------------------------------------------------------
    def predict_logits(self, query_vectors: np.ndarray, model_ids=None) -> np.ndarray:
        return self.logits_for_embeddings(query_vectors, self.z[self._model_positions(model_ids)])

    def logits_for_embeddings(self, query_vectors: np.ndarray, z: np.ndarray) -> np.ndarray:
        """Logits [queries x len(z)] of models given by their embeddings `z` [M', dim] instead of the
        stored ones (e.g. the same models re-embedded from other evaluation sets with :meth:`embed`)."""
        torch = _torch()
        if self.z is None:
            raise RuntimeError("locus: fit() or load() first")
        z = np.array(z, dtype=np.float32)  # a copy: read-only arrays (e.g. from Parquet) cannot back a tensor
        if z.ndim != 2 or z.shape[1] != self.z.shape[1]:
            raise ValueError(f"locus: embeddings must be [models, {self.z.shape[1]}], got {list(z.shape)}")
        phi = self._check_query_dim(query_vectors, self.d_phi)
        logits = self._grid_logits(torch.from_numpy(np.ascontiguousarray(z)).to(self.device),
                                   torch.from_numpy(np.ascontiguousarray(phi)).to(self.device))
        return logits.cpu().numpy().astype(np.float32)

    def model_embeddings(self) -> tuple[np.ndarray, np.ndarray]:
        if self.z is None:
            raise RuntimeError("locus: fit() or load() first")
        return self.model_ids.copy(), self.z.copy()

    def _embed(self, query_vectors: np.ndarray, scores: np.ndarray) -> np.ndarray:
        """z of a new model from its scored queries: one forward pass, no gradient step, nothing stored."""
        torch = _torch()
        self.net.eval()
        with torch.no_grad(), self._arithmetic(self.device):
            z = self.net.embed(torch.from_numpy(query_vectors).to(self.device)[None],
                               torch.from_numpy(scores).to(self.device)[None])
        return z[0].float().cpu().numpy()

    # ------------------------------------------------------------------------------------------
    # persistence (locus.methods.base.Method.save / load): network weights + the model embeddings
    # ------------------------------------------------------------------------------------------
    def get_state(self) -> tuple[dict, dict[str, np.ndarray]]:
        from locus.methods.torch_utils import state_arrays
        arrays = {**state_arrays(self.net), EMBEDDINGS_KEY: self.z}
        return {"d_phi": self.d_phi, "encoder": self.encoder_name, "summary": self.summary}, arrays

    def set_state(self, config: dict, arrays: dict[str, np.ndarray]) -> None:
        from locus.methods.torch_utils import load_arrays
        arrays = dict(arrays)
        self.encoder_name = config.get("encoder", "unknown")
        self.summary = config.get("summary", {})
        self.z = arrays.pop(EMBEDDINGS_KEY).astype(np.float32)
        if self.z.shape[0] != len(self.model_ids):
            raise ValueError(f"{len(self.z)} model embeddings for {len(self.model_ids)} model ids")
        self._build(int(config["d_phi"]))
        load_arrays(self.net, arrays, self.device)
        self.net.eval()
