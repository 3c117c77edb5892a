"""Routing decisions on trained runs (``locus decisions``): selective routing with a certified risk and
cost-aware routing, from each run's calibrated probabilities (``RUN/calibration.json``, :mod:`locus.calibration`).

- :func:`selective`: per run, alpha and fallback the Learn-then-Test threshold certified on VALIDATION
  (:func:`locus.decisions.learn_then_test_thresholds`: one per alpha of the grid, non-increasing in alpha), its
  test coverage and error among routed queries, and how often the guarantee fails over seeds x random re-splits
  of the validation and test queries (tau certified on one part, risk on the other), with a Clopper-Pearson
  interval and a flag where it exceeds delta; on a data set with generator truth (``truth.parquet``) also the
  true expected error among routed test queries and a truth-based violation frequency; the risk-coverage curves
  with the best single model (chosen on validation) and the validation/test difficulty gap.
- :func:`cost_quality`: accuracy against mean cost per query with lambda swept (P - lambda * cost), beside the
  oracle, each single model and the frontier of random mixes of two models; AIQ (:func:`locus.decisions.aiq`)
  divided by the largest cost (RouterBench's code) and by the cost range (its paper), with percentile bootstrap
  intervals over test queries, and the paired bootstrap of each router's AIQ minus the mix frontier's.

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
NO_TRUTH = "no generator truth"
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
    "violation_ci_low",
    "violation_ci_high",
    "violation_above_delta",
    "violation_ci_above_delta",
    "n_violations",
    "n_checks",
    "truth",
    "true_risk",
    "true_risk_max",
    "true_risk_ok",
    "violation_freq_truth",
    "violation_truth_ci_low",
    "violation_truth_ci_high",
    "violation_truth_above_delta",
    "n_test_queries",
    "calibration",
    "confidence",
]
AIQ_COLUMNS = [
    "router",
    "kind",
    "aiq",
    "aiq_ci_low",
    "aiq_ci_high",
    "aiq_range",
    "aiq_range_ci_low",
    "aiq_range_ci_high",
    "diff_vs_mix",
    "diff_vs_mix_ci_low",
    "diff_vs_mix_ci_high",
    "diff_vs_mix_range",
    "diff_vs_mix_range_ci_low",
    "diff_vs_mix_range_ci_high",
    "min_cost",
    "max_cost",
    "cost_source",
    "n_boot",
    "confidence",
]


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
    val_truth: np.ndarray | None = None  # the generator's P(correct) (truth.parquet), NaN off the scored pairs
    test_truth: np.ndarray | None = None


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
    against the canonical data set `data_dir` (checked by fingerprint), with the generator's true P(correct)
    where the data set has it (``truth.parquet``; else the runs' truth is None)."""
    from locus import run_artifacts
    from locus.data.canonical import read_dataset, read_truth, truth_matrix
    from locus.data.encodings import data_fingerprint

    data = read_dataset(data_dir)
    truth = read_truth(data_dir, data)
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
                None if truth is None else truth_matrix(truth, ids["val"], model_ids),
                None if truth is None else truth_matrix(truth, ids["test"], model_ids),
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


def _model_names(data) -> dict[int, str]:
    if data is None:
        return {}
    return dict(zip(data.models["model_id"].tolist(), data.models["name"].astype(str)))


def _accuracy(correct, cols=None) -> float:
    """Mean binary correctness of column `cols` (an int, or one per query; None: the best labelled model of each
    query, the oracle) over the queries with a label there."""
    c = decisions.binary(correct)
    if cols is None:
        labelled = ~np.isnan(c).all(axis=1)
        return float(np.nanmax(c[labelled], axis=1).mean()) if labelled.any() else math.nan
    got = c[:, cols] if np.ndim(cols) == 0 else c[np.arange(len(c)), cols]
    return float(np.nanmean(got)) if (~np.isnan(got)).any() else math.nan


