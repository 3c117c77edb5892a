"""Time complexity of LOCUS (paper appendix G, ``fig:time_complexity_locus``): ``locus bench
--time-complexity OUT.pdf`` and the workflow's ``time_complexity_figure`` rule.

Two series are timed with the harness of :mod:`locus.benchmark` (random inputs of the paper's shape, the
network built from LOCUS's parameters, one device; a cold call reported apart, then ``repeat`` warm calls):

- ``embed``: embedding ``n_models`` models in one call (:meth:`LocusMethod._embed_sets`, as after training)
  from ``n`` evaluations each (all scored on the same ``n`` random queries), per pool size x evaluation count;
- ``predict``: the correctness logits of ``n`` unseen queries x the largest pool
  (:meth:`LocusMethod._grid_logits`), random model embeddings (the cost does not depend on their values).

Each series is measured in every precision asked for (LOCUS's ``precision``: ``float32`` or ``bfloat16``
autocast, drawn dashed; its accuracy effect: :mod:`locus.experiments.precision_effect`). :func:`build_frame`
(pure) adds the FLOPs, device, threads and torch version, and the reference points: the paper's V100 numbers
(:data:`locus.benchmark.PAPER`) and this implementation's CPU targets (:data:`TARGETS`).
"""

from __future__ import annotations

import math

import pandas as pd

from locus.errors import ConfigError, DataError
from locus.methods.locus_method import PRECISIONS  # the method's `precision` values
from locus.provenance import cpu_model, native_bfloat16

DEFAULT_POOL_SIZES = (16, 56, 112)
DEFAULT_EVAL_SIZES = (64, 256, 1024, 4096)
DEFAULT_QUERY_SIZES = (256, 1024, 4096)
# the paper's headline shape: the whole EmbedLLM pool, 4,096 evaluations per model / unseen queries
REFERENCE_MODELS, REFERENCE_N = 112, 4096
# this implementation's goals on 2 CPU cores (2 torch threads), seconds, at the reference shape
TARGETS = {"embed": 2.5, "predict": 0.05}
WHAT = ("embed", "predict")
# when to time bfloat16 on a CPU: only where the CPU has it in hardware (else it is emulated, several times
# slower than float32, and says nothing about the option's use), or always
BFLOAT16_ON_CPU = ("native", "always")

CSV_COLUMNS = [
    "source",
    "what",
    "precision",
    "n_models",
    "n",
    "median_s",
    "min_s",
    "max_s",
    "cold_s",
    "repeats",
    "gflop",
    "gflop_s",
    "device",
    "device_name",
    "cpu_model",
    "threads",
    "torch",
    "bfloat16",
    "label",
]


# --------------------------------------------------------------------------------------------------
# measurements -> the plotted frame (pure)
# --------------------------------------------------------------------------------------------------
def reference_rows() -> list[dict]:
    """The paper's V100 points and this implementation's 2-core CPU targets (112 models x 4,096)."""
    from locus.benchmark import PAPER

    rows = []
    for what in WHAT:
        rows.append(
            {
                "source": "paper",
                "what": what,
                "precision": "",
                "n_models": REFERENCE_MODELS,
                "n": REFERENCE_N,
                "median_s": float(PAPER[what]),
                "device": "cuda",
                "device_name": "NVIDIA Tesla V100 (paper)",
                "label": f"paper, V100: ≈{PAPER[what]:g} s",
            }
        )
        rows.append(
            {
                "source": "target",
                "what": what,
                "precision": "",
                "n_models": REFERENCE_MODELS,
                "n": REFERENCE_N,
                "median_s": float(TARGETS[what]),
                "device": "cpu",
                "device_name": "2 CPU cores",
                "threads": 2,
                "label": f"target, 2 CPU cores: ≤ {TARGETS[what]:g} s",
            }
        )
    return rows


