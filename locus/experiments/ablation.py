"""Ablation tables of one method (LOCUS; paper appendices "Ablation on choice of Sentence Encoder" and
"Ablation on Embedding Dimension"): the by-dataset layout of :mod:`locus.experiments.tables` whose row
groups are *settings* of the method instead of methods.

Kinds (``locus table KIND``): ``dim-ablation-routing`` / ``dim-ablation-correctness`` (rows = embedding
dimension d × training size, one query encoder; ``tab:routing_acc_by_dataset_full_embed_dim_ablation`` /
``tab:correctness_pred_by_dataset_full_emb_dim_ablation``) and ``encoder-ablation-routing`` /
``encoder-ablation-correctness`` (rows = query encoder × training size at one d;
``tab:routing_acc_by_dataset_full_encoder_ablation`` / ``tab:correctness_pred_by_dataset_full_encoder_ablation``).

The runs are ordinary run directories; each run's ``method`` is relabelled to its setting key
(:func:`setting_key`: ``d32`` or the encoder's name), so the by-dataset tables' aggregation, paired
bootstrap (differences to the *reference setting*, labelled "(default)") and rendering do the rest: among
them, a setting whose router is near-constant is not ranked and its row reads "inconclusive
(near-constant)" (CSV ``comparison_status``), and the benchmark columns' marks use Holm's correction and a
minimum of test queries (:mod:`locus.experiments.tables`). The
comparability checks stay, and only the encoder ablation may mix encoders. Like the paper's ablation
tables, these have no Oracle / Random rows.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from locus.constants import ABLATION_KINDS
from locus.errors import DataError
from locus.experiments import bootstrap, tables
from locus.experiments.comparison import OVERALL, Collection, Run, collect_runs, load_metrics, query_values
from locus.outputs import check_outputs
from locus.render import labels, write_csv
from locus.render.labels import escape

KINDS = ABLATION_KINDS
BY = {k: k.split("-", 1)[0] for k in KINDS}  # "dim" | "encoder"
LAYOUT = {k: "routing-by-dataset" if k.endswith("routing") else "correctness-by-dataset" for k in KINDS}
METRIC = {k: "routing_acc" if k.endswith("routing") else "correctness_acc" for k in KINDS}
LABELS = {
    "dim-ablation-routing": "tab:routing_acc_by_dataset_full_embed_dim_ablation",
    "dim-ablation-correctness": "tab:correctness_pred_by_dataset_full_emb_dim_ablation",
    "encoder-ablation-routing": "tab:routing_acc_by_dataset_full_encoder_ablation",
    "encoder-ablation-correctness": "tab:correctness_pred_by_dataset_full_encoder_ablation",
}
HEADINGS = {"dim": "Model Embedding Dimension", "encoder": "Sentence Encoder"}
WHAT = {
    "routing_acc": "Overall and per-benchmark routing accuracy (\\%)",
    "correctness_acc": "Overall and per-benchmark correctness prediction accuracy (\\%)",
}
DEFAULT = " (default)"
# the paper's ablation grids (appendices C and D; config/paper.yaml runs them): the grid sentence of each
# caption states how much of it a run covered
PAPER_GRID = {
    "dim": {"settings": [16, 32, 64, 128, 256, 512], "sizes": [256, 512, 1024]},
    "encoder": {
        "settings": ["all-mpnet-base-v2", "paraphrase-albert-small-v2", "all-MiniLM-L6-v2", "all-distilroberta-v1"],
        "sizes": [256, 512, 1024],
    },
}
GRID_NOUNS = {"dim": ("embedding dimension", "embedding dimensions"), "encoder": ("encoder", "encoders")}


def _values(by: str, values) -> str:
    shown = [f"\\texttt{{{escape(str(v))}}}" if by == "encoder" else str(v) for v in values]
    return "\\{" + ", ".join(shown) + "\\}"


def grid_sentence(by: str, settings, sizes) -> str:
    """The caption's statement of the grid that ran (the `settings` and training `sizes` of the runs read)
    against the paper's (:data:`PAPER_GRID`): "Grid run: $d$ in {32, 128} x n in {256}: 2 of the paper's 6
    embedding dimensions {16, ..., 512} and 1 of its 3 training sizes {256, 512, 1024}."."""
    paper = PAPER_GRID[by]
    settings = sorted(settings) if by == "dim" else list(settings)
    sizes = sorted(int(n) for n in sizes)
    one, many = GRID_NOUNS[by]
    symbol = "$d$" if by == "dim" else "encoder"
    in_paper = [v for v in settings if v in paper["settings"]]
    sizes_in_paper = [n for n in sizes if n in paper["sizes"]]
    extra = len(settings) - len(in_paper)
    text = (
        f"Grid run: {symbol} $\\in$ {_values(by, settings)} $\\times$ $n$ $\\in$ {_values('dim', sizes)} "
        f"training evaluations per model: {len(in_paper)} of the paper's {len(paper['settings'])} {many} "
        f"{_values(by, paper['settings'])}"
        + (f" (and {extra} {one if extra == 1 else many} outside it)" if extra else "")
        + f" and {len(sizes_in_paper)} of its {len(paper['sizes'])} training sizes {_values('dim', paper['sizes'])}"
    )
    if len(in_paper) < len(paper["settings"]) or len(sizes_in_paper) < len(paper["sizes"]):
        text += "; the paper's whole grid: \\texttt{--configfile config/paper.yaml}"
    return text + "."


