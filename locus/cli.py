"""Command line: `locus <command> ...` (also `python -m locus ...`).

Each command lives in its own module under `locus/commands/` and defines `NAME`, `HELP`,
`add_arguments(parser)` and `run(args) -> int`. Commands are discovered automatically and imported
lazily, so `locus --help` stays fast. Command modules do not import each other: what two commands
share lives in a package module (or in the argument types below). Options many commands take are declared
once here (:func:`add_data_argument`, :func:`add_out_argument`, :func:`add_seed_argument`,
:func:`add_threads_argument`), so each reads and is checked the same everywhere.

User mistakes never end in a traceback: they exit with code 2 and one line
``locus COMMAND: error: ...`` that says what to do. Four layers catch them:

- argument types (:func:`int_at_least`, :func:`output_file`, :func:`device_arg`, ...): argparse
  rejects the value before anything runs (it exits 2 itself);
- :func:`only_with`: an option that means something only beside another one, given without it, is refused
  before any work instead of being ignored;
- :class:`~locus.errors.LocusError` raised by the package (bad data, bad configuration);
- an ``OSError`` about one of the command's output paths (a full disk, a permission that changed
  after the check; a full disk reported without a file name) in :func:`main`. Any other exception is a bug
  and keeps its traceback.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import logging
import os
import pkgutil
import re
import sys
from pathlib import Path

from locus.errors import ConfigError, LocusError
from locus.outputs import check_output

# argument destinations treated as output paths even without an output type (e.g. `data --out`)
OUTPUT_DESTS = ("out", "json")


# --------------------------------------------------------------------------------------------------
# argument types: argparse prints "locus CMD: error: argument --flag: MESSAGE" and exits 2
# --------------------------------------------------------------------------------------------------
def int_at_least(minimum: int, meaning: str = ""):
    """An argparse type: a whole number >= `minimum`; `meaning` explains special values (e.g. 0)."""
    note = f" ({meaning})" if meaning else ""

    def parse(text: str) -> int:
        try:
            value = int(str(text).strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number >= {minimum}{note}, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}{note}, got {value}")
        return value

    parse.__name__ = f"int>={minimum}"
    return parse


positive_int = int_at_least(1)
threads_arg = int_at_least(0, "0 = torch's default number of threads")
# numpy's generators refuse a negative seed with a traceback from deep inside a command: refused here
seed_arg = int_at_least(0)
seed_arg.__name__ = "seed"


def comma_list(text: str) -> list[str]:
    """An argparse type: a non-empty comma-separated list (blank items dropped)."""
    items = [s.strip() for s in str(text).split(",") if s.strip()]
    if not items:
        raise argparse.ArgumentTypeError(
            f"{text!r} names nothing; give one or more names separated by commas (or leave the option out for all)"
        )
    return items


def number_list(kind=float, low=None, high=None):
    """An argparse type: comma-separated numbers of `kind`, each in [low, high] where given."""

    def parse(text: str):
        try:
            values = [kind(x) for x in comma_list(text)]
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None
        bad = [v for v in values if (low is not None and v < low) or (high is not None and v > high)]
        if bad:
            raise argparse.ArgumentTypeError(f"values {bad} outside [{low}, {high if high is not None else '∞'}]")
        return values

    parse.__name__ = "number list"
    return parse


def size_list(text: str) -> list[int]:
    """An argparse type: comma-separated whole numbers >= 1 (sorted, duplicates dropped)."""
    if not any(s.strip() for s in str(text).split(",")):
        raise argparse.ArgumentTypeError(f"expected comma-separated whole numbers >= 1, e.g. 64,256, got {text!r}")
    return sorted({positive_int(item) for item in comma_list(text)})


size_list.__name__ = "list of sizes"


def level(text: str) -> float:
    """An argparse type: a confidence level strictly between 0 and 1."""
    try:
        value = float(str(text).strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1 (e.g. 0.95), got {text!r}") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1 (e.g. 0.95), got {value}")
    return value


level.__name__ = "confidence level"


def add_bootstrap_arguments(p, resamples: int, what: str = "the test queries") -> None:
    """--bootstrap-resamples, --bootstrap-seed and --confidence of a command with paired bootstrap intervals."""
    p.add_argument(
        "--bootstrap-resamples",
        type=int_at_least(1),
        default=resamples,
        help=f"paired bootstrap resamples of {what} (default {resamples})",
    )
    add_seed_argument(p, "--bootstrap-seed", help="seed of the resampling (default 0)")
    p.add_argument("--confidence", type=level, default=0.95, help="confidence level of the intervals (default 0.95)")


def add_hold_out_argument(p) -> None:
    """--hold-out of the commands that embed held-out models: ``args.hold_out`` is None for the data set's
    ``held_out`` column (the default), else the list of names."""
    p.add_argument(
        "--hold-out",
        type=lambda text: None if text.strip() == "column" else comma_list(text),
        default=None,
        metavar="column|NAME,NAME,...",
        help="the held-out models: 'column' = the data set's held_out column (default), else names",
    )


def add_results_arguments(p) -> None:
    """--results and --dataset of the commands that read a finished run's outputs (`report`, `claims`)."""
    p.add_argument(
        "--results",
        required=True,
        type=existing_dir("results directory"),
        help="the finished run's results directory (tables/, figures/, data/)",
    )
    p.add_argument(
        "--dataset",
        default=None,
        help="the data set of the run (default: the only one under RESULTS/data with a summary.md)",
    )


