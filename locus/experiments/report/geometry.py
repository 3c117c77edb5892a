"""Blocks of the embedding geometry: nearest-neighbour proxies and fallback routing, portfolios, re-embedding from
other evaluation sets, EmbedLLM regeneration, distance against disagreement, hypothetical models and families."""

from __future__ import annotations

# *_COLUMNS: each CSV's columns, from the module that writes it: a block needs every column its writer writes (a CSV
# without one was written by another version of locus), so a column renamed there is renamed here too
from locus.errors import DataError
from locus.experiments.regeneration import HEATMAP_COLUMNS
from locus.experiments.report.markdown import _num_label, _pct_of, _pick, _pivot, fmt, md_table, number_of, unique
from locus.experiments.report.source import provenance, read_json, read_rows
from locus.geometry.evalset_robustness import CSV_COLUMNS as EVALSET_COLUMNS
from locus.geometry.hypothetical import CSV_COLUMNS as HYPOTHETICAL_COLUMNS
from locus.geometry.neighbours import FALLBACK_COLUMNS, PROXY_COLUMNS
from locus.geometry.portfolio import CURVE_COLUMNS as PORTFOLIO_COLUMNS
from locus.render.labels import plain_label


def block_neighbours(src):
    """Nearest-neighbour agreement at k = 1 per method, with the best possible neighbour and a random one."""
    rel = "figures/nearest_neighbor_proxies.csv"
    path = src.path(rel)
    rows = read_rows(path, PROXY_COLUMNS)
    body = []
    for method in unique(r["method"] for r in rows):
        own = [r for r in rows if r["method"] == method]
        body.append(
            [
                plain_label(method),
                _pct_of(_pick(own, curve="embedding_neighbour", k="1"), "agreement", path),
                _pct_of(_pick(own, curve="best_possible", k="1"), "agreement", path),
                _pct_of(_pick(own, curve="random_other"), "agreement", path),
            ]
        )
    n = rows[0]["train_size"]
    return md_table(
        [
            f"nearest-neighbour agreement on test, k = 1 (n = {n})",
            "embedding neighbour",
            "best possible (chosen with test labels)",
            "random other model",
        ],
        body,
    ) + ["", provenance(src, [rel])]


def block_fallback(src):
    """Routing accuracy kept when the routed model is replaced by its nearest neighbour (k = 1)."""
    rel = "figures/fallback_routing.csv"
    path = src.path(rel)
    rows = read_rows(path, FALLBACK_COLUMNS)
    body = []
    for method in unique(r["method"] for r in rows):
        own = [r for r in rows if r["method"] == method]
        nn, rnd = (
            _pick(own, curve="embedding_neighbour", k="1"),
            _pick(own, curve="random_other"),
        )
        body.append(
            [
                plain_label(method),
                _pct_of(_pick(own, curve="original"), "accuracy", path, 2),
                _pct_of(nn, "accuracy", path, 2),
                _pct_of(nn, "retention", path),
                _pct_of(rnd, "retention", path),
            ]
        )
    return md_table(
        [
            "fallback routing (test)",
            "routing accuracy %",
            "nearest neighbour instead, %",
            "kept, %",
            "kept by a random other model, %",
        ],
        body,
    ) + ["", provenance(src, [rel])]


def block_portfolio(src):
    """The smallest portfolio (models, or a parameter budget) that routes as well as the whole pool."""
    rel = "figures/model_portfolio.csv"
    path = src.path(rel)
    rows = read_rows(path, PORTFOLIO_COLUMNS)
    full_row = _pick(rows, method="full-pool")
    if full_row is None:
        raise DataError(f"{path}: no full-pool row; rebuild it")
    full = number_of(full_row["routing_acc"], path, "routing_acc")
    body = []
    for method, key, unit in (
        ("k-center", "k", "models"),
        ("k-medoids", "k", "models"),
        ("random", "k", "models"),
        ("coverage-greedy", "budget_b", "B parameters"),
        ("random-feasible", "budget_b", "B parameters"),
    ):
        part = sorted(
            (r for r in rows if r["method"] == method),
            key=lambda r: number_of(r[key], path, key),
        )
        if not part:
            continue
        cells = []
        for target in (full - 1e-9, full - 1.0):
            hit = next(
                (r for r in part if number_of(r["routing_acc"], path, "routing_acc") >= target),
                None,
            )
            cells.append("never" if hit is None else f"{fmt(number_of(hit[key], path, key), 0)} {unit}")
        body.append([method] + cells)
    total = number_of(full_row["params_b"], path, "params_b")
    pool = (
        f"The whole pool: {fmt(number_of(full_row['n_models'], path, 'n_models'), 0)} models, "
        f"{fmt(total, 0)}B parameters, routing accuracy {fmt(full)}% on test."
    )
    return md_table(
        [
            "portfolio selector",
            "reaches the whole pool's routing accuracy",
            "within 1 point",
        ],
        body,
    ) + ["", pool, "", provenance(src, [rel])]