def _expected(truth, cols=None) -> float:
    """Like :func:`_accuracy` with the generator's P(correct): the expected accuracy of column `cols` (None: of
    the model with the highest true probability per query)."""
    t = np.asarray(truth, dtype=np.float64)
    if cols is None:
        ok = ~np.isnan(t).all(axis=1)
        return float(np.nanmax(t[ok], axis=1).mean()) if ok.any() else math.nan
    got = t[:, cols]
    return float(np.nanmean(got)) if (~np.isnan(got)).any() else math.nan


def difficulty_gap(run: RunProbs, data=None) -> dict:
    """How much harder the test split is than the validation split on which thresholds are certified: accuracy
    of the best single model chosen on validation and of the oracle (best labelled model per query), on each
    split; with generator truth also their expected accuracies (mean true P(correct), free of label noise).
    The labels are the data set's: any run gives the same numbers."""
    from locus.evaluation import best_single_model

    best = best_single_model(run.val_correct)
    mid = int(run.model_ids[best])
    out = {
        "best_single": best,
        "best_single_name": _model_names(data).get(mid, f"model {mid}"),
        "best_single_val": _accuracy(run.val_correct, best),
        "best_single_test": _accuracy(run.test_correct, best),
        "oracle_val": _accuracy(run.val_correct),
        "oracle_test": _accuracy(run.test_correct),
        "n_val": int(run.val_correct.shape[0]),
        "n_test": int(run.test_correct.shape[0]),
    }
    has_truth = run.val_truth is not None and run.test_truth is not None
    out["truth"] = has_truth
    for split, t in (("val", run.val_truth), ("test", run.test_truth)):
        out[f"best_single_expected_{split}"] = _expected(t, best) if has_truth else math.nan
        out[f"oracle_expected_{split}"] = _expected(t) if has_truth else math.nan
    return out


def _share(flags, delta: float, confidence: float) -> dict:
    """Frequency of True in `flags`, its Clopper-Pearson interval, and whether it (and its interval) exceeds delta."""
    k, n = int(np.sum(flags)), len(flags)
    freq = k / n if n else math.nan
    low, high = decisions.binomial_interval(k, n, confidence)
    return {"freq": freq, "low": low, "high": high, "above": bool(freq > delta), "ci_above": bool(low > delta), "k": k}


def _violation_checks(mine, alphas, delta, splits, n_val) -> tuple[np.ndarray, np.ndarray | None]:
    """[alphas x checks] booleans: the error among routed queries of the held part (labels), and with truth the
    true expected error there (the generator's P(correct)), exceed alpha; checks = runs x splits."""
    labelled, true = [], []
    has_truth = all(r.val_truth is not None and r.test_truth is not None for r in mine)
    for r in mine:
        probs, correct = np.vstack([r.val_probs, r.test_probs]), np.vstack([r.val_correct, r.test_correct])
        logits = np.vstack([r.val_logits, r.test_logits])
        top, p_top = decisions.top_choice(probs, logits)
        rows = np.arange(len(probs))
        err = 1.0 - decisions.binary(correct)[rows, top]
        terr = 1.0 - np.vstack([r.val_truth, r.test_truth])[rows, top] if has_truth else None
        for perm in splits:
            cert, held = perm[:n_val], perm[n_val:]
            taus = decisions.learn_then_test_thresholds(probs[cert], correct[cert], alphas, delta, logits=logits[cert])
            lab, tru = [], []
            for alpha, tau_b in zip(alphas, taus):
                routed = held[(p_top[held] >= tau_b) & ~np.isnan(err[held])]
                lab.append(len(routed) > 0 and float(err[routed].mean()) > alpha)
                if has_truth:
                    t = terr[routed][~np.isnan(terr[routed])]
                    tru.append(len(t) > 0 and float(t.mean()) > alpha)
            labelled.append(lab)
            true.append(tru)
    return np.array(labelled, dtype=bool).T, (np.array(true, dtype=bool).T if has_truth else None)