# --------------------------------------------------------------------------------------------------
# the options many commands share: one declaration each, so a flag reads and checks the same everywhere
# --------------------------------------------------------------------------------------------------
def add_data_argument(
    p,
    help: str | None = "canonical data set directory",
    *,
    required: bool = False,
    checked: bool = True,
    what: str = "data set directory",
    **kw,
) -> None:
    """--data, a canonical data set directory. `checked`: argparse refuses a missing one (naming it `what`);
    else the reader does, with a message that says how to build a data set."""
    p.add_argument("--data", required=required, type=existing_dir(what) if checked else None, help=help, **kw)


def add_out_argument(p, type, help: str, *, required: bool = True, **kw) -> None:
    """--out, what the command writes: `type` is :func:`output_file`, :func:`output_dir` or another output
    type, so the path is checked before any work."""
    p.add_argument("--out", required=required, type=type, help=help, **kw)


def add_seed_argument(p, *flags: str, help: str | None = None, default: int = 0, **kw) -> None:
    """A seed option (default ``--seed``): a whole number >= 0 (:data:`seed_arg`)."""
    p.add_argument(*(flags or ("--seed",)), type=seed_arg, default=default, help=help, **kw)


def add_threads_argument(p, help: str = "torch threads", *, default: int | None = 0, **kw) -> None:
    """--threads, torch's CPU threads: a whole number >= 0, 0 = torch's default (:data:`threads_arg`)."""
    p.add_argument("--threads", type=threads_arg, default=default, help=help, **kw)


def add_alphas_argument(p, help: str = "risk levels") -> None:
    """--alphas, the risk levels of the selective-routing table (`locus decisions selective`); `locus route
    --alpha` takes the same grid, whose smallest level fixes the thresholds Learn-then-Test skips."""
    p.add_argument("--alphas", type=number_list(float, 0, 1), default=[0.05, 0.1, 0.2, 0.3], help=help)


# --------------------------------------------------------------------------------------------------
# options that mean something only beside another one: refused when given without it
# --------------------------------------------------------------------------------------------------
class _Given(argparse._StoreAction):
    """argparse's store action that also notes the option as typed (``args._given``: dest -> flag), so a
    command can tell an option given on the command line from its default (:func:`only_with`)."""

    def __call__(self, parser, namespace, values, option_string=None):
        super().__call__(parser, namespace, values, option_string)
        namespace._given = {**getattr(namespace, "_given", {}), self.dest: option_string or self.dest}


def given(args, *dests: str) -> list[str]:
    """The options among `dests` (argparse destinations) that the command line gave, as typed."""
    typed = getattr(args, "_given", {})
    return [typed[d] for d in dests if d in typed]


def only_with(args, dests, condition, needs: str, fix: str = "") -> None:
    """A ConfigError (exit 2, one line) naming the options of `dests` given on the command line unless
    `condition`: each means something only `needs` (e.g. "with --alpha"), and would be ignored silently.
    `fix`: the other way out (e.g. "give --alpha ALPHA"), after "leave them out"."""
    flags = given(args, *dests)
    if condition or not flags:
        return
    names = flags[0] if len(flags) == 1 else f"{', '.join(flags[:-1])} and {flags[-1]}"
    verb, them = ("applies", "it") if len(flags) == 1 else ("apply", "them")
    raise ConfigError(f"{names} {verb} only {needs}; leave {them} out" + (f" or {fix}" if fix else ""))


