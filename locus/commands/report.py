"""`locus report --results DIR [--update PAGE.md | --check PAGE.md | --block NAME ...]`: Markdown tables
of a finished run.

``--update`` rewrites the text between each ``<!-- locus-report:NAME -->`` ... ``<!-- /locus-report:NAME -->``
pair of a Markdown page (atomically; the text outside the markers is kept); ``--check`` exits 2 naming
the first stale block when the page differs from what ``--update`` would write; otherwise the named
blocks (default: all) are printed. The blocks are listed in :data:`locus.experiments.report.BLOCKS`."""

from __future__ import annotations

from pathlib import Path

from locus.cli import add_results_arguments, existing_dir, existing_file

NAME = "report"
HELP = "Markdown tables of a finished run, pasted between markers into a page (docs/results.md)"


def add_arguments(p):
    add_results_arguments(p)
    mode = p.add_mutually_exclusive_group()
    mode.add_argument(
        "--update",
        default=None,
        type=existing_file("Markdown page"),
        help="rewrite the generated blocks of this page in place",
    )
    mode.add_argument(
        "--check",
        default=None,
        type=existing_file("Markdown page"),
        help="exit 2 if a generated block of this page is stale",
    )
    mode.add_argument("--block", nargs="+", default=None, help="print these blocks (default: all)")
    p.add_argument(
        "--also",
        nargs="+",
        default=[],
        type=other_run,
        metavar="DIR[=CONFIG]",
        help="results of runs on other pools, set beside this one in the claims-pools block; =CONFIG names the "
        "config file each was made with (e.g. results-llmrouter=config/llmrouter.yaml), for its rebuild command",
    )
    p.add_argument(
        "--configfile",
        default=None,
        type=existing_file("config file"),
        metavar="FILE",
        help="the config file the run under --results was made with (e.g. config/seed-bands.yaml): each block's "
        "rebuild command names it",
    )


def other_run(text: str) -> tuple[Path, str | None]:
    """An argparse type: ``DIR`` or ``DIR=CONFIG``, a results directory and the config file it was made with,
    both of which must exist."""
    directory, sep, config = text.partition("=")
    found = existing_dir("results directory")(directory)
    return Path(found), (str(existing_file("config file")(config)) if sep else None)


def run(args) -> int:
    from locus.atomic import write_text
    from locus.errors import DataError
    from locus.experiments.report import (
        BLOCKS,
        Source,
        render_block,
        stale_blocks,
        update_text,
    )

    others = tuple(Source(d, configfile=config) for d, config in args.also)
    src = Source(Path(args.results), args.dataset, others, str(args.configfile) if args.configfile else None)
    page = args.update or args.check
    if page is None:
        for name in args.block or list(BLOCKS):
            print(f"<!-- locus-report:{name} -->\n{render_block(name, src)}<!-- /locus-report:{name} -->\n")
        return 0
    text = Path(page).read_text(encoding="utf-8")
    if args.check is not None:
        stale = stale_blocks(text, src, str(page))
        if stale:
            raise DataError(
                f"{page}: block {stale[0]!r} is stale"
                + (f" (and {', '.join(stale[1:])})" if len(stale) > 1 else "")
                + f"; regenerate it with: locus report --results {args.results} --update {page}"
                + (f" --configfile {args.configfile}" if args.configfile else "")
            )
        print(f"{page}: every generated block is current")
        return 0
    new = update_text(text, src, str(page))
    if new != text:
        try:
            write_text(page, new)
        except OSError as exc:
            raise DataError(f"cannot write {page}: {exc.strerror or exc}; check its permissions and the disk") from None
    print(f"{page}: {'updated' if new != text else 'already current'}")
    return 0
