"""LOCUS as a :class:`~locus.methods.base.EmbeddingMethod`: training, prediction, onboarding, save/load.

Training (:meth:`LocusMethod.fit`) reads top to bottom: set up torch and the data, build the network,
the AdamW optimiser (separate encoder / decoder learning rates, optional warm-up and cosine decay) and
an optional moving average of the weights, then loop: take a batch of models, draw each model's
encoder tokens and decoder targets, add annealed Gaussian noise to the query encodings, take one BCE
step; every ``eval_every`` steps validate on the validation split and keep the best weights (early
stopping after ``patience`` steps without a strict improvement, never before ``min_steps``). Test
data is never touched while training. Embeddings at evaluation always use *all* training evaluations.

The parameters, their defaults and the two recipes (``fast``, ``paper``) are in
:mod:`locus.methods.locus_params`; the measured alternatives are in docs/methods.md.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import time

import numpy as np
import pandas as pd

from locus import evaluation
from locus.constants import PRECISIONS  # noqa: F401  (re-exported: values of `precision`)
from locus.data.canonical import pairs_to_matrix
from locus.errors import ConfigError, DataError
from locus.methods.base import EmbeddingMethod, FitData
from locus.methods.locus_params import PRESETS, LocusParams

log = logging.getLogger(__name__)

EMBEDDINGS_KEY = "model_embeddings"
# passes without autograd, in chunks: tokens when embedding every model (`eval_chunk_tokens` 0), and
# (query, model) pairs when scoring a grid on CUDA; small on a CPU (caches), large on a GPU (launches)
CPU_CHUNK_TOKENS, CUDA_CHUNK_TOKENS, CUDA_CHUNK_PAIRS = 8192, 1 << 20, 1 << 22
RECIPES = PRESETS  # recipe name -> LocusParams preset


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

    def to(self, device) -> ModelSets:
        """The padded tensors on `device` (built once, so a training step never copies them)."""
        self.idx, self.y, self.mask = (t.to(device) for t in (self.idx, self.y, self.mask))
        return self


def model_batches(n_models: int, batch: int, gen, device):
    """The models of each step, endlessly: all of them when `batch` covers the pool (the authors' epoch),
    else passes over the models in a fresh random order (from `gen`), `batch` at a time, sorted."""
    torch = _torch()
    if batch == n_models:
        while True:
            yield torch.arange(n_models, device=device)
    order, pos = None, n_models
    while True:
        if pos + batch > n_models:  # a new pass; a remainder too small for a batch is skipped
            order, pos = torch.randperm(n_models, generator=gen, device=device), 0
        yield order[pos : pos + batch].sort().values
        pos += batch


@contextlib.contextmanager
def deterministic_algorithms(on: bool):
    """torch.use_deterministic_algorithms while inside when `on`; the process-wide setting is restored."""
    torch = _torch()
    saved = torch.are_deterministic_algorithms_enabled()
    if on:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # needed by deterministic cuBLAS
        torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(saved)


class LocusMethod(EmbeddingMethod):
    """LOCUS: attention encoder over a model's scored evaluations + MLP correctness predictor."""

    name = "locus"
    label = "LOCUS"
    latex_label = "\\textsc{Locus} (ours)"
    color = "#d62728"
    order = 10
    uses_torch = True
    Params = LocusParams  # defaults = the `fast` recipe; types, ranges, docs and recipes in LocusParams
    params: LocusParams

    def __init__(self, params: LocusParams | dict | None = None, seed: int = 0):
        super().__init__(params, seed)
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

        self.d_phi = int(d_phi)
        self.net = LocusNet(self.params, d_phi).to(self.device)
        return self.net

    @property
    def device(self):
        """Where the network runs: the `device` parameter; auto (and a loaded CUDA checkpoint on a machine
        without CUDA) = CUDA when available, else CPU. Training refuses `cuda` without CUDA (fit)."""
        torch = _torch()
        want = self.params.device
        if want == "cpu":
            return torch.device("cpu")
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")

    def _training_device(self):
        torch = _torch()
        if self.params.device == "cuda" and not torch.cuda.is_available():
            raise ConfigError(
                "method 'locus': device 'cuda' was asked for but torch sees no CUDA device "
                f"(torch {torch.__version__}); use device auto or cpu, or install a CUDA build of torch"
            )
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
        low = autocast and self.params.precision == "bfloat16" and not exact
        tf32 = bool(self.params.tf32) and device.type == "cuda" and not exact
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
        tokens = int(self.params.eval_chunk_tokens) or (
            CUDA_CHUNK_TOKENS if phi.device.type == "cuda" else CPU_CHUNK_TOKENS
        )
        chunk = max(1, tokens // max(n_max, 1))
        out = []
        with torch.no_grad(), self._arithmetic(phi.device, exact):
            proj = net.encoder.tokenizer.project(phi)
            for s in range(0, sets.idx.shape[0], chunk):
                idx, y, mask = (t[s : s + chunk].to(phi.device) for t in (sets.idx, sets.y, sets.mask))
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
        switch = any(module.training for module in net.modules())  # eval() walks every module: only when needed
        if switch:
            net.eval()
        query_chunk = max(1, CUDA_CHUNK_PAIRS // max(z.shape[0], 1)) if phi.device.type == "cuda" else 1024
        out = []
        with torch.no_grad(), self._arithmetic(phi.device, exact):
            for s in range(0, phi.shape[0], query_chunk):
                out.append(net.logits(z, phi[s : s + query_chunk]).float())
        if switch:
            net.train(was_training)
        return torch.cat(out) if out else torch.zeros((0, z.shape[0]), device=z.device)

    # ------------------------------------------------------------------------------------------
    # training
    # ------------------------------------------------------------------------------------------
    def fit(self, data: FitData) -> LocusMethod:
        """Train on the run's pairs; every random draw of a step comes from one generator on the training
        device, seeded from the run's seed, so a run is reproducible on the same device type."""
        from locus.methods.torch_utils import EarlyStopping, setup_torch

        torch = _torch()
        p = self.params
        # threads, subnormals flushed, and the global seed (weight initialisation on the CPU, dropout)
        setup_torch(self.seed, p.threads)
        device = self._training_device()
        gen = torch.Generator(device=device).manual_seed(self.seed + 1)  # model order, subsets, noise
        host_gen = torch.Generator().manual_seed(self.seed + 2)  # sizes the host needs (shared token count)
        self.model_ids = np.asarray(data.model_ids, dtype=np.int64)
        self.encoder_name = data.encodings.encoder
        log.info("locus: training on %s with %d thread(s)", device, torch.get_num_threads())

        sets, phi, val_phi, val_labels = self._training_data(data, device)
        net = self._build(phi.shape[1])
        opt, scheduler = self._optimiser(net)
        ema = self._moving_average(net)
        scored = ema.module if ema is not None else net  # the weights validation sees and training keeps
        n_models = len(self.model_ids)
        batches = model_batches(n_models, max(1, min(p.model_batch or n_models, n_models)), gen, device)
        stopper = EarlyStopping(p.select_by, p.patience, p.min_steps)
        history, step, loss_n, reported = [], 0, 0, 0.0
        loss_sum = torch.zeros((), device=device)  # summed on the device: no host sync per step
        t0 = time.perf_counter()
        net.train()
        # TF32 matrix products in the steps on CUDA when `tf32` (validation inside stays float32)
        with self._arithmetic(device, autocast=False), deterministic_algorithms(p.deterministic):
            while step < p.max_steps:
                models = next(batches)
                std = noise_std(step, p.noise_start, p.noise_end, p.noise_anneal_steps)
                loss_sum += self._train_step(net, opt, phi, sets, models, std, gen, host_gen)
                if scheduler is not None:
                    scheduler.step()
                if ema is not None:
                    ema.update_parameters(net)
                step += 1
                loss_n += 1
                last = step == p.max_steps or (p.max_seconds and time.perf_counter() - t0 > p.max_seconds)
                if step % p.eval_every == 0 or last:
                    row = {
                        "step": step,
                        "train_loss": float(loss_sum) / loss_n,
                        "noise_std": std,
                        **self._validate(scored, phi, sets, val_phi, val_labels),
                        "seconds": time.perf_counter() - t0,
                    }
                    history.append(row)
                    loss_sum.zero_()
                    loss_n = 0
                    # NaN (no validation split) counts as better: the latest weights are kept
                    stopper.update(step, row.get(p.select_by, math.nan), scored, row)
                    reported = self._report(row, stopper, reported)
                    if stopper.should_stop(step):
                        break
                if last:
                    break

        stopper.restore(net)
        net.eval()
        self.z = self._embed_sets(phi, sets).cpu().numpy().astype(np.float32)
        self.history = pd.DataFrame(history)
        self.summary = self._summary(step, stopper, time.perf_counter() - t0, device)
        log.info(
            "locus: %d steps in %.1f s; best val hit@1 %.4f at step %d",
            step,
            self.summary["seconds"],
            self.summary["best_val_routing"],
            stopper.step,
        )
        return self

    def _training_data(self, data: FitData, device):
        """What training reads, on the device once: each model's training evaluations (ModelSets), their
        queries' encodings, and the validation queries' encodings with their label matrix."""
        torch = _torch()
        sets = ModelSets(data.train, self.model_ids).to(device)
        phi = torch.from_numpy(np.ascontiguousarray(data.encodings.take(sets.prompt_ids))).to(device)
        val_ids = np.sort(data.val["prompt_id"].unique()) if len(data.val) else np.zeros(0, np.int64)
        val_phi = torch.from_numpy(np.ascontiguousarray(data.encodings.take(val_ids))).to(device)
        return sets, phi, val_phi, pairs_to_matrix(data.val, val_ids, self.model_ids)

    def _summary(self, steps: int, stopper, seconds: float, device) -> dict:
        """The run's summary (saved with the checkpoint): steps, the best step and its validation values."""
        best = stopper.row
        return {
            "best_step": int(stopper.step),
            "select_by": self.params.select_by,
            "steps": int(steps),
            **{f"best_{k}": float(best.get(k, math.nan)) for k in evaluation.VALIDATION_METRICS},
            "seconds": round(seconds, 3),
            "seconds_to_best": round(float(best.get("seconds", seconds)), 3),
            "device": str(device),
            "threads": int(_torch().get_num_threads()),
        }

    def _optimiser(self, net):
        """AdamW in three groups (encoder at `enc_lr`; decoder at `dec_lr`; the decoder's query projection U
        at `dec_lr` with its own weight decay) and the learning-rate schedule (None: constant rates)."""
        torch = _torch()
        p = self.params
        enc_params = list(net.encoder.parameters())
        query_params = list(net.decoder.query.parameters())
        dec_params = [t for n, t in net.decoder.named_parameters() if not n.startswith("query.")]
        query_wd = p.weight_decay if p.query_weight_decay < 0 else p.query_weight_decay
        opt = torch.optim.AdamW(
            [
                {"params": enc_params, "lr": p.enc_lr},
                {"params": dec_params, "lr": p.dec_lr},
                {"params": query_params, "lr": p.dec_lr, "weight_decay": query_wd},
            ],
            fused=True,
            weight_decay=p.weight_decay,
        )
        warmup, decay = p.lr_warmup_steps, p.lr_decay_steps
        if not (warmup or decay):
            return opt, None
        return opt, torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, warmup, decay))

    def _moving_average(self, net):
        """With `ema_decay` > 0, an exponential moving average of `net`'s weights (updated after every step),
        else None."""
        decay = float(self.params.ema_decay)
        if decay <= 0:
            return None
        from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

        return AveragedModel(net, multi_avg_fn=get_ema_multi_avg_fn(decay), use_buffers=True)

    def _train_step(self, net, opt, phi, sets: ModelSets, models, std: float, gen, host_gen=None):
        """One optimiser step on the models `models` (a device tensor); returns the mean BCE as a detached
        device scalar. Draws come from `gen` (on phi's device), shapes are known on the host and the loss is
        a masked mean, so no step waits for the device; `host_gen` (CPU) draws the shared token count."""
        torch = _torch()
        p = self.params
        tokens, (idx, y, mask) = self._draw_tokens_and_targets(sets, models, gen, host_gen)
        logits = self._noisy_logits(net, phi, tokens, idx, std, gen)
        if p.label_smoothing:
            y = y * (1.0 - p.label_smoothing) + 0.5 * p.label_smoothing
        weight = mask.to(logits.dtype)  # masked mean over real targets (no boolean indexing: no sync)
        pair_loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, y, reduction="none")
        loss = (pair_loss * weight).sum() / weight.sum().clamp(min=1.0)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if p.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(net.parameters(), p.grad_clip)
        opt.step()
        return loss.detach()

    def _draw_tokens_and_targets(self, sets: ModelSets, models, gen, host_gen=None):
        """A step's encoder tokens and decoder targets for `models`: two (index, score, mask) triples of
        [models, width] tensors. Tokens: at most `max_tokens` random evaluations per model, or with
        `token_draw` shared the authors' K ~ U[min_tokens, n] positions, the same for every model.
        Targets: every evaluation, at most `max_targets` of them (a fresh random subset). With
        `encoder_fraction` < 1 tokens and targets are disjoint parts of each set instead, so the network
        cannot score a target by copying its label from a token."""
        torch = _torch()
        p = self.params
        device = sets.idx.device
        idx, y, mask = sets.idx[models], sets.y[models], sets.mask[models]
        width = idx.shape[1]
        tok_idx, tok_y, tok_mask = idx, y, mask
        k = p.max_tokens
        frac = float(p.encoder_fraction)

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
        elif p.token_draw == "shared":  # the authors: K ~ U[min(min_tokens, n), n], same positions for all
            upper = min(k, width) if k > 0 else width
            lower = max(1, min(p.min_tokens, upper))
            host_gen = host_gen if host_gen is not None else torch.Generator().manual_seed(self.seed + 2)
            size = int(torch.randint(lower, upper + 1, (1,), generator=host_gen)) if lower < upper else upper
            if size < width:
                keys = torch.rand((1, width), generator=gen, device=device) + (~mask).float() * 2.0
                pick = keys.argsort(dim=1)[:, :size]
                tok_idx, tok_y, tok_mask = idx.gather(1, pick), y.gather(1, pick), mask.gather(1, pick)
        elif 0 < k < width:  # random subset of at most k real evaluations per model
            pick = random_keys().argsort(dim=1)[:, :k]
            tok_idx, tok_y, tok_mask = idx.gather(1, pick), y.gather(1, pick), mask.gather(1, pick)
        t = p.max_targets
        if 0 < t < idx.shape[1]:  # random subset of at most t decoder targets per model (own draw)
            pick = random_keys().argsort(dim=1)[:, :t]
            idx, y, mask = idx.gather(1, pick), y.gather(1, pick), mask.gather(1, pick)
        return (tok_idx, tok_y, tok_mask), (idx, y, mask)

    def _noisy_logits(self, net, phi, tokens, target_idx, std: float, gen):
        """Logits [models, targets] of a training step: each model embedded from its `tokens`, its targets
        scored, with Gaussian noise of std `std` on the query encodings. The noise is drawn per (model,
        query) pair as the authors, or (`noise_per_pair` false) once per query, shared by the step's models,
        so the tokenizer and the decoder's query part run once per query."""
        torch = _torch()
        tok_idx, tok_y, tok_mask = tokens
        device = phi.device
        if std > 0 and self.params.noise_per_pair:
            enc_phi, dec_phi = phi[tok_idx], phi[target_idx]
            enc_phi = enc_phi + std * torch.randn(enc_phi.shape, generator=gen, device=device)
            dec_phi = dec_phi + std * torch.randn(dec_phi.shape, generator=gen, device=device)
            z = net.encoder(net.encoder.tokenizer.project(enc_phi), tok_y, tok_mask)
            u, uh = net.decoder.query_features(dec_phi)
        else:
            enc_q, dec_q = phi, phi
            if std > 0:
                enc_q = phi + std * torch.randn(phi.shape, generator=gen, device=device)
                dec_q = phi + std * torch.randn(phi.shape, generator=gen, device=device)
            z = net.encoder(net.encoder.tokenizer.project(enc_q)[tok_idx], tok_y, tok_mask)
            u, uh = net.decoder.query_features(dec_q)
            u, uh = u[target_idx], uh[target_idx]
        return net.decoder.pair_logits(z, u, uh)

    def _validate(self, net, phi, sets, val_phi, val_labels) -> dict:
        """Validation metrics of `net` (the raw weights, or their moving average with `ema_decay`), in float32."""
        if val_phi.shape[0] == 0:
            return {}
        z = self._embed_sets(phi, sets, exact=True, net=net)
        return evaluation.validation_metrics(
            self._grid_logits(z, val_phi, exact=True, net=net).cpu().numpy(), val_labels
        )

    @staticmethod
    def _report(row: dict, stopper, last_report: float) -> float:
        """Log a validation row: at INFO once a minute (long runs), else at DEBUG; returns the last INFO time."""
        progress = row["seconds"] - last_report >= 60
        log.log(
            logging.INFO if progress else logging.DEBUG,
            "locus: step %d loss %.4f val hit@1 %.4f bce %.4f (best %.4f at step %d; %.1f s)",
            row["step"],
            row["train_loss"],
            row.get("val_routing", math.nan),
            row.get("val_bce", math.nan),
            stopper.value if stopper.value is not None else math.nan,
            stopper.step,
            row["seconds"],
        )
        return row["seconds"] if progress else last_report

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
        logits = self._grid_logits(
            torch.from_numpy(np.ascontiguousarray(z)).to(self.device),
            torch.from_numpy(np.ascontiguousarray(phi)).to(self.device),
        )
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
            z = self.net.embed(
                torch.from_numpy(query_vectors).to(self.device)[None], torch.from_numpy(scores).to(self.device)[None]
            )
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