def positive_number(text: str) -> float:
    """An argparse type: a number > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {value}")
    return value


def _output_type(directory: bool, suffixes: tuple[str, ...] = ()):
    def parse(text: str) -> Path:
        if suffixes and Path(text).suffix.lower() not in suffixes:
            raise argparse.ArgumentTypeError(f"{text}: expected a path ending in {' or '.join(suffixes)}")
        try:
            return check_output(text, directory)
        except ConfigError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parse.locus_output = True
    parse.__name__ = "output directory" if directory else "output file"
    return parse


def output_file(suffixes=()):
    """An argparse type for a file the command writes (checked by :func:`check_output`)."""
    return _output_type(False, tuple(s.lower() for s in suffixes))


def output_dir():
    """An argparse type for a directory the command writes (an existing one is replaced)."""
    return _output_type(True)


def _existing(what: str, want_dir: bool):
    """An argparse type: a path that must exist and be a directory (`want_dir`) or a file."""

    def parse(text: str) -> Path:
        p = Path(text).expanduser()
        if not p.exists():
            raise argparse.ArgumentTypeError(f"{p}: {what} not found; check the path")
        if not (p.is_dir() if want_dir else p.is_file()):
            raise argparse.ArgumentTypeError(f"{p}: is a {'file' if want_dir else 'directory'}, expected a {what}")
        return p

    parse.__name__ = what
    return parse


def existing_dir(what: str = "directory"):
    """An argparse type: a directory that must exist."""
    return _existing(what, want_dir=True)


def existing_file(what: str = "file"):
    """An argparse type: a file that must exist."""
    return _existing(what, want_dir=False)


def device_arg(kinds=("cpu", "cuda", "mps")):
    """An argparse type for a torch device (``cpu``, ``cuda``, ``cuda:N``, ``mps``), refused when this
    machine does not have it."""

    def parse(text: str) -> str:
        value = str(text).strip().lower()
        m = re.fullmatch(r"(cpu|cuda|mps)(?::(\d+))?", value)
        if not m or m.group(1) not in kinds or (m.group(2) and m.group(1) != "cuda"):
            raise argparse.ArgumentTypeError(
                f"unknown device {text!r}; use {' or '.join(kinds)}"
                + (" (cuda:N for the N-th GPU)" if "cuda" in kinds else "")
            )
        if m.group(1) == "cpu":
            return value
        import torch

        if m.group(1) == "mps":
            if not torch.backends.mps.is_available():
                raise argparse.ArgumentTypeError("mps is not available on this machine; use --device cpu")
            return value
        if not torch.cuda.is_available():
            why = "this torch has no CUDA support" if torch.version.cuda is None else "no CUDA GPU is visible"
            raise argparse.ArgumentTypeError(f"{value}: CUDA is not available ({why}); use --device cpu")
        if m.group(2) and int(m.group(2)) >= torch.cuda.device_count():
            raise argparse.ArgumentTypeError(
                f"{value}: this machine has {torch.cuda.device_count()} CUDA "
                f"device(s), cuda:0..cuda:{torch.cuda.device_count() - 1}"
            )
        return value

    parse.__name__ = "device"
    return parse


# --------------------------------------------------------------------------------------------------
# parser and entry point
# --------------------------------------------------------------------------------------------------
COMMANDS_DIR = Path(__file__).parent / "commands"  # found by path: the commands import this module, not it them


def _command_modules():
    for info in sorted(pkgutil.iter_modules([str(COMMANDS_DIR)]), key=lambda i: i.name):
        if not info.name.startswith("_"):
            yield importlib.import_module(f"locus.commands.{info.name}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="locus", description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in _command_modules():
        p = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP)
        for name in (None, "store"):  # every stored option notes that it was given (:func:`only_with`)
            p.register("action", name, _Given)
        module.add_arguments(p)
        outputs = [a.dest for a in p._actions if getattr(a.type, "locus_output", False)]
        p.set_defaults(_run=module.run, _outputs=outputs)
    return parser


def _output_of(exc: OSError, args) -> str | None:
    """The output argument `exc` is about (the path itself, a file beside it such as a temporary or
    a sibling output, something inside it, or a directory on its way), else None."""
    dests = set(getattr(args, "_outputs", ())) | set(OUTPUT_DESTS)
    values = [getattr(args, d, None) for d in sorted(dests)]
    names = [n for n in (exc.filename, exc.filename2) if n not in (None, "")]
    for value in values:
        if value is None or not isinstance(value, (str, os.PathLike)):
            continue
        target = Path(value).absolute()
        for name in names:
            f = Path(os.fsdecode(name)).absolute()
            if f == target or target in f.parents or f in target.parents or f.parent == target.parent:
                return str(value)
    return None


def main(argv=None) -> int:
    """Run one command; returns the exit code (0 ok, 2 a user mistake: one error line on stderr)."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2; it printed the message)
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        return int(args._run(args) or 0)
    except LocusError as exc:
        print(f"locus {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        out = _output_of(exc, args)
        if out is None and exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS):
            # a full disk reported without a file name (pyarrow's writers): about where the command writes
            dests = sorted(set(getattr(args, "_outputs", ())) | set(OUTPUT_DESTS))
            out = next((str(v) for v in (getattr(args, d, None) for d in dests) if v is not None), None)
        if out is None:
            raise  # not about an output path: a bug or an unexpected failure, keep the traceback
        reason = exc.strerror or os.strerror(exc.errno) if exc.errno else str(exc)
        print(
            f"locus {args.command}: error: cannot write {out}: {reason}{f' ({exc.filename})' if exc.filename else ''}; check the disk "
            "and the permissions or choose another output path",
            file=sys.stderr,
        )
        return 2
