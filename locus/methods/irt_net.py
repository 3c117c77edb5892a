"""IRT-Net (Chen et al. 2025, arXiv 2510.00844): a multidimensional two-parameter IRT model.

P(model m answers query x) = sigmoid(a_x · theta_m - b_x): theta_m in R^dim is a free ability vector per
model (the model embedding; N(0, 1) init); a_x (discrimination) and b_x (difficulty) come from the query
encoding through a mixture of experts (:class:`QueryMoE`: one shared expert plus ``n_experts`` routed
ones, the ``top_k`` selected by gate logit + a non-learned balancing bias). Gaussian input noise
(``noise``) during training only.

The released hyper-parameters and model-selection rule are kept (the class defaults). Decisions:
- The auxiliary-loss-free balancing bias (+/- ``bias_update_speed`` per step, from the mean gate logit over
  the batch's unique queries) is implemented but inert at top_k = n_experts (the released setting).
- Batches of whole queries (torch_utils.query_batches): the experts run once per query per step, and the
  input noise is drawn per query and step rather than per row.
- ``embed``: network frozen (eval mode, no noise, no dropout); one theta (init N(0, 1) from the seed) is
  fitted by full-batch Adam on BCE, a convex logistic regression in theta.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from locus.methods import torch_utils as tu
from locus.methods.base import SELECT_BY, EmbeddingMethod, FitData
from locus.methods.params import MethodParams, param

PREDICT_CHUNK = 256


def _uniform(shape, fan_in: int) -> nn.Parameter:
    bound = 1.0 / math.sqrt(fan_in)  # nn.Linear's default init range
    return nn.Parameter(torch.empty(shape).uniform_(-bound, bound))


class QueryMoE(nn.Module):
    """Shared expert + dense/top-k mixture of routed experts, then the IRT heads (a_x, b_x).

    Each expert is Linear(d_phi -> expert_hidden) -> ReLU -> Dropout -> Linear(expert_hidden -> expert_out);
    the routed outputs are mixed by a softmax over the gate logits of the ``top_k`` selected experts;
    h_x = shared + mixture, a_x = Linear(h_x), b_x = Linear(h_x) -> scalar."""

    def __init__(self, d_phi: int, dim: int, n_experts: int, top_k: int, hidden: int, out: int, dropout: float):
        super().__init__()
        self.n_experts, self.top_k, self.hidden, self.out = n_experts, top_k, hidden, out
        self.shared = nn.Sequential(nn.Linear(d_phi, hidden), nn.ReLU(), nn.Dropout(dropout), nn.Linear(hidden, out))
        # routed experts stored batched: first layer as one [d_phi, E*hidden] matmul, second as bmm
        self.w1 = _uniform((d_phi, n_experts * hidden), d_phi)
        self.b1 = _uniform((n_experts * hidden,), d_phi)
        self.w2 = _uniform((n_experts, hidden, out), hidden)
        self.b2 = _uniform((n_experts, 1, out), hidden)
        self.dropout = nn.Dropout(dropout)
        self.gate = nn.Linear(d_phi, n_experts)
        self.register_buffer("balance_bias", torch.zeros(n_experts))
        self.difficulty = nn.Linear(out, 1)
        self.discrimination = nn.Linear(out, dim)

    def gate_weights(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(mixing weights [n, E], raw gate logits [n, E])."""
        logits = self.gate(x)
        if self.top_k >= self.n_experts:
            return torch.softmax(logits, dim=-1), logits
        chosen = torch.topk(logits + self.balance_bias, self.top_k, dim=-1).indices
        masked = torch.full_like(logits, float("-inf")).scatter(1, chosen, logits.gather(1, chosen))
        return torch.softmax(masked, dim=-1), logits

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(a [n, dim], b [n], gate logits [n, E]) of query encodings x [n, d_phi]."""
        n = x.shape[0]
        weights, gate_logits = self.gate_weights(x)
        h1 = self.dropout(torch.relu(x @ self.w1 + self.b1))  # [n, E*hidden]
        h1 = h1.view(n, self.n_experts, self.hidden).transpose(0, 1)  # [E, n, hidden]
        routed = torch.bmm(h1, self.w2) + self.b2  # [E, n, out]
        h = self.shared(x) + torch.einsum("ne,eno->no", weights, routed)
        return self.discrimination(h), self.difficulty(h).squeeze(-1), gate_logits

    @torch.no_grad()
    def update_balance(self, gate_logits: torch.Tensor, speed: float) -> None:
        """DeepSeek-V3-style bias update: over-used experts (batch-mean gate logit above the mean) get
        -speed, under-used ones +speed."""
        load = gate_logits.mean(dim=0)
        self.balance_bias -= speed * torch.sign(load - load.mean())


class IRTModule(nn.Module):
    def __init__(self, n_models: int, d_phi: int, p: IRTNetParams):
        super().__init__()
        self.theta = nn.Embedding(n_models, p.dim)
        self.query = QueryMoE(d_phi, p.dim, p.n_experts, p.top_k, p.expert_hidden, p.expert_out, float(p.dropout))

    @property
    def model_table(self) -> nn.Embedding:
        """The per-model vectors (read by the shared code in torch_utils.NetMethod)."""
        return self.theta

    def matrix_logits(self, x: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
        out = []
        for chunk in torch.split(x, PREDICT_CHUNK):
            a, b, _ = self.query(chunk)
            out.append(a @ theta.T - b[:, None])
        return torch.cat(out) if out else torch.zeros((0, theta.shape[0]))


@dataclass(frozen=True)
class IRTNetParams(MethodParams):
    """IRT-Net's parameters (the released values)."""

    method = "irt_net"

    dim: int = param(232, "model embedding size", at_least=1)
    n_experts: int = param(39, "experts of the mixture", at_least=1)
    top_k: int = param(39, "experts used per query (= n_experts: the released dense mixture)", at_least=1)
    expert_hidden: int = param(512, "hidden units of each expert", at_least=1)
    expert_out: int = param(256, "output units of each expert", at_least=1)
    dropout: float = param(0.5, "dropout inside the experts", at_least=0, below=1)
    noise: float = param(0.05, "std of the Gaussian input noise (training only)", at_least=0)
    bias_update_speed: float = param(0.01, "speed of the load-balancing bias update", at_least=0)
    lr: float = param(1e-4, "Adam learning rate", above=0)
    weight_decay: float = param(1e-4, "Adam weight decay", at_least=0)
    lr_factor: float = param(0.1, "ReduceLROnPlateau factor on validation BCE", above=0, below=1)
    lr_patience: int = param(2, "ReduceLROnPlateau patience in epochs", at_least=0)
    batch_size: int = param(2048, "training pairs per step", at_least=1)
    max_epochs: int = param(30, "maximum epochs", at_least=1)
    patience: int = param(5, "stop after this many epochs without a better validation value", at_least=1)
    select_by: str = param("val_acc", "validation metric that selects the epoch", choices=SELECT_BY)
    embed_steps: int = param(300, "optimiser steps when embedding a new model", at_least=1)
    embed_lr: float = param(0.05, "learning rate when embedding a new model", above=0)
    threads: int = param(1, "torch threads (0 = leave torch's default)", at_least=0)

    def check_together(self) -> None:
        if self.top_k > self.n_experts:
            self.refuse("top_k", f"<= n_experts ({self.n_experts})")


