"""Paper experiments as pure functions from saved run artefacts (metrics.json, scores, embeddings) to
DataFrames; rendering lives in :mod:`locus.render`."""
