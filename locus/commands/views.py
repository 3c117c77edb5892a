"""`locus views KIND`: embedding views of a trained LOCUS run (paper sections 4.3-4.4, appendix E), each a
figure (PDF + PNG) with the CSV of its plotted numbers. No training: every embedding is one forward pass
of the run's encoder over training-split evaluations (:mod:`locus.geometry.views`).

Kinds: ``hypothetical`` (recall@k of hypothetical embeddings vs evaluation-set size), ``query-tsne``
(query encodings by benchmark), ``robustness-tsne`` (selected models re-embedded from overlap-α and
subsampled sets, with the share of draws farther from their reference than its nearest other model, measured
in the embedding space), ``overlap-convergence`` / ``size-convergence`` (‖z − z_ref‖ of one model vs α / n),
``perf-vs-evalset`` (test accuracy with every model re-embedded from subsampled / overlap-α sets).
"""

from __future__ import annotations

from locus.cli import (
    add_data_argument,
    add_out_argument,
    add_seed_argument,
    add_threads_argument,
    comma_list,
    existing_dir,
    existing_file,
    int_at_least,
    number_list,
    output_file,
    positive_number,
)

NAME = "views"
HELP = "embedding views of a LOCUS run: hypothetical embeddings, t-SNE, convergence (PDF + PNG + CSV)"
KINDS = ("hypothetical", "query-tsne", "robustness-tsne", "overlap-convergence", "size-convergence", "perf-vs-evalset")


def add_arguments(p) -> None:
    p.add_argument("kind", choices=KINDS, help="the view")
    p.add_argument(
        "--run",
        type=existing_dir("run directory"),
        default=None,
        help="the LOCUS reference run directory (every kind except query-tsne)",
    )
    add_data_argument(p, "the canonical data set the run was trained on", required=True)
    p.add_argument(
        "--encodings",
        nargs="+",
        required=True,
        type=existing_file("encodings file"),
        help="the run's query encodings (query-tsne: one file per panel)",
    )
    add_out_argument(p, output_file((".pdf",)), "output .pdf (.png and .csv beside it)")
    p.add_argument(
        "--sizes",
        type=number_list(int),
        default=[64, 128, 256, 512, 1024, 2048, 4096],
        help="hypothetical: evaluation-set sizes (capped by the training split); size-convergence, "
        "robustness-tsne, perf-vs-evalset: evaluations subsampled from the reference set",
    )
    p.add_argument("--ks", type=number_list(int), default=[1, 2, 3, 5, 10], help="hypothetical: the k of recall@k")
    p.add_argument(
        "--overlaps",
        type=number_list(float),
        default=[0.0, 0.25, 0.5, 0.75, 1.0],
        help="overlap-convergence, robustness-tsne, perf-vs-evalset: overlap fractions α in [0, 1]",
    )
    p.add_argument(
        "--model",
        default="codellama/CodeLlama-13b-Instruct-hf",
        help="overlap-/size-convergence: the model (name as in models.parquet)",
    )
    p.add_argument(
        "--models", type=comma_list, default=None, help="robustness-tsne: comma-separated model names to re-embed"
    )
    p.add_argument("--repeats", type=int_at_least(1), default=3, help="seeded draws per grid point")
    p.add_argument(
        "--neighbours",
        type=int_at_least(0),
        default=3,
        help="convergence: dashed lines at the distances to this many nearest other models",
    )
    p.add_argument("--max-queries", type=int_at_least(3), default=2000, help="query-tsne: queries shown (subsample)")
    p.add_argument("--perplexity", type=positive_number, default=30.0, help="t-SNE perplexity (capped by the points)")
    add_seed_argument(p, help="seed of every draw and of t-SNE")
    add_threads_argument(p)
    p.add_argument("--data-label", default=None, help="data set name for the titles")


