"""Blocks of routing decisions from calibrated runs: raw against calibrated probabilities, selective routing with its
certified thresholds, and AIQ (the area under the cost-quality frontier)."""

from __future__ import annotations

from pathlib import Path

# *_COLUMNS: each CSV's columns, from the module that writes it: a block needs every column its writer writes (a CSV
# without one was written by another version of locus), so a column renamed there is renamed here too
from locus.errors import DataError
from locus.experiments.calibration import CSV_COLUMNS as CALIBRATION_COLUMNS
from locus.experiments.report.markdown import fmt, md_table, number_of, unique
from locus.experiments.report.source import provenance, read_rows
from locus.experiments.routing_decisions import AIQ_COLUMNS, SELECTIVE_COLUMNS
from locus.render.labels import plain_label


def _diff_ci(row: dict, path: Path, scale: float = 1.0, decimals: int = 3) -> str:
    vals = [number_of(row[c], path, c) * scale for c in ("diff", "ci_low", "ci_high")]
    return f"{fmt(vals[0], decimals, True)} [{fmt(vals[1], decimals, True)}, {fmt(vals[2], decimals, True)}]"


def block_calibration(src):
    """Raw vs calibrated test ECE, Brier score and log-loss per method, with paired bootstrap intervals."""
    rel = "tables/calibration.csv"
    path = src.path(rel)
    rows = read_rows(path, CALIBRATION_COLUMNS)
    if not rows:
        raise DataError(f"{path}: no rows; rebuild it")
    body, helped = [], []
    for method in unique(r["method"] for r in rows):
        by = {r["metric"]: r for r in rows if r["method"] == method}
        cells = []
        for metric in ("ece", "brier", "log_loss"):
            r = by.get(metric)
            if r is None:
                cells.append("–")
                continue
            raw, cal = (number_of(r[c], path, c) for c in ("raw", "calibrated"))
            cells.append(f"{fmt(raw, 3)} → {fmt(cal, 3)}, {_diff_ci(r, path)}")
        if "ece" in by and number_of(by["ece"]["ci_high"], path, "ci_high") < 0:
            helped.append(by["ece"]["label"])
        body.append([next(iter(by.values()))["label"], *cells, next(iter(by.values()))["maps"]])
    n = len(body)
    verdict = f"Calibration lowers the test ECE significantly for {len(helped)} of {n} methods" + (
        f" ({', '.join(helped)})." if helped and len(helped) < n else "."
    )
    return md_table(["method", "ECE raw → calibrated, Δ [95% CI]", "Brier", "log-loss", "map"], body) + [
        "",
        verdict,
        "",
        provenance(src, [rel]),
    ]