def block_evalset_robustness(src):
    """Test accuracy with every model re-embedded from subsampled / partly overlapping evaluation sets."""
    rel = "figures/perf_vs_size_and_overlap.csv"
    path = src.path(rel)
    rows = read_rows(path, EVALSET_COLUMNS)
    means = [r for r in rows if r["kind"] == "mean"]
    ref, single = _pick(rows, kind="reference"), _pick(rows, kind="best_single")
    if not means or ref is None:
        raise DataError(f"{path}: no mean or reference rows; rebuild it")
    out = []
    for panel, title in (
        ("size", "evaluations per model"),
        ("overlap", "overlap α with the reference set"),
    ):
        part = [r for r in means if r["panel"] == panel]
        if not part:
            continue
        cols = sorted(
            unique(r["setting"] for r in part),
            key=lambda c: number_of(c, path, "setting"),
        )
        body = [
            [label] + [fmt(100 * number_of(_pick(part, setting=c)[metric], path, metric), 1) for c in cols]
            for label, metric in (
                ("routing %", "routing_acc"),
                ("correctness %", "correctness_acc"),
            )
        ]
        out += md_table([title] + [_num_label(c) for c in cols], body) + [""]
    line = (
        f"With the run's own embeddings: routing {fmt(100 * number_of(ref['routing_acc'], path, 'routing_acc'), 1)}%, "
        f"correctness {fmt(100 * number_of(ref['correctness_acc'], path, 'correctness_acc'), 1)}%"
    )
    if single is not None:
        line += f"; best single model (chosen on validation) {fmt(100 * number_of(single['routing_acc'], path, 'routing_acc'), 1)}%"
    return out + [line + ".", "", provenance(src, [rel])]


def block_regeneration(src):
    """EmbedLLM embeddings re-learned with the decoder frozen, against LOCUS's one-pass re-embedding."""
    rel = "figures/relearn_embedllm_heatmap_test_disagreement.csv"
    path = src.path(rel)
    rows = read_rows(path, HEATMAP_COLUMNS)

    def span(part, column, scale, decimals):
        values = [scale * number_of(r[column], path, column) for r in part]
        lo, hi = min(values), max(values)
        return fmt(lo, decimals) if lo == hi else f"{fmt(lo, decimals)}–{fmt(hi, decimals)}"

    body = []
    for kind, setting in unique((r["kind"], r["setting"]) for r in rows):
        emb = [r for r in rows if r["method"] == "embedllm" and (r["kind"], r["setting"]) == (kind, setting)]
        loc = [r for r in rows if r["method"] == "locus" and (r["kind"], r["setting"]) == (kind, setting)]
        label = {
            "same": "the same evaluations",
            "overlap": f"overlap α = {setting}",
            "subsample": f"{_num_label(setting) if setting else '?'} subsampled",
        }.get(kind, f"{kind} {setting}")
        body.append(
            [
                label,
                span(emb, "cosine_distance", 1, 2) if emb else "–",
                span(emb, "test_disagreement", 100, 1) if emb else "–",
                span(loc, "cosine_distance", 1, 4) if loc else "–",
                span(loc, "test_disagreement", 100, 2) if loc else "–",
            ]
        )
    cells = len(unique((r.get("hidden_layers"), r.get("dim")) for r in rows if r["method"] == "embedllm"))
    return md_table(
        [
            "re-learned from",
            f"EmbedLLM cosine distance ({cells} cells)",
            "EmbedLLM test disagreement %",
            "LOCUS distance",
            "LOCUS disagreement %",
        ],
        body,
    ) + ["", provenance(src, [rel])]


