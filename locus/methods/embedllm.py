"""EmbedLLM ("TextMF", Zhuang et al., ICLR 2025) and EmbedLLM+ (LOCUS App. B / App. H).

Each model m has a learned embedding P_m in R^dim (init N(0, 1)); a query encoding phi(x) gets Gaussian
input noise (``noise``, training only) and a projection W phi(x) + c; ``logit(m, x) = MLP_psi(P_m ⊙ (W
phi(x) + c))``, MLP_psi = Linear(dim -> 1) (EmbedLLM) or ``hidden_layers`` ReLU layers first (EmbedLLM+).

Decisions:
- Single-logit BCE instead of the released 2-class CrossEntropy: the same function class and routing score.
- Batches of whole queries, input noise per query and step: the projection runs once per query, which
  makes CPU training much faster (torch_utils.query_batches).
- The released lr 1e-4 and weight decay 1e-5, but epochs chosen by early stopping on validation
  (``select_by``, ``patience``, ``max_epochs``) instead of a fixed 50: with 256-1024 queries per model
  50 epochs are too few steps. lr 1e-3 reaches the same test accuracies sooner: a safe override.
- ``embed`` (App. H "regenerating embeddings"): projection and MLP frozen, one new embedding (init
  N(0, 1) from the seed) fitted by full-batch Adam on BCE (``embed_steps``, ``embed_lr``), no input noise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from locus.methods import torch_utils as tu
from locus.methods.base import SELECT_BY, EmbeddingMethod, FitData
from locus.methods.params import MethodParams, param, redefault

PREDICT_CHUNK = 256  # queries per chunk when scoring [queries x models x dim]


class TextMF(nn.Module):
    """P (model embeddings), projection W, and the decoder MLP_psi."""

    def __init__(self, n_models: int, d_phi: int, dim: int, hidden_layers: int, hidden_dim: int):
        super().__init__()
        self.P = nn.Embedding(n_models, dim)
        self.proj = nn.Linear(d_phi, dim)
        layers, width = [], dim
        for _ in range(hidden_layers):
            layers += [nn.Linear(width, hidden_dim), nn.ReLU()]
            width = hidden_dim
        layers.append(nn.Linear(width, 1))
        self.decoder = nn.Sequential(*layers)

    def pair_logits(self, z: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """Logits of aligned rows: embeddings z [n, dim], query encodings x [n, d_phi]."""
        return self.decoder(z * self.proj(x)).squeeze(-1)

    @property
    def model_table(self) -> nn.Embedding:
        """The per-model vectors (read by the shared code in torch_utils.NetMethod)."""
        return self.P

    def matrix_logits(self, x: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        """Logits [queries x models] of query encodings x [q, d_phi] against embeddings z [m, dim]."""
        out = []
        for chunk in torch.split(x, PREDICT_CHUNK):
            h = self.proj(chunk)[:, None, :] * z[None, :, :]
            out.append(self.decoder(h).squeeze(-1))
        return torch.cat(out) if out else torch.zeros((0, z.shape[0]))


@dataclass(frozen=True)
class EmbedLLMParams(MethodParams):
    """EmbedLLM's parameters (the released values where there are some)."""

    method = "embedllm"

    dim: int = param(232, "model embedding size (the released default)", at_least=1)
    hidden_layers: int = param(0, "hidden layers of the classifier (0 = the released Linear one)", at_least=0)
    hidden_dim: int = param(64, "width of each hidden layer", at_least=1)
    noise: float = param(0.05, "std of the Gaussian input noise (training only)", at_least=0)
    lr: float = param(1e-4, "Adam learning rate (the released value)", above=0)
    weight_decay: float = param(1e-5, "Adam weight decay", at_least=0)
    batch_size: int = param(2048, "training pairs per step", at_least=1)
    max_epochs: int = param(300, "maximum epochs", at_least=1)
    patience: int = param(10, "stop after this many epochs without a better validation value", at_least=1)
    select_by: str = param("val_bce", "validation metric that selects the epoch", choices=SELECT_BY)
    embed_steps: int = param(300, "optimiser steps when embedding a new model", at_least=1)
    embed_lr: float = param(0.05, "learning rate when embedding a new model", above=0)
    threads: int = param(1, "torch threads (0 = leave torch's default; 1 is fastest here)", at_least=0)


@dataclass(frozen=True)
class EmbedLLMPlusParams(EmbedLLMParams):
    """EmbedLLM+'s parameters: EmbedLLM's, with 2 hidden layers."""

    method = "embedllm_plus"

    hidden_layers: int = redefault(EmbedLLMParams, "hidden_layers", 2)


class EmbedLLM(tu.NetMethod, EmbeddingMethod):
    name = "embedllm"
    label = "EmbedLLM"
    latex_label = "EmbedLLM"
    color = "#2ca02c"
    order = 20
    uses_torch = True
    Params = EmbedLLMParams
    params: EmbedLLMParams

    def __init__(self, params: EmbedLLMParams | dict | None = None, seed: int = 0):
        super().__init__(params, seed)
        self.net: TextMF | None = None
        self.d_phi: int | None = None

    def _build(self, n_models: int, d_phi: int) -> TextMF:
        p = self.params
        return TextMF(n_models, d_phi, p.dim, p.hidden_layers, p.hidden_dim)

    # -- training ------------------------------------------------------------------------------
    def fit(self, data: FitData) -> "EmbedLLM":
        p = self.params
        gen = tu.setup_torch(self.seed, p.threads)
        self.model_ids = tu.fit_model_ids(data)
        train = tu.PairTable.from_frame(data.train, self.model_ids, data.encodings)
        val = tu.ValidationSet(data.val, self.model_ids, data.encodings)
        self.d_phi = int(train.vectors.shape[1])
        self.net = self._build(len(self.model_ids), self.d_phi)
        opt = torch.optim.Adam(self.net.parameters(), lr=p.lr, weight_decay=p.weight_decay, fused=True)
        noise = float(p.noise)

        def loss_of(batch: tu.QueryBatch) -> torch.Tensor:
            x = train.vectors[batch.queries]
            if noise > 0:
                x = x + noise * torch.randn(x.shape, generator=gen)
            h = self.net.proj(x)[batch.local]
            logits = self.net.decoder(self.net.P(train.model[batch.rows]) * h).squeeze(-1)
            return nn.functional.binary_cross_entropy_with_logits(logits, train.score[batch.rows])

        self.history = tu.train_early_stopping(
            self.net,
            opt,
            batches=lambda: tu.query_batches(train, p.batch_size, gen),
            loss_of_batch=loss_of,
            validate=lambda: val.metrics(self.net.matrix_logits(val.vectors, self.net.P.weight).numpy()),
            max_epochs=p.max_epochs,
            patience=p.patience,
            select_by=p.select_by,
        )
        return self

    def _embed_many(self, sets: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
        """New model embeddings fitted on their (query, score) pairs with W and MLP_psi frozen."""
        return self._fit_embeddings(sets, self.net.proj, lambda qp, z: self.net.decoder(qp * z).squeeze(-1))


class EmbedLLMPlus(EmbedLLM):
    """EmbedLLM with a deeper decoder: 2 hidden ReLU layers of width 64 (OUR CHOICE; the paper leaves it open)."""

    name = "embedllm_plus"
    label = "EmbedLLM+"
    latex_label = "EmbedLLM+"
    color = "#9467bd"
    order = 30
    Params = EmbedLLMPlusParams
