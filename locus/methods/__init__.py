"""Method registry: name -> class, imported lazily ("module:Class")."""
from __future__ import annotations

import importlib

from locus.errors import ConfigError

REGISTRY = {
    "locus": "locus.methods.locus_method:LocusMethod",
    "embedllm": "locus.methods.embedllm:EmbedLLM",
    "embedllm_plus": "locus.methods.embedllm:EmbedLLMPlus",
    "irt_net": "locus.methods.irt_net:IRTNet",
    "knn_router": "locus.methods.knn_router:KNNRouter",
    "kmeans_router": "locus.methods.kmeans_router:KMeansRouter",
}


def method_class(name: str):
    if name not in REGISTRY:
        raise ConfigError(f"unknown method {name!r}; known: {', '.join(sorted(REGISTRY))}")
    module, cls = REGISTRY[name].split(":")
    return getattr(importlib.import_module(module), cls)


def create(name: str, params: dict | None = None, seed: int = 0):
    return method_class(name)(params, seed=seed)
