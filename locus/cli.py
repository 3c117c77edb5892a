"""Command line: `locus <command> ...` (also `python -m locus ...`).

Each command lives in its own module under `locus/commands/` and defines `NAME`, `HELP`,
`add_arguments(parser)` and `run(args) -> int`. Commands are discovered automatically and imported
lazily, so `locus --help` stays fast.
"""
from __future__ import annotations

import argparse
import importlib
import logging
import pkgutil
import sys

import locus.commands
from locus.errors import LocusError


def _command_modules():
    for info in sorted(pkgutil.iter_modules(locus.commands.__path__), key=lambda i: i.name):
        if not info.name.startswith("_"):
            yield importlib.import_module(f"locus.commands.{info.name}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="locus", description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in _command_modules():
        p = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP)
        module.add_arguments(p)
        p.set_defaults(_run=module.run)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        return int(args._run(args) or 0)
    except LocusError as exc:
        print(f"locus {args.command}: error: {exc}", file=sys.stderr)
        return 2
