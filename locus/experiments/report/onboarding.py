"""Blocks of new-model onboarding: held-out models embedded from k evaluations, which queries to evaluate them on
(active onboarding), and LOCUS's onboarding against the training-free rivals."""

from __future__ import annotations

# *_COLUMNS: each CSV's columns, from the module that writes it: a block needs every column its writer writes (a CSV
# without one was written by another version of locus), so a column renamed there is renamed here too
from locus.errors import DataError
from locus.experiments.active_onboarding import FIGURE_COLUMNS as ACTIVE_FIGURE_COLUMNS
from locus.experiments.active_onboarding import TABLE_COLUMNS as ACTIVE_TABLE_COLUMNS
from locus.experiments.onboarding import CSV_COLUMNS as ONBOARDING_COLUMNS
from locus.experiments.report.markdown import _num_label, _pivot, fmt, md_table, number_of, unique
from locus.experiments.report.source import provenance, read_rows


def block_onboarding(src):
    """Correctness accuracy on held-out models embedded from k of their evaluations, per encoder run."""
    rel = "figures/sample_eff_ood_test.csv"
    path = src.path(rel)
    rows = [r for r in read_rows(path, ONBOARDING_COLUMNS) if r["kind"] == "cell"]
    if not rows:
        raise DataError(f"{path}: no cell rows; rebuild it")
    keys, cols, cells = _pivot(rows, "row", "k", "accuracy", path, decimals=2)
    trained = {r["row"]: r["n_train_models"] for r in rows}
    keys = sorted(keys, key=lambda k: -number_of(trained[k], path, "n_train_models"))
    body = [
        [f"encoder trained on {_num_label(trained[k])} models" + (" (all)" if k == "all" else "")]
        + [cells.get((k, c), "–") for c in cols]
        for k in keys
    ]
    return md_table(
        ["held-out models' correctness %, embedded from k evaluations"] + [_num_label(c) for c in cols],
        body,
    ) + ["", provenance(src, [rel])]


def block_active_onboarding(src):
    """Held-out models' correctness by selector and number of evaluations k, and the k each selector needs
    to reach random selection's largest-k accuracy."""
    fig, tab = "figures/active_onboarding.csv", "tables/active_onboarding.csv"
    fpath, tpath = src.path(fig), src.path(tab)
    cells = [r for r in read_rows(fpath, ACTIVE_FIGURE_COLUMNS) if r["kind"] == "cell"]
    if not cells:
        raise DataError(f"{fpath}: no cell rows; rebuild it")
    keys, cols, grid = _pivot(cells, "selector", "k", "accuracy", fpath, decimals=2)
    out = md_table(
        ["held-out models' correctness %, k evaluations chosen by"] + [_num_label(c) for c in cols],
        [[k] + [grid.get((k, c), "–") for c in cols] for k in keys],
    )
    reach = read_rows(tpath, ACTIVE_TABLE_COLUMNS)
    if not reach:
        raise DataError(f"{tpath}: no rows; rebuild it")

    def k_and_diff(r, k_col, prefix):
        if r[k_col] == "":
            return "–", "–"
        diff = [number_of(r[f"{prefix}{c}"], tpath, f"{prefix}{c}") for c in ("", "_low", "_high")]
        return _num_label(
            r[k_col]
        ), f"{fmt(100 * diff[0], 2, True)} [{fmt(100 * diff[1], 2, True)}, {fmt(100 * diff[2], 2, True)}]"

    body = []
    for r in reach:
        body.append(
            [
                r["selector"],
                *k_and_diff(r, "k_reach", "k_reach_diff"),
                *k_and_diff(r, "k_not_below_onward", "k_not_below_onward_diff"),
            ]
        )
    ref = next((r for r in reach if r["selector"] == "random"), reach[0])  # the reference selector
    ref_k = _num_label(ref["reference_k"])
    target = fmt(100 * number_of(ref["reference_accuracy"], tpath, "reference_accuracy"), 2)
    fast = [
        r["selector"]
        for r in reach
        if r is not ref
        and r["k_reach"] != ""
        and number_of(r["k_reach"], tpath, "k_reach") <= number_of(ref["reference_k"], tpath, "reference_k") / 4
    ]
    verdict = (
        f"Reaching random's k = {ref_k} accuracy with at most a quarter of the evaluations: {', '.join(fast)}."
        if fast
        else f"No selector reaches random's k = {ref_k} accuracy (mean) with a quarter of the evaluations or fewer."
    )
    return (
        out
        + [
            "",
            f"Target: random selection at k = {ref_k}, {target}%. Differences to it in points, paired bootstrap over held-out models:",
            "",
        ]
        + md_table(
            [
                "selector",
                "k reaching it",
                "difference [95% CI]",
                "k onward not significantly below",
                "difference [95% CI]",
            ],
            body,
        )
        + ["", verdict, "", provenance(src, [fig, tab])]
    )


