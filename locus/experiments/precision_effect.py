"""What LOCUS's ``precision: bfloat16`` option costs in accuracy (``locus bench --precision-effect``, the
workflow's ``precision_effect`` rule, ``results/tables/precision_effect.{tex,csv}``).

bfloat16 keeps float32's exponent but only 8 bits of mantissa, so its speed (AVX512-BF16 / AMX on CPUs,
tensor cores on GPUs; ``locus bench --precision bfloat16``) comes with rounding. For each trained LOCUS run
every model is re-embedded from its own training evaluations (the reference sets of the run) and the test
split is scored twice, once in each precision, with the same network; the table gives the test accuracies
of both and how far they drift apart:

- ``routing_agreement``: fraction of test queries routed to the same model;
- ``label_flips``: fraction of (query, model) pairs whose predicted label (logit > 0) differs;
- ``max_abs_logit_diff`` and ``max_rel_z_diff`` (max over models of ‖z_bf16 − z_fp32‖ / ‖z_fp32‖);
- ``routing_diff`` / ``correctness_diff`` (bfloat16 − float32) with a paired percentile bootstrap interval
  over the test queries (``*_ci_low`` / ``*_ci_high``; :func:`differences`, the tables' resampling of
  :func:`locus.experiments.bootstrap.paired_differences`). Each run is one pass per precision (the network
  and the embeddings are deterministic): the interval is over the test queries only, not over training
  seeds or re-embedding draws.

:func:`compare` is pure (arrays in, numbers out); :func:`measure_run` does the forward passes.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from locus import evaluation
from locus.errors import DataError
from locus.evaluation import NEAR_CONSTANT_SHARE
from locus.methods.locus_method import PRECISIONS  # the method's `precision` values

CSV_COLUMNS = [
    "run",
    "method",
    "train_size",
    "seed",
    "n_models",
    "n_test_queries",
    "routing_acc_float32",
    "routing_acc_bfloat16",
    "routing_diff",
    "routing_diff_ci_low",
    "routing_diff_ci_high",
    "correctness_acc_float32",
    "correctness_acc_bfloat16",
    "correctness_diff",
    "correctness_diff_ci_low",
    "correctness_diff_ci_high",
    "n_boot",
    "boot_seed",
    "confidence",
    "routing_agreement",
    "top_model_share_float32",
    "top_model_share_bfloat16",
    "label_flips",
    "max_abs_logit_diff",
    "max_rel_z_diff",
]


def compare(
    z32: np.ndarray, z_low: np.ndarray, logits32: np.ndarray, logits_low: np.ndarray, labels: np.ndarray
) -> dict:
    """Test accuracies of both precisions and their drift: embeddings [M, d], logits and labels [Q, M]."""
    shapes = {z32.shape == z_low.shape, logits32.shape == logits_low.shape == labels.shape}
    if shapes != {True} or z32.shape[0] != labels.shape[1]:
        raise DataError(
            f"precision effect: shapes disagree (z {z32.shape} / {z_low.shape}, logits "
            f"{logits32.shape} / {logits_low.shape}, labels {labels.shape})"
        )
    out = {}
    for name, logits in (("float32", logits32), ("bfloat16", logits_low)):
        out[f"routing_acc_{name}"] = evaluation.routing_metrics(logits, labels, ks=(1,))["routing_acc"]
        out[f"correctness_acc_{name}"] = evaluation.correctness_metrics(logits, labels)["correctness_acc"]
    out["routing_diff"] = out["routing_acc_bfloat16"] - out["routing_acc_float32"]
    out["correctness_diff"] = out["correctness_acc_bfloat16"] - out["correctness_acc_float32"]
    out["routing_agreement"] = float(np.mean(logits32.argmax(1) == logits_low.argmax(1)))
    for name, logits in (("float32", logits32), ("bfloat16", logits_low)):  # how concentrated each router is
        out[f"top_model_share_{name}"] = evaluation.routing_diversity(evaluation.choice_counts(logits, labels))[
            "top_share"
        ]
    out["label_flips"] = float(np.mean((logits32 > 0) != (logits_low > 0)))
    out["max_abs_logit_diff"] = float(np.abs(logits32 - logits_low).max())
    norms = np.maximum(np.linalg.norm(z32, axis=1), np.finfo(np.float32).tiny)
    out["max_rel_z_diff"] = float((np.linalg.norm(z_low - z32, axis=1) / norms).max())
    out["n_models"], out["n_test_queries"] = int(labels.shape[1]), int(labels.shape[0])
    return out


def differences(logits32: np.ndarray, logits_low: np.ndarray, labels: np.ndarray, settings=None) -> dict:
    """Paired bootstrap over the test queries of (bfloat16 − float32) routing and correctness accuracy:
    ``routing_diff_ci_low`` / ``_ci_high``, ``correctness_diff_ci_low`` / ``_ci_high`` (fractions, percentile
    interval at ``settings.confidence``), with ``n_boot``, ``boot_seed`` and ``confidence``."""
    from locus.experiments import bootstrap

    settings = settings or bootstrap.Settings()
    low, high = bootstrap.per_query(logits_low, labels), bootstrap.per_query(logits32, labels)
    out = {}
    for metric, name in (("routing_acc", "routing_diff"), ("correctness_acc", "correctness_diff")):
        num = np.stack([low[metric][0], high[metric][0]])
        den = np.stack([low[metric][1], high[metric][1]])
        res = bootstrap.paired_differences(num, den, [(0, 1)], settings)
        out[f"{name}_ci_low"], out[f"{name}_ci_high"] = float(res.low[0]), float(res.high[0])
    out.update(n_boot=int(settings.n_resamples), boot_seed=int(settings.seed), confidence=float(settings.confidence))
    return out


def measure_run(ref) -> dict:
    """Re-embed every model of a LOCUS run (a :class:`locus.geometry.views.Reference`) from its reference
    set and score the test split, in float32 and in bfloat16; :func:`compare` of the two."""
    from locus.geometry.evalset_robustness import test_split

    method = ref.method
    phi, labels = test_split(ref)
    saved = method.params
    z, logits = {}, {}
    try:
        for precision in PRECISIONS:
            method.params = saved.replace(precision=precision)
            z[precision] = np.stack([ref.embed(*ref.reference_set(int(m))) for m in ref.model_ids])
            logits[precision] = method.logits_for_embeddings(phi, z[precision])
    finally:
        method.params = saved
    return {
        **compare(z["float32"], z["bfloat16"], logits["float32"], logits["bfloat16"], labels),
        **differences(logits["float32"], logits["bfloat16"], labels),
    }


def _share(share: float) -> str:
    """A router's top-model share as a table cell, § marking a near-constant router."""
    return f"{100 * share:.1f}\\%" + ("\\S{}" if share >= NEAR_CONSTANT_SHARE else "")


