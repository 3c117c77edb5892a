"""`locus encode`: encode the query texts of a canonical data set with a sentence encoder."""

from __future__ import annotations

import argparse
import json

from locus.cli import device_arg, output_file, positive_int

NAME = "encode"
HELP = "encode query texts of a data set with a sentence encoder (offline for packaged encoders)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", metavar="DIR", help="canonical data set directory (queries.parquet, ...)")
    parser.add_argument(
        "--encoder",
        default="all-MiniLM-L6-v2",
        metavar="NAME",
        help="all-MiniLM-L6-v2 (default), all-mpnet-base-v2 (the paper's), a local model "
        "folder, or a Hugging Face hub name (needs network)",
    )
    parser.add_argument("--out", metavar="PATH", type=output_file(), help="output Parquet file (prompt_id + embedding)")
    parser.add_argument("--batch-size", type=positive_int, default=64, metavar="N", help="texts per batch (default 64)")
    parser.add_argument(
        "--threads", type=positive_int, default=None, metavar="N", help="torch CPU threads (default: torch's)"
    )
    parser.add_argument(
        "--device", type=device_arg(), default=None, help="torch device: cpu, cuda, cuda:N or mps (default: automatic)"
    )
    parser.add_argument(
        "--cache-dir",
        default=None,
        metavar="D",
        help="where all-mpnet-base-v2 is reassembled once (default $LOCUS_CACHE_DIR/encoders "
        "or ~/.cache/locus/encoders)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--list", action="store_true", help="list the encoders available offline and exit")


def run(args) -> int:
    from locus import encoders
    from locus.errors import ConfigError

    if args.list:
        for name, install in encoders.PACKAGED.items():
            default = " (default)" if name == encoders.DEFAULT_ENCODER else ""
            print(f"{name}{default}\n    install: {install}")
        return 0
    missing = [flag for flag, value in (("--data", args.data), ("--out", args.out)) if not value]
    if missing:
        raise ConfigError(f"{' and '.join(missing)} required (or use --list)")
    stats = encoders.encode_dataset(
        args.data,
        args.encoder,
        args.out,
        batch_size=args.batch_size,
        threads=args.threads,
        cache_dir=args.cache_dir,
        device=args.device,
        progress=not args.no_progress,
    )
    print(
        f"encoded {stats['queries']} queries with {stats['encoder']} ({stats['dim']}-d) in "
        f"{stats['encode_s']:.1f} s: {stats['queries_per_s']:.1f} queries/s -> {stats['out']}"
    )
    print(json.dumps(stats, sort_keys=True))
    return 0
