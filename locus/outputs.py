"""Checks of output paths before any work is done, so a command that cannot write its result fails at
once with one clear line (and leaves nothing behind) instead of after the work, with a traceback."""

from __future__ import annotations

import os
from pathlib import Path

from locus.errors import ConfigError


def check_output(path, directory: bool = False) -> Path:
    """`path` as a Path if it can be written, else :class:`ConfigError` saying why and what to do.

    A file output must not be an existing directory, a directory output not an existing file; the
    nearest existing ancestor of its parent must be a directory we may write in. Missing directories
    are created when the output is written, not here, so a command that fails later leaves nothing."""
    text = str(path)
    if not text.strip():
        raise ConfigError("empty output path; give a file name")
    p = Path(text).expanduser()
    what = "directory" if directory else "file"
    try:
        return _check_output(p, directory, what)
    except PermissionError as exc:  # a directory on the way that we may not enter (stat refused)
        ancestors = reversed(p.absolute().parents)
        blocked = next((a for a in ancestors if not os.access(a, os.X_OK)), Path(exc.filename or p).parent)
        raise ConfigError(
            f"cannot write the {what} {p}: no permission to enter {blocked}; choose a location you may write to"
        ) from None


def _check_output(p: Path, directory: bool, what: str) -> Path:
    if directory and p.exists() and not p.is_dir():
        raise ConfigError(f"{p} exists and is a file; give a directory path (an existing run directory is replaced)")
    if not directory and p.is_dir():
        raise ConfigError(f"{p} is a directory; give a file path inside it, e.g. {p / ('out' + p.suffix)}")
    existing = p.absolute().parent
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise ConfigError(
            f"cannot create the {what} {p}: {existing} is a file, not a directory; choose another location"
        )
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ConfigError(
            f"cannot write the {what} {p}: no permission to write in {existing}; choose a location you may write to"
        )
    return p


def check_outputs(paths) -> list[Path]:
    """:func:`check_output` for several files written together (e.g. a table and its CSV)."""
    return [check_output(p) for p in paths]
