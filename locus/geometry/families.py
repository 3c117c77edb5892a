"""Model families in the embedding space (paper §4.3, ``fig:models_family_heirarchical_clustering``).

Hierarchical clustering (:func:`scipy.cluster.hierarchy.linkage`) of the reference run's model embeddings
on their pairwise distances, drawn as a dendrogram beside the distance heat map in dendrogram order, with
the models of the highlighted tags (default ``math`` and ``code``, from ``models.parquet``'s ``tags``) coloured.

Choices: Euclidean distance, as the paper's text says; the paper does not name the linkage, so ``average``
(UPGMA) is the default: it works on any distance (Ward, centroid and median assume Euclidean geometry and
are refused with another distance) and does not chain like single linkage. Leaves are put in optimal order
(adjacent leaves as close as possible), which changes only the drawing, not the clusters.

:func:`tag_separation` measures how well each highlighted tag groups; the cophenetic correlation says how
faithfully the dendrogram keeps the distances.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.cluster import hierarchy
from scipy.spatial.distance import pdist, squareform

from locus.errors import ConfigError
from locus.geometry.distances import DISTANCES, load, require_models

LINKAGES = ("average", "complete", "single", "weighted", "ward", "centroid", "median")
EUCLIDEAN_ONLY = ("ward", "centroid", "median")
DEFAULT_HIGHLIGHT = ("math", "code")


# ----------------------------------------------------------------------------------------------
# pure functions over arrays
# ----------------------------------------------------------------------------------------------
def parse_tags(values) -> list[frozenset]:
    """Each model's set of tags from ``;``-joined strings (lower-cased; missing = no tag)."""
    out = []
    for v in values:
        text = "" if v is None or (isinstance(v, float) and np.isnan(v)) else str(v)
        out.append(frozenset(t.strip().lower() for t in text.split(";") if t.strip()))
    return out


def highlight_groups(tags, highlight=DEFAULT_HIGHLIGHT) -> np.ndarray:
    """Per model: the first tag of `highlight` it carries, else ``""``."""
    return np.asarray([next((h for h in highlight if h in t), "") for t in tags], dtype=object)


