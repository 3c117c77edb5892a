"""Errors whose message is meant for the user: the CLI prints ``locus COMMAND: error: MESSAGE`` (one
line, no traceback) and exits with code 2, so the message names the file or option and says what to
do. Anything else that escapes a command is a bug and keeps its traceback (see :mod:`locus.cli`)."""


class LocusError(Exception):
    """Base class: the message names the file, the offending rows/columns and the fix."""


class DataError(LocusError, ValueError):
    """Input data (evaluations, encodings, score files) is malformed or inconsistent."""


class ConfigError(LocusError, ValueError):
    """A configuration value is missing or invalid."""