def selective(
    runs, data, alphas, delta, fallbacks, n_boot: int, seed: int, confidence: float = 0.95
) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """(table rows :data:`SELECTIVE_COLUMNS`, risk-coverage curve rows, summary: the validation/test difficulty
    gap of :func:`difficulty_gap`).

    Thresholds: :func:`locus.decisions.learn_then_test_thresholds` over the whole alpha grid, so tau never rises
    with alpha. Violations: the guarantee is over the draw of the validation data from the population the test
    queries come from, so each check splits the validation and test queries together at random into a
    certification part (the validation split's size) and an evaluation part, certifies tau on the first and
    measures the error among routed queries on the second (a threshold that routes nothing never violates); the
    frequency comes with its Clopper-Pearson interval at `confidence` and is flagged above delta. With generator
    truth the same checks are also read with the true expected error (no label noise), and the reported tau's true
    expected error among routed test queries is checked against alpha. The reported tau, coverage and risk use the
    splits as they are."""
    alphas = [decisions.check_level("alpha", a) for a in alphas]
    delta = decisions.check_level("delta", delta)
    n_test = runs[0].test_probs.shape[0]
    n_val = runs[0].val_probs.shape[0]
    rng = np.random.default_rng(seed)
    splits = [rng.permutation(n_val + n_test) for _ in range(n_boot)]  # the same for every method and seed
    gap = difficulty_gap(runs[0], data)
    best_err = 1.0 - gap["best_single_test"]
    rows, curves = [], []
    for method in methods_of(runs):
        mine = [r for r in runs if r.method == method]
        per_seed = np.array([risk_at_coverage(r.test_probs, r.test_correct, logits=r.test_logits) for r in mine])
        for c, mean, sd in zip(COVERAGE_GRID, np.nanmean(per_seed, 0), np.nanstd(per_seed, 0)):
            curves.append(
                {
                    "series": "method",
                    "method": method,
                    "coverage": c,
                    "risk": mean,
                    "risk_std": sd,
                    "n_seeds": len(mine),
                }
            )
        taus_by_run = [
            decisions.learn_then_test_thresholds(r.val_probs, r.val_correct, alphas, delta, logits=r.val_logits)
            for r in mine
        ]
        checks, true_checks = _violation_checks(mine, alphas, delta, splits, n_val)
        has_truth = true_checks is not None
        for ai, alpha in enumerate(alphas):
            taus = [float(t[ai]) for t in taus_by_run]
            viol = _share(checks[ai], delta, confidence)
            tviol = _share(true_checks[ai], delta, confidence) if has_truth else None
            true_risks = (
                np.array(
                    [decisions.expected_risk(r.test_truth, r.test_probs, t, r.test_logits) for r, t in zip(mine, taus)]
                )
                if has_truth
                else None
            )
            finite = [t for t in taus if t != decisions.NONE]
            routed_true = true_risks[np.isfinite(true_risks)] if has_truth else np.zeros(0)  # seeds routing some
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
                        "violation_freq": viol["freq"],
                        "violation_ci_low": viol["low"],
                        "violation_ci_high": viol["high"],
                        "violation_above_delta": viol["above"],
                        "violation_ci_above_delta": viol["ci_above"],
                        "n_violations": viol["k"],
                        "n_checks": len(checks[ai]),
                        "truth": "generator" if has_truth else NO_TRUTH,
                        "true_risk": _nanmean(true_risks) if has_truth else math.nan,
                        "true_risk_max": float(routed_true.max()) if len(routed_true) else math.nan,
                        # nothing routed in any seed: no routed query can err (as for the violations)
                        "true_risk_ok": bool((routed_true <= alpha).all()) if has_truth else None,
                        "violation_freq_truth": tviol["freq"] if has_truth else math.nan,
                        "violation_truth_ci_low": tviol["low"] if has_truth else math.nan,
                        "violation_truth_ci_high": tviol["high"] if has_truth else math.nan,
                        "violation_truth_above_delta": tviol["above"] if has_truth else None,
                        "n_test_queries": n_test,
                        "calibration": ",".join(sorted({r.calibration for r in mine})),
                        "confidence": float(confidence),
                    }
                )
    for c in COVERAGE_GRID:  # the best single model answers every query: a flat line, one point per coverage
        curves.append(
            {
                "series": "best_single",
                "method": f"best single model (chosen on validation: {gap['best_single_name']})",
                "coverage": c,
                "risk": best_err,
                "risk_std": 0.0,
                "n_seeds": 1,
            }
        )
    return pd.DataFrame(rows, columns=SELECTIVE_COLUMNS), pd.DataFrame(curves), gap


