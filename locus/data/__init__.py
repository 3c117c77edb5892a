"""Evaluation data: the canonical format (canonical.py), encodings (encodings.py) and one adapter per source."""