def parse_setting(by: str, text) -> int | str:
    """A setting as given on the command line: a dimension (positive integer) or an encoder name."""
    if by == "encoder":
        name = str(text).strip()
        if not name:
            raise DataError("empty encoder name among the ablation settings")
        return name
    try:
        value = int(str(text).strip().removeprefix("d"))
    except ValueError:
        raise DataError(f"embedding dimension {text!r} is not an integer (e.g. 128)") from None
    if value < 1:
        raise DataError(f"embedding dimension must be >= 1, got {value}")
    return value


def setting_key(by: str, value) -> str:
    """The row key standing in for the method: ``d{dim}`` or the encoder's name."""
    return f"d{int(value)}" if by == "dim" else str(value)


def setting_value(run: Run, by: str) -> int | str:
    """The ablated setting of a run: its embedding dimension (``params.dim``) or its query encoder."""
    if by == "encoder":
        return str(run.metrics["encoder"])
    dim = (run.metrics.get("params") or {}).get("dim")
    try:
        value = int(dim)
    except (TypeError, ValueError):
        value = 0
    if value < 1 or value != dim:
        raise DataError(
            f"{run.path}: no embedding dimension recorded (params.dim = {dim!r}); the dimension "
            f"ablation compares runs of an embedding method (LOCUS) at several --dim"
        )
    return value


def setting_labels(by: str, value, reference) -> tuple[str, str]:
    """(LaTeX, plain) row label of a setting; the reference setting is marked "(default)" as in the paper."""
    mark = DEFAULT if value == reference else ""
    if by == "dim":
        return f"{int(value)}{mark}", f"{int(value)}{mark}"
    return f"\\texttt{{{escape(value)}}}{mark}", f"{value}{mark}"


def select_method(runs: list[Run], method: str | None = None) -> tuple[list[Run], str]:
    """The runs of the ablated method: `method` when given, else the only method of the runs."""
    present = sorted({r.method for r in runs})
    if method is not None:
        chosen = [r for r in runs if r.method == method]
        if not chosen:
            raise DataError(
                f"no metrics for method {method!r} among the {len(runs)} metrics files (present: "
                f"{', '.join(present)}); fix --methods or add its metrics files"
            )
        return chosen, method
    if len(present) > 1:
        raise DataError(
            f"an ablation table compares settings of one method, but the metrics hold "
            f"{', '.join(present)}: pass the runs of one method, or choose it with --methods"
        )
    return runs, present[0]


def check_shared_params(runs: list[Run], by: str) -> None:
    """Every setting shares every other parameter (all parameters but ``dim`` in the dimension ablation,
    all of them in the encoder ablation, where the dimension is fixed): a row differs from the reference
    only by the ablated setting."""
    first = None
    for r in runs:
        params = dict(r.metrics.get("params") or {})
        if by == "dim":
            params.pop("dim", None)
        text = json.dumps(params, sort_keys=True)
        if first is None:
            first = (text, r.path)
        elif text != first[0]:
            what = "parameters other than dim" if by == "dim" else "parameters (the dimension included)"
            raise DataError(
                f"{r.path} and {first[1]} differ in {what} ({text} vs {first[0]}); an ablation "
                f"varies only the {'embedding dimension' if by == 'dim' else 'encoder'}: pass runs "
                "that share every other parameter"
            )