def _nanmean(values) -> float:
    v = np.asarray(values, dtype=np.float64)
    return float(np.nanmean(v)) if np.isfinite(v).any() else math.nan


# --------------------------------------------------------------------------------------------------
# cost-aware routing
# --------------------------------------------------------------------------------------------------
def choice_outcomes(choices, correct, costs) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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
    # each resample as draw counts per query: sums by matrix products, not a [B x queries x lambdas] copy
    n_boot, n_queries = idx.shape
    flat = (np.arange(n_boot)[:, None] * n_queries + idx).ravel()
    counts = np.bincount(flat, minlength=n_boot * n_queries).reshape(n_boot, n_queries).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return counts @ cost / n_queries, (counts @ num) / (counts @ den)


def _interval(values, confidence: float) -> tuple[float, float]:
    """Percentile interval of the finite bootstrap `values` (NaN without any)."""
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if not len(v):
        return math.nan, math.nan
    tail = (1 - confidence) / 2
    return float(np.quantile(v, tail)), float(np.quantile(v, 1 - tail))


def aiq_resamples(num, den, cost, idx, max_cost, min_cost) -> dict[str, tuple[float, np.ndarray]]:
    """Per normalisation of :data:`locus.decisions.AIQ_NORMALISATIONS`: (AIQ on the test queries, AIQ on each
    resample of `idx` [B x queries]; NaN on a resample without a labelled query). `num`, `den`, `cost`: [queries
    x points] (:func:`choice_outcomes`); each resample recomputes the router's curve and its hull."""
    c, q = _curve(num, den, cost)
    cs, qs = _curve(num, den, cost, idx)
    none = dict.fromkeys(decisions.AIQ_NORMALISATIONS, math.nan)
    point = decisions.aiqs(c, q, max_cost, min_cost)
    boots = [decisions.aiqs(cb, qb, max_cost, min_cost) if np.isfinite(qb).any() else none for cb, qb in zip(cs, qs)]
    return {norm: (point[norm], np.array([b[norm] for b in boots])) for norm in decisions.AIQ_NORMALISATIONS}


def paired_aiq_difference(router, reference, confidence: float, n_queries: int):
    """Per normalisation: AIQ(router) - AIQ(reference) with its paired percentile bootstrap interval, as a
    :class:`locus.experiments.bootstrap.Differences` (one pair). `router`, `reference`: outputs of
    :func:`aiq_resamples` on the SAME resamples, so each resample's difference compares the two on the same
    queries (the pairing of :func:`locus.experiments.bootstrap.paired_differences`, whose ratio statistic cannot
    express an AIQ: the hull is recomputed per resample). Resamples where either side is NaN are dropped."""
    from locus.experiments.bootstrap import Differences

    out = {}
    for norm in decisions.AIQ_NORMALISATIONS:
        (pa, ba), (pb, bb) = router[norm], reference[norm]
        low, high = _interval(ba - bb, confidence)
        out[norm] = Differences(
            np.array([pa - pb]), np.array([low]), np.array([high]), int(n_queries), len(ba), float(confidence)
        )
    return out