def run(args) -> int:
    from locus.errors import ConfigError
    from locus.params import set_threads

    set_threads(args.threads)
    common = {"data": args.data, "out": args.out, "seed": args.seed, "data_label": args.data_label}
    if args.kind == "query-tsne":
        from locus.geometry.hypothetical import write_query_tsne

        frame = write_query_tsne(
            encodings_paths=args.encodings, max_queries=args.max_queries, perplexity=args.perplexity, **common
        )
        print(
            f"t-SNE of {frame.groupby('encoder').size().iloc[0]} queries x {frame['encoder'].nunique()} "
            f"encoder(s); wrote {args.out}"
        )
        return 0
    if args.run is None:
        raise ConfigError(f"locus views {args.kind} needs --run (the LOCUS reference run directory)")
    if len(args.encodings) != 1:
        raise ConfigError(f"locus views {args.kind} takes one --encodings file (the run's), got {len(args.encodings)}")
    common.update(run=args.run, encodings=args.encodings[0])
    if args.kind == "hypothetical":
        from locus.geometry.hypothetical import write_hypothetical

        s = write_hypothetical(sizes=args.sizes, ks=args.ks, repeats=args.repeats, **common)
        if s["capped"]:
            print(f"sizes {s['capped']} capped at the {s['n_train']} training queries")
        if s["dropped_ks"]:
            print(f"recall@k for k = {s['dropped_ks']} left out: the run has {s['models']} models")
        table = s["recall"].pivot(index="size", columns="k", values="recall")
        print(f"recall@k (%) of {s['models']} models' hypothetical embeddings:")
        print((100 * table).round(1).to_string())
    elif args.kind == "perf-vs-evalset":
        from locus.geometry.evalset_robustness import write_perf_vs_evalset

        s = write_perf_vs_evalset(sizes=args.sizes, overlaps=args.overlaps, repeats=args.repeats, **common)
        ref = s["reference"]
        print(
            f"{s['n_models']} models re-embedded, {s['n_test_queries']} test queries; reference embeddings: "
            f"correctness {100 * ref['correctness_acc']:.2f}%, routing {100 * ref['routing_acc']:.2f}% "
            f"(best single model {100 * s['best_single_routing_acc']:.2f}%)"
        )
        cols = ["panel", "setting", "set_size", "correctness_acc", "routing_acc", "distance", "draws"]
        print(s["summary"][cols].round(4).to_string(index=False))
    elif args.kind == "robustness-tsne":
        from locus.geometry.views import write_robustness

        if not args.models:
            raise ConfigError("locus views robustness-tsne needs --models NAME,NAME,... (the models to re-embed)")
        frame = write_robustness(
            models=args.models,
            overlaps=args.overlaps,
            sizes=args.sizes,
            repeats=args.repeats,
            perplexity=args.perplexity,
            **common,
        )
        from locus.geometry.views import farther_shares

        new = frame[frame["panel"] != "reference"]
        print(
            f"t-SNE of {len(frame) - len(new)} reference + {len(new)} recomputed embeddings; mean distance to "
            f"the reference embedding per panel: {new.groupby('panel')['distance'].mean().round(4).to_dict()}"
        )
        shares = farther_shares(new.assign(model=new["name"]), ("panel", "model"))
        print("draws farther from their reference than its nearest other model (embedding space, not t-SNE):")
        print(shares.round(3).to_string(index=False))
        overall = farther_shares(new.assign(all="all"), ("all",)).iloc[0]
        print(f"all draws: {int(overall['farther'])}/{int(overall['draws'])} ({100 * overall['share']:.1f}%)")
    else:
        from locus.geometry.views import write_convergence

        kind = args.kind.split("-")[0]
        s = write_convergence(
            kind,
            model=args.model,
            grid=args.overlaps if kind == "overlap" else args.sizes,
            repeats=args.repeats,
            neighbours=args.neighbours,
            **common,
        )
        print(f"{s['model']}: reference set {s['reference_size']}, {s['outside']} training queries outside it")
        print(s["summary"].round(4).to_string(index=False))
        print(
            "nearest other models:", ", ".join(f"{r.neighbour} {r.distance:.4f}" for r in s["neighbours"].itertuples())
        )
    print(f"wrote {args.out}")
    return 0
