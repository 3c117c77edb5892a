"""Errors whose message is meant for the user (the CLI prints them without a traceback)."""


class LocusError(Exception):
    """Base class: the message names the file, the offending rows/columns and the fix."""


class DataError(LocusError, ValueError):
    """Input data (evaluations, encodings, score files) is malformed or inconsistent."""


class ConfigError(LocusError, ValueError):
    """A configuration value is missing or invalid."""