def cost_quality(
    runs, data, n_lambdas: int, n_boot: int, seed: int, confidence: float = 0.95
) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """(figure rows ``series, router, lambda, cost, quality``, AIQ rows :data:`AIQ_COLUMNS`, summary).

    Every router's AIQ is computed on the same resamples of the test queries (seeded), so the difference to the
    frontier of random mixes of two models (recomputed on each resample from the single models' points) is a
    paired bootstrap. The best single model chosen on validation is a point of the figure and a line of the
    summary, not an AIQ row: a router of one point integrates only from its own cost, so its AIQ measures how
    cheap it is, not how good."""
    from locus.data.canonical import model_costs
    from locus.evaluation import best_single_model
    from locus.experiments.bootstrap import Settings

    settings = Settings(n_boot, seed, confidence)  # checks the resamples and the level
    model_ids = runs[0].model_ids
    if any(not np.array_equal(r.model_ids, model_ids) for r in runs):
        raise DataError("the runs route among different models; cost-quality curves compare runs of one model pool.")
    costs, source = model_costs(data.models, model_ids, f"{data.source}/models.parquet")
    lams = decisions.lambda_grid(costs, n_lambdas)
    max_cost, min_cost = float(costs.max()), float(costs.min())
    n_test = runs[0].test_probs.shape[0]
    idx = _bootstrap_indices(n_test, settings.n_resamples, settings.seed)
    test_correct = runs[0].test_correct  # the data set's labels: the same for every run
    names = dict(zip(data.models["model_id"].tolist(), data.models["name"].astype(str)))
    points, entries = [], []

    def add(router, kind, num, den, cost, lambdas):
        c, q = _curve(num, den, cost)
        for lam, ci, qi in zip(lambdas, c, q):
            points.append({"series": kind, "router": router, "lambda": lam, "cost": ci, "quality": qi})
        entries.append((router, kind, aiq_resamples(num, den, cost, idx, max_cost, min_cost)))

    for method in methods_of(runs):
        mine = [r for r in runs if r.method == method]
        parts = [
            choice_outcomes(
                [decisions.choose_cost_weighted(r.test_probs, costs, lam, r.test_logits) for lam in lams],
                r.test_correct,
                costs,
            )
            for r in mine
        ]
        add(method, "method", *(np.mean([p[i] for p in parts], axis=0) for i in range(3)), lams)
    oracle_choices = [decisions.choose_cost_weighted(test_correct, costs, lam) for lam in lams]
    add("oracle", "oracle", *choice_outcomes(oracle_choices, test_correct, costs), lams)
    singles = [np.full(n_test, m) for m in range(len(model_ids))]
    num, den, cost = choice_outcomes(singles, test_correct, costs)
    c, q = _curve(num, den, cost)
    for m, (ci, qi) in enumerate(zip(c, q)):
        points.append(
            {"series": "single", "router": names[int(model_ids[m])], "lambda": math.nan, "cost": ci, "quality": qi}
        )
    for ci, qi in decisions.nondecreasing_hull(c, q):
        points.append(
            {"series": "mix", "router": "random mixes of two models", "lambda": math.nan, "cost": ci, "quality": qi}
        )
    mix = aiq_resamples(num, den, cost, idx, max_cost, min_cost)
    entries.append(("random mixes of two models", "mix", mix))
    # the best single model chosen on validation (of the first run: the data set's labels, the same for all runs)
    best = best_single_model(runs[0].val_correct)
    best_name = names[int(model_ids[best])]
    points.append(
        {"series": "best_single", "router": best_name, "lambda": math.nan, "cost": c[best], "quality": q[best]}
    )
    aiqs = []
    for router, kind, res in entries:
        diff = paired_aiq_difference(res, mix, settings.confidence, n_test)
        row = {"router": router, "kind": kind}
        for norm, prefix in (("max", "aiq"), ("range", "aiq_range")):
            point, boots = res[norm]
            row[prefix] = point
            row[f"{prefix}_ci_low"], row[f"{prefix}_ci_high"] = _interval(boots, settings.confidence)
        for norm, prefix in (("max", "diff_vs_mix"), ("range", "diff_vs_mix_range")):
            d = diff[norm]
            row[prefix], row[f"{prefix}_ci_low"], row[f"{prefix}_ci_high"] = (
                float(d.diff[0]),
                float(d.low[0]),
                float(d.high[0]),
            )
        row.update(
            {
                "min_cost": min_cost,
                "max_cost": max_cost,
                "cost_source": source,
                "n_boot": settings.n_resamples,
                "confidence": settings.confidence,
            }
        )
        aiqs.append(row)
    single_point = {
        norm: decisions.aiq([c[best]], [q[best]], max_cost, min_cost, norm) for norm in decisions.AIQ_NORMALISATIONS
    }
    summary = {
        "cost_source": source,
        "max_cost": max_cost,
        "min_cost": min_cost,
        "n_lambdas": len(lams),
        "n_test_queries": n_test,
        "best_single": best_name,
        "best_single_cost": float(c[best]),
        "best_single_accuracy": float(q[best]),
        "best_single_aiq": single_point["max"],
        "best_single_aiq_range": single_point["range"],
    }
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