class IRTNet(tu.NetMethod, EmbeddingMethod):
    name = "irt_net"
    label = "IRT-Net"
    latex_label = "IRT-Net"
    color = "#1f77b4"
    order = 40
    uses_torch = True
    Params = IRTNetParams
    params: IRTNetParams

    def __init__(self, params: IRTNetParams | dict | None = None, seed: int = 0):
        super().__init__(params, seed)
        self.net: IRTModule | None = None
        self.d_phi: int | None = None

    def _build(self, n_models: int, d_phi: int) -> IRTModule:
        return IRTModule(n_models, d_phi, self.params)

    def fit(self, data: FitData) -> "IRTNet":
        p = self.params
        gen = tu.setup_torch(self.seed, p.threads)
        self.model_ids = tu.fit_model_ids(data)
        train = tu.PairTable.from_frame(data.train, self.model_ids, data.encodings)
        val = tu.ValidationSet(data.val, self.model_ids, data.encodings)
        self.d_phi = int(train.vectors.shape[1])
        self.net = self._build(len(self.model_ids), self.d_phi)
        opt = torch.optim.Adam(self.net.parameters(), lr=p.lr, weight_decay=p.weight_decay, fused=True)
        sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="min", factor=p.lr_factor, patience=p.lr_patience)
        noise, speed = float(p.noise), float(p.bias_update_speed)

        def loss_of(batch: tu.QueryBatch) -> torch.Tensor:
            x = train.vectors[batch.queries]
            if noise > 0:
                x = x + noise * torch.randn(x.shape, generator=gen)
            a, b, gate_logits = self.net.query(x)
            self.net.query.update_balance(gate_logits.detach(), speed)  # bias is a buffer: not in the graph
            theta = self.net.theta(train.model[batch.rows])
            logits = (a[batch.local] * theta).sum(-1) - b[batch.local]
            return nn.functional.binary_cross_entropy_with_logits(logits, train.score[batch.rows])

        def on_epoch_end(row: dict) -> None:
            row["lr"] = opt.param_groups[0]["lr"]
            sched.step(row["val_bce"])

        with torch.random.fork_rng():  # dropout draws from the global RNG: seed it for determinism
            torch.manual_seed(self.seed)
            self.history = tu.train_early_stopping(
                self.net,
                opt,
                batches=lambda: tu.query_batches(train, p.batch_size, gen),
                loss_of_batch=loss_of,
                validate=lambda: val.metrics(self.net.matrix_logits(val.vectors, self.net.theta.weight).numpy()),
                max_epochs=p.max_epochs,
                patience=p.patience,
                select_by=p.select_by,
                on_epoch_end=on_epoch_end,
            )
        return self

    def _embed_many(self, sets: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
        """Thetas of new models fitted on their scored queries with the query network frozen."""
        return self._fit_embeddings(
            sets, lambda x: self.net.query(x)[:2], lambda ab, theta: (ab[0] * theta).sum(-1) - ab[1]
        )
