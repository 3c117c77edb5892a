#!/usr/bin/env python
"""Calibrate the synthetic pool's generator on pool statistics (docs/data-realism.md).

Generates the synthetic data set for the given seeds and constants and prints the statistics of
``locus stats`` (locus/data/stats.py) next to their targets: the LLMRouter DC values (real data) with
the tolerance taken as "inside the real range", and the per-benchmark accuracy targets. Nothing here
trains or scores a routing method: the constants are chosen on these statistics only.

    python scripts/calibrate_synthetic.py                          # version 2, frozen constants, seeds 0 1 2
    python scripts/calibrate_synthetic.py --generator 1 --set specialization=1.5
    python scripts/calibrate_synthetic.py --seeds 0 --set MODEL_SD=1.2 --set LINEAGE_SD=0.9

``--set NAME=VALUE`` overrides a constant of ``locus.data.synthetic_v2.CONSTANTS`` (upper case) or a
generator parameter (lower case, e.g. ``n_queries``, ``specialization``). Exit status 0 when every
statistic of every seed is inside its tolerance, 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
from scipy.stats import spearmanr

from locus.data import stats as S
from locus.data import synthetic, synthetic_v2
from locus.data.canonical import validate

TARGETS = synthetic_v2.CALIBRATION_TARGETS  # statistic -> (target, tolerance): |value - target| <= tolerance
BENCHMARK_TOLERANCE = 0.02  # per-benchmark pool mean accuracy vs synthetic.TARGET_ACCURACY
GPQA_CHANCE_MAX = 0.32  # GPQA's pool mean must stay near chance (4 options: 0.25)


def headline(st: dict) -> dict:
    """The five statistics (disagreement with its percentiles) of a pool_statistics() result."""
    d = st["disagreement"]
    return {
        "disagreement": d["mean"],
        "disagreement_p05": d["p05"],
        "disagreement_p95": d["p95"],
        "shared_difficulty": st["shared_difficulty"]["value"],
        "pc1": st["pc1"]["value"],
        "accuracy_sd": st["accuracy_sd"]["value"],
        "nn_agreement": st["nn_agreement"]["value"],
    }


def interaction_share(correct: np.ndarray, groups) -> float:
    """Model x benchmark interaction (`groups` = each query's benchmark): the sum over benchmarks b and models
    m of n_b (A[b, m] - A[b, .] - A[., m] + g)^2 over the total sum of squares of the (complete) correctness
    matrix, A[b, m] = accuracy of m on b's queries: the share of the variance that a router knowing only
    each query's benchmark could exploit (small groups add about #groups / #queries of sampling noise)."""
    groups = np.asarray(groups)
    labels = np.unique(groups)
    acc = np.array([np.nanmean(correct[groups == b], axis=0) for b in labels])  # [B x M]
    n_b = np.array([(groups == b).sum() for b in labels], dtype=float)
    grand = np.nanmean(correct)
    inter = acc - acc.mean(axis=1, keepdims=True) - (n_b @ acc / n_b.sum())[None, :] + grand
    return float((n_b[:, None] * inter**2).sum() / np.nansum((correct - grand) ** 2))


def structure(correct: np.ndarray, models, queries) -> dict:
    """Diagnostics beyond the targets: the identity check of the mean disagreement, the model x benchmark
    interaction share, disagreement of similar-accuracy pairs by lineage / family (version 2's grouping,
    near-duplicate groups left out) and the rank correlation of accuracy with size and release year."""
    distance, _ = S.pairwise_disagreement(correct)
    m = correct.shape[1]
    share = S.shared_difficulty_share(correct)["value"]
    grand = np.nanmean(correct)
    lineage, family = synthetic_v2.model_groups(models)
    acc = np.nanmean(correct, axis=0)
    i, j = np.triu_indices(m, 1)
    dup = {a for g in synthetic_v2.NEAR_DUPLICATES for a in g}
    keep = np.array([not (a in dup and b in dup) for a, b in zip(i, j)]) & (np.abs(acc[i] - acc[j]) < 0.05)
    same_lin = np.array([lineage[a] == lineage[b] for a, b in zip(i, j)])
    same_fam = np.array([family[a] == family[b] for a, b in zip(i, j)])
    pairs = {
        "same family": keep & same_fam,
        "same lineage, other family": keep & same_lin & ~same_fam,
        "other lineage": keep & ~same_lin,
    }
    year = np.array([synthetic_v2.LINEAGES.get(x, np.nan) for x in lineage])
    return {
        "identity": 2 * m / (m - 1) * grand * (1 - grand) * (1 - share),
        "interaction": interaction_share(correct, queries["benchmark"].to_numpy()),
        "pairs": {
            k: (int(v.sum()), float(distance[i[v], j[v]].mean()) if v.any() else np.nan) for k, v in pairs.items()
        },
        "rank_size": float(spearmanr(acc, models["params_b"]).statistic),
        "rank_year": float(spearmanr(acc, year, nan_policy="omit").statistic),
    }


def run(params: dict, constants: dict) -> dict:
    """Generate one data set and compute its statistics (+ near-duplicate distances, truth check)."""
    start = time.perf_counter()
    queries, models, scores, truth = synthetic.build_with_truth(params, constants=constants)
    seconds = time.perf_counter() - start
    data = validate(queries, models, scores)
    st = S.pool_statistics(data)
    correct = S.binarize(data.label_matrix(data.queries.sort_values("prompt_id")["prompt_id"]))
    distance, _ = S.pairwise_disagreement(correct)
    groups = synthetic_v2.NEAR_DUPLICATES if params.get("generator", 1) == 2 else synthetic.NEAR_DUPLICATES
    dups = {f"{a}-{b}": float(distance[a, b]) for g in groups for a in g for b in g if a < b and b < len(models)}
    return {
        "stats": st,
        "headline": headline(st),
        "seconds": seconds,
        "duplicates": dups,
        "structure": structure(correct, models, queries.sort_values("prompt_id")),
        "mean_score": float(scores["score"].mean()),
        "mean_truth": float(truth["p_correct"].mean()),
    }


def real_targets(directory: str) -> dict:
    """The headline statistics of the LLMRouter DC data in `directory` (locus.data.llmrouter, default options)."""
    from locus.data import llmrouter
    from locus.data.canonical import resolve_split_overlap

    queries, models, scores = llmrouter.build({"dir": directory})
    queries, scores = resolve_split_overlap(queries, scores, llmrouter.DATASET_DEFAULTS["split_overlap"])
    return headline(S.pool_statistics(validate(queries, models, scores)))


def report(results: dict[int, dict]) -> bool:
    seeds = list(results)
    ok = True
    print("| statistic | target | tolerance | " + " | ".join(f"seed {s}" for s in seeds) + " | inside |")
    print("|---|---|---|" + "---|" * len(seeds) + "---|")
    for key, (target, tol) in TARGETS.items():
        values = [results[s]["headline"][key] for s in seeds]
        inside = all(abs(v - target) <= tol for v in values)
        ok &= inside
        print(
            f"| {key} | {target:.3f} | ± {tol:.2f} | "
            + " | ".join(f"{v:.3f}" for v in values)
            + f" | {'yes' if inside else 'NO'} |"
        )
    print()
    print("| benchmark | target accuracy | " + " | ".join(f"seed {s} mean (sd)" for s in seeds) + " |")
    print("|---|---|" + "---|" * len(seeds))
    for bench in sorted(synthetic.TARGET_ACCURACY):
        rows = [next(b for b in results[s]["stats"]["benchmarks"] if b["benchmark"] == bench) for s in seeds]
        target = synthetic.TARGET_ACCURACY[bench]
        ok &= all(abs(r["mean"] - target) <= BENCHMARK_TOLERANCE for r in rows)
        if bench == "GPQA":
            ok &= all(r["mean"] <= GPQA_CHANCE_MAX for r in rows)
        print(f"| {bench} | {target:.2f} | " + " | ".join(f"{r['mean']:.3f} ({r['sd']:.3f})" for r in rows) + " |")
    print()
    for s in seeds:
        r = results[s]
        ref = r["stats"]["routing"]["all"]
        dups = ", ".join(f"{k}: {v:.3f}" for k, v in r["duplicates"].items())
        st = r["structure"]
        pairs = "; ".join(f"{k} {v[1]:.3f} ({v[0]} pairs)" for k, v in st["pairs"].items())
        print(
            f"seed {s}: generated in {r['seconds']:.2f} s; oracle {ref['oracle']:.3f}, best single "
            f"{ref['best_single']:.3f} ({ref['best_single_model']}), random {ref['random']:.3f}, contested "
            f"{ref['contested']:.3f}; mean score {r['mean_score']:.4f} vs mean p_correct {r['mean_truth']:.4f}; "
            f"near-duplicate disagreement {dups}; 2M/(M-1) V (1 - shared) = {st['identity']:.3f}; "
            f"model x benchmark interaction share {st['interaction']:.3f}; disagreement of pairs within 0.05 "
            f"accuracy: {pairs}; Spearman(accuracy, params_b) {st['rank_size']:.2f}, (accuracy, release "
            f"year) {st['rank_year']:.2f}"
        )
    return ok


def _value(text: str):
    try:
        return int(text)
    except ValueError:
        return float(text)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--generator", type=int, choices=synthetic.GENERATORS, default=2)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument(
        "--llmrouter",
        metavar="DIR",
        help="recompute the real statistics from LLMRouter DC files in DIR "
        "(e.g. /work/shared/data/llmrouter-dc) and print them beside the recorded targets",
    )
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a synthetic_v2 constant (UPPER case) or a generator parameter (lower case)",
    )
    args = ap.parse_args(argv)
    params, constants = {"generator": args.generator}, {}
    for item in args.set:
        name, _, value = item.partition("=")
        if name.isupper():
            if name not in synthetic_v2.CONSTANTS:
                ap.error(f"unknown constant {name}; known: {sorted(synthetic_v2.CONSTANTS)}")
            constants[name] = _value(value)
        else:
            params[name] = _value(value)
    if args.llmrouter:
        real = real_targets(args.llmrouter)
        print(
            "LLMRouter DC, recomputed: "
            + ", ".join(f"{k} {v:.3f} (recorded {TARGETS[k][0]:.3f})" for k, v in real.items())
            + "\n"
        )
    print(f"generator {args.generator}, parameters {params}, constants overridden: {constants or 'none'}\n")
    results = {seed: run({**params, "seed": seed}, constants) for seed in args.seeds}
    ok = report(results)
    print("\nall statistics inside their tolerance" if ok else "\nsome statistic is outside its tolerance")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
