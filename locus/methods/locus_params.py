"""LOCUS's parameters: one frozen dataclass with each parameter's type, default, allowed values and doc.

The two training recipes are named presets of it (:data:`PRESETS`): ``fast`` (the class defaults, for
CPUs) and ``paper`` (the authors' schedule). :meth:`LocusParams.from_dict` applies the preset named by
``recipe`` and the user's own values over it; every bad name or value is a one-line
:class:`~locus.errors.ConfigError` naming the parameter, the value and what is allowed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from locus.constants import PRECISIONS  # noqa: F401  (re-exported: values of `precision`)
from locus.constants import RECIPES as RECIPE_NAMES
from locus.data.validation import Param
from locus.errors import ConfigError
from locus.methods.base import SELECT_BY


def _param(
    default, doc: str, *, at_least=None, above=None, below=None, at_most=None, choices=None, any_sign: bool = False
):
    """A field with its one-line doc and its allowed values (bounds are inclusive unless named above/below)."""
    return field(
        default=default,
        metadata={
            "doc": doc,
            "at_least": at_least,
            "above": above,
            "below": below,
            "at_most": at_most,
            "choices": choices,
            "any_sign": any_sign,
        },
    )


@dataclass(frozen=True)
class LocusParams:
    """Every LOCUS parameter; the defaults are the ``fast`` recipe."""

    # architecture (the paper's and the authors' values); internal widths follow `dim`
    dim: int = _param(128, "model embedding size d; attention and FFN widths follow it (FFN 2d)", at_least=1)
    heads: int = _param(4, "attention heads (must divide dim)", at_least=1)
    layers: int = _param(2, "number of ISAB/SAB blocks L", at_least=1)
    latents: int = _param(64, "learned latents r per ISAB block", at_least=1)
    decoder_hidden: int = _param(64, "hidden units of the decoder MLP", at_least=1)
    decoder_dropout: float = _param(0.1, "dropout before the decoder's output layer", at_least=0, below=1)
    encoder_kind: str = _param("isab", "isab (latent bottleneck) or sab (full self-attention)", choices=("isab", "sab"))
    query_dropout: float = _param(
        0.0, "dropout on the decoder's query projection u = U phi (training only)", at_least=0, below=1
    )
    # optimisation (the authors' values)
    enc_lr: float = _param(2e-4, "AdamW learning rate of the encoder", at_least=0)
    dec_lr: float = _param(8e-4, "AdamW learning rate of the decoder", at_least=0)
    weight_decay: float = _param(0.05, "AdamW weight decay (all parameters)", at_least=0)
    grad_clip: float = _param(1.0, "max gradient norm (0 = off)", at_least=0)
    noise_start: float = _param(0.10, "std of the Gaussian noise on query encodings at step 0", at_least=0)
    noise_end: float = _param(0.05, "noise std from noise_anneal_steps on (cosine schedule)", at_least=0)
    noise_anneal_steps: int = _param(500, "steps of the cosine noise schedule", at_least=0)
    noise_per_pair: bool = _param(
        True,
        "true: one noise draw per (model, query) pair (the authors); "
        "false: one per query and step, shared by the step's models",
    )
    # schedule (`fast`: CPU-oriented; `paper`: the authors')
    max_steps: int = _param(800, "maximum optimiser steps", at_least=1)
    min_steps: int = _param(600, "never stop early before this step (early training can sit on a plateau)", at_least=0)
    patience: int = _param(400, "stop after this many steps without a better validation value", at_least=0)
    eval_every: int = _param(25, "validate every this many steps", at_least=1)
    model_batch: int = _param(16, "models per step (0 = all)", at_least=0)
    max_tokens: int = _param(256, "max encoder tokens per model and step (random subset; 0 = all)", at_least=0)
    max_targets: int = _param(
        1024, "max decoder targets per model and step (random subset; 0 = all, the authors)", at_least=0
    )
    encoder_fraction: float = _param(
        1.0,
        "< 1: split each model's set per step into encoder tokens (this fraction) and decoder targets (the rest)",
        above=0,
        at_most=1,
    )
    token_draw: str = _param(
        "per_model",
        "per_model: each model's own random token subset; shared: the authors' "
        "K ~ U[min_tokens, n] positions, the same for every model of a step",
        choices=("per_model", "shared"),
    )
    min_tokens: int = _param(1024, "token_draw shared: the smallest K drawn", at_least=0)
    eval_chunk_tokens: int = _param(
        0,
        "tokens per chunk when embedding every model without autograd "
        "(0 = by device: small on a CPU for its caches, large on CUDA)",
        at_least=0,
    )
    max_seconds: float = _param(0.0, "stop after this wall time (0 = off; not deterministic)", at_least=0)
    recipe: str = _param(
        "fast",
        "the preset under your own values: fast (default, for CPUs) or paper (the authors' schedule)",
        choices=RECIPE_NAMES,
    )
    precision: str = _param(
        "float32",
        "arithmetic of embedding and prediction outside training (bfloat16: "
        "torch.autocast); training and validation stay float32",
        choices=PRECISIONS,
    )
    select_by: str = _param(
        "val_routing", "validation metric that selects the checkpoint and stops early", choices=SELECT_BY
    )
    label_smoothing: float = _param(0.0, "training targets y -> y (1 - s) + s / 2 (0 = off)", at_least=0, at_most=1)
    query_weight_decay: float = _param(
        -1.0, "AdamW weight decay of the decoder's query projection U (< 0 = weight_decay)", any_sign=True
    )
    ema_decay: float = _param(
        0.0,
        "> 0: validate, select and keep a moving average of the weights with this decay per step (0 = off)",
        at_least=0,
        below=1,
    )
    lr_warmup_steps: int = _param(0, "linear learning-rate warm-up over this many steps (0 = off)", at_least=0)
    lr_decay_steps: int = _param(
        0, "> 0: cosine decay of the learning rates to 0 at this step (0 = constant)", at_least=0
    )
    # where and how it runs
    threads: int = _param(0, "torch threads (0 = leave torch's default)", at_least=0)
    device: str = _param("auto", "auto (CUDA when available, else CPU), cpu or cuda", choices=("auto", "cpu", "cuda"))
    deterministic: bool = _param(
        False, "torch.use_deterministic_algorithms while training (bit-reproducible CUDA runs, slower)"
    )
    tf32: bool = _param(
        False, "CUDA only: TF32 matrix products in training steps, embedding and prediction; validation stays float32"
    )

    def __post_init__(self):
        for f in dataclasses.fields(self):
            _check(f, getattr(self, f.name))
        if self.dim % self.heads:
            _refuse("heads", self.heads, f"a divisor of dim ({self.dim})")
        if 0 < self.lr_decay_steps <= self.lr_warmup_steps:
            _refuse(
                "lr_decay_steps",
                self.lr_decay_steps,
                f"0 (no decay) or larger than lr_warmup_steps ({self.lr_warmup_steps})",
            )

    @classmethod
    def from_dict(cls, params: Mapping[str, Any] | None = None) -> LocusParams:
        """The preset named by ``params["recipe"]`` (default ``fast``) with `params` over it."""
        params = dict(params or {})
        unknown = sorted(set(params) - set(NAMES))
        if unknown:
            raise ConfigError(f"method 'locus': unknown parameter(s) {unknown}; known: {sorted(NAMES)}")
        recipe = params.get("recipe", "fast")
        if not isinstance(recipe, str) or recipe not in PRESETS:
            _refuse("recipe", recipe, f"one of {list(PRESETS)}")
        return dataclasses.replace(PRESETS[recipe], **params)

    def as_dict(self) -> dict[str, Any]:
        """Every parameter by name, values as given (an int given for a float stays an int)."""
        return {name: getattr(self, name) for name in NAMES}


def _refuse(name: str, value, allowed: str):
    raise ConfigError(f"method 'locus': {name} must be {allowed}, got {value!r}")


def _check(f: dataclasses.Field, value) -> None:
    """Refuse `value` for field `f` unless it has the field's type and lies in its allowed values (the
    shared typed-parameter check, :class:`locus.data.validation.Param`)."""
    m = f.metadata
    kind = {"bool": "bool", "str": "str", "int": "int"}.get(f.type if isinstance(f.type, str) else f.type.__name__)
    spec = Param(
        default=f.default,
        doc=m["doc"],
        type=kind or "float",
        at_least=m["at_least"],
        above=m["above"],
        at_most=m["at_most"],
        below=m["below"],
        choices=m["choices"],
    )
    spec.check("method 'locus'", f.name, value)


NAMES = tuple(f.name for f in dataclasses.fields(LocusParams))
DOCS = {f.name: f.metadata["doc"] for f in dataclasses.fields(LocusParams)}

# what both recipes set alike (the authors' optimisation and noise), so a recipe never inherits a default
# that someone changed in the class by accident
_SHARED = {
    "encoder_fraction": 1.0,
    "min_tokens": 1024,
    "noise_start": 0.10,
    "noise_end": 0.05,
    "noise_anneal_steps": 500,
    "noise_per_pair": True,
    "enc_lr": 2e-4,
    "dec_lr": 8e-4,
    "weight_decay": 0.05,
    "grad_clip": 1.0,
    "select_by": "val_routing",
    "label_smoothing": 0.0,
    "query_weight_decay": -1.0,
    "query_dropout": 0.0,
    "ema_decay": 0.0,
    "lr_warmup_steps": 0,
    "lr_decay_steps": 0,
}
FAST = dataclasses.replace(
    LocusParams(),
    **_SHARED,
    recipe="fast",
    model_batch=16,
    max_steps=800,
    min_steps=600,
    patience=400,
    eval_every=25,
    max_tokens=256,
    token_draw="per_model",
    max_targets=1024,
)
# the authors' training: every model in every step (a step = an epoch), at most 2,500 steps, validation on
# the whole validation split after every step, early stopping after 500 steps without a strict improvement,
# all evaluations as decoder targets and K ~ U[1,024, n] shared encoder tokens
PAPER = dataclasses.replace(
    LocusParams(),
    **_SHARED,
    recipe="paper",
    model_batch=0,
    max_steps=2500,
    min_steps=0,
    patience=500,
    eval_every=1,
    max_tokens=0,
    token_draw="shared",
    max_targets=0,
)
PRESETS = {"fast": FAST, "paper": PAPER}