def _check(m: dict, i: int) -> None:
    where = f"time complexity measurement {i} ({m.get('what')!r}, {m.get('n_models')} models, n = {m.get('n')})"
    if m.get("what") not in WHAT:
        raise DataError(f"{where}: 'what' must be one of {list(WHAT)}")
    if m.get("precision", "float32") not in PRECISIONS:
        raise DataError(f"{where}: 'precision' must be one of {list(PRECISIONS)}, got {m.get('precision')!r}")
    for key in ("n_models", "n", "repeats"):
        if int(m.get(key, 0)) < 1:
            raise DataError(f"{where}: {key} must be >= 1, got {m.get(key)}")
    times = [m.get(k) for k in ("min_s", "median_s", "max_s")]
    if not all(isinstance(t, (int, float)) and math.isfinite(t) and t > 0 for t in times):
        raise DataError(f"{where}: min_s, median_s and max_s must be positive seconds, got {times}")
    if not times[0] <= times[1] <= times[2]:
        raise DataError(f"{where}: expected min_s <= median_s <= max_s, got {times}")


def build_frame(measurements: list[dict], params: dict, meta: dict) -> pd.DataFrame:
    """One row per measured point (``source`` = measured) then the reference rows (:func:`reference_rows`).

    `measurements`: dicts with ``what`` (embed | predict), ``precision`` (default float32), ``n_models``, ``n`` (evaluations per model, or
    unseen queries), ``median_s``, ``min_s``, ``max_s``, ``cold_s``, ``repeats``; `params`: LOCUS's
    parameters (for the FLOPs: :func:`locus.benchmark.embed_flops` with every model scored on the same ``n``
    queries, :func:`locus.benchmark.predict_grid_flops`); `meta`: ``device``, ``device_name``, ``threads``,
    ``torch`` (and optionally ``cpu_model``). Measured rows are sorted by what, pool size, n; a repeated
    point is refused."""
    from locus.benchmark import embed_flops, predict_grid_flops

    if not measurements:
        raise DataError("time complexity: no measurements; give at least one pool size, evaluation size and query size")
    rows, seen = [], set()
    for i, m in enumerate(measurements):
        _check(m, i)
        what, n_models, n = m["what"], int(m["n_models"]), int(m["n"])
        precision = m.get("precision", "float32")
        if (what, n_models, n, precision) in seen:
            raise DataError(f"time complexity: {what} of {n_models} models at n = {n} in {precision} measured twice")
        seen.add((what, n_models, n, precision))
        suffix = "" if precision == "float32" else f", {precision}"
        flops = embed_flops(n_models, n, n, params) if what == "embed" else predict_grid_flops(n, n_models, params)
        rows.append(
            {
                "source": "measured",
                "what": what,
                "precision": precision,
                "n_models": n_models,
                "n": n,
                "median_s": float(m["median_s"]),
                "min_s": float(m["min_s"]),
                "max_s": float(m["max_s"]),
                "cold_s": float(m["cold_s"]) if m.get("cold_s") is not None else math.nan,
                "repeats": int(m["repeats"]),
                "gflop": flops / 1e9,
                "gflop_s": flops / 1e9 / float(m["median_s"]),
                "device": meta["device"],
                "device_name": meta["device_name"],
                "cpu_model": meta.get("cpu_model", ""),
                "threads": int(meta["threads"]),
                "torch": meta["torch"],
                "bfloat16": meta.get("bfloat16", ""),
                "label": (f"{n_models} models" if what == "embed" else f"{n_models} models (whole pool)") + suffix,
            }
        )
    order = {p: i for i, p in enumerate(PRECISIONS)}
    measured = pd.DataFrame(rows).sort_values(
        ["what", "precision", "n_models", "n"],
        kind="stable",
        key=lambda c: c.map(order) if c.name == "precision" else c,
    )
    frame = pd.concat([measured, pd.DataFrame(reference_rows())], ignore_index=True).reindex(columns=CSV_COLUMNS)
    return frame.astype({key: "Int64" for key in ("n_models", "n", "repeats", "threads")})


