"""Method registry: name -> class ("module:Class", imported on first use).

Everything about a method (labels, table order, whether it needs torch, whether it has model embeddings,
its parameter defaults) lives on its class (see :mod:`locus.methods.base`); this module only knows where
each class is. Adding a method = its own file + one line in :data:`REGISTRY`.

- :func:`names` — registered names in table order (``order``);
- :func:`method_class` — the class (ConfigError listing the known names for an unknown one);
- :func:`info` — a :class:`MethodInfo` with the class's metadata;
- :func:`create` — an unfitted instance with validated parameters.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from locus.errors import ConfigError

REGISTRY = {
    "locus": "locus.methods.locus_method:LocusMethod",
    "embedllm": "locus.methods.embedllm:EmbedLLM",
    "embedllm_plus": "locus.methods.embedllm:EmbedLLMPlus",
    "irt_net": "locus.methods.irt_net:IRTNet",
    "knn_router": "locus.methods.knn_router:KNNRouter",
    "kmeans_router": "locus.methods.kmeans_router:KMeansRouter",
}


@dataclass(frozen=True)
class MethodInfo:
    name: str
    label: str
    latex_label: str
    order: int
    uses_torch: bool
    has_embeddings: bool


def method_class(name: str):
    if name not in REGISTRY:
        raise ConfigError(f"unknown method {name!r}; known: {', '.join(sorted(REGISTRY))}")
    module, cls = REGISTRY[name].split(":")
    return getattr(importlib.import_module(module), cls)


def info(name: str) -> MethodInfo:
    cls = method_class(name)
    return MethodInfo(
        name=cls.name,
        label=cls.label,
        latex_label=cls.latex_label,
        order=int(cls.order),
        uses_torch=bool(cls.uses_torch),
        has_embeddings=bool(cls.has_embeddings),
    )


def names() -> list[str]:
    """Registered method names in table order (``order``; imports every method module)."""
    return sorted(REGISTRY, key=lambda n: (method_class(n).order, n))


def create(name: str, params: dict | None = None, seed: int = 0):
    return method_class(name)(params, seed=seed)
