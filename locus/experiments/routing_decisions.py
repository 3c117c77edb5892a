"""Routing decisions on trained runs (``locus decisions``): selective routing with a certified risk and
cost-aware routing, from each run's calibrated probabilities (``RUN/calibration.json``, :mod:`locus.calibration`).

- :func:`selective`: per run, alpha and fallback the Learn-then-Test threshold certified on VALIDATION
  (:func:`locus.decisions.learn_then_test_threshold`), its test coverage and error among routed queries, and how
  often the guarantee fails over seeds x random re-splits of the validation and test queries (tau certified on
  one part, risk on the other); the risk-coverage curves.
- :func:`cost_quality`: accuracy against mean cost per query with lambda swept (P - lambda * cost), beside the
  oracle, each single model and the frontier of random mixes of two models; AIQ (:func:`locus.decisions.aiq`)
  with percentile bootstrap intervals over test queries.

Costs: the models' ``cost`` column, else the ``params_b`` proxy (:func:`locus.data.canonical.model_costs`).
Probabilities of pairs without a label are set to NaN (never chosen), as routing accuracy ranks only
evaluated models. Nothing is fitted or chosen on test data: thresholds, fallbacks and the best single model
come from the validation split.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from locus import decisions
from locus.errors import DataError

COVERAGE_GRID = np.round(np.linspace(0.05, 1.0, 20), 2)
SELECTIVE_COLUMNS = [
    "method",
    "alpha",
    "delta",
    "fallback",
    "n_seeds",
    "tau_mean",
    "tau_min",
    "tau_max",
    "n_none",
    "coverage",
    "n_routed",
    "test_risk",
    "accuracy",
    "violation_freq",
    "n_checks",
    "n_test_queries",
    "calibration",
]
AIQ_COLUMNS = ["router", "kind", "aiq", "aiq_ci_low", "aiq_ci_high", "max_cost", "cost_source", "n_boot", "confidence"]


@dataclass
class RunProbs:
    """One run's calibrated probabilities and labels (NaN = not evaluated) on validation and test."""

    path: str
    method: str
    seed: int
    train_size: int
    model_ids: np.ndarray
    val_probs: np.ndarray
    val_correct: np.ndarray
    test_probs: np.ndarray
    test_correct: np.ndarray
    calibration: str
    val_logits: np.ndarray  # the scores behind the probabilities: they break the calibration map's ties
    test_logits: np.ndarray


def _split(run_dir, data, split: str, cal, ids_expected) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    from locus import run_artifacts

    prompt_ids, model_ids, logits = run_artifacts.read_scores(run_dir, split)
    if not np.array_equal(prompt_ids, ids_expected):
        raise DataError(
            f"{run_dir}: its {len(prompt_ids)} scored {split} queries are not the {len(ids_expected)} {split} "
            f"queries of {data.source}; pass the data set the run was trained on with --data."
        )
    labels = data.label_matrix(prompt_ids, model_ids)
    probs = cal.probabilities(logits)
    unlabelled = np.isnan(labels)
    return model_ids, np.where(unlabelled, np.nan, probs), labels, np.where(unlabelled, np.nan, logits)


def load_runs(run_dirs, data_dir) -> tuple[list[RunProbs], object]:
    """Every run of `run_dirs` with its calibration (required: ``locus calibrate --run RUN`` writes it) read
    against the canonical data set `data_dir` (checked by fingerprint)."""
    from locus import run_artifacts
    from locus.data.canonical import read_dataset
    from locus.data.encodings import data_fingerprint

    data = read_dataset(data_dir)
    fingerprint = data_fingerprint(data.queries["prompt_id"], data.queries["prompt"])
    out = []
    for run in run_dirs:
        run = Path(run)
        metrics = run_artifacts.read_metrics(run)
        run_artifacts.check_same_data(
            run, metrics.get("data_fingerprint"), fingerprint, data_dir, "pass the data set the runs were trained on"
        )
        cal = run_artifacts.read_calibration(run)
        if cal is None:
            raise DataError(
                f"{run}: no {run_artifacts.calibration_file}; routing decisions use calibrated probabilities: run "
                f"`locus calibrate --run {run}` first (the workflow's calibrate_run rule)."
            )
        ids = {s: data.split_queries(s)["prompt_id"].to_numpy(np.int64) for s in ("val", "test")}
        model_ids, vp, vc, vl = _split(run, data, "val", cal, ids["val"])
        test_ids, tp, tc, tl = _split(run, data, "test", cal, ids["test"])
        if not np.array_equal(model_ids, test_ids):
            raise DataError(f"{run}: validation and test scores name different models; re-run the training rule.")
        out.append(
            RunProbs(
                str(run),
                str(metrics["method"]),
                int(metrics["seed"]),
                int(metrics["train_size"]),
                model_ids,
                vp,
                vc,
                tp,
                tc,
                cal.kind,
                vl,
                tl,
            )
        )
    if not out:
        raise DataError("no run given: pass --runs results/runs/.../s<seed> ...")
    sizes = {r.train_size for r in out}
    if len(sizes) > 1:
        raise DataError(f"runs of several training sizes {sorted(sizes)}; pass the runs of one size.")
    return out, data


