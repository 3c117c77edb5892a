"""Blocks of cost and efficiency: bfloat16 against float32 scoring, measured embedding and prediction times, and the
routing curves with the sample-efficiency factors."""

from __future__ import annotations

import math

# *_COLUMNS: each CSV's columns, from the module that writes it: a block needs every column its writer writes (a CSV
# without one was written by another version of locus), so a column renamed there is renamed here too
from locus.errors import DataError
from locus.experiments.figures import CSV_COLUMNS as SAMPLE_EFFICIENCY_COLUMNS
from locus.experiments.precision_effect import CSV_COLUMNS as PRECISION_COLUMNS
from locus.experiments.report.markdown import _num_label, _pivot, fmt, md_table, number_of, unique
from locus.experiments.report.source import Source, columns_table, provenance, read_json, read_rows
from locus.experiments.time_complexity import CSV_COLUMNS as TIME_COLUMNS
from locus.render.labels import plain_label


def block_precision_effect(src):
    return columns_table(
        src,
        "tables/precision_effect.csv",
        PRECISION_COLUMNS,
        [
            ("LOCUS run, n", "train_size", 0, 1),
            ("seed", "seed", -1, 1),
            ("routing % fp32", "routing_acc_float32", 2, 100),
            ("routing % bf16", "routing_acc_bfloat16", 2, 100),
            ("correctness % fp32", "correctness_acc_float32", 2, 100),
            ("correctness % bf16", "correctness_acc_bfloat16", 2, 100),
            ("same routed model %", "routing_agreement", 1, 100),
            ("labels flipped %", "label_flips", 2, 100),
            ("max rel. ‖Δz‖ %", "max_rel_z_diff", 2, 100),
        ],
    )


def block_time_complexity(src):
    """Measured embedding and prediction times (seconds) by size, beside the paper's and the targets."""
    rel = "figures/time_complexity.csv"
    path = src.path(rel)
    rows = read_rows(path, TIME_COLUMNS)
    measured = [r for r in rows if r["source"] == "measured"]
    if not measured:
        raise DataError(f"{path}: no measured rows; rebuild it")
    sizes = sorted(unique(r["n"] for r in rows), key=lambda n: number_of(n, path, "n"))
    body = []
    for what, noun in (
        ("embed", "embed {m} models"),
        ("predict", "predict for {m} models"),
    ):
        for key in unique((r["n_models"], r["precision"]) for r in measured if r["what"] == what):
            part = {r["n"]: r for r in measured if r["what"] == what and (r["n_models"], r["precision"]) == key}
            body.append(
                [f"{noun.format(m=key[0])}, {key[1]}"]
                + [fmt(number_of(part[n]["median_s"], path, "median_s"), 3) if n in part else "–" for n in sizes]
            )
        for r in rows:
            if r["what"] == what and r["source"] in ("paper", "target"):
                label = (
                    f"{noun.format(m=r['n_models'])}: {'paper' if r['source'] == 'paper' else 'target'}, "
                    f"{r['device_name']}"
                )
                body.append(
                    [label] + [fmt(number_of(r["median_s"], path, "median_s"), 3) if n == r["n"] else "" for n in sizes]
                )
    machine = (
        f"; measured on {measured[0]['cpu_model'] or measured[0]['device_name']}, {measured[0]['threads']} threads"
    )
    return md_table(
        ["median seconds; n = evaluations per model (embed) or queries (predict)"] + [_num_label(n) for n in sizes],
        body,
    ) + ["", provenance(src, [rel], machine)]


def _factors(src: Source, rel: str) -> list[str]:
    """The factor of each method at the figure's reference point, from the figure's JSON summary."""
    path = src.path(rel)
    summary = read_json(src, rel, ())
    try:
        point, methods, ref = (
            int(summary["reference_point"]),
            summary["methods"],
            summary["reference_method"],
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise DataError(f"{path}: not a sample-efficiency summary ({exc}); rebuild it") from None

    def num(value) -> float:
        return math.inf if value == "inf" else math.nan if value is None else float(value)

    body = []
    for method, entry in methods.items():
        f = (entry or {}).get("at_reference_point") or {}
        if not f:
            continue
        n_method = num(f.get("n_method"))
        body.append(
            [
                plain_label(method),
                fmt(100 * num(f.get("target")), 2),
                "never" if math.isnan(n_method) else fmt(n_method, 0),
                f"{fmt(num(f.get('factor')), 1)}×" + (" (a lower bound)" if f.get("crossing") == "lower_bound" else ""),
                f"undefined (exact in {fmt(100 * num(f.get('share_defined')), 0)}% of resamples)"
                if f.get("status") == "undefined"
                else f"[{fmt(num(f.get('ci_low')), 1)}, {fmt(num(f.get('ci_high')), 1)}]".replace("inf", "∞"),
                str(f.get("status", "")),
            ]
        )
    if not body:
        return []
    return md_table(
        [
            f"factor at n = {point:,} of {plain_label(ref)}",
            "target routing %",
            "samples the method needs",
            "factor",
            "95% interval",
            "status",
        ],
        body,
    ) + [""]


def block_sample_efficiency(src):
    """The routing curves (mean over seeds) and the sample-efficiency factors drawn on the figure."""
    rel = "figures/train_sample_eff.csv"
    path = src.path(rel)
    rows = read_rows(path, SAMPLE_EFFICIENCY_COLUMNS)
    curve = [r for r in rows if r["kind"] == "curve"]
    if not curve:
        raise DataError(f"{path}: no curve rows; rebuild it")
    methods, sizes, cells = _pivot(curve, "method", "train_size", "mean", path, decimals=2)
    body = [[plain_label(m)] + [cells.get((m, n), "–") for n in sizes] for m in methods]
    out = md_table(
        ["routing accuracy %, training queries per model"] + [_num_label(n) for n in sizes],
        body,
    ) + [""]
    out += _factors(src, "figures/train_sample_eff.json")
    return out + [provenance(src, [rel, "figures/train_sample_eff.json"])]
