"""`locus bench`: time LOCUS training, embedding and prediction on this machine (see :mod:`locus.benchmark`)."""
from __future__ import annotations

from locus.cli import device_arg, output_file, positive_int, threads_arg

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


def run(args) -> int:
    from locus.atomic import write_json
    from locus.benchmark import default_device, format_table, run_benchmark

    result = run_benchmark(device=args.device or default_device(), threads=args.threads, quick=args.quick,
                           repeat=1 if args.quick else args.repeat, progress=print)
    print(format_table(result))
    if args.json:
        write_json(args.json, result)
        print(f"wrote {args.json}")
    return 0
