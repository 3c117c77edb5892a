"""Calibrated correctness probabilities of trained runs: fit a run's map (`locus calibrate`) and report
raw vs calibrated probabilities on the test split (`locus calibration-report`).

- :func:`calibrate_run`: the run's validation logits (``scores_val.parquet``) against the canonical data
  set's validation labels (correct = score >= 0.5, labelled pairs only) -> :func:`locus.calibration.fit`
  (folds over validation queries) -> ``calibration.json`` tied to the run. Test labels are never read.
- :func:`measure` / :func:`write`: per method (all seeds of one training size), on the test pairs, ECE
  (equal-mass bins), Brier and log-loss of sigmoid(logit) ("raw") and of the run's map ("calibrated"),
  means over seeds, and calibrated - raw with a paired percentile bootstrap interval over test queries:
  every resample draws queries with replacement (all models of a query together), the same draw for
  raw and calibrated, every seed and every method (seeded multinomial counts of the queries; ECE per
  resample by :func:`locus.calibration.ece_resampled`). Writes the table (LaTeX + CSV) and the
  reliability diagram (PDF + PNG + CSV of the plotted bins, seeds pooled).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from locus import calibration, run_artifacts
from locus.errors import ConfigError, DataError
from locus.experiments.bootstrap import Settings

METRICS = ("ece", "brier", "log_loss")
METRIC_LABELS = {"ece": "ECE", "brier": "Brier", "log_loss": "Log-loss"}
CSV_COLUMNS = [
    "method",
    "label",
    "metric",
    "raw",
    "calibrated",
    "diff",
    "ci_low",
    "ci_high",
    "train_size",
    "n_seeds",
    "seeds",
    "maps",
    "n_test_queries",
    "n_test_pairs",
    "bins",
    "n_resamples",
    "boot_seed",
    "confidence",
]
POINT_COLUMNS = ["method", "label", "kind", "bin", "mean_prob", "frac_correct", "count"]


def _split_matrix(run_dir, data, data_dir, fingerprint: str, split: str):
    """(logits, labels) [split queries x the run's models] of one run; labels NaN where not evaluated."""
    metrics = run_artifacts.read_metrics(run_dir)
    run_artifacts.check_same_data(
        run_dir, metrics.get("data_fingerprint"), fingerprint, data_dir, "pass the run's own data set with --data"
    )
    prompt_ids, model_ids, logits = run_artifacts.read_scores(run_dir, split)
    ids = data.split_queries(split)["prompt_id"].to_numpy(np.int64)
    scores = Path(run_dir) / run_artifacts.scores_file(split)
    if not np.array_equal(prompt_ids, np.sort(ids)):
        raise DataError(
            f"{scores}: its {len(prompt_ids)} scored queries are not the {len(ids)} {split} queries of "
            f"{data_dir}; pass the run's own data set with --data, or re-run training"
        )
    unknown = ~np.isin(model_ids, data.model_ids)
    if unknown.any():
        raise DataError(
            f"{scores}: model ids {model_ids[unknown][:5].tolist()} are not in {data_dir}; pass the run's own "
            f"data set with --data"
        )
    return prompt_ids, logits.astype(np.float64), data.label_matrix(prompt_ids, model_ids)


def _pairs(logits, labels):
    """Labelled pairs of a [queries x models] split: (logits, correct in {0, 1}, query row index)."""
    mask = ~np.isnan(labels)
    rows = np.nonzero(mask)[0]
    return logits[mask], (labels[mask] >= 0.5).astype(np.float64), rows


def _data(data_dir):
    from locus.data.canonical import read_dataset
    from locus.data.encodings import data_fingerprint

    data = read_dataset(data_dir)
    return data, data_fingerprint(data.queries["prompt_id"], data.queries["prompt"])


def _data_dir(run_dir, data_dir):
    """`data_dir`, else the data set directory the run records (``dataset`` in metrics.json)."""
    if data_dir is not None:
        return Path(data_dir)
    recorded = run_artifacts.read_metrics(run_dir).get("dataset")
    if not isinstance(recorded, str) or not Path(recorded).is_dir():
        raise DataError(
            f"{Path(run_dir) / run_artifacts.METRICS}: the data set it records ({recorded!r}) is not a "
            f"directory here; pass the run's canonical data set with --data"
        )
    return Path(recorded)


def calibrate_run(run_dir, data_dir=None, out=None, progress=print) -> tuple[calibration.Calibration, dict, Path]:
    """Fit the calibration of run `run_dir` on its validation pairs and write it to `out` (default
    ``RUN/calibration.json``); returns (map, fit report, path)."""
    run_dir = Path(run_dir)
    data_dir = _data_dir(run_dir, data_dir)
    data, fingerprint = _data(data_dir)
    identity = run_artifacts.run_identity(run_dir)
    prompt_ids, logits, labels = _split_matrix(run_dir, data, data_dir, fingerprint, "val")
    x, y, rows = _pairs(logits, labels)
    if x.size == 0:
        raise DataError(
            f"{data_dir}: no labelled validation pairs for the models of {run_dir}; calibration is fitted on "
            f"validation only: use a data set with a val split"
        )
    cal, report = calibration.fit(x, y, groups=prompt_ids[rows])
    raw, fitted = calibration.sigmoid(x), cal.probabilities(x)
    report["val_in_sample"] = {  # on the fitting pairs themselves: optimistic for the calibrated map
        kind: {"ece": calibration.ece(p, y), "brier": calibration.brier(p, y), "log_loss": calibration.log_loss(p, y)}
        for kind, p in (("raw", raw), ("calibrated", fitted))
    }
    report["data"] = str(data_dir)
    out = run_dir / run_artifacts.calibration_file if out is None else Path(out)
    calibration.save(cal, out, identity, report)
    cv = ", ".join(f"{k} {v:.4f}" for k, v in report["cv_log_loss"].items())
    progress(f"{run_dir}: {cal.kind} ({x.size} validation pairs; cross-validated log-loss: {cv or 'not fitted'})")
    return cal, report, out


# ----------------------------------------------------------------------------------------------
# the report
# ----------------------------------------------------------------------------------------------
@dataclass
class _Run:
    method: str
    seed: int
    train_size: int
    kind: str
    y: np.ndarray
    rows: np.ndarray
    probs: dict  # "raw" / "calibrated" -> probabilities of the labelled test pairs


def _load_runs(runs, data, data_dir, fingerprint) -> tuple[list[_Run], np.ndarray]:
    out, test_ids = [], None
    for run_dir in runs:
        run_dir = Path(run_dir)
        metrics = run_artifacts.read_metrics(run_dir)
        cal = run_artifacts.read_calibration(run_dir)
        if cal is None:
            raise DataError(
                f"{run_dir / run_artifacts.calibration_file}: missing; run `locus calibrate --run {run_dir}` first"
            )
        ids, logits, labels = _split_matrix(run_dir, data, data_dir, fingerprint, "test")
        test_ids = ids if test_ids is None else test_ids
        x, y, rows = _pairs(logits, labels)
        probs = {"raw": calibration.sigmoid(x), "calibrated": cal.probabilities(x)}
        out.append(
            _Run(str(metrics["method"]), int(metrics["seed"]), int(metrics["train_size"]), cal.kind, y, rows, probs)
        )
    return out, test_ids


def _resample_counts(n_queries: int, settings: Settings) -> np.ndarray:
    """[resamples x queries] multiplicity of each test query in each resample (seeded)."""
    rng = np.random.default_rng(settings.seed)
    return rng.multinomial(n_queries, np.full(n_queries, 1.0 / n_queries), size=int(settings.n_resamples))


def _run_values(r: _Run, kind: str, counts: np.ndarray, n_queries: int, bins: int) -> dict:
    """Per metric: (value on the test pairs, value under every resample of `counts`)."""
    p, y = r.probs[kind], r.y
    eps = calibration.EPS
    pc = np.clip(p, eps, 1 - eps)
    losses = {"brier": (p - y) ** 2, "log_loss": -(y * np.log(pc) + (1 - y) * np.log1p(-pc))}
    per_query_n = np.bincount(r.rows, minlength=n_queries).astype(np.float64)
    out = {}
    for m, loss in losses.items():
        per_query = np.bincount(r.rows, weights=loss, minlength=n_queries)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[m] = (float(loss.mean()), (counts @ per_query) / (counts @ per_query_n))
    boot = calibration.ece_resampled(p, y, r.rows, counts, bins)
    out["ece"] = (calibration.ece(p, y, bins), boot)
    return out


def measure(runs, data_dir, methods=None, bins: int = calibration.BINS, settings: Settings = Settings()):
    """(table frame :data:`CSV_COLUMNS`, reliability points :data:`POINT_COLUMNS`) of run directories
    `runs` (one training size; every run calibrated) on the test split of `data_dir`."""
    if not runs:
        raise DataError("no runs given: pass --runs results/runs/.../s<seed> ...")
    data, fingerprint = _data(data_dir)
    loaded, test_ids = _load_runs(runs, data, data_dir, fingerprint)
    sizes = sorted({r.train_size for r in loaded})
    if len(sizes) != 1:
        raise DataError(f"--runs: runs of training sizes {sizes}; the calibration report compares one size")
    from locus.render.labels import plain_label, sort_key

    present = {r.method for r in loaded}
    if methods:
        absent = [m for m in methods if m not in present]
        if absent:
            raise DataError(f"--methods: no runs of {', '.join(absent)} (present: {', '.join(sorted(present))})")
        order = list(dict.fromkeys(methods))
    else:
        order = sorted(present, key=sort_key)
    n_queries = len(test_ids)
    counts = _resample_counts(n_queries, settings).astype(np.float64)
    alpha = (1 - settings.confidence) / 2
    rows, points = [], []
    for method in order:
        group = sorted((r for r in loaded if r.method == method), key=lambda r: r.seed)
        values = {k: [_run_values(r, k, counts, n_queries, bins) for r in group] for k in ("raw", "calibrated")}
        for m in METRICS:
            raw = float(np.mean([v[m][0] for v in values["raw"]]))
            cal = float(np.mean([v[m][0] for v in values["calibrated"]]))
            boot = np.mean([c[m][1] - r_[m][1] for c, r_ in zip(values["calibrated"], values["raw"])], axis=0)
            finite = boot[np.isfinite(boot)]
            low, high = np.quantile(finite, [alpha, 1 - alpha]) if finite.size else (math.nan, math.nan)
            rows.append(
                {
                    "method": method,
                    "label": plain_label(method),
                    "metric": m,
                    "raw": raw,
                    "calibrated": cal,
                    "diff": cal - raw,
                    "ci_low": float(low),
                    "ci_high": float(high),
                    "train_size": sizes[0],
                    "n_seeds": len(group),
                    "seeds": " ".join(str(r.seed) for r in group),
                    "maps": " ".join(r.kind for r in group),
                    "n_test_queries": n_queries,
                    "n_test_pairs": int(np.mean([r.y.size for r in group])),
                    "bins": int(bins),
                    "n_resamples": int(settings.n_resamples),
                    "boot_seed": int(settings.seed),
                    "confidence": float(settings.confidence),
                }
            )
        y = np.concatenate([r.y for r in group])
        for kind in ("raw", "calibrated"):
            table = calibration.reliability(np.concatenate([r.probs[kind] for r in group]), y, bins)
            points += [
                {"method": method, "label": plain_label(method), "kind": kind, **t} for t in table.to_dict("records")
            ]
    return pd.DataFrame(rows, columns=CSV_COLUMNS), pd.DataFrame(points, columns=POINT_COLUMNS)


def _caption(frame: pd.DataFrame, data_label: str) -> str:
    from locus.render.labels import escape

    r0 = frame.iloc[0]
    seeds = sorted({s for v in frame["seeds"] for s in str(v).split()}, key=int)
    maps = {}
    for v in frame.drop_duplicates("method")["maps"]:
        for k in str(v).split():
            maps[k] = maps.get(k, 0) + 1
    chosen = ", ".join(f"{k} {n}" for k, n in sorted(maps.items()))
    return (
        f"\\textbf{{Calibration of the correctness probabilities}} on the test split of {escape(data_label)}: "
        f"raw = sigmoid of the run's logit, cal.\\ = the run's calibration map, fitted on its validation pairs "
        f"only (identity, temperature scaling or isotonic regression, chosen by "
        f"{calibration.CV_FOLDS}-fold cross-validated log-loss over validation queries; maps chosen, in runs: "
        f"{escape(chosen)}). $n={int(r0['train_size']):,}$ training queries per model; means over seed(s) "
        f"{', '.join(seeds)}; {int(r0['n_test_queries']):,} test queries. ECE over {int(r0['bins'])} equal-mass "
        f"bins; Brier and log-loss over the labelled test pairs (lower is better for all three). "
        f"$\\Delta$ = cal.\\ $-$ raw with its {100 * float(r0['confidence']):g}\\% paired percentile bootstrap "
        f"interval over test queries (all models of a query resampled together; {int(r0['n_resamples'])} "
        f"resamples, seed {int(r0['boot_seed'])})."
    )


def latex_table(frame: pd.DataFrame, data_label: str) -> str:
    from locus.render.labels import latex_label

    head = " & ".join(f"\\multicolumn{{3}}{{c}}{{{METRIC_LABELS[m]}}}" for m in METRICS)
    rules = " ".join(f"\\cmidrule(lr){{{2 + 3 * i}-{4 + 3 * i}}}" for i in range(len(METRICS)))
    lines = [
        "% generated by `locus calibration-report`; needs \\usepackage{booktabs}",
        "\\begin{table*}[t]",
        "\\centering",
        f"\\caption{{{_caption(frame, data_label)}}}",
        "\\label{tab:calibration}",
        "\\small",
        "\\setlength{\\tabcolsep}{4pt}",
        "\\begin{tabular}{@{}l" + "ccc" * len(METRICS) + "@{}}",
        "\\toprule",
        f"Method & {head} \\\\",
        rules,
        " & " + " & ".join(["raw & cal. & $\\Delta$ [CI]"] * len(METRICS)) + " \\\\",
        "\\midrule",
    ]
    for method, group in frame.groupby("method", sort=False):
        cells = []
        for m in METRICS:
            r = group[group["metric"] == m].iloc[0]
            cells.append(
                f"{r['raw']:.3f} & {r['calibrated']:.3f} & {r['diff']:+.3f} [{r['ci_low']:+.3f}, {r['ci_high']:+.3f}]"
            )
        lines.append(f"{latex_label(method)} & " + " & ".join(cells) + " \\\\")
    lines += ["\\bottomrule", "\\end{tabular}", "\\end{table*}", ""]
    return "\n".join(lines)


def reliability_figure(points: pd.DataFrame, frame: pd.DataFrame, data_label: str):
    """One panel per method: frac correct vs mean predicted probability per equal-mass bin, raw and
    calibrated, with the diagonal of perfect calibration."""
    from locus.render.figures import plt
    from locus.render.labels import color

    methods = list(dict.fromkeys(points["method"]))
    ncols = min(3, len(methods))
    nrows = math.ceil(len(methods) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.3 * ncols, 3.3 * nrows), squeeze=False)
    for ax, method in zip(axes.ravel(), methods):
        ece = frame[(frame["method"] == method) & (frame["metric"] == "ece")].iloc[0]
        ax.plot([0, 1], [0, 1], ls="--", lw=0.8, color="0.5", label="perfect calibration")
        for kind, style in (
            ("raw", {"color": "black", "marker": "o", "mfc": "none", "ls": ":"}),
            ("calibrated", {"marker": "s"}),
        ):
            sel = points[(points["method"] == method) & (points["kind"] == kind)]
            if kind == "calibrated":
                style["color"] = color(method) or "C0"
            name = f"calibrated: {', '.join(dict.fromkeys(str(ece['maps']).split()))}" if kind == "calibrated" else kind
            ax.plot(
                sel["mean_prob"], sel["frac_correct"], ms=3.5, lw=1.2, **style, label=f"{name} (ECE {ece[kind]:.3f})"
            )
        ax.set(xlim=(0, 1), ylim=(0, 1), aspect="equal", title=str(sel["label"].iloc[0]))
        ax.set_xlabel("mean predicted P(correct)", fontsize=8)
        ax.set_ylabel("fraction correct", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.legend(fontsize=6.5, loc="best")
    for ax in axes.ravel()[len(methods) :]:
        ax.set_visible(False)
    r0 = frame.iloc[0]
    fig.suptitle(
        f"Reliability on the test split, {data_label}: n = {int(r0['train_size'])}, {int(r0['bins'])} equal-mass "
        f"bins, seeds pooled; maps fitted on validation only",
        fontsize=9,
    )
    fig.tight_layout()
    return fig


def write(
    runs,
    data_dir,
    out_table,
    out_figure,
    methods=None,
    data_label: str | None = None,
    bins: int = calibration.BINS,
    settings: Settings = Settings(),
):
    """Measure `runs` and write OUT.tex + OUT.csv and FIGURE.pdf + .png + .csv; returns the two frames."""
    from locus.atomic import write_text
    from locus.outputs import check_outputs
    from locus.render import write_csv
    from locus.render.figures import output_paths, save_figure

    out_table = Path(out_table)
    fig_paths = output_paths(out_figure)
    if out_table.with_suffix(".csv").resolve() == fig_paths["csv"].resolve():
        raise ConfigError(
            f"--out {out_table} and --figure {out_figure} would both write {fig_paths['csv']}; give them different names"
        )
    check_outputs([out_table, out_table.with_suffix(".csv"), fig_paths["pdf"], fig_paths["png"], fig_paths["csv"]])
    frame, points = measure(runs, data_dir, methods, bins, settings)
    label = data_label or Path(data_dir).name
    write_text(out_table, latex_table(frame, label))
    write_csv(frame, out_table.with_suffix(".csv"))
    save_figure(reliability_figure(points, frame, label), fig_paths["pdf"])
    write_csv(points, fig_paths["csv"])
    return frame, points
