"""LOCUS's parameters: one frozen dataclass (:class:`~locus.methods.params.MethodParams`) with each
parameter's type, default, allowed values and doc, written once. Training and :class:`LocusNet
<locus.methods.locus_net.LocusNet>` read it by attribute (``p.enc_lr``).

The class defaults are the ``fast`` recipe (for CPUs); ``paper`` (the authors' schedule) is the values of
:data:`PAPER` over them. :meth:`LocusParams.from_dict` applies the recipe named by ``recipe`` and the user's
own values over it; every bad name or value is a one-line :class:`~locus.errors.ConfigError` naming the
parameter, the value and what is allowed.
"""

from __future__ import annotations

from dataclasses import dataclass

from locus.constants import PRECISIONS
from locus.constants import RECIPES as RECIPE_NAMES
from locus.errors import ConfigError
from locus.methods.base import SELECT_BY
from locus.methods.params import MethodParams, param


@dataclass(frozen=True)
class LocusParams(MethodParams):
    """Every LOCUS parameter; the defaults are the ``fast`` recipe."""

    method = "locus"

    # architecture (the paper's and the authors' values); internal widths follow `dim`
    dim: int = param(128, "model embedding size d; attention and FFN widths follow it (FFN 2d)", at_least=1)
    heads: int = param(4, "attention heads (must divide dim)", at_least=1)
    layers: int = param(2, "number of ISAB/SAB blocks L", at_least=1)
    latents: int = param(64, "learned latents r per ISAB block", at_least=1)
    decoder_hidden: int = param(64, "hidden units of the decoder MLP", at_least=1)
    decoder_dropout: float = param(0.1, "dropout before the decoder's output layer", at_least=0, below=1)
    encoder_kind: str = param("isab", "isab (latent bottleneck) or sab (full self-attention)", choices=("isab", "sab"))
    query_dropout: float = param(
        0.0, "dropout on the decoder's query projection u = U phi (training only)", at_least=0, below=1
    )
    # optimisation (the authors' values)
    enc_lr: float = param(2e-4, "AdamW learning rate of the encoder", at_least=0)
    dec_lr: float = param(8e-4, "AdamW learning rate of the decoder", at_least=0)
    weight_decay: float = param(0.05, "AdamW weight decay (all parameters)", at_least=0)
    grad_clip: float = param(1.0, "max gradient norm (0 = off)", at_least=0)
    noise_start: float = param(0.10, "std of the Gaussian noise on query encodings at step 0", at_least=0)
    noise_end: float = param(0.05, "noise std from noise_anneal_steps on (cosine schedule)", at_least=0)
    noise_anneal_steps: int = param(500, "steps of the cosine noise schedule", at_least=0)
    noise_per_pair: bool = param(
        True,
        "true: one noise draw per (model, query) pair (the authors); "
        "false: one per query and step, shared by the step's models",
    )
    # schedule (`fast`: CPU-oriented; `paper`: the authors')
    max_steps: int = param(800, "maximum optimiser steps", at_least=1)
    min_steps: int = param(600, "never stop early before this step (early training can sit on a plateau)", at_least=0)
    patience: int = param(400, "stop after this many steps without a better validation value", at_least=0)
    eval_every: int = param(25, "validate every this many steps", at_least=1)
    model_batch: int = param(16, "models per step (0 = all)", at_least=0)
    max_tokens: int = param(256, "max encoder tokens per model and step (random subset; 0 = all)", at_least=0)
    max_targets: int = param(
        1024, "max decoder targets per model and step (random subset; 0 = all, the authors)", at_least=0
    )
    encoder_fraction: float = param(
        1.0,
        "< 1: split each model's set per step into encoder tokens (this fraction) and decoder targets (the rest)",
        above=0,
        at_most=1,
    )
    token_draw: str = param(
        "per_model",
        "per_model: each model's own random token subset; shared: the authors' "
        "K ~ U[min_tokens, n] positions, the same for every model of a step",
        choices=("per_model", "shared"),
    )
    min_tokens: int = param(1024, "token_draw shared: the smallest K drawn", at_least=0)
    eval_chunk_tokens: int = param(
        0,
        "tokens per chunk when embedding every model without autograd "
        "(0 = by device: small on a CPU for its caches, large on CUDA)",
        at_least=0,
    )
    max_seconds: float = param(0.0, "stop after this wall time (0 = off; not deterministic)", at_least=0)
    recipe: str = param(
        "fast",
        "the preset under your own values: fast (default, for CPUs) or paper (the authors' schedule)",
        choices=RECIPE_NAMES,
    )
    precision: str = param(
        "float32",
        "arithmetic of embedding and prediction outside training (bfloat16: "
        "torch.autocast); training and validation stay float32",
        choices=PRECISIONS,
    )
    select_by: str = param(
        "val_routing", "validation metric that selects the checkpoint and stops early", choices=SELECT_BY
    )
    label_smoothing: float = param(0.0, "training targets y -> y (1 - s) + s / 2 (0 = off)", at_least=0, at_most=1)
    query_weight_decay: float = param(
        -1.0, "AdamW weight decay of the decoder's query projection U (< 0 = weight_decay)"
    )
    ema_decay: float = param(
        0.0,
        "> 0: validate, select and keep a moving average of the weights with this decay per step (0 = off)",
        at_least=0,
        below=1,
    )
    lr_warmup_steps: int = param(0, "linear learning-rate warm-up over this many steps (0 = off)", at_least=0)
    lr_decay_steps: int = param(
        0, "> 0: cosine decay of the learning rates to 0 at this step (0 = constant)", at_least=0
    )
    # where and how it runs
    threads: int = param(0, "torch threads (0 = leave torch's default)", at_least=0)
    device: str = param("auto", "auto (CUDA when available, else CPU), cpu or cuda", choices=("auto", "cpu", "cuda"))
    deterministic: bool = param(
        False, "torch.use_deterministic_algorithms while training (bit-reproducible CUDA runs, slower)"
    )
    tf32: bool = param(
        False, "CUDA only: TF32 matrix products in training steps, embedding and prediction; validation stays float32"
    )

    def check_together(self) -> None:
        if self.dim % self.heads:
            self.refuse("heads", f"a divisor of dim ({self.dim})")
        if 0 < self.lr_decay_steps <= self.lr_warmup_steps:
            self.refuse("lr_decay_steps", f"0 (no decay) or larger than lr_warmup_steps ({self.lr_warmup_steps})")

    @classmethod
    def preset(cls, params: dict) -> dict:
        """The values of the recipe named by ``params["recipe"]`` (default ``fast``: the class defaults)."""
        recipe = params.get("recipe", "fast")
        if not isinstance(recipe, str) or recipe not in RECIPE_VALUES:
            raise ConfigError(f"{cls.owner()}: recipe must be one of {list(RECIPE_VALUES)}, got {recipe!r}")
        return RECIPE_VALUES[recipe]


# the authors' training, over the class defaults: every model in every step (a step = an epoch), at most
# 2,500 steps, validation on the whole validation split after every step, early stopping after 500 steps
# without a strict improvement, all evaluations as decoder targets and K ~ U[1,024, n] shared encoder tokens
PAPER = {
    "recipe": "paper",
    "model_batch": 0,
    "max_steps": 2500,
    "min_steps": 0,
    "patience": 500,
    "eval_every": 1,
    "max_tokens": 0,
    "token_draw": "shared",
    "max_targets": 0,
}
RECIPE_VALUES = {"fast": {}, "paper": PAPER}  # recipe name -> its values over the class defaults
PRESETS = {name: LocusParams(**values) for name, values in RECIPE_VALUES.items()}  # recipe name -> its parameters
assert tuple(RECIPE_VALUES) == RECIPE_NAMES, "locus.constants.RECIPES names the recipes of LocusParams"
