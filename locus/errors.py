"""Errors whose message is meant for the user: the CLI prints ``locus COMMAND: error: MESSAGE`` (one
line, no traceback) and exits with code 2, so the message names the file or option and says what to
do. Anything else that escapes a command is a bug and keeps its traceback (see :mod:`locus.cli`).

:func:`require_file` is the one check that an input path is a readable regular file."""

import os
import stat


class LocusError(Exception):
    """Base class: the message names the file, the offending rows/columns and the fix."""


class DataError(LocusError, ValueError):
    """Input data (evaluations, encodings, score files) is malformed or inconsistent."""


class ConfigError(LocusError, ValueError):
    """A configuration value is missing or invalid."""


def require_file(path, fix: str) -> None:
    """DataError ``PATH: WHAT IT IS; FIX`` unless `path` is a regular file (or a link to one): a missing path,
    a directory, a device such as /dev/null, a FIFO or a socket is named as what it is."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise DataError(f"{path}: file not found; {fix}") from None
    except OSError as exc:
        raise DataError(f"{path}: cannot be opened ({exc.strerror or exc}); {fix}") from None
    if stat.S_ISREG(mode):
        return
    what = (
        "is a directory, not a file"
        if stat.S_ISDIR(mode)
        else "is a device (such as /dev/null), not a file"
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
        else "is a pipe or socket, not a file"
    )
    raise DataError(f"{path}: {what}; {fix}")
