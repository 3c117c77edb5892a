"""One module per `locus` sub-command (see locus/cli.py for the protocol)."""