def _rival_verdict(diffs, k, path) -> str:
    """LOCUS against the rival with the largest (rival − LOCUS) difference at `k`, read from its paired interval."""
    here = [r for r in diffs if int(r["k"]) == k]
    best = max(here, key=lambda r: number_of(r["value"], path, "value"), default=None)
    if best is None:
        return "–"
    d, lo, hi = (100 * number_of(best[c], path, c) for c in ("value", "ci_low", "ci_high"))
    where = "behind" if lo > 0 else "ahead of" if hi < 0 else "level with"
    return f"LOCUS {where} {best['method']} ({fmt(-d, 1)} [{fmt(-hi, 1)}, {fmt(-lo, 1)}])"


def block_onboarding_rivals(src):
    """LOCUS's onboarding against the training-free rivals, by k: each method's correctness accuracy, and a plain
    verdict against the best rival (paired intervals of rival minus LOCUS over test queries), for correctness and,
    where the table has it, for routing among old and new models. Rows of queries picked at random only (the
    selector's rows are in the CSV and the LaTeX table)."""
    rel = "tables/onboarding_rivals.csv"
    path = src.path(rel)
    rows = read_rows(path, ("method", "k", "metric", "value", "ci_low", "ci_high", "n_models"))
    rows = [r for r in rows if r.get("draw", "random") in ("random", "")]
    acc = [r for r in rows if r["metric"] == "correctness_acc"]
    diffs = [r for r in rows if r["metric"] == "correctness_acc_minus_locus"]
    routing = [r for r in rows if r["metric"] == "routing_acc_all_minus_locus"]
    if not acc:
        raise DataError(f"{path}: no correctness_acc rows; rebuild it")
    methods = unique(r["method"] for r in acc)
    ks = sorted({int(r["k"]) for r in acc})
    value = {(r["method"], int(r["k"])): 100 * number_of(r["value"], path, "value") for r in acc}
    body = []
    for k in ks:
        verdicts = [_rival_verdict(diffs, k, path)] + ([_rival_verdict(routing, k, path)] if routing else [])
        body.append([str(k), *[fmt(value.get((m, k), float("nan")), 1) for m in methods], *verdicts])
    head = ["k", *methods, "correctness: LOCUS against the best rival (LOCUS − rival, paired 95% CI)"]
    if routing:
        head.append("routing among old + new: LOCUS against the best rival")
    n_models = int(number_of(acc[0]["n_models"], path, "n_models"))
    repeats = int(number_of(acc[0].get("repeats") or 1, path, "repeats"))
    held = f"{n_models} held-out models" + (
        f" ({n_models // repeats} in each of {repeats} repeats)"
        if repeats > 1
        else " (one held-out draw; the field's protocol repeats it: `onboarding_rivals.repeats`)"
    )
    return md_table(head, body) + [
        "",
        f"Correctness accuracy (%) on the test queries of {held}, each onboarded from k of its training-split "
        "evaluations without retraining.",
        "",
        provenance(src, [rel]),
    ]
