"""locus: low-dimensional model embeddings for LLM exploration, comparison and routing (LOCUS)."""

__version__ = "0.1.0"
