"""How methods are named and ordered in tables and figures: read from the method classes
(:func:`locus.methods.method_class`: ``label``, ``latex_label``, ``order``), so a new method needs no
change here. Tables may be rendered from the metrics of a method that is no longer registered: such a
name is shown as itself (LaTeX-escaped), after the registered methods.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

_SPECIAL = {
    "\\": "\\textbackslash{}",
    "&": "\\&",
    "%": "\\%",
    "$": "\\$",
    "#": "\\#",
    "_": "\\_",
    "{": "\\{",
    "}": "\\}",
    "~": "\\textasciitilde{}",
    "^": "\\textasciicircum{}",
}


def escape(text) -> str:
    """Escape LaTeX special characters in plain text (names, paths)."""
    return "".join(_SPECIAL.get(c, c) for c in str(text))


def method_class(method: str):
    """The registered class of `method`, or None when the name is not (or no longer) registered."""
    from locus.errors import LocusError
    from locus.methods import method_class as lookup

    try:
        return lookup(str(method))
    except LocusError:
        return None


def latex_label(method: str) -> str:
    """LaTeX label of a method (its class's ``latex_label``), else the escaped name."""
    label = getattr(method_class(method), "latex_label", None)
    return label if isinstance(label, str) and label else escape(method)


def plain_label(method: str) -> str:
    """Plain-text label of a method (its class's ``label``), else the name."""
    label = getattr(method_class(method), "label", None)
    return label if isinstance(label, str) and label else str(method)


def color(method: str) -> str | None:
    """Figure colour of a method (its class's ``color``), else None (the caller picks from a palette)."""
    value = getattr(method_class(method), "color", None)
    return value if isinstance(value, str) and value else None


def sort_key(method: str) -> tuple:
    """Registered methods by their class's ``order``, then everything else by name."""
    order = getattr(method_class(method), "order", None)
    return (
        0 if isinstance(order, (int, float)) else 1,
        order if isinstance(order, (int, float)) else math.inf,
        str(method),
    )


def has_embeddings(method: str) -> bool:
    """False for embedding-free methods (kNN, K-Means routers); unknown names count as embedding methods."""
    cls = method_class(method)
    if cls is None:
        return True
    flag = getattr(cls, "has_embeddings", None)
    if isinstance(flag, bool):
        return flag
    from locus.methods.base import EmbeddingMethod

    return issubclass(cls, EmbeddingMethod)


# --------------------------------------------------------------------------------------------------
# benchmarks and data sets
# --------------------------------------------------------------------------------------------------
OVERALL = "Overall"  # the benchmark name of the all-queries rows

# Display order of the paper's appendix tables; other benchmarks follow, sorted.
PAPER_BENCHMARKS = ("MathQA", "LogiQA", "MedMCQA", "PIQA", "TruthfulQA", "MMLU", "GSM8K", "GPQA", "ASDiv", "SocialIQA")


def _key(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", str(name).lower())


_PAPER_KEYS = {_key(b): i for i, b in enumerate(PAPER_BENCHMARKS)}


def order_benchmarks(names) -> list[str]:
    """Benchmarks in the paper's column order (matched ignoring case and punctuation), others sorted after."""
    names = sorted(set(names))
    known = sorted((n for n in names if _key(n) in _PAPER_KEYS), key=lambda n: _PAPER_KEYS[_key(n)])
    return known + [n for n in names if _key(n) not in _PAPER_KEYS]


def display_benchmark(name: str) -> str:
    """The paper's spelling for a known benchmark ("mmlu" -> "MMLU"), else the name unchanged."""
    i = _PAPER_KEYS.get(_key(name))
    return PAPER_BENCHMARKS[i] if i is not None else str(name)


def dataset_name(dataset: str) -> str:
    """The data set's name from the path recorded in metrics.json (``results/data/embedllm`` ->
    ``embedllm``), for captions and titles when no label is given."""
    text = str(dataset).rstrip("/\\")
    return Path(text).name or text or "unnamed data set"
