"""`locus geometry KIND`: the embedding-geometry analyses of the paper (§4.3-4.4, appendix E.2) from
reference runs (their embeddings, test scores and metrics) and the canonical data set (test labels).

Kinds and what each writes:

- ``distance-correlation``: embedding distance (cosine, Euclidean) vs test correctness disagreement over
  all model pairs, one block per run (method): ``--out X.tex`` writes the correlation table (Pearson,
  Spearman, Kendall with bootstrap intervals over test queries) and ``X.csv``; ``--out X.pdf`` the scatter
  figure (+ PNG) and ``X.csv`` (every pair);
- ``families``: dendrogram + distance heat map of one run's embeddings, highlighted tags (PDF, PNG, CSV
  of the heat map, JSON with the clustering and tag statistics);
- ``neighbours``: agreement with the k-th nearest neighbour vs k, per run (PDF, PNG, CSV);
- ``fallback``: each run's router with the routed model replaced by its k-th nearest neighbour: routing
  accuracy and retention vs k (PDF, PNG, CSV).

Definitions: :mod:`locus.geometry.distances`, :mod:`locus.geometry.families`, :mod:`locus.geometry.neighbours`.
"""

from __future__ import annotations

from locus.cli import (
    add_data_argument,
    add_out_argument,
    add_seed_argument,
    existing_dir,
    int_at_least,
    level,
    only_with,
    output_file,
)

NAME = "geometry"
HELP = "embedding geometry: distance vs disagreement, model families, neighbour proxies, fallback routing"
KINDS = ("distance-correlation", "families", "neighbours", "fallback")


def tag_list(text: str) -> list[str]:
    """Comma-separated tags; an empty string names none."""
    return [t.strip() for t in str(text).split(",") if t.strip()]


def add_arguments(p):
    p.add_argument("kind", choices=KINDS, help="analysis")
    p.add_argument(
        "--runs",
        nargs="+",
        required=True,
        type=existing_dir("run directory"),
        help="reference run directories, one per embedding method (families: exactly one)",
    )
    add_data_argument(p, "canonical data set the runs were trained on (test labels)", required=True)
    add_out_argument(
        p,
        output_file((".pdf", ".png", ".tex")),
        "output: .tex (distance-correlation table) or .pdf (figure; .png, .csv, and for families .json, beside it)",
    )
    p.add_argument(
        "--metric",
        choices=("cosine", "euclidean"),
        default=None,
        help="embedding distance (default: euclidean for families, as in the paper; cosine for "
        "neighbours and fallback)",
    )
    p.add_argument("--max-k", type=int_at_least(1), default=10, help="neighbours/fallback: largest k (default 10)")
    p.add_argument("--linkage", default="average", help="families: scipy linkage method (default average)")
    p.add_argument(
        "--highlight",
        type=tag_list,
        default=["math", "code"],
        help="families: comma-separated tags of models.parquet to colour (default math,code; '' = none)",
    )
    p.add_argument(
        "--n-perm",
        type=int_at_least(0),
        default=1000,
        help="families: permutations of the tag-separation test (default 1000; 0 = none)",
    )
    p.add_argument(
        "--n-boot",
        "--bootstrap-resamples",
        dest="n_boot",
        type=int_at_least(0),
        default=200,
        help="distance-correlation table: bootstrap resamples of the test queries (default 200; 0 = none)",
    )
    add_seed_argument(
        p,
        "--boot-seed",
        "--bootstrap-seed",
        dest="boot_seed",
        help="seed of the bootstrap resampling and of the permutations (default 0)",
    )
    p.add_argument("--confidence", type=level, default=0.95, help="interval level (default 0.95)")
    p.add_argument(
        "--reference-method",
        default="locus",
        help="distance-correlation: method the others' correlations are compared to (paired bootstrap)",
    )
    p.add_argument("--data-label", default=None, help="data set name for titles and captions")


def run(args) -> int:
    from locus.errors import ConfigError

    suffix = args.out.suffix.lower()
    if suffix == ".tex" and args.kind != "distance-correlation":
        raise ConfigError(f"locus geometry {args.kind} writes a figure: give --out a .pdf or .png path")
    # one analysis's options, given to another, would be ignored silently
    kind, table = f"`locus geometry {args.kind}`", args.kind == "distance-correlation" and suffix == ".tex"
    families, nearest = args.kind == "families", args.kind in ("neighbours", "fallback")
    only_with(args, ("linkage", "highlight", "n_perm"), families, f"to families, not to {kind}")
    only_with(args, ("max_k",), nearest, f"to neighbours and fallback, not to {kind}")
    only_with(
        args, ("n_boot", "confidence", "reference_method"), table, "to the distance-correlation table (--out X.tex)"
    )
    only_with(args, ("boot_seed",), table or families, "to the distance-correlation table and families")
    only_with(args, ("metric",), args.kind != "distance-correlation", "to families, neighbours and fallback")
    if args.kind == "distance-correlation":
        from locus.geometry import distances

        frame = distances.write(
            args.runs,
            args.data,
            args.out,
            n_boot=args.n_boot,
            seed=args.boot_seed,
            confidence=args.confidence,
            reference_method=args.reference_method,
            data_label=args.data_label,
        )
        print("\n".join(distances.report_lines(frame)))
        return 0
    if args.kind == "families":
        from locus.geometry import families

        if len(args.runs) != 1:
            raise ConfigError(f"locus geometry families draws one run's embeddings; got {len(args.runs)} --runs")
        summary = families.write(
            args.runs[0],
            args.data,
            args.out,
            metric=args.metric or "euclidean",
            method=args.linkage,
            highlight=args.highlight,
            n_perm=args.n_perm,
            seed=args.boot_seed,
            data_label=args.data_label,
        )
        print("\n".join(families.report_lines(summary)))
        return 0
    from locus.geometry import neighbours

    frame = neighbours.write(
        args.kind,
        args.runs,
        args.data,
        args.out,
        max_k=args.max_k,
        metric=args.metric or "cosine",
        data_label=args.data_label,
    )
    print("\n".join(neighbours.report_lines(args.kind, frame)))
    return 0
