"""`locus bench`: time LOCUS training, embedding and prediction on this machine (see :mod:`locus.benchmark`)."""
from __future__ import annotations

from locus.cli import device_arg, existing_dir, existing_file, output_dir, output_file, positive_int, threads_arg

NAME = "bench"
HELP = "measure LOCUS training, embedding and prediction speed on this machine"


def add_arguments(parser) -> None:
    parser.add_argument("--device", type=device_arg(("cpu", "cuda")), default=None, metavar="cpu|cuda",
                        help="cpu or cuda (default: where training runs: cuda when available, else cpu)")
    parser.add_argument("--threads", type=threads_arg, default=2, help="torch CPU threads (0 = torch default)")
    parser.add_argument("--quick", action="store_true",
                        help="small shapes and one repetition: a few seconds on 2 CPU cores (a smoke test)")
    parser.add_argument("--json", type=output_file((".json",)), default=None, help="also write the results as JSON")
    parser.add_argument("--repeat", type=positive_int, default=3,
                        help="warm repetitions per measurement after the cold first call (median reported)")
    tta = parser.add_argument_group(
        "time to accuracy", "with --time-to-accuracy DIR: train LOCUS once per recipe (paper, fast) on the same "
        "data, n and seed into DIR/<recipe>/ and write DIR/time_to_accuracy.{pdf,png,csv,json} (validation "
        "hit@1 against wall-clock seconds; the same as the workflow's time_to_accuracy rule, without Snakemake)")
    tta.add_argument("--time-to-accuracy", type=output_dir(), default=None, metavar="DIR",
                     help="output directory of the comparison (replaces runs already there)")
    tta.add_argument("--data", type=existing_dir("canonical data set directory"), default=None)
    tta.add_argument("--encodings", type=existing_file("encodings Parquet"), default=None)
    tta.add_argument("--train-size", type=positive_int, default=256, help="training queries per model (default 256)")
    tta.add_argument("--seed", type=int, default=0)
    tta.add_argument("--params", default="{}", help="LOCUS parameters applied to every recipe (JSON), e.g. device")


def run(args) -> int:
    from locus.atomic import write_json
    from locus.benchmark import default_device, format_table, run_benchmark

    if args.time_to_accuracy is not None:
        from locus.benchmark import time_to_accuracy

        summary = time_to_accuracy(args.time_to_accuracy, args.data, args.encodings, args.train_size, args.seed,
                                   args.params, device=args.device, threads=args.threads, progress=print)
        print(f"wrote {args.time_to_accuracy}/time_to_accuracy.pdf (.png, .csv, .json)")
        return 0 if summary else 1

    result = run_benchmark(device=args.device or default_device(), threads=args.threads, quick=args.quick,
                           repeat=1 if args.quick else args.repeat, progress=print)
    print(format_table(result))
    if args.json:
        write_json(args.json, result)
        print(f"wrote {args.json}")
    return 0
