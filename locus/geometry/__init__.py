"""Embedding geometry: distances vs disagreement, model families, nearest-neighbour proxies, fallback routing."""