def block_selective(src):
    """Selective routing per method and alpha: the certified threshold, coverage, test risk, accuracy with
    the fallback and how often the guarantee failed."""
    rel = "tables/selective_routing.csv"
    path = src.path(rel)
    rows = read_rows(path, SELECTIVE_COLUMNS)
    rows = [r for r in rows if r["fallback"] == "best_single"] or [r for r in rows if r["fallback"] != "abstain"]
    if not rows:
        raise DataError(f"{path}: no rows with a model fallback; rebuild it")
    body, worst = [], 0.0
    for r in rows:
        viol = number_of(r["violation_freq"], path, "violation_freq")
        worst = max(worst, viol)
        none, seeds = int(number_of(r["n_none"], path, "n_none")), int(number_of(r["n_seeds"], path, "n_seeds"))
        tau = (
            "none"
            if none == seeds
            else fmt(number_of(r["tau_mean"], path, "tau_mean"), 2) + (f" ({none} none)" if none else "")
        )
        risk = "–" if r["test_risk"] == "" else fmt(100 * number_of(r["test_risk"], path, "test_risk"), 1)
        shown = fmt(viol, 3)
        if r.get("violation_ci_low", "") != "":  # its Clopper-Pearson interval; † above δ, ‡ the interval too
            low, high = (number_of(r[c], path, c) for c in ("violation_ci_low", "violation_ci_high"))
            mark = (
                "‡" if r["violation_ci_above_delta"] == "True" else "†" if r["violation_above_delta"] == "True" else ""
            )
            shown = f"{shown}{mark} [{fmt(low, 3)}, {fmt(high, 3)}]"
        true_risk = "–"
        if r.get("true_risk", "") != "":  # the generator's true risk of the routed test queries at τ
            true_risk = fmt(100 * number_of(r["true_risk"], path, "true_risk"), 1) + (
                "" if r["true_risk_ok"] == "True" else " *"
            )
        body.append(
            [
                plain_label(r["method"]),
                fmt(number_of(r["alpha"], path, "alpha"), 2),
                tau,
                fmt(100 * number_of(r["coverage"], path, "coverage"), 1),
                risk,
                true_risk,
                fmt(100 * number_of(r["accuracy"], path, "accuracy"), 1),
                shown,
            ]
        )
    delta = fmt(number_of(rows[0]["delta"], path, "delta"), 2)
    checks = int(number_of(rows[0]["n_checks"], path, "n_checks"))
    return md_table(
        [
            "method",
            "α",
            "τ (validation)",
            "coverage %",
            "test risk %",
            "true risk %",
            "accuracy % (fallback: best single)",
            "violations [95% CI]",
        ],
        body,
    ) + [
        "",
        f"δ = {delta}; violations: share of {checks} checks (seeds × random re-splits of validation and test; τ "
        f"certified on one part, risk on the other) whose risk exceeds α, with its Clopper–Pearson interval (†: above "
        f"δ, ‡: the interval too); the largest is {fmt(worst, 3)}. True risk: the generator's expected error of the "
        "routed test queries at τ, where the pool has its truth (*: above α).",
        "",
        provenance(src, [rel]),
    ]


def block_aiq(src):
    """AIQ (area under the cost-quality frontier over the largest cost) per router, with bootstrap intervals."""
    rel = "tables/aiq.csv"
    path = src.path(rel)
    rows = read_rows(path, AIQ_COLUMNS)
    if not rows:
        raise DataError(f"{path}: no rows; rebuild it")

    def interval(r, column):
        if r[column] == "":
            return "–"
        vals = [number_of(r[c], path, c) for c in (column, f"{column}_ci_low", f"{column}_ci_high")]
        return f"{fmt(vals[0], 3)} [{fmt(vals[1], 3)}, {fmt(vals[2], 3)}]"

    body = [
        [
            plain_label(r["router"]) if r["kind"] == "method" else r["router"],
            interval(r, "aiq"),
            interval(r, "aiq_range"),
            interval(r, "diff_vs_mix"),
        ]
        for r in rows
    ]
    methods = [r for r in rows if r["kind"] == "method"]
    best = max(methods, key=lambda r: number_of(r["aiq"], path, "aiq")) if methods else None
    note = f"Cost per query: `{rows[0]['cost_source']}` (largest {fmt(number_of(rows[0]['max_cost'], path, 'max_cost'), 2)})."
    if best is not None:
        overlap = [
            plain_label(r["router"])
            for r in methods
            if r is not best
            and number_of(r["aiq_ci_high"], path, "aiq_ci_high") >= number_of(best["aiq_ci_low"], path, "aiq_ci_low")
        ]
        note += f" Highest method AIQ: {plain_label(best['router'])}" + (
            f"; its interval overlaps those of {', '.join(overlap)}." if overlap else "."
        )
    note += (
        " AIQ / c_max divides by the largest cost (RouterBench's code), AIQ / range by the cost range (its paper); "
        "Δ vs mix: the router's AIQ / c_max minus the two-model-mix frontier's, on the same test resamples."
    )
    headers = ["router", "AIQ / c_max [95% CI]", "AIQ / range [95% CI]", "Δ vs mix, paired [95% CI]"]
    return md_table(headers, body) + ["", note, "", provenance(src, [rel])]