def relabel(runs: list[Run], by: str) -> tuple[list[Run], dict]:
    """Runs whose ``method`` is their setting key (the original kept as ``ablated_method``), and
    {key: setting value}."""
    out, values = [], {}
    for r in runs:
        value = setting_value(r, by)
        key = setting_key(by, value)
        values[key] = value
        out.append(Run(r.path, {**r.metrics, "method": key, "ablated_method": r.method}))
    return out, values


def order_settings(by: str, values: dict, reference, settings=None) -> list[str]:
    """Row keys in order: `settings` (each must have runs) when given, else dimensions ascending /
    the reference encoder first and the others by name. The reference must be among them."""
    ref_key = setting_key(by, reference)
    present = ", ".join(str(v) for v in sorted(values.values(), key=str))
    if settings:
        keys = list(dict.fromkeys(setting_key(by, s) for s in settings))
        absent = [k for k in keys if k not in values]
        if absent:
            raise DataError(
                f"no runs for the {by} setting(s) {', '.join(absent)} among the metrics files "
                f"(present: {present}); fix --settings or add their runs"
            )
    elif by == "dim":
        keys = sorted(values, key=lambda k: values[k])
    else:
        keys = sorted(values, key=lambda k: (k != ref_key, k))
    if ref_key not in keys:
        raise DataError(
            f"the reference {by} {reference} has no runs among the table's settings "
            f"({', '.join(str(values[k]) for k in keys if k in values)}); give --reference-setting one "
            f"of them (config: methods.locus.dim / encoder) or add its runs"
        )
    return keys


def collect(
    paths, by: str, reference, split: str = "test", method: str | None = None, settings=None
) -> tuple[Collection, dict, str]:
    """Load and check the runs of an ablation: (collection whose "methods" are the setting keys, in row
    order; {key: (LaTeX, plain) label}; the ablated method).

    The comparability checks of the method tables stay: one data set and sampling scheme, each (setting,
    size, seed) once, every other parameter shared by all settings; only the encoder ablation may mix encoders
    (:func:`locus.experiments.comparison.check_comparable` with ``vary=("encoder",)``). Cells then show mean ±
    std over seeds, with the dagger on cells not significantly different from the best setting of their column."""
    runs, method = select_method(load_metrics(paths, split), method)
    runs, values = relabel(runs, by)
    check_shared_params(runs, by)
    keys = order_settings(by, values, reference, settings)
    coll = collect_runs(runs, split, keys, vary=("encoder",) if by == "encoder" else ())
    return coll, {k: setting_labels(by, values[k], reference) for k in keys}, method


def caption(
    kind: str,
    coll: Collection,
    method: str,
    row_labels: dict,
    reference_key: str,
    data_label: str | None = None,
    split: str = "test",
    settings: bootstrap.Settings | None = None,
    n_queries: int = 0,
    sig: pd.DataFrame | None = None,
) -> str:
    """The caption (LaTeX): what is compared, on which data, the emphasis, seeds and the bootstrap (the
    benchmark columns' Holm correction and minimum of test queries; with the comparisons `sig` of the routing
    kinds: the bold rule, the top-model share and the near-constant settings, read "inconclusive
    (near-constant)" and not ranked)."""
    by = BY[kind]
    name = escape(labels.plain_label(method))
    if by == "dim":
        what = f"by model embedding dimension $d$ of {name} (query encoder: {escape(coll.encoder)})"
    else:
        dims = sorted({str((r.metrics.get("params") or {}).get("dim", "?")) for r in coll.runs})
        what = f"by sentence encoder of the queries ({name}, $d$ = {', '.join(dims)})"
    text = (
        f"{WHAT[METRIC[kind]]} on the {split} split of the data set {escape(coll.data_label(data_label))}, "
        f"{what}, and number of training evaluations per model. \\textbf{{Best}} and \\underline{{second best}} "
        f"setting per training size. {grid_sentence(by, _setting_column(coll, by).values(), coll.sizes)} "
        f"{tables.seeds_sentence(coll.seeds)}"
    )
    if settings is not None:
        ref = row_labels[reference_key][0]
        text += " " + tables.bootstrap_sentence(
            LAYOUT[kind], settings, reference_key, n_queries, split, reference_label=f"{HEADINGS[by].lower()} {ref}"
        )
        text += " " + tables.benchmark_sentence(sig, settings, METRIC[kind] == "routing_acc")
        if METRIC[kind] == "routing_acc":
            named = (lambda key: f"$d$ = {row_labels[key][0]}") if by == "dim" else (lambda key: row_labels[key][0])
            text += " " + tables.routing_sentences(sig, settings, named, LAYOUT[kind])
    return text


