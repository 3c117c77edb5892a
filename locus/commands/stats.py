"""`locus stats --data DIR [--json OUT.json]`: is routing worth it on this pool, and how is it built?

Prints the pool statistics of :mod:`locus.data.stats` (model disagreement, shared difficulty, PC1
share, accuracy spread, nearest-neighbour agreement, oracle / best single / random routing per
split, per-benchmark spread, closest model pairs) as Markdown; ``--json`` also writes them as JSON
(undefined values as null)."""

from __future__ import annotations

from locus.cli import add_data_argument, output_file
from locus.constants import DEFAULT_DUPLICATE_POLICY, DUPLICATE_POLICIES

NAME = "stats"
HELP = "pool statistics of a data set: model disagreement, shared difficulty, routing headroom, closest models"


def add_arguments(p):
    add_data_argument(p, required=True, checked=False)  # the reader's message says how to build one
    p.add_argument("--json", default=None, type=output_file((".json",)), help="also write the statistics as JSON")
    p.add_argument(
        "--duplicates",
        default=DEFAULT_DUPLICATE_POLICY,
        choices=DUPLICATE_POLICIES,
        help="policy for several scores of one (prompt, model) in a data set written by hand",
    )


def run(args) -> int:
    from locus.atomic import write_json
    from locus.data.canonical import read_dataset
    from locus.data.stats import format_stats, pool_statistics, to_json

    data = read_dataset(args.data, duplicates=args.duplicates)
    stats = pool_statistics(data)
    if args.json is not None:
        write_json(args.json, to_json(stats))
    print(format_stats(stats, heading="#"))
    return 0
