"""`locus export-csv --data DIR --out FILE.csv`: a canonical data set as one CSV that the ``csv`` source reads.

The reverse of bringing your own data (:mod:`locus.data.csv_export`): one row per score with ``prompt, model,
score, benchmark, category, split`` and the model columns the csv source reads (``cost`` and the others it
declares, repeated on every row of a model), so that ``locus data csv --out DIR2 --params '{"path":
"FILE.csv"}'`` rebuilds the same pool: prompts, models, scores, the split of every query, benchmarks,
categories and those model columns. ``FILE`` may end in .csv, .csv.gz, .tsv or .tsv.gz; it is written
atomically, and its directory must exist. The command prints the rebuild command line (with ``model_order:
appearance`` or ``--split-overlap keep_all`` where the pool needs them) and every thing the CSV does not
carry: other model columns (e.g. tags), a model column some model has no value in, a synthetic pool's
truth.parquet, queries without scores, repeated prompt texts within one split, spaces around benchmark /
category names, and prompt / model ids where they are not those the csv source gives.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from locus.cli import add_data_argument, add_out_argument, output_file

NAME = "export-csv"
HELP = "write a canonical data set as one CSV in the format of the csv source (bring your own data, reversed)"
SUFFIXES = (".csv", ".csv.gz", ".tsv", ".tsv.gz")  # what the csv source reads (locus.data.csv_export.SUFFIXES)


def csv_out(text: str) -> Path:
    """An argparse type: a writable .csv/.csv.gz/.tsv/.tsv.gz path whose directory exists."""
    if not str(text).lower().endswith(SUFFIXES):
        raise argparse.ArgumentTypeError(f"{text}: expected a path ending in {', '.join(SUFFIXES)}")
    path = output_file()(text)
    parent = path.absolute().parent
    if not parent.is_dir():
        raise argparse.ArgumentTypeError(
            f"{path}: the directory {parent} does not exist; create it first (mkdir -p {parent}) or choose another path"
        )
    return path


csv_out.locus_output = True  # an output path: an OSError about it is one line (locus.cli.main)
csv_out.__name__ = "output file"


def add_arguments(p):
    # not checked by argparse: the reader's message says how to build a data set
    add_data_argument(p, "canonical data set directory (written by `locus data`)", required=True, checked=False)
    add_out_argument(p, csv_out, "the CSV to write (.csv, .csv.gz, .tsv or .tsv.gz; replaced)")


def run(args) -> int:
    from locus.data.csv_export import write_csv

    export = write_csv(args.data, args.out)
    print(
        f"wrote {export.path}: {export.rows} rows ({export.queries} queries x {export.models} models), "
        f"columns {', '.join(export.columns)}"
    )
    print(f"rebuild: {export.rebuild_command()}")
    if export.notes:
        print("not carried by the CSV format:")
        for note in export.notes:
            print(f"  - {note}")
    return 0