def block_distance_correlation(src):
    """Correlation between embedding distance and test disagreement over model pairs, per method."""
    rel = "tables/distance_correlation.csv"
    path = src.path(rel)
    # the columns every distance-correlation CSV has: its writer adds the interval columns only with a bootstrap
    rows = read_rows(path, ("method", "correlation", "distance", "value", "n_pairs", "train_size"))
    has_ci = "ci_low" in rows[0] and "ci_high" in rows[0]
    has_dim = "effective_dim" in rows[0] and "embedding_dim" in rows[0]
    columns = unique((r["correlation"], r["distance"]) for r in rows)
    body = []
    for method in unique(r["method"] for r in rows):
        cells = []
        for corr, dist in columns:
            r = _pick(rows, method=method, correlation=corr, distance=dist)
            if r is None:
                cells.append("–")
                continue
            text = fmt(number_of(r["value"], path, "value"), 3)
            if has_ci and r["ci_low"] not in ("", None):
                text += f" [{fmt(number_of(r['ci_low'], path, 'ci_low'), 2)}, {fmt(number_of(r['ci_high'], path, 'ci_high'), 2)}]"
                text += {"bca": "†", "recentred": "‡"}.get(r.get("interval") or "percentile", "")
            cells.append(text)
        dims = []
        if has_dim:
            r = _pick(rows, method=method)
            dims = [f"{fmt(number_of(r['effective_dim'], path, 'effective_dim'), 1)} of {r['embedding_dim']}"]
        body.append([plain_label(method)] + cells + dims)
    first = rows[0]
    head = [f"distance vs test disagreement ({first['n_pairs']} model pairs, n = {first['train_size']})"]
    note = "In brackets: the bootstrap interval over test queries." if has_ci else ""
    if has_ci and "interval" in first:
        note = (
            "In brackets: the bootstrap interval over test queries (percentile; † BCa, ‡ re-centred on the "
            "estimate, where the percentile interval excluded it)."
        )
    if has_dim:
        note += " Effective dim.: participation ratio of the centred embeddings' singular values, of the width."
    if "value_without_influential" in first and first.get("n_influential") not in ("", None, "0"):
        dist = columns[0][1]
        cells = ", ".join(
            f"{plain_label(r['method'])} {fmt(number_of(r['value'], path, 'value'), 3)} → "
            f"{fmt(number_of(r['value_without_influential'], path, 'value_without_influential'), 3)}"
            for r in rows
            if r["correlation"] == "pearson" and r["distance"] == dist
        )
        note += (
            f" Without the {first['n_influential']} models whose single removal lowers it most (lower by "
            f"construction; a check of how much a few models carry), Pearson ({dist}) reads: {cells}."
        )
    return (
        md_table(head + [f"{c.capitalize()}, {d}" for c, d in columns] + (["effective dim."] if has_dim else []), body)
        + [""]
        + ([note, ""] if note else [])
        + [provenance(src, [rel])]
    )


def block_hypothetical(src):
    """Recall@k of hypothetical embeddings (a model made up from per-benchmark accuracies) by set size."""
    rel = "figures/hypothetical_model_embedding.csv"
    path = src.path(rel)
    rows = [r for r in read_rows(path, HYPOTHETICAL_COLUMNS) if r["kind"] == "recall"]
    if not rows:
        raise DataError(f"{path}: no recall rows; rebuild it")
    ks, sizes, cells = _pivot(rows, "k", "size", "recall", path)
    body = [[f"recall@{k}, %"] + [cells.get((k, s), "–") for s in sizes] for k in ks]
    return md_table(
        [f"hypothetical embeddings ({rows[0]['models']} models), queries"] + [_num_label(s) for s in sizes],
        body,
    ) + ["", provenance(src, [rel])]


def block_families(src):
    """How well the embedding separates tagged model families (math, code): distances and a permutation test."""
    rel = "figures/models_family_clustering.json"
    summary = read_json(src, rel, ("separation", "cophenetic_correlation", "method"))
    body = []
    for tag, sep in summary["separation"].items():
        sep = sep or {}

        def val(key, scale=1.0, decimals=2, sep=sep):
            v = sep.get(key)
            return fmt(scale * float(v), decimals) if v is not None else "–"

        body.append(
            [
                tag,
                str(sep.get("n_models", "–")),
                val("ratio"),
                val("p_value"),
                val("nn_same_tag", 100, 1),
                val("nn_same_tag_chance", 100, 1),
            ]
        )
    note = (
        f"{plain_label(summary['method'])} embeddings; cophenetic correlation of the clustering "
        f"{fmt(float(summary['cophenetic_correlation']), 2)}."
    )
    return md_table(
        [
            "model tag",
            "models",
            "within-tag / to-others distance",
            "permutation p",
            "nearest neighbour same tag, %",
            "by chance, %",
        ],
        body,
    ) + ["", note, "", provenance(src, [rel])]
