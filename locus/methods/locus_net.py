"""The LOCUS network: encoder F_theta (evaluations -> model embedding z) and correctness predictor G_psi.

Read top to bottom: Tokenizer -> MAB -> SAB / ISAB -> PMA -> Encoder -> Decoder -> LocusNet. The network
is built from one configuration object, ``LocusNet(config, d_phi)`` with ``config`` a
:class:`~locus.methods.locus_params.LocusParams` (nanoGPT's ``GPT(config)``).
It follows the paper (section 2, appendix I) and the authors' code:

- a token per evaluation: ``t = W [phi; y; (2y-1) phi] + b`` (one affine map, no activation);
- ``L`` latent-bottleneck blocks (ISAB, ``r`` learned latents) or full self-attention blocks (SAB);
- every attention block is the authors' post-LN "MAB": ``H = LN0(Q + MHA(Q, X, X))`` with the residual
  taken from the *un-projected* query input, an extra ``ReLU``, then ``LN1(H + FFN(H))`` with FFN
  d -> 2d -> d; projections without bias, no positional encodings, no dropout;
- a learned-query aggregation (PMA, one seed) and an output Linear d -> d give z;
- decoder: ``u = U phi``, logit = MLP([z; u; z*u] -> hidden -> 1) with ReLU and dropout.

Two exact (not approximate) algebraic savings, used everywhere:

- the tokenizer is ``W_a phi + (2y-1) W_b phi + w_y y + b``: ``[W_a; W_b] phi`` is computed once per
  *query* (:meth:`Tokenizer.project`), not once per (model, query) pair;
- the decoder's first layer ``W1 [z; u; z*u]`` is split into a per-model part ``W_z z + b1``, a per-query
  part ``W_u u`` and a per-pair part ``W_zu (z*u)``; only the last one costs per pair.

Padding: a batch of models is a padded [B, n, .] tensor with a boolean ``mask`` (True = a real
evaluation). Padded tokens are excluded as attention *keys* everywhere, so a model's embedding depends only
on its own evaluations (padded rows are computed but never read by a real row).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F
from torch import nn

if TYPE_CHECKING:
    from locus.methods.locus_params import LocusParams


class Tokenizer(nn.Module):
    """h_omega: one affine map of [phi; y; (2y-1) phi] to d, computed as W_a phi + (2y-1) W_b phi + w_y y + b."""

    def __init__(self, d_phi: int, dim: int):
        super().__init__()
        self.dim = dim
        self.query = nn.Linear(d_phi, 2 * dim, bias=False)  # rows [W_a; W_b]
        self.score = nn.Linear(1, dim)  # w_y y + b
        # same init scale as one nn.Linear over the full (2 d_phi + 1)-wide input
        bound = 1.0 / math.sqrt(2 * d_phi + 1)
        for p in (self.query.weight, self.score.weight, self.score.bias):
            nn.init.uniform_(p, -bound, bound)

    def project(self, phi: torch.Tensor) -> torch.Tensor:
        """Per-query part [W_a phi, W_b phi]: [..., 2d]. Compute once per query, then gather per token."""
        return self.query(phi)

    def forward(self, proj: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Tokens [B, n, d] from gathered projections [B, n, 2d] and scores y [B, n]."""
        a, b = proj.split(self.dim, dim=-1)
        y = y.unsqueeze(-1)
        return a + (2.0 * y - 1.0) * b + self.score(y)