def latex_table(frame: pd.DataFrame, title: str) -> str:
    """One row per run: test routing and correctness accuracy (%) in both precisions, the routing
    difference with its paired bootstrap interval (when the frame has one) and the drift."""
    from locus.render.labels import escape

    has_ci = "routing_diff_ci_low" in frame.columns and frame["routing_diff_ci_low"].notna().any()
    if has_ci:
        r0 = frame.iloc[0]
        interval = (
            f" $\\Delta$: bf16 $-$ fp32 routing accuracy (points) with its {100 * float(r0['confidence']):g}\\% "
            f"paired percentile bootstrap interval over the {int(r0['n_test_queries'])} test queries "
            f"({int(r0['n_boot'])} resamples, seed {int(r0['boot_seed'])}); the CSV has the same for correctness."
        )
    else:
        interval = " No interval: the frame has no per-query bootstrap."

    shares = frame[["top_model_share_float32", "top_model_share_bfloat16"]].to_numpy().ravel()
    near = (
        f"\\S{{}}: at least {100 * NEAR_CONSTANT_SHARE:.0f}\\% to one model, a near-constant router"
        if (shares >= NEAR_CONSTANT_SHARE).any()
        else f"none sends {100 * NEAR_CONSTANT_SHARE:.0f}\\% or more to one model"
    )
    lines = [
        "% generated by `locus bench --precision-effect`; needs \\usepackage{booktabs}",
        "\\begin{table}[t]",
        "\\centering",
        f"\\caption{{\\textbf{{LOCUS in bfloat16 vs float32}}: test accuracy (\\%) with every model re-embedded "
        f"from its training evaluations and the test split scored in each precision, same network; "
        f"{escape(title)}. One pass per run and precision (deterministic network and embeddings; no retraining, "
        f"re-embedding draws or seeds resampled), so the only spread is over the test queries.{interval} "
        f"Agreement: test queries routed to the same model; top model: share of test queries sent to the "
        f"router's most-chosen model (fp32 / bf16; {near}); flips: (query, model) labels that change.}}",
        "\\label{tab:precision_effect}",
        "\\small",
        "\\setlength{\\tabcolsep}{4pt}",
        "\\begin{tabular}{@{}rcccccccc@{}}" if has_ci else "\\begin{tabular}{@{}rccccccc@{}}",
        "\\toprule",
        "$n$ & \\multicolumn{2}{c}{Routing (fp32 / bf16)} & "
        + ("$\\Delta$ routing & " if has_ci else "")
        + "\\multicolumn{2}{c}{Correctness (fp32 / bf16)} & Agreement & Top model & Flips \\\\",
        "\\midrule",
    ]
    for r in frame.to_dict("records"):
        lines.append(
            f"{int(r['train_size']):,} (seed {int(r['seed'])}) & {100 * r['routing_acc_float32']:.2f} & "
            f"{100 * r['routing_acc_bfloat16']:.2f} & "
            + (
                f"{100 * r['routing_diff']:+.2f} [{100 * r['routing_diff_ci_low']:+.2f}, "
                f"{100 * r['routing_diff_ci_high']:+.2f}] & "
                if has_ci
                else ""
            )
            + f"{100 * r['correctness_acc_float32']:.2f} & "
            f"{100 * r['correctness_acc_bfloat16']:.2f} & {100 * r['routing_agreement']:.1f}\\% & "
            f"{_share(r['top_model_share_float32'])} / {_share(r['top_model_share_bfloat16'])} & "
            f"{100 * r['label_flips']:.2f}\\% \\\\"
        )
    lines += ["\\bottomrule", "\\end{tabular}", "\\end{table}", ""]
    return "\n".join(lines)


