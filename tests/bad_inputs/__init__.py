"""Table-driven bad-input cases for the `locus` command line (see harness.py and tests/test_bad_inputs.py)."""