class MAB(nn.Module):
    """Multi-head attention block of the authors' code: queries attend to keys/values X (masked keys)."""

    def __init__(self, dim: int, heads: int):
        super().__init__()
        if dim % heads:
            raise ValueError(f"dim {dim} must be divisible by heads {heads}")
        self.heads = heads
        self.q = nn.Linear(dim, dim, bias=False)
        self.k = nn.Linear(dim, dim, bias=False)
        self.v = nn.Linear(dim, dim, bias=False)
        self.o = nn.Linear(dim, dim, bias=False)
        self.ln0 = nn.LayerNorm(dim)
        self.ln1 = nn.LayerNorm(dim)
        self.ffn = nn.Sequential(nn.Linear(dim, 2 * dim), nn.ReLU(), nn.Linear(2 * dim, dim))

    def _split(self, x: torch.Tensor) -> torch.Tensor:  # [B, n, d] -> [B, h, n, d/h]
        b, n, d = x.shape
        return x.view(b, n, self.heads, d // self.heads).transpose(1, 2)

    def forward(self, query: torch.Tensor, x: torch.Tensor, key_mask: torch.Tensor | None = None) -> torch.Tensor:
        """query [B or 1, nq, d] (a shared query such as latents/seed may have batch 1), x [B, nk, d],
        key_mask [B, nk] bool (True = attend). Returns [B, nq, d]."""
        batch = x.shape[0]
        q = self._split(self.q(query)).expand(batch, -1, -1, -1)
        k, v = self._split(self.k(x)), self._split(self.v(x))
        mask = None if key_mask is None else key_mask[:, None, None, :]
        att = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        att = att.transpose(1, 2).reshape(batch, -1, x.shape[-1])
        h = torch.relu(self.ln0(query + self.o(att)))  # residual from the un-projected query; extra ReLU
        return self.ln1(h + self.ffn(h))


class SAB(nn.Module):
    """Full self-attention over the evaluation tokens (O(n^2); the paper's plain TBlock layer)."""

    def __init__(self, dim: int, heads: int, latents: int = 0):
        super().__init__()
        self.mab = MAB(dim, heads)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        return self.mab(x, x, mask)


class ISAB(nn.Module):
    """Latent bottleneck block: r latents compress the tokens (MAB1), the tokens read them back (MAB2)."""

    def __init__(self, dim: int, heads: int, latents: int):
        super().__init__()
        self.latents = nn.Parameter(torch.empty(1, latents, dim))
        nn.init.xavier_uniform_(self.latents)
        self.compress = MAB(dim, heads)
        self.broadcast = MAB(dim, heads)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        h = self.compress(self.latents, x, mask)  # [B, r, d]; padded tokens are masked keys
        return self.broadcast(x, h)  # every token attends to the r latents (no mask needed)


class PMA(nn.Module):
    """Learned-query aggregation with one seed: [B, n, d] -> [B, d]."""

    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.seed = nn.Parameter(torch.randn(1, 1, dim))
        self.mab = MAB(dim, heads)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        return self.mab(self.seed, x, mask).squeeze(1)


BLOCKS = {"isab": ISAB, "sab": SAB}


class Encoder(nn.Module):
    """F_theta: tokens of one model's evaluations -> z in R^d (permutation invariant). Reads `config`'s dim,
    heads, layers, latents and encoder_kind."""

    def __init__(self, config: LocusParams, d_phi: int):
        super().__init__()
        dim, heads = config.dim, config.heads
        if config.encoder_kind not in BLOCKS:
            raise ValueError(f"encoder_kind must be one of {sorted(BLOCKS)}, got {config.encoder_kind!r}")
        self.tokenizer = Tokenizer(d_phi, dim)
        block = BLOCKS[config.encoder_kind]
        self.blocks = nn.ModuleList(block(dim, heads, config.latents) for _ in range(config.layers))
        self.pool = PMA(dim, heads)
        self.out = nn.Linear(dim, dim)

    def forward(self, proj: torch.Tensor, y: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """proj [B, n, 2d] = tokenizer.project(phi) gathered per token, y [B, n], mask [B, n] -> z [B, d]."""
        x = self.tokenizer(proj, y)
        for block in self.blocks:
            x = block(x, mask)
        return self.out(self.pool(x, mask))


class Decoder(nn.Module):
    """G_psi: logit = w2 . Dropout(ReLU(W_z z + W_u u + W_zu (z*u) + b1)) + b2 with u = U phi. Reads `config`'s
    dim, decoder_hidden, decoder_dropout and query_dropout."""

    def __init__(self, config: LocusParams, d_phi: int):
        super().__init__()
        dim, hidden = config.dim, config.decoder_hidden
        self.query = nn.Linear(d_phi, dim)  # U
        self.query_dropout = nn.Dropout(config.query_dropout)  # on u (training only; 0 = the authors' decoder)
        first = nn.Linear(3 * dim, hidden)  # initialised as the one [z; u; z*u] layer, then split
        w = first.weight.detach()
        self.hidden_z = nn.Linear(dim, hidden)
        self.hidden_u = nn.Linear(dim, hidden, bias=False)
        self.hidden_zu = nn.Linear(dim, hidden, bias=False)
        with torch.no_grad():
            self.hidden_z.weight.copy_(w[:, :dim])
            self.hidden_z.bias.copy_(first.bias)
            self.hidden_u.weight.copy_(w[:, dim : 2 * dim])
            self.hidden_zu.weight.copy_(w[:, 2 * dim :])
        self.dropout = nn.Dropout(config.decoder_dropout)
        self.out = nn.Linear(hidden, 1)

    def query_features(self, phi: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-query part: u = U phi [Q, d] and W_u u [Q, hidden]."""
        u = self.query_dropout(self.query(phi))
        return u, self.hidden_u(u)

    def _head(self, pre: torch.Tensor) -> torch.Tensor:
        return self.out(self.dropout(torch.relu(pre))).squeeze(-1)

    def pair_logits(self, z: torch.Tensor, u: torch.Tensor, uh: torch.Tensor) -> torch.Tensor:
        """Logits of aligned pairs: z [B, d] with target queries u [B, T, d], uh [B, T, hidden] -> [B, T]."""
        pre = self.hidden_z(z).unsqueeze(1) + uh + self.hidden_zu(u * z.unsqueeze(1))
        return self._head(pre)

    def grid_logits(self, z: torch.Tensor, u: torch.Tensor, uh: torch.Tensor) -> torch.Tensor:
        """Logits of every (query, model) pair: z [M, d], u [Q, d], uh [Q, hidden] -> [Q, M].

        W_zu (z*u) = u @ (diag(z) W_zu^T): one [Q, d] x [d, M*hidden] matmul for all pairs.
        """
        m, d = z.shape
        hidden = uh.shape[-1]
        per_model = z.unsqueeze(-1) * self.hidden_zu.weight.t().unsqueeze(0)  # [M, d, hidden]
        pair = (u @ per_model.permute(1, 0, 2).reshape(d, m * hidden)).view(-1, m, hidden)
        pre = pair + self.hidden_z(z).unsqueeze(0) + uh.unsqueeze(1)
        return self._head(pre)


class LocusNet(nn.Module):
    """Encoder + decoder with the sizes of one configuration: `config` is a
    :class:`~locus.methods.locus_params.LocusParams` (its architecture fields: dim, heads, layers, latents,
    encoder_kind, decoder_hidden, decoder_dropout, query_dropout), `d_phi` the query encoding size."""

    def __init__(self, config: LocusParams, d_phi: int):
        super().__init__()
        self.d_phi = d_phi
        self.encoder = Encoder(config, d_phi)
        self.decoder = Decoder(config, d_phi)

    def embed(self, phi: torch.Tensor, y: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """z [B, d] from per-token query encodings phi [B, n, d_phi], scores y [B, n] and mask [B, n]."""
        return self.encoder(self.encoder.tokenizer.project(phi), y, mask)

    def logits(self, z: torch.Tensor, phi: torch.Tensor) -> torch.Tensor:
        """[Q, M] logits of queries phi [Q, d_phi] against model embeddings z [M, d]."""
        u, uh = self.decoder.query_features(phi)
        return self.decoder.grid_logits(z, u, uh)


def forward_flops(
    n_tokens: int, dim: int, heads: int, layers: int, latents: int, d_phi: int, kind: str = "isab"
) -> float:
    """FLOPs (2 x multiply-adds) of embedding ONE model from n_tokens evaluations with the split tokenizer.

    Counts matmuls only (attention scores and weighted sums included, softmax/LN/elementwise excluded).
    The per-query tokenizer projection (n x d_phi x 2d) is included, i.e. nothing is shared across models.
    """
    n, d, r = n_tokens, dim, latents

    def mab(nq, nk, shared_q=False):  # projections + attention + out proj + FFN (d -> 2d -> d)
        q_proj = 0 if shared_q else nq * d * d
        return q_proj + 2 * nk * d * d + 2 * nq * nk * d + nq * d * d + 4 * nq * d * d

    macs = n * d_phi * 2 * d + n * d  # tokenizer
    for _ in range(layers):
        macs += mab(r, n, True) + mab(n, r) if kind == "isab" else mab(n, n)
    macs += mab(1, n, True) + d * d  # PMA + output Linear
    return 2.0 * macs


def predict_flops(n_queries: int, n_models: int, dim: int, hidden: int, d_phi: int) -> float:
    """FLOPs of the [n_queries x n_models] logit grid with the split decoder."""
    per_query = d_phi * dim + dim * hidden
    per_model = dim * hidden
    per_pair = dim * hidden + hidden
    return 2.0 * (n_queries * per_query + n_models * per_model + n_queries * n_models * per_pair)