def methods_of(runs: list[RunProbs]) -> list[str]:
    """The runs' methods in the order they were given."""
    return list(dict.fromkeys(r.method for r in runs))


def fallback_column(run: RunProbs, fallback: str, data) -> int | str:
    """The column a query falls back to: ``best_single`` (highest mean validation score; never test),
    ``abstain``, or a model name of the data set."""
    from locus.data.canonical import resolve_model
    from locus.evaluation import best_single_model

    if fallback == "abstain":
        return "abstain"
    if fallback == "best_single":
        return best_single_model(run.val_correct)
    names = dict(zip(data.models["model_id"].tolist(), data.models["name"].astype(str)))
    mid = resolve_model(fallback, names, "fallback")
    hit = np.flatnonzero(run.model_ids == mid)
    if not len(hit):
        raise DataError(f"fallback {fallback!r} is not a model of the run {run.path}; choose one of its models.")
    return int(hit[0])


# --------------------------------------------------------------------------------------------------
# selective routing
# --------------------------------------------------------------------------------------------------
def risk_at_coverage(probs, correct, grid=COVERAGE_GRID, logits=None) -> np.ndarray:
    """Error rate among the most confident fraction c of queries (top probability), for each c of `grid`
    (labelled routed queries only; binary correctness; ties between models: the larger logit)."""
    top, p_top = decisions.top_choice(probs, logits)
    err = 1.0 - decisions.binary(correct)[np.arange(len(top)), top]
    order = np.argsort(-p_top, kind="stable")
    e = err[order]
    ok = ~np.isnan(e)
    cum_err, cum_n = np.cumsum(np.where(ok, e, 0.0)), np.cumsum(ok)
    k = np.clip(np.ceil(np.asarray(grid) * len(e)).astype(int), 1, len(e)) - 1
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(cum_n[k] > 0, cum_err[k] / np.maximum(cum_n[k], 1), np.nan)


def _bootstrap_indices(n: int, n_boot: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, n, size=(n_boot, n))