def _gap_text(gap: dict, tex: bool = True) -> str:
    """The validation/test difficulty gap in words (accuracies in %, computed)."""
    name = gap["best_single_name"]
    if tex:
        from locus.render.labels import escape

        name = escape(name)
    pct = "\\%" if tex else "%"
    arrow = "$\\to$" if tex else "→"
    text = (
        f"validation {arrow} test: best single model chosen on validation ({name}) {100 * gap['best_single_val']:.1f}"
        f"{pct} {arrow} {100 * gap['best_single_test']:.1f}{pct}, oracle {100 * gap['oracle_val']:.1f}{pct} {arrow} "
        f"{100 * gap['oracle_test']:.1f}{pct} accuracy"
    )
    if gap["truth"]:
        text += (
            f" (expected under the generator's truth: {100 * gap['best_single_expected_val']:.1f}{pct} {arrow} "
            f"{100 * gap['best_single_expected_test']:.1f}{pct} and {100 * gap['oracle_expected_val']:.1f}{pct} "
            f"{arrow} {100 * gap['oracle_expected_test']:.1f}{pct})"
        )
    return text


def write_selective(
    runs, data, table_out, figure_out, alphas, delta, fallbacks, n_boot, seed, data_label=None, confidence=0.95
):
    """results/tables/selective_routing.{tex,csv} and results/figures/risk_coverage.{pdf,png,csv}."""
    from locus.render import decisions as render

    table_out, figure_out = _checked_outputs(table_out, figure_out)
    frame, curves, gap = selective(runs, data, alphas, delta, fallbacks, n_boot, seed, confidence)
    label = data_label or Path(data.source).name
    n_checks = frame["n_checks"].iat[0] if len(frame) else 0
    has_truth = bool(len(frame)) and frame["truth"].iat[0] != NO_TRUTH
    conf = f"{100 * confidence:g}\\%"
    truth_text = (
        "True risk: with the generator's true P(correct) of the data set, the true expected error among the routed "
        "test queries at the reported $\\tau$ (mean over them of $1 - p_{\\text{true}}$ of the chosen model; "
        "mean over seeds), free of label noise; $^{\\ast}$: above $\\alpha$ in some seed (the exact check of "
        "the certified level on these queries). Violations (truth): the same checks read with the true expected "
        "error of the rest instead of its labels: free of label noise, not of which queries fall in the rest."
        if has_truth
        else "True risk: no generator truth (this data set has no truth.parquet), so the exact check of the "
        "certified level is not available."
    )
    caption = (
        f"\\textbf{{Selective routing with a certified risk}} ({_describe(runs, label)}). Per $\\alpha$, the "
        f"threshold $\\tau$ is certified on the VALIDATION split by Learn-then-Test (fixed-sequence tests from high to "
        f"low $\\tau$, exact binomial p-values, $\\delta$ = {delta:g}): the most likely model answers when its "
        f"probability is at least $\\tau$, else the fallback does (best single model chosen on validation, or "
        f"abstain); ``none'': no threshold certified, everything falls back. Every $\\alpha$ skips the same sparsely "
        f"populated top thresholds (those routing fewer queries than the smallest $\\alpha$ can certify), so "
        f"$\\tau$ never rises with $\\alpha$ (a looser level never routes fewer queries) and each level keeps its "
        f"guarantee. $\\tau$: mean [range] over seeds. "
        f"Coverage, $n$ (routed test queries), risk (error among routed queries) and accuracy (all queries, fallback "
        f"included) on the {frame['n_test_queries'].iat[0] if len(frame) else 0} test queries, mean over seeds. "
        f"Violations: the share of the {n_checks} checks (seeds $\\times$ {n_boot} random splits of the validation "
        f"and test queries together into a part of the validation split's size, which certifies its own $\\tau$, "
        f"and the rest, seed {seed}) whose error among routed queries of the rest exceeds $\\alpha$, with its "
        f"{conf} Clopper--Pearson interval (the checks taken as independent trials given the pooled queries): it "
        f"estimates P(risk $>$ $\\alpha$) over the draw of the validation data, which the guarantee bounds by "
        f"$\\delta$ = {delta:g}; $^{{\\dagger}}$: above $\\delta$, $^{{\\ddagger}}$: even the interval lies "
        f"above $\\delta$ (the risk of the rest is itself an estimate, so a frequency near $\\delta$ is within "
        f"noise). A threshold that routes nothing never violates. The calibration maps were fitted on the validation "
        f"queries, which the re-splits mix into both parts, so the checks are not exactly exchangeable. {truth_text} "
        f"Difficulty, {_gap_text(gap)}: thresholds are certified on the validation split, so a harder (easier) test "
        f"split raises (lowers) the test risk."
    )
    title = f"Risk-coverage on test, {label}, n = {runs[0].train_size}, calibrated probabilities"
    note = "Difficulty, " + _gap_text(gap, tex=False)
    _write(table_out, render.selective_table(frame, caption), frame)
    render.write_figure(render.risk_coverage_figure(curves, alphas, title, note), curves, figure_out)
    return frame, curves