def cluster(z, metric: str = "euclidean", method: str = "average") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(linkage matrix, leaf order, square distances) of the rows of `z`."""
    if metric not in DISTANCES:
        raise ConfigError(f"unknown distance {metric!r}; choose one of {', '.join(DISTANCES)}")
    if method not in LINKAGES:
        raise ConfigError(f"unknown linkage {method!r}; choose one of {', '.join(LINKAGES)}")
    if method in EUCLIDEAN_ONLY and metric != "euclidean":
        raise ConfigError(f"{method} linkage assumes Euclidean distances; use --metric euclidean or another linkage")
    condensed = pdist(np.asarray(z, dtype=np.float64), metric=metric)
    if not np.isfinite(condensed).all():
        raise ConfigError(
            f"the {metric} distances of these embeddings are not all defined (a zero embedding?); "
            "use --metric euclidean"
        )
    link = hierarchy.linkage(condensed, method=method, optimal_ordering=len(z) > 2)
    return link, hierarchy.leaves_list(link), squareform(condensed, checks=False)


def tag_separation(dist, members, n_perm: int = 1000, seed: int = 0) -> dict:
    """How tightly the models flagged in `members` (bool [models]) sit together in `dist`.

    The mean distance within the tag's models against the mean distance from them to the other models, the
    share of them whose nearest neighbour carries the same tag (against the chance share), and a one-sided
    permutation p-value (random model sets of the same size, seeded) for the within-tag mean distance."""
    dist = np.asarray(dist, dtype=np.float64)
    members = np.asarray(members, dtype=bool)
    n, m = int(members.sum()), len(members)
    out = {
        "n_models": n,
        "within_mean": float("nan"),
        "to_others_mean": float("nan"),
        "ratio": float("nan"),
        "nn_same_tag": float("nan"),
        "nn_same_tag_chance": float("nan"),
        "p_value": float("nan"),
        "n_perm": int(n_perm),
    }
    if n < 2 or n == m:
        return out

    def within(mask):
        sub = dist[np.ix_(mask, mask)]
        return sub[np.triu_indices(int(mask.sum()), 1)].mean()

    observed = within(members)
    out["within_mean"] = float(observed)
    out["to_others_mean"] = float(dist[np.ix_(members, ~members)].mean())
    out["ratio"] = out["within_mean"] / out["to_others_mean"] if out["to_others_mean"] > 0 else float("nan")
    d = dist.copy()
    np.fill_diagonal(d, np.inf)
    nearest = np.argmin(d, axis=1)
    out["nn_same_tag"] = float(members[nearest[members]].mean())
    out["nn_same_tag_chance"] = (n - 1) / (m - 1)
    if n_perm:
        rng = np.random.default_rng(seed)
        hits = 0
        for _ in range(n_perm):
            mask = np.zeros(m, dtype=bool)
            mask[rng.choice(m, n, replace=False)] = True
            hits += within(mask) <= observed
        out["p_value"] = (hits + 1) / (n_perm + 1)
    return out


# ----------------------------------------------------------------------------------------------
# the figure
# ----------------------------------------------------------------------------------------------
def heatmap_frame(model_ids, names, groups, dist, leaves) -> pd.DataFrame:
    """Long rows of the heat map in dendrogram order (what the figure plots)."""
    leaves = np.asarray(leaves)
    n = len(leaves)
    rows, cols = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    r, c = leaves[rows.ravel()], leaves[cols.ravel()]
    names, groups, ids = np.asarray(names, dtype=object), np.asarray(groups, dtype=object), np.asarray(model_ids)
    return pd.DataFrame(
        {
            "row_position": rows.ravel(),
            "col_position": cols.ravel(),
            "row_model_id": ids[r],
            "col_model_id": ids[c],
            "row_name": names[r],
            "col_name": names[c],
            "row_highlight": groups[r],
            "col_highlight": groups[c],
            "distance": np.asarray(dist)[r, c],
        }
    )


def write(
    run_dir,
    data_dir,
    out,
    metric: str = "euclidean",
    method: str = "average",
    highlight=DEFAULT_HIGHLIGHT,
    n_perm: int = 1000,
    seed: int = 0,
    data_label: str | None = None,
) -> dict:
    """Dendrogram + heat map (PDF + PNG), the heat map's numbers (CSV) and the clustering with the tag
    statistics (JSON); returns the JSON's content."""
    from locus.atomic import write_json
    from locus.outputs import check_outputs
    from locus.render import geometry as render
    from locus.render import write_csv
    from locus.render.figures import output_paths, save_figure

    highlight = tuple(h.strip().lower() for h in highlight if h.strip())
    paths = output_paths(out)
    check_outputs(paths.values())
    inputs = load([run_dir], data_dir)
    run = inputs.runs[0]
    require_models(run, 2, "a clustering")
    link, leaves, dist = cluster(run.embeddings, metric, method)
    models = inputs.data.models.set_index("model_id").loc[run.model_ids]
    has_tags = "tags" in models.columns
    tags = parse_tags(models["tags"] if has_tags else [None] * len(models))
    groups = highlight_groups(tags, highlight)
    names = inputs.names(run.model_ids)
    cophenetic = float(hierarchy.cophenet(link, squareform(dist, checks=False))[0]) if len(leaves) > 2 else float("nan")
    summary = {
        "method": run.method,
        "run_dir": str(run.run_dir),
        "train_size": run.metrics.get("train_size"),
        "seed": run.metrics.get("seed"),
        "distance": metric,
        "linkage": method,
        "optimal_ordering": True,
        "cophenetic_correlation": cophenetic,
        "leaves": [int(run.model_ids[i]) for i in leaves],
        "linkage_matrix": link.tolist(),
        "tags_column": has_tags,
        "highlight": list(highlight),
        "tag_counts": {t: int(sum(t in s for s in tags)) for t in sorted(set().union(*tags))},
        "separation": {h: tag_separation(dist, groups == h, n_perm, seed) for h in highlight},
    }
    fig = render.families_figure(
        link,
        leaves,
        dist,
        names,
        groups,
        highlight,
        inputs.title(data_label, ""),
        f"{run.method}, {metric} distance, {method} linkage",
        separation=summary["separation"],
        cophenetic=cophenetic,
    )
    save_figure(fig, paths["pdf"], dpi=300)
    write_csv(heatmap_frame(run.model_ids, names, groups, dist, leaves), paths["csv"])
    write_json(paths["json"], summary)
    return summary


def report_lines(summary: dict) -> list[str]:
    lines = [
        f"{summary['method']}: {summary['distance']} distance, {summary['linkage']} linkage, cophenetic "
        f"correlation {summary['cophenetic_correlation']:.3f}"
    ]
    if not summary["tags_column"]:
        lines.append("models.parquet has no tags column: nothing highlighted")
    for tag, s in summary["separation"].items():
        lines.append(
            f"{tag}: {s['n_models']} models, within/to-others distance ratio {s['ratio']:.3f}, nearest "
            f"neighbour same tag {s['nn_same_tag']:.2f} (chance {s['nn_same_tag_chance']:.2f}), "
            f"permutation p = {s['p_value']:.4f}"
        )
    return lines
