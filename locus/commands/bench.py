"""`locus bench`: time LOCUS training, embedding and prediction on this machine (see :mod:`locus.benchmark`)."""

from __future__ import annotations

import argparse

from locus.cli import (
    add_data_argument,
    add_seed_argument,
    add_threads_argument,
    comma_list,
    device_arg,
    existing_dir,
    existing_file,
    only_with,
    output_dir,
    output_file,
    positive_int,
    size_list,
)

NAME = "bench"
HELP = "measure LOCUS training, embedding and prediction speed on this machine"


TIME_COMPLEXITY_SIZES = ("pool_sizes", "eval_sizes", "query_sizes")


def precision_list(text: str) -> list[str]:
    """An argparse type: comma-separated precisions (float32, bfloat16), in the order given, no repeats."""
    items = comma_list(text)
    from locus.methods.locus_method import PRECISIONS  # here, not at import: the CLI starts without numpy

    bad = [p for p in items if p not in PRECISIONS]
    if not items or bad or len(set(items)) != len(items):
        raise argparse.ArgumentTypeError(f"expected float32, bfloat16 or float32,bfloat16 (each once), got {text!r}")
    return items


precision_list.__name__ = "list of precisions"


def add_arguments(parser) -> None:
    parser.add_argument(
        "--device",
        type=device_arg(("cpu", "cuda")),
        default=None,
        metavar="cpu|cuda",
        help="cpu or cuda (default: where training runs: cuda when available, else cpu)",
    )
    add_threads_argument(parser, "torch CPU threads (0 = torch default)", default=2)
    parser.add_argument(
        "--quick",
        action="store_true",
        help="small shapes and one repetition: a few seconds on 2 CPU cores (a smoke test)",
    )
    parser.add_argument("--json", type=output_file((".json",)), default=None, help="also write the results as JSON")
    parser.add_argument(
        "--repeat",
        type=positive_int,
        default=3,
        help="warm repetitions per measurement after the cold first call (median reported)",
    )
    parser.add_argument(
        "--precision",
        type=precision_list,
        default=None,
        metavar="P[,P]",
        help="arithmetic of embedding and prediction (LOCUS's precision parameter): float32 "
        "(default) or bfloat16; --time-complexity takes both (float32,bfloat16: one series each)",
    )
    tta = parser.add_argument_group(
        "time to accuracy",
        "with --time-to-accuracy DIR: train LOCUS once per recipe (paper, fast) on the same "
        "data, n and seed into DIR/<recipe>/ and write DIR/time_to_accuracy.{pdf,png,csv,json} (validation "
        "hit@1 against wall-clock seconds; the same as the workflow's time_to_accuracy rule, without Snakemake)",
    )
    tta.add_argument(
        "--time-to-accuracy",
        type=output_dir(),
        default=None,
        metavar="DIR",
        help="output directory of the comparison (replaces runs already there)",
    )
    add_data_argument(tta, None, what="canonical data set directory")
    tta.add_argument("--encodings", type=existing_file("encodings Parquet"), default=None)
    tta.add_argument("--train-size", type=positive_int, default=256, help="training queries per model (default 256)")
    add_seed_argument(tta)
    tta.add_argument(
        "--params",
        default="{}",
        help="LOCUS parameters (JSON): applied to every recipe (e.g. device) "
        "with --time-to-accuracy; the timed network's (e.g. dim) with --time-complexity and in the "
        "main table (e.g. '{\"tf32\": true}' on CUDA)",
    )
    tc = parser.add_argument_group(
        "time complexity",
        "with --time-complexity OUT.pdf: the paper's appendix-G figure, OUT.{pdf,png,csv}: "
        "embedding time vs evaluations per model for each pool size, and correctness-prediction time vs "
        "unseen queries for the largest pool (random inputs, cold call then the median of --repeat warm calls; "
        "the same as the workflow's time_complexity_figure rule, without Snakemake)",
    )
    tc.add_argument(
        "--time-complexity",
        type=output_file((".pdf",)),
        default=None,
        metavar="OUT.pdf",
        help="the figure's PDF; the PNG and the CSV of the plotted numbers are written beside it",
    )
    tc.add_argument(
        "--bfloat16-on-cpu",
        choices=("native", "always"),
        default="native",
        help="on a CPU, time bfloat16 only where the CPU has it in hardware (native, default; elsewhere it is "
        "emulated and several times slower than float32) or always",
    )
    tc.add_argument(
        "--pool-sizes",
        type=size_list,
        default=None,
        metavar="M,M,...",
        help="models embedded at once (default 16,56,112; the largest is also the prediction pool)",
    )
    tc.add_argument(
        "--eval-sizes",
        type=size_list,
        default=None,
        metavar="N,N,...",
        help="evaluation queries per model when embedding (default 64,256,1024,4096)",
    )
    tc.add_argument(
        "--query-sizes",
        type=size_list,
        default=None,
        metavar="Q,Q,...",
        help="unseen queries when predicting (default 256,1024,4096)",
    )
    pe = parser.add_argument_group(
        "precision effect",
        "with --precision-effect OUT.tex: re-embed every model of each LOCUS run in --runs "
        "from its training evaluations and score the test split in float32 and in bfloat16 (same network): test "
        "accuracies of both, routing agreement and label flips, as OUT.tex + OUT.csv (--data, --encodings: the "
        "runs' data set and its encodings)",
    )
    pe.add_argument("--precision-effect", type=output_file((".tex",)), default=None, metavar="OUT.tex")
    pe.add_argument("--runs", nargs="+", type=existing_dir("LOCUS run directory"), default=None, metavar="RUN")
    pe.add_argument("--data-label", default=None, help="the data set's name in the caption (default: its own)")


