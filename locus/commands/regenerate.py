"""`locus regenerate KIND`: the EmbedLLM regeneration experiment (paper App. H): G_ψ of a trained EmbedLLM run
frozen, every model's embedding re-learned from the same / overlapping / subsampled training evaluations
(:mod:`locus.experiments.regeneration`).

Kinds: ``measure`` (CSV of every draw: mean cosine distance original ↔ re-learned and test disagreement, for
EmbedLLM runs and the LOCUS reference run beside them), ``heatmap`` (hidden layers x dim heat map of one metric
from measure CSVs: PDF + PNG + CSV), ``tsne`` (t-SNE of original vs re-learned embeddings of one run)."""

from __future__ import annotations

from locus.cli import (
    add_data_argument,
    add_out_argument,
    add_seed_argument,
    add_threads_argument,
    existing_dir,
    existing_file,
    int_at_least,
    number_list,
    output_file,
    positive_number,
)

NAME = "regenerate"
HELP = "EmbedLLM embeddings re-learned with G_psi frozen vs the originals (and LOCUS): measures, heat maps, t-SNE"
KINDS = ("measure", "heatmap", "tsne")
METRICS = ("cosine_distance", "test_disagreement")


def add_arguments(p) -> None:
    p.add_argument("kind", choices=KINDS, help="measure | heatmap | tsne")
    p.add_argument(
        "--runs",
        nargs="+",
        default=[],
        type=existing_dir("run directory"),
        help="measure: EmbedLLM run directories; tsne: exactly one",
    )
    p.add_argument(
        "--locus-run",
        type=existing_dir("run directory"),
        default=None,
        help="measure: the LOCUS reference run measured beside them (same data set and encodings)",
    )
    p.add_argument(
        "--measures",
        nargs="+",
        default=[],
        type=existing_file("measures CSV"),
        help="heatmap: CSVs written by `locus regenerate measure`",
    )
    p.add_argument("--metric", choices=METRICS, default="cosine_distance", help="heatmap: the metric")
    add_data_argument(p, "measure, tsne: the canonical data set the runs were trained on")
    p.add_argument(
        "--encodings",
        type=existing_file("encodings file"),
        default=None,
        help="measure, tsne: the runs' query encodings",
    )
    p.add_argument(
        "--overlaps",
        type=number_list(float, 0.0, 1.0),
        default=[0.5],
        help="overlap fractions α in [0, 1] with each model's training evaluations",
    )
    p.add_argument(
        "--sizes",
        type=number_list(int, 1),
        default=[128],
        help="evaluations subsampled from each model's training evaluations (sizes above them are dropped)",
    )
    p.add_argument("--repeats", type=int_at_least(1), default=1, help="seeded draws per perturbed setting")
    add_seed_argument(p, help="seed of the draws and of the t-SNE")
    p.add_argument("--perplexity", type=positive_number, default=30.0, help="tsne: t-SNE perplexity")
    add_out_argument(
        p, output_file((".pdf", ".csv")), "measure: output .csv; heatmap, tsne: output .pdf (.png and .csv beside it)"
    )
    add_threads_argument(p)
    p.add_argument("--data-label", default=None, help="data set name for the titles")


def run(args) -> int:
    from locus.errors import ConfigError
    from locus.experiments import regeneration as rg
    from locus.params import set_threads

    set_threads(args.threads)
    suffix = args.out.suffix.lower()
    if args.kind == "measure":
        if suffix != ".csv":
            raise ConfigError(f"--out {args.out}: measure writes a .csv")
        if args.data is None or args.encodings is None:
            raise ConfigError("regenerate measure needs --data and --encodings")
        if not args.runs and args.locus_run is None:
            raise ConfigError("regenerate measure: give --runs (EmbedLLM) and/or --locus-run")
        frame = rg.write_measures(
            args.runs,
            args.locus_run,
            args.data,
            args.encodings,
            args.out,
            args.overlaps,
            args.sizes,
            args.repeats,
            args.seed,
        )
        summary = rg.summarize(frame)
        print(summary[["method", "kind", "setting", *METRICS]].to_string(index=False))
    elif args.kind == "heatmap":
        if suffix != ".pdf":
            raise ConfigError(f"--out {args.out}: heatmap writes a .pdf (.png and .csv beside it)")
        if not args.measures:
            raise ConfigError("regenerate heatmap needs --measures (CSVs of `locus regenerate measure`)")
        s = rg.write_heatmap(args.measures, args.out, args.metric, args.data_label)
        print(
            f"{args.metric} of EmbedLLM embeddings re-learned on the same evaluations (rows: hidden layers, "
            f"columns: dim):"
        )
        print(s["grid"].round(4).to_string())
        if s["locus"] is not None:
            print(f"LOCUS on the same evaluations: {s['locus']:.3g}")
    else:
        if suffix != ".pdf":
            raise ConfigError(f"--out {args.out}: tsne writes a .pdf (.png and .csv beside it)")
        if len(args.runs) != 1 or args.data is None or args.encodings is None:
            raise ConfigError("regenerate tsne needs exactly one --runs directory, --data and --encodings")
        rg.write_tsne(
            args.runs[0],
            args.data,
            args.encodings,
            args.out,
            args.overlaps,
            args.sizes,
            args.repeats,
            args.seed,
            args.perplexity,
            args.data_label,
        )
    print(f"wrote {args.out}")
    return 0
