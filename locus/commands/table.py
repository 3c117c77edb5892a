"""`locus table KIND`: LaTeX tables (booktabs) + CSV of the numbers from runs' metrics.json files, with
paired bootstrap confidence intervals over the test queries from the runs' per-query scores; with
``--truth`` (a synthetic data set's truth.parquet) also the expected routing accuracy.

Kinds, captions and layouts: :mod:`locus.experiments.tables`; the ablation kinds (rows = settings of one
method: embedding dimension or query encoder, compared to ``--reference-setting``):
:mod:`locus.experiments.ablation`; the bootstrap: :mod:`locus.experiments.bootstrap`. Routing tables print
each router's top-model share and leave near-constant routers unranked ("inconclusive (near-constant)");
the by-benchmark columns' marks use Holm's correction and a minimum of test queries.
"""

from __future__ import annotations

from locus.cli import (
    add_bootstrap_arguments,
    add_data_argument,
    add_out_argument,
    comma_list,
    existing_file,
    output_file,
)
from locus.constants import ABLATION_KINDS, BOOTSTRAP_RESAMPLES, SCORED_SPLITS, TABLE_KINDS

NAME = "table"
HELP = "render a comparison table (LaTeX + CSV, with paired bootstrap CIs) from runs' metrics.json files"


def add_arguments(p):
    p.add_argument(
        "kind",
        choices=TABLE_KINDS + ABLATION_KINDS,
        help="table layout; the *-ablation-* kinds compare settings of one method (embedding dimension d "
        "or query encoder, in the by-dataset layout) and need --reference-setting",
    )
    p.add_argument(
        "--metrics",
        nargs="+",
        required=True,
        help="metrics.json files of the runs to compare (their scores_{split}.parquet are read beside them)",
    )
    add_out_argument(p, output_file((".tex",)), "output .tex (the CSV is written beside it)")
    p.add_argument(
        "--methods",
        type=comma_list,
        default=None,
        help="comma-separated methods, in row order (default: all present, LOCUS first); ablation kinds: "
        "the one method whose settings are compared (default: the runs' only method)",
    )
    p.add_argument(
        "--reference-setting",
        default=None,
        help="ablation kinds: the setting every row's bootstrap difference is taken to, marked "
        "'(default)': a dimension (e.g. 128) or an encoder name (e.g. all-MiniLM-L6-v2)",
    )
    p.add_argument(
        "--settings",
        type=comma_list,
        default=None,
        help="ablation kinds: the settings to show, in row order (default: every one present; dimensions "
        "ascending, the reference encoder first)",
    )
    add_data_argument(
        p,
        help="canonical data set the runs were trained on, for the per-query labels of the bootstrap "
        "(default: the data set directory recorded in the runs)",
    )
    p.add_argument(
        "--truth",
        type=existing_file("truth file"),
        default=None,
        help="the data set's truth.parquet (synthetic data sets): adds each approach's expected routing "
        "accuracy (true P(correct) of the routed model, with its bootstrap), the Bayes ceiling and "
        "the best single model chosen on train (routing kinds only)",
    )
    p.add_argument(
        "--data-label",
        default=None,
        help="data set name for the caption (default: the data set's name recorded in the runs)",
    )
    p.add_argument("--split", default="test", choices=SCORED_SPLITS, help="which split's metrics (default test)")
    p.add_argument("--label", default=None, help="LaTeX \\label (default: the paper's label for the kind)")
    p.add_argument(
        "--reference-method",
        default=None,
        help="method every approach's bootstrap difference is taken to (default locus; not for the "
        "ablation kinds: see --reference-setting)",
    )
    add_bootstrap_arguments(p, BOOTSTRAP_RESAMPLES)


def run(args) -> int:
    from locus.errors import ConfigError
    from locus.experiments.bootstrap import Settings

    settings = Settings(n_resamples=args.bootstrap_resamples, seed=args.bootstrap_seed, confidence=args.confidence)
    if args.kind in ABLATION_KINDS:
        from locus.experiments.ablation import write_table as write_ablation

        misplaced = [o for o, v in (("--reference-method", args.reference_method), ("--truth", args.truth)) if v]
        if misplaced:
            raise ConfigError(
                f"{' and '.join(misplaced)} do not apply to {args.kind} (rows are settings of one "
                "method, compared to --reference-setting); drop them"
            )
        if args.reference_setting is None:
            raise ConfigError(
                f"{args.kind} needs --reference-setting: the row every setting is compared to "
                "(e.g. 128 for the dimension, all-MiniLM-L6-v2 for the encoder)"
            )
        if args.methods is not None and len(args.methods) != 1:
            raise ConfigError(f"{args.kind} compares settings of one method; --methods got {','.join(args.methods)}")
        paths = write_ablation(
            args.kind,
            args.metrics,
            args.out,
            args.reference_setting,
            settings=args.settings,
            method=args.methods[0] if args.methods else None,
            data_label=args.data_label,
            split=args.split,
            label=args.label,
            data=args.data,
            boot=settings,
        )
    else:
        from locus.experiments.tables import write_table

        if args.reference_setting is not None or args.settings is not None:
            raise ConfigError(
                f"--reference-setting and --settings apply to the ablation kinds only, not to {args.kind}"
            )
        paths = write_table(
            args.kind,
            args.metrics,
            args.out,
            methods=args.methods,
            data_label=args.data_label,
            split=args.split,
            label=args.label,
            data=args.data,
            settings=settings,
            reference=args.reference_method or "locus",
            truth=args.truth,
        )
    print(f"wrote {paths['tex']} and {paths['csv']}")
    return 0