def run(args) -> int:
    from locus.atomic import write_json
    from locus.benchmark import default_device, format_table, run_benchmark
    from locus.errors import ConfigError

    sizes = [f"--{name.replace('_', '-')}" for name in TIME_COMPLEXITY_SIZES if getattr(args, name) is not None]
    # the options of one measurement, given to another, would be ignored silently
    tta, tc, pe = (getattr(args, k) is not None for k in ("time_to_accuracy", "time_complexity", "precision_effect"))
    only_with(args, ("train_size", "seed"), tta, "with --time-to-accuracy DIR")
    only_with(args, ("data", "encodings"), tta or pe, "with --time-to-accuracy DIR or --precision-effect OUT.tex")
    only_with(args, ("bfloat16_on_cpu",), tc, "with --time-complexity OUT.pdf")
    only_with(args, ("data_label",), pe, "with --precision-effect OUT.tex")
    if args.precision_effect is not None or args.runs is not None:
        if args.precision_effect is None or not args.runs or args.data is None or args.encodings is None:
            raise ConfigError(
                "--precision-effect OUT.tex needs --runs (LOCUS run directories), --data and "
                "--encodings, and --runs only applies with --precision-effect"
            )
        if args.time_complexity is not None or args.time_to_accuracy is not None or args.quick or args.json:
            raise ConfigError(
                "--precision-effect writes its own table: leave out --time-complexity, "
                "--time-to-accuracy, --quick and --json"
            )
        from locus.experiments import precision_effect
        from locus.params import set_threads

        set_threads(args.threads)
        precision_effect.write(args.runs, args.data, args.encodings, args.precision_effect, args.data_label)
        print(f"wrote {args.precision_effect} (.csv)")
        return 0
    precisions = args.precision or ["float32"]
    if args.time_complexity is not None:
        if args.time_to_accuracy is not None or args.quick or args.json:
            raise ConfigError(
                "--time-complexity writes its own figure: leave out --time-to-accuracy, --quick and --json"
            )
        from locus.experiments import time_complexity as tc

        tc.run(
            args.time_complexity,
            args.pool_sizes or tc.DEFAULT_POOL_SIZES,
            args.eval_sizes or tc.DEFAULT_EVAL_SIZES,
            args.query_sizes or tc.DEFAULT_QUERY_SIZES,
            repeat=args.repeat,
            device=args.device or default_device(),
            threads=args.threads,
            params_json=args.params,
            progress=print,
            precisions=precisions,
            bfloat16_on_cpu=args.bfloat16_on_cpu,
        )
        print(f"wrote {args.time_complexity} (.png, .csv)")
        return 0
    if sizes:
        raise ConfigError(f"{', '.join(sizes)} only apply with --time-complexity OUT.pdf")

    if len(precisions) > 1:
        raise ConfigError("--precision: one precision at a time, except with --time-complexity (one series each)")
    if args.time_to_accuracy is not None:
        from locus.experiments.time_to_accuracy import train_and_write

        if args.precision:
            raise ConfigError(
                "--precision does not apply to --time-to-accuracy (training runs in float32; set the "
                "precision of the final embeddings with --params)"
            )
        summary = train_and_write(
            args.time_to_accuracy,
            args.data,
            args.encodings,
            args.train_size,
            args.seed,
            args.params,
            device=args.device,
            threads=args.threads,
            progress=print,
        )
        print(f"wrote {args.time_to_accuracy}/time_to_accuracy.pdf (.png, .csv, .json)")
        return 0 if summary else 1

    from locus.params import method_params

    params = method_params("locus", args.params)
    if "precision" in params:
        raise ConfigError("--params: set the precision with --precision")
    result = run_benchmark(
        device=args.device or default_device(),
        threads=args.threads,
        quick=args.quick,
        repeat=1 if args.quick else args.repeat,
        progress=print,
        precision=precisions[0],
        params=params,
    )
    print(format_table(result))
    if args.json:
        write_json(args.json, result)
        print(f"wrote {args.json}")
    return 0