def write(runs, data, encodings, out, data_label: str | None = None, progress=print) -> pd.DataFrame:
    """Measure every run directory of `runs` (LOCUS runs of one data set) and write OUT.tex + OUT.csv."""
    from pathlib import Path

    from locus import run_artifacts
    from locus.atomic import write_text
    from locus.geometry.views import load_reference
    from locus.outputs import check_outputs
    from locus.render import write_csv

    out = Path(out)
    csv = out.with_suffix(".csv")
    check_outputs([out, csv])
    why = "the precision effect re-embeds models with LOCUS's encoder: give LOCUS run directories"
    rows = []
    for run in runs:
        ref = load_reference(run, data, encodings, data_label, why=why)
        meta = run_artifacts.read_metrics(run)
        row = {
            "run": str(run),
            "method": "locus",
            "train_size": int(meta.get("train_size", 0)),
            "seed": int(meta.get("seed", 0)),
            **measure_run(ref),
        }
        progress(
            f"  {run}: routing {100 * row['routing_acc_float32']:.2f} (fp32) / "
            f"{100 * row['routing_acc_bfloat16']:.2f} (bf16), agreement {100 * row['routing_agreement']:.1f}%, "
            f"label flips {100 * row['label_flips']:.2f}%"
        )
        rows.append(row)
    frame = pd.DataFrame(rows).sort_values(["train_size", "seed"], kind="stable").reindex(columns=CSV_COLUMNS)
    write_text(out, latex_table(frame, ref.label))
    write_csv(frame, csv)
    return frame