def headline(frame: pd.DataFrame) -> dict:
    """Per what and measured precision (keys ``what`` for float32, ``what/bfloat16`` otherwise): the measured
    point at the reference shape (112 models x 4,096) with the paper's number and the target, or None where
    that point was not measured (float32) ."""
    out = {}
    measured_precisions = [p for p in PRECISIONS if p in set(frame["precision"])] or ["float32"]
    for what in WHAT:
        at = frame[(frame["what"] == what) & (frame["n_models"] == REFERENCE_MODELS) & (frame["n"] == REFERENCE_N)]
        ref = {s: float(at.loc[at["source"] == s, "median_s"].iloc[0]) for s in ("paper", "target")}
        for precision in measured_precisions:
            key = what if precision == "float32" else f"{what}/{precision}"
            measured = at[(at["source"] == "measured") & (at["precision"] == precision)]
            out[key] = None if measured.empty else _headline_row(measured.iloc[0], ref)
    return out


def _headline_row(row, ref: dict) -> dict:
    return {
        "median_s": float(row["median_s"]),
        "min_s": float(row["min_s"]),
        "max_s": float(row["max_s"]),
        "device": row["device"],
        "device_name": row["device_name"],
        "cpu_model": row["cpu_model"],
        "threads": int(row["threads"]),
        "precision": row["precision"],
        "paper_s": ref["paper"],
        "target_s": ref["target"],
        "meets_target": bool(row["median_s"] <= ref["target"]),
    }


def report_lines(frame: pd.DataFrame) -> list[str]:
    lines = []
    measured = frame[frame["source"] == "measured"]
    for r in measured.itertuples():
        shape = (
            f"embed {r.n_models} models x {r.n:,} evaluations"
            if r.what == "embed"
            else f"predict {r.n:,} queries x {r.n_models} models"
        ) + f" ({r.precision})"
        lines.append(
            f"  {shape}: median {r.median_s:.4f} s [{r.min_s:.4f}-{r.max_s:.4f}], cold {r.cold_s:.4f} s, "
            f"{r.gflop:.2f} GFLOP, {r.gflop_s:.1f} GFLOP/s"
        )
    for what, h in headline(frame).items():
        if h is None:
            lines.append(
                f"{what} at {REFERENCE_MODELS} models x {REFERENCE_N:,}: not measured (add the sizes to "
                "compare with the paper and the target)"
            )
        else:
            verdict = "meets" if h["meets_target"] else "misses"
            where = h["device_name"]
            if str(h["device"]).startswith("cpu") and isinstance(h["cpu_model"], str) and h["cpu_model"]:
                where = h["cpu_model"]
            lines.append(
                f"{what} at {REFERENCE_MODELS} models x {REFERENCE_N:,} ({h['precision']}): median "
                f"{h['median_s']:.3f} s on "
                f"{where} ({h['threads']} threads); {verdict} the target of <= {h['target_s']:g} s "
                f"on 2 CPU cores; paper ≈{h['paper_s']:g} s on a V100"
            )
    return lines


