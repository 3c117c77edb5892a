"""`locus encode`: encode the query texts of a canonical data set with a sentence encoder."""

from __future__ import annotations

import argparse
import json

from locus.cli import (
    add_data_argument,
    add_out_argument,
    add_seed_argument,
    add_threads_argument,
    device_arg,
    number_list,
    only_with,
    output_file,
    positive_int,
)
from locus.constants import DEFAULT_DUPLICATE_POLICY, DEFAULT_SAMPLING, DUPLICATE_POLICIES, SAMPLING

NAME = "encode"
HELP = "encode query texts of a data set with a sentence encoder (offline for packaged encoders)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # not required by argparse, nor checked: --list needs neither, and the reader says how to build a data set
    add_data_argument(parser, "canonical data set directory (queries.parquet, ...)", checked=False, metavar="DIR")
    parser.add_argument(
        "--encoder",
        default="all-MiniLM-L6-v2",
        metavar="NAME",
        help="all-MiniLM-L6-v2 (default), all-mpnet-base-v2 (the paper's), a local model "
        "folder, or a Hugging Face hub name (needs network)",
    )
    add_out_argument(
        parser, output_file(), "output Parquet file (prompt_id + embedding)", required=False, metavar="PATH"
    )
    parser.add_argument("--batch-size", type=positive_int, default=64, metavar="N", help="texts per batch (default 64)")
    add_threads_argument(parser, "torch CPU threads (default: torch's)", default=None, metavar="N")
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
    runs = parser.add_argument_group(
        "only the queries some runs read",
        "with --for-train-sizes: encode the validation and test queries and the training queries of the runs "
        "at these sizes and seeds (as `locus train` draws them), not the whole data set; training on any other "
        "query is then refused with a clear error. For an encoder that only a few runs use (the encoder ablation).",
    )
    runs.add_argument("--for-train-sizes", type=number_list(int, low=1), default=None, metavar="N[,N]")
    runs.add_argument("--for-seeds", type=number_list(int, low=0), default=[0], metavar="S[,S]", help="(default 0)")
    runs.add_argument("--sampling", choices=SAMPLING, default=DEFAULT_SAMPLING, help="the runs' sampling")
    runs.add_argument(
        "--duplicates", choices=DUPLICATE_POLICIES, default=DEFAULT_DUPLICATE_POLICY, help="the runs' duplicate policy"
    )
    runs.add_argument(
        "--for-query-sample",
        type=positive_int,
        default=None,
        metavar="MAX",
        help="also the queries that `locus views query-tsne --max-queries MAX --seed --sample-seed` shows",
    )
    add_seed_argument(runs, "--sample-seed", metavar="S", help="(default 0)")
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
    prompt_ids, subset = None, None
    if args.for_query_sample and not args.for_train_sizes:
        raise ConfigError("--for-query-sample adds to --for-train-sizes; give both, or neither to encode every query")
    # the runs' options describe which queries to keep: without --for-train-sizes they would be ignored silently
    only_with(args, ("for_seeds", "sampling", "duplicates"), args.for_train_sizes, "with --for-train-sizes N[,N]")
    only_with(args, ("sample_seed",), args.for_query_sample, "with --for-query-sample MAX")
    if args.for_train_sizes:
        prompt_ids, subset = _queries_of_runs(args)
    stats = encoders.encode_dataset(
        args.data,
        args.encoder,
        args.out,
        batch_size=args.batch_size,
        threads=args.threads,
        cache_dir=args.cache_dir,
        device=args.device,
        progress=not args.no_progress,
        prompt_ids=prompt_ids,
        subset=subset,
    )
    print(
        f"encoded {stats['queries']} of {stats['of_queries']} queries with {stats['encoder']} ({stats['dim']}-d) in "
        f"{stats['encode_s']:.1f} s: {stats['queries_per_s']:.1f} queries/s -> {stats['out']}"
    )
    print(json.dumps(stats, sort_keys=True))
    return 0


def _queries_of_runs(args):
    """(prompt ids, description): the validation and test queries and every training query of the runs at
    --for-train-sizes x --for-seeds, drawn as `locus train` draws them."""
    import numpy as np

    from locus.data.canonical import read_dataset
    from locus.runs import training_pairs

    data = read_dataset(args.data, duplicates=args.duplicates)
    ids = [data.split_queries(split)["prompt_id"].to_numpy(np.int64) for split in ("val", "test")]
    for n in sorted(set(args.for_train_sizes)):
        for seed in sorted(set(args.for_seeds)):
            ids.append(training_pairs(data, n, seed, args.sampling)["prompt_id"].to_numpy(np.int64))
    sizes = ",".join(map(str, sorted(set(args.for_train_sizes))))
    seeds = ",".join(map(str, sorted(set(args.for_seeds))))
    subset = (
        f"the validation and test split and the training queries of runs at n = {sizes}, seed(s) {seeds} "
        f"({args.sampling} sampling, duplicates {args.duplicates})"
    )
    if args.for_query_sample:
        from locus.geometry.hypothetical import query_sample

        everything = np.sort(data.queries["prompt_id"].to_numpy(np.int64))
        ids.append(everything[query_sample(everything, args.for_query_sample, args.sample_seed)])
        subset += f", and the t-SNE sample of {args.for_query_sample} queries (seed {args.sample_seed})"
    return np.unique(np.concatenate(ids)), subset