def render(
    kind: str,
    coll: Collection,
    row_labels: dict,
    reference_key: str,
    method: str,
    data_label: str | None = None,
    split: str = "test",
    label: str | None = None,
    values=None,
    settings: bootstrap.Settings = bootstrap.Settings(),
) -> tuple[str, pd.DataFrame]:
    """(LaTeX, numbers) of an ablation table; with the runs' per-query `values` the paired bootstrap
    comparisons (differences to the reference setting and to the best of each column)."""
    sig = tables.significance(LAYOUT[kind], coll, values, settings, reference_key) if values is not None else None
    n_queries = int(sig.loc[sig["benchmark"] == OVERALL, "n_queries"].max()) if sig is not None and len(sig) else 0
    cap = caption(
        kind,
        coll,
        method,
        row_labels,
        reference_key,
        data_label,
        split,
        settings if sig is not None else None,
        n_queries,
        sig,
    )
    tex, numbers = tables.by_dataset_table(
        coll.method_agg,
        METRIC[kind],
        coll.methods,
        coll.sizes,
        coll.benchmarks,
        cap,
        label or LABELS[kind],
        significance=sig,
        row_labels=row_labels,
        row_heading=HEADINGS[BY[kind]],
    )
    numbers = numbers.assign(
        ablation=BY[kind],
        method=method,
        setting=numbers["approach"].map(_setting_column(coll, BY[kind])),
        is_reference_setting=numbers["approach"] == reference_key,
    )
    return tex, numbers


def _setting_column(coll: Collection, by: str) -> dict:
    """{row key: setting as the CSV shows it (dimension or encoder name)}."""
    return {r.method: setting_value(r, by) for r in coll.runs}


def write_table(
    kind: str,
    metrics,
    out,
    reference,
    settings=None,
    method: str | None = None,
    data_label: str | None = None,
    split: str = "test",
    label: str | None = None,
    data=None,
    boot: bootstrap.Settings = bootstrap.Settings(),
) -> dict[str, Path]:
    """Read the runs, render the ablation `kind` with its bootstrap comparisons (labels from the data set
    `data`, default the one recorded in the runs) and write ``out`` (.tex) and the CSV beside it.
    `reference`: the reference setting (a dimension or an encoder name, :func:`parse_setting`);
    `settings`: the rows, in order (default: every setting present)."""
    if kind not in KINDS:
        raise ValueError(f"not an ablation table: {kind!r}")
    by = BY[kind]
    out = Path(out)
    paths = {"tex": out, "csv": out.with_suffix(".csv")}
    check_outputs(paths.values())
    reference = parse_setting(by, reference)
    settings = [parse_setting(by, s) for s in settings] if settings else None
    coll, row_labels, method = collect(metrics, by, reference, split, method, settings)
    if data is None and not Path(coll.dataset).is_dir():
        raise DataError(
            f"the runs record the data set {coll.dataset}, which is not a directory here; the table's "
            f"bootstrap needs the labels of the data set the runs were trained on: pass it with --data"
        )
    values = query_values(coll.runs, Path(data if data is not None else coll.dataset), split)
    tex, numbers = render(
        kind, coll, row_labels, setting_key(by, reference), method, data_label, split, label, values, boot
    )
    from locus.atomic import write_text

    write_text(paths["tex"], tex)
    write_csv(numbers, paths["csv"])
    return paths