def selective(runs, data, alphas, delta, fallbacks, n_boot: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(table rows :data:`SELECTIVE_COLUMNS`, risk-coverage curve rows). Violations: the guarantee is over the
    draw of the validation data from the population the test queries come from, so each check splits the
    validation and test queries together at random into a certification part (the validation split's size) and
    an evaluation part, certifies tau on the first and measures the error among routed queries on the second (a
    threshold that routes nothing never violates). The reported tau, coverage and risk use the splits as they are."""
    for a in alphas:
        decisions.check_level("alpha", a)
    delta = decisions.check_level("delta", delta)
    n_test = runs[0].test_probs.shape[0]
    n_val = runs[0].val_probs.shape[0]
    rng = np.random.default_rng(seed)
    splits = [rng.permutation(n_val + n_test) for _ in range(n_boot)]  # the same for every method and seed
    rows, curves = [], []
    for method in methods_of(runs):
        mine = [r for r in runs if r.method == method]
        per_seed = np.array([risk_at_coverage(r.test_probs, r.test_correct, logits=r.test_logits) for r in mine])
        for c, mean, sd in zip(COVERAGE_GRID, np.nanmean(per_seed, 0), np.nanstd(per_seed, 0)):
            curves.append({"method": method, "coverage": c, "risk": mean, "risk_std": sd, "n_seeds": len(mine)})
        for alpha in alphas:
            taus = [
                decisions.learn_then_test_threshold(r.val_probs, r.val_correct, alpha, delta, logits=r.val_logits)
                for r in mine
            ]
            checks = []
            for r in mine:
                probs, correct = np.vstack([r.val_probs, r.test_probs]), np.vstack([r.val_correct, r.test_correct])
                logits = np.vstack([r.val_logits, r.test_logits])
                top, p_top = decisions.top_choice(probs, logits)
                err = 1.0 - decisions.binary(correct)[np.arange(len(probs)), top]
                for perm in splits:
                    cert, held = perm[:n_val], perm[n_val:]
                    tau_b = decisions.learn_then_test_threshold(
                        probs[cert], correct[cert], alpha, delta, logits=logits[cert]
                    )
                    routed = held[(p_top[held] >= tau_b) & ~np.isnan(err[held])]
                    checks.append(len(routed) > 0 and float(err[routed].mean()) > alpha)
            viol = float(np.mean(checks))
            finite = [t for t in taus if t != decisions.NONE]
            for fb in fallbacks:
                outs = [
                    decisions.selective_outcome(
                        r.test_probs, r.test_correct, t, fallback_column(r, fb, data), r.test_logits
                    )
                    for r, t in zip(mine, taus)
                ]
                rows.append(
                    {
                        "method": method,
                        "alpha": float(alpha),
                        "delta": delta,
                        "fallback": fb,
                        "n_seeds": len(mine),
                        "tau_mean": float(np.mean(finite)) if finite else math.nan,
                        "tau_min": float(min(finite)) if finite else math.nan,
                        "tau_max": float(max(finite)) if finite else math.nan,
                        "n_none": len(taus) - len(finite),
                        "coverage": float(np.mean([o["coverage"] for o in outs])),
                        "n_routed": float(np.mean([o["n_routed"] for o in outs])),
                        "test_risk": _nanmean([o["risk"] for o in outs]),
                        "accuracy": _nanmean([o["accuracy"] for o in outs]),
                        "violation_freq": viol,
                        "n_checks": len(mine) * n_boot,
                        "n_test_queries": n_test,
                        "calibration": ",".join(sorted({r.calibration for r in mine})),
                    }
                )
    return pd.DataFrame(rows, columns=SELECTIVE_COLUMNS), pd.DataFrame(curves)


def _nanmean(values) -> float:
    v = np.asarray(values, dtype=np.float64)
    return float(np.nanmean(v)) if np.isfinite(v).any() else math.nan


# --------------------------------------------------------------------------------------------------
# cost-aware routing
# --------------------------------------------------------------------------------------------------
def _per_query(choices, correct, costs) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """[queries x lambdas] numerator (score of the chosen model, 0 without label), denominator (labelled)
    and cost of the chosen model, from choices [lambdas x queries]."""
    rows = np.arange(correct.shape[0])
    got = np.stack([correct[rows, ch] for ch in choices], axis=1)
    cost = np.stack([costs[ch] for ch in choices], axis=1)
    return np.nan_to_num(got), (~np.isnan(got)).astype(np.float64), cost


def _curve(num, den, cost, idx=None) -> tuple[np.ndarray, np.ndarray]:
    """(mean cost, quality) per lambda over the queries (or over each resample of `idx`: [B x lambdas])."""
    if idx is None:
        with np.errstate(invalid="ignore", divide="ignore"):
            return cost.mean(0), num.sum(0) / den.sum(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return cost[idx].mean(1), num[idx].sum(1) / den[idx].sum(1)


def _aiq_with_ci(num, den, cost, idx, max_cost, confidence) -> tuple[float, float, float]:
    c, q = _curve(num, den, cost)
    point = decisions.aiq(c, q, max_cost)
    cs, qs = _curve(num, den, cost, idx)
    boots = np.array([decisions.aiq(cb, qb, max_cost) for cb, qb in zip(cs, qs) if np.isfinite(qb).any()])
    tail = (1 - confidence) / 2
    return point, float(np.quantile(boots, tail)), float(np.quantile(boots, 1 - tail))


def cost_quality(
    runs, data, n_lambdas: int, n_boot: int, seed: int, confidence: float = 0.95
) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """(figure rows ``series, router, lambda, cost, quality``, AIQ rows :data:`AIQ_COLUMNS`, summary)."""
    from locus.data.canonical import model_costs
    from locus.evaluation import best_single_model

    model_ids = runs[0].model_ids
    if any(not np.array_equal(r.model_ids, model_ids) for r in runs):
        raise DataError("the runs route among different models; cost-quality curves compare runs of one model pool.")
    costs, source = model_costs(data.models, model_ids, f"{data.source}/models.parquet")
    lams = decisions.lambda_grid(costs, n_lambdas)
    max_cost = float(costs.max())
    n_test = runs[0].test_probs.shape[0]
    idx = _bootstrap_indices(n_test, n_boot, seed)
    test_correct = runs[0].test_correct  # the data set's labels: the same for every run
    points, aiqs = [], []

    def add(router, kind, num, den, cost, lambdas):
        c, q = _curve(num, den, cost)
        for lam, ci, qi in zip(lambdas, c, q):
            points.append({"series": kind, "router": router, "lambda": lam, "cost": ci, "quality": qi})
        value, low, high = _aiq_with_ci(num, den, cost, idx, max_cost, confidence)
        aiqs.append(
            {
                "router": router,
                "kind": kind,
                "aiq": value,
                "aiq_ci_low": low,
                "aiq_ci_high": high,
                "max_cost": max_cost,
                "cost_source": source,
                "n_boot": n_boot,
                "confidence": confidence,
            }
        )

    for method in methods_of(runs):
        mine = [r for r in runs if r.method == method]
        parts = [
            _per_query(
                [decisions.choose_cost_weighted(r.test_probs, costs, lam, r.test_logits) for lam in lams],
                r.test_correct,
                costs,
            )
            for r in mine
        ]
        add(method, "method", *(np.mean([p[i] for p in parts], axis=0) for i in range(3)), lams)
    oracle_choices = [decisions.choose_cost_weighted(test_correct, costs, lam) for lam in lams]
    add("oracle", "oracle", *_per_query(oracle_choices, test_correct, costs), lams)
    singles = [np.full(n_test, m) for m in range(len(model_ids))]
    num, den, cost = _per_query(singles, test_correct, costs)
    c, q = _curve(num, den, cost)
    names = dict(zip(data.models["model_id"].tolist(), data.models["name"].astype(str)))
    for m, (ci, qi) in enumerate(zip(c, q)):
        points.append(
            {"series": "single", "router": names[int(model_ids[m])], "lambda": math.nan, "cost": ci, "quality": qi}
        )
    hull = decisions.nondecreasing_hull(c, q)
    for ci, qi in hull:
        points.append(
            {"series": "mix", "router": "random mixes of two models", "lambda": math.nan, "cost": ci, "quality": qi}
        )
    # best single model chosen on validation (of the first run: the data set's labels, the same for all runs)
    best = best_single_model(runs[0].val_correct)
    value, low, high = _aiq_with_ci(num[:, [best]], den[:, [best]], cost[:, [best]], idx, max_cost, confidence)
    aiqs.append(
        {
            "router": f"best single model ({names[int(model_ids[best])]})",
            "kind": "best_single",
            "aiq": value,
            "aiq_ci_low": low,
            "aiq_ci_high": high,
            "max_cost": max_cost,
            "cost_source": source,
            "n_boot": n_boot,
            "confidence": confidence,
        }
    )
    value, low, high = _aiq_with_ci(num, den, cost, idx, max_cost, confidence)
    aiqs.append(
        {
            "router": "random mixes of two models",
            "kind": "mix",
            "aiq": value,
            "aiq_ci_low": low,
            "aiq_ci_high": high,
            "max_cost": max_cost,
            "cost_source": source,
            "n_boot": n_boot,
            "confidence": confidence,
        }
    )
    summary = {"cost_source": source, "max_cost": max_cost, "n_lambdas": len(lams), "n_test_queries": n_test}
    return pd.DataFrame(points), pd.DataFrame(aiqs, columns=AIQ_COLUMNS), summary


# --------------------------------------------------------------------------------------------------
# outputs
# --------------------------------------------------------------------------------------------------
COST_LABELS = {
    "cost": "the models' cost column",
    "params_b": "params_b, parameters in billions (a proxy: no cost column)",
}


def _describe(runs, data_label: str) -> str:
    from locus.render.labels import escape

    seeds = sorted({r.seed for r in runs})
    cals = ", ".join(sorted({r.calibration for r in runs}))
    return (
        f"{escape(data_label)}, $n$ = {runs[0].train_size} training evaluations per model, "
        f"{len(seeds)} seed{'s' if len(seeds) != 1 else ''} ({', '.join(map(str, seeds))}); probabilities calibrated "
        f"on validation ({escape(cals)})"
    )


def _checked_outputs(table_out, figure_out) -> tuple[Path, Path]:
    """The table and figure paths, refused (before any work) where they cannot be written."""
    from locus.outputs import check_outputs
    from locus.render.figures import output_paths

    table_out, figure_out = Path(table_out), Path(figure_out)
    check_outputs([table_out, table_out.with_suffix(".csv"), *list(output_paths(figure_out).values())[:3]])
    return table_out, figure_out


def _write(table_out: Path, tex: str, frame) -> None:
    """The table's .tex and its .csv beside it."""
    from locus.atomic import write_text
    from locus.render import write_csv

    write_text(table_out, tex)
    write_csv(frame, table_out.with_suffix(".csv"))


def write_selective(runs, data, table_out, figure_out, alphas, delta, fallbacks, n_boot, seed, data_label=None):
    """results/tables/selective_routing.{tex,csv} and results/figures/risk_coverage.{pdf,png,csv}."""
    from locus.render import decisions as render

    table_out, figure_out = _checked_outputs(table_out, figure_out)
    frame, curves = selective(runs, data, alphas, delta, fallbacks, n_boot, seed)
    label = data_label or Path(data.source).name
    caption = (
        f"\\textbf{{Selective routing with a certified risk}} ({_describe(runs, label)}). Per $\\alpha$, the "
        f"threshold $\\tau$ is certified on the VALIDATION split by Learn-then-Test (fixed-sequence tests from high to "
        f"low $\\tau$, exact binomial p-values, $\\delta$ = {delta:g}): the most likely model answers when its "
        f"probability is at least $\\tau$, else the fallback does (best single model chosen on validation, or "
        f"abstain); ``none'': no threshold certified, everything falls back. $\\tau$: mean [range] over seeds. "
        f"Coverage, risk (error among routed queries) and accuracy (all queries, fallback included; -- with "
        f"abstain) on the {frame['n_test_queries'].iat[0] if len(frame) else 0} test queries, mean over seeds. "
        f"Violations: the share of the {frame['n_checks'].iat[0] if len(frame) else 0} checks (seeds $\\times$ "
        f"{n_boot} random splits of the validation and test queries together into a part of the validation split's "
        f"size, which certifies its own $\\tau$, and the rest, seed {seed}) whose error among routed queries of the "
        f"rest exceeds $\\alpha$: it estimates P(risk $>$ $\\alpha$) over the draw of the validation data, which the "
        f"guarantee bounds by $\\delta$ = {delta:g}, so it must be $\\le$ $\\delta$ up to noise (the risk of the rest "
        f"is itself an estimate; $n$: routed test queries, mean over seeds). The calibration maps were fitted on the "
        f"validation split. A threshold that routes nothing never violates."
    )
    title = f"Risk-coverage on test, {label}, n = {runs[0].train_size}, calibrated probabilities"
    _write(table_out, render.selective_table(frame, caption), frame)
    render.write_figure(render.risk_coverage_figure(curves, alphas, title), curves, figure_out)
    return frame, curves


def write_cost(runs, data, table_out, figure_out, n_lambdas, n_boot, seed, confidence=0.95, data_label=None):
    """results/tables/aiq.{tex,csv} and results/figures/cost_quality.{pdf,png,csv}."""
    from locus.render import decisions as render

    table_out, figure_out = _checked_outputs(table_out, figure_out)
    points, frame, summary = cost_quality(runs, data, n_lambdas, n_boot, seed, confidence)
    label = data_label or Path(data.source).name
    cost = COST_LABELS[summary["cost_source"]]
    caption = (
        f"\\textbf{{Cost-aware routing: AIQ}} ({_describe(runs, label)}). Each approach routes a test query to the "
        f"model maximising $P - \\lambda \\cdot$cost, $\\lambda$ swept over {summary['n_lambdas']} values from 0 "
        f"(most likely model) to the cheapest model; cost per query = {cost}. AIQ (RouterBench's Average "
        f"Improvement in Quality): area under the non-decreasing convex hull of the (mean cost, accuracy) points, "
        f"extended flat to the largest model cost ({summary['max_cost']:g}), divided by it (\\%). References: the "
        f"oracle with $\\lambda$ swept, the best single model chosen on validation, and random mixes of two models "
        f"(the hull of the single models' test points: an optimistic reference, as the best mix is read off the test "
        f"split); the curve of a router starts at its cheapest point, so a single model at the "
        f"largest cost has AIQ 0 by this definition. Intervals: {100 * confidence:g}\\% percentile bootstrap over the "
        f"{summary['n_test_queries']} test queries ({n_boot} resamples, seed {seed}; seeds averaged per query)."
    )
    title = f"Accuracy vs cost on test, {label}, n = {runs[0].train_size}; cost = {cost}"
    _write(table_out, render.aiq_table(frame, caption), frame)
    render.write_figure(render.cost_quality_figure(points, title, cost), points, figure_out)
    return frame, points