def write_cost(runs, data, table_out, figure_out, n_lambdas, n_boot, seed, confidence=0.95, data_label=None):
    """results/tables/aiq.{tex,csv} and results/figures/cost_quality.{pdf,png,csv}."""
    from locus.render import decisions as render
    from locus.render.labels import escape

    table_out, figure_out = _checked_outputs(table_out, figure_out)
    points, frame, summary = cost_quality(runs, data, n_lambdas, n_boot, seed, confidence)
    label = data_label or Path(data.source).name
    cost = COST_LABELS[summary["cost_source"]]
    cmax, cmin = summary["max_cost"], summary["min_cost"]
    caption = (
        f"\\textbf{{Cost-aware routing: AIQ}} ({_describe(runs, label)}). Each approach routes a test query to the "
        f"model maximising $P - \\lambda \\cdot$cost, $\\lambda$ swept over {summary['n_lambdas']} values from 0 "
        f"(most likely model) to the cheapest model; cost per query = {cost}. AIQ (RouterBench's Average "
        f"Improvement in Quality): area under the non-decreasing convex hull of the (mean cost, accuracy) points, "
        f"from the router's cheapest point, extended flat to the largest model cost $c_{{\\max}}$ = {cmax:g}, "
        f"and divided (\\%) either by $c_{{\\max}}$ (column /$c_{{\\max}}$: RouterBench's code, evaluation/AIQ.py) or "
        f"by the cost range $c_{{\\max}} - c_{{\\min}}$ = {cmax:g} $-$ {cmin:g} (column /range: RouterBench's paper, "
        f"the mean accuracy over the costs the models span; zero below a router's cheapest point). References: the oracle with $\\lambda$ swept, and "
        f"random mixes of two models (the hull of the single models' test points: an optimistic reference, as the "
        f"best mix is read off the test split). $\\Delta$ vs mix: the router's AIQ minus the mix frontier's, with "
        f"a paired bootstrap interval (both recomputed on each resample of the test queries, the frontier from the "
        f"resampled single models), so an interval containing 0 means that no significant gain over mixing two fixed "
        f"models is shown. The best single model chosen on validation ({escape(summary['best_single'])}: "
        f"{100 * summary['best_single_accuracy']:.1f}\\% test accuracy at cost {summary['best_single_cost']:g}) is "
        f"not a row: a router of one point integrates only from its own cost, so its AIQ "
        f"({100 * summary['best_single_aiq']:.2f}\\% / {100 * summary['best_single_aiq_range']:.2f}\\%) measures "
        f"how cheap it is, not how good, and is near 0 for a model near the largest cost; it is the star of the "
        f"figure. Intervals: {100 * confidence:g}\\% percentile bootstrap over the {summary['n_test_queries']} test "
        f"queries ({n_boot} resamples, seed {seed}, the same for every row; seeds averaged per query)."
    )
    title = f"Accuracy vs cost on test, {label}, n = {runs[0].train_size}; cost = {cost}"
    _write(table_out, render.aiq_table(frame, caption), frame)
    render.write_figure(render.cost_quality_figure(points, title, cost), points, figure_out)
    return frame, points