# --------------------------------------------------------------------------------------------------
# measuring
# --------------------------------------------------------------------------------------------------
def measure_points(
    pool_sizes,
    eval_sizes,
    query_sizes,
    repeat: int = 3,
    device: str = "cpu",
    params: dict | None = None,
    progress=None,
    precisions=("float32",),
    bfloat16_on_cpu: str = "native",
) -> tuple[list[dict], dict, dict]:
    """Time every point in every precision (see the module docstring); on a CPU without bfloat16 in hardware,
    bfloat16 only with `bfloat16_on_cpu` = ``always``. Returns (measurements, LOCUS's parameters, meta;
    ``meta["bfloat16"]``: native, emulated, or skipped with the reason)."""
    from functools import partial

    import numpy as np
    import torch

    from locus.benchmark import D_PHI, _Locus, device_name, measure, random_inputs

    say = progress or (lambda text: None)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    lm = _Locus(device, params)  # refuses unknown or bad parameters before anything is timed
    meta = {
        "device": str(device),
        "device_name": device_name(torch, device),
        "cpu_model": cpu_model(),
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
    }
    say(
        f"time complexity on {meta['device_name']} ({meta['device']}; CPU {meta['cpu_model']}; {meta['threads']} "
        f"thread(s), torch {meta['torch']}): cold call, then the median of {repeat} warm call(s) per point"
    )
    out = []
    bad = [p for p in precisions if p not in PRECISIONS]
    if bad or not precisions:
        raise ConfigError(f"precisions {list(precisions)}: expected one or more of {list(PRECISIONS)}")
    if bfloat16_on_cpu not in BFLOAT16_ON_CPU:
        raise ConfigError(f"bfloat16_on_cpu {bfloat16_on_cpu!r}: expected one of {list(BFLOAT16_ON_CPU)}")
    meta["bfloat16"] = "native"
    if str(device).startswith("cpu") and not native_bfloat16():
        meta["bfloat16"] = "emulated"
        if "bfloat16" in precisions and bfloat16_on_cpu == "native":
            precisions = [p for p in precisions if p != "bfloat16"]
            meta["bfloat16"] = "not timed: no bfloat16 in this CPU's hardware (emulated, it says nothing of the option)"
            say(f"  bfloat16 {meta['bfloat16']}; --bfloat16-on-cpu always times it anyway")
        if not precisions:
            raise ConfigError(
                "precisions [bfloat16] on a CPU without bfloat16 in hardware: nothing to time; add float32 or "
                "pass --bfloat16-on-cpu always"
            )

    def add(what, n_models, n, timing, precision):
        out.append({"what": what, "precision": precision, "n_models": n_models, "n": n, **timing})
        say(f"  {what} {n_models} models, n = {n:,} ({precision}): median {timing['median_s']:.4f} s")

    for m in sorted(pool_sizes):
        for n in sorted(eval_sizes):
            phi, pairs = random_inputs(torch, n, m, device, rng)
            sets = lm.sets(pairs, m)
            for precision in precisions:
                lm.method.params = lm.method.params.replace(precision=precision)
                add("embed", m, n, measure(partial(lm.embed_all, phi, sets), repeat, device), precision)
            del phi, pairs, sets
    m = max(pool_sizes)
    z = torch.from_numpy(rng.normal(size=(m, int(lm.p["dim"]))).astype(np.float32)).to(device)
    for q in sorted(query_sizes):
        queries = torch.from_numpy(rng.normal(size=(q, D_PHI)).astype(np.float32)).to(device)
        queries /= queries.norm(dim=1, keepdim=True)
        for precision in precisions:
            lm.method.params = lm.method.params.replace(precision=precision)
            add("predict", m, q, measure(partial(lm.predict, z, queries), repeat, device), precision)
    lm.method.params = lm.method.params.replace(precision=lm.p["precision"])
    return out, lm.p, meta


def run(
    out,
    pool_sizes=DEFAULT_POOL_SIZES,
    eval_sizes=DEFAULT_EVAL_SIZES,
    query_sizes=DEFAULT_QUERY_SIZES,
    repeat: int = 3,
    device: str = "cpu",
    threads: int = 2,
    params_json: str = "{}",
    progress=print,
    precisions=("float32",),
    bfloat16_on_cpu: str = "native",
) -> pd.DataFrame:
    """Measure, then write ``<stem>.pdf/.png/.csv`` of `out` (the CSV = the plotted frame). Output paths and
    parameters are checked before anything is timed."""
    from locus.outputs import check_outputs
    from locus.params import method_params, set_threads
    from locus.render import write_csv
    from locus.render.figures import output_paths, save_figure
    from locus.render.time_complexity import time_complexity_figure

    paths = output_paths(out)
    check_outputs([paths[k] for k in ("pdf", "png", "csv")])
    params = method_params("locus", params_json)
    set_threads(threads)
    measurements, p, meta = measure_points(
        pool_sizes, eval_sizes, query_sizes, repeat, device, params, progress, precisions, bfloat16_on_cpu
    )
    frame = build_frame(measurements, p, meta)
    save_figure(time_complexity_figure(frame), paths["pdf"])
    write_csv(frame, paths["csv"])
    for line in report_lines(frame):
        progress(line)
    return frame
