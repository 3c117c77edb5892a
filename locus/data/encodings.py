"""Query encodings on disk: one Parquet file per (data set, encoder).

Columns: ``prompt_id`` (int64) and ``embedding`` (fixed-size list of float32, one vector per query).
The file's schema metadata records ``locus.encoder`` (short name), ``locus.dim``, ``locus.normalized``
and ``locus.data_fingerprint``: the :func:`data_fingerprint` of the data set that was encoded (SHA-256
over its sorted (prompt_id, prompt) pairs). Training refuses encodings whose fingerprint differs from
its data set's (:func:`check_matches`), and encodings without one (written before fingerprints existed):
prompt ids alone cannot tell two data sets apart (synthetic data sets all number prompts 0..n-1), so
such files must be re-encoded. Readers get an :class:`Encodings` object; nothing else parses the file.
A file may hold only some queries (``locus.subset`` names which: e.g. those of the encoder ablation's runs,
so that an encoder used by a few runs does not encode the whole data set); asking it for any other query is
a clear error.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from locus.atomic import atomic_path
from locus.errors import DataError, require_file

_META_PREFIX = "locus."
FINGERPRINT_KEY = "data_fingerprint"
SUBSET_KEY = "subset"


def data_fingerprint(prompt_ids, prompts) -> str:
    """SHA-256 (hex) over the (prompt_id, prompt text) pairs of a data set, sorted by prompt_id."""
    ids = np.asarray(prompt_ids, dtype=np.int64)
    texts = np.asarray(list(prompts), dtype=object)
    if len(ids) != len(texts):
        raise ValueError(f"{len(ids)} prompt ids but {len(texts)} prompts")
    order = np.argsort(ids, kind="stable")
    pairs = [[int(ids[i]), str(texts[i])] for i in order]
    return hashlib.sha256(json.dumps(pairs, ensure_ascii=False).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Encodings:
    prompt_ids: np.ndarray  # int64 [n]
    vectors: np.ndarray  # float32 [n, dim]
    encoder: str = "unknown"
    source: str = "<memory>"
    data_fingerprint: str | None = None  # of the data set encoded (None: not recorded)
    subset: str | None = None  # which queries, when the file holds only some of the data set's
    _index: pd.Index = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "_index", pd.Index(np.asarray(self.prompt_ids, dtype=np.int64)))

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    def take(self, prompt_ids) -> np.ndarray:
        """Vectors of the given prompt ids, in that order; a clear error names any id without an encoding."""
        prompt_ids = np.asarray(prompt_ids, dtype=np.int64)
        pos = self._index.get_indexer(prompt_ids)
        if (pos < 0).any():
            missing = prompt_ids[pos < 0]
            if self.subset:
                raise DataError(
                    f"{self.source}: holds only the queries of {self.subset}; {len(missing)} prompt_id(s) asked "
                    f"for are not among them, e.g. {missing[:5].tolist()}; encode the whole data set (locus "
                    "encode without --for-train-sizes) or the queries of these runs."
                )
            raise DataError(
                f"{self.source}: no encoding for {len(missing)} prompt_id(s), e.g. {missing[:5].tolist()}; "
                f"the encodings were made from another data set version — re-run the encode rule."
            )
        return self.vectors[pos]


def write_vectors(path: str | Path, id_column: str, ids, vectors: np.ndarray, meta: dict | None = None) -> None:
    """Write ids + a fixed-size float32 vector column (`embedding`) to Parquet atomically."""
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    ids = np.asarray(ids, dtype=np.int64)
    if vectors.ndim != 2 or len(vectors) != len(ids):
        raise ValueError(f"vectors shape {vectors.shape} does not match {len(ids)} ids")
    dim = vectors.shape[1]
    emb = pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1), type=pa.float32()), dim)
    table = pa.table({id_column: pa.array(ids, type=pa.int64()), "embedding": emb})
    meta = {f"{_META_PREFIX}{k}": str(v) for k, v in {"dim": dim, **(meta or {})}.items()}
    table = table.replace_schema_metadata(meta)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)


def read_vectors(path: str | Path, id_column: str) -> tuple[np.ndarray, np.ndarray, dict]:
    """(ids int64, vectors float32 [n, dim], metadata) of a file written by :func:`write_vectors`."""
    path = Path(path)
    require_file(path, f"give the Parquet file written by `locus encode` (or build it with `snakemake {path}`).")
    try:
        table = pq.read_table(path)
    except Exception as exc:
        raise DataError(f"{path}: not a readable Parquet file ({exc}); delete it and re-run its rule.") from exc
    for col in (id_column, "embedding"):
        if col not in table.column_names:
            raise DataError(f"{path}: missing column {col!r}; found {table.column_names}. Re-run its rule.")
    col = table.column("embedding").combine_chunks()
    if not pa.types.is_fixed_size_list(col.type):
        raise DataError(f"{path}: column 'embedding' must be a fixed-size list of float32, found {col.type}.")
    dim = col.type.list_size
    vectors = col.flatten().to_numpy(zero_copy_only=False).astype(np.float32, copy=False).reshape(-1, dim)
    meta = {k.decode(): v.decode() for k, v in (table.schema.metadata or {}).items()}
    meta = {k[len(_META_PREFIX) :]: v for k, v in meta.items() if k.startswith(_META_PREFIX)}
    return table.column(id_column).to_numpy().astype(np.int64), vectors, meta


def write_encodings(
    path: str | Path,
    prompt_ids,
    vectors: np.ndarray,
    encoder: str,
    normalized: bool,
    data_fingerprint: str,
    subset: str | None = None,
) -> None:
    """Encodings of a data set; `data_fingerprint` is that data set's :func:`data_fingerprint` (of all its
    queries, also when `subset` says that the file holds only some)."""
    if not data_fingerprint:
        raise ValueError("write_encodings: data_fingerprint is required (see locus.data.encodings.data_fingerprint)")
    meta = {"encoder": encoder, "normalized": str(bool(normalized)).lower(), FINGERPRINT_KEY: data_fingerprint}
    if subset:
        meta[SUBSET_KEY] = subset
    write_vectors(path, "prompt_id", prompt_ids, vectors, meta)


def read_encodings(path: str | Path) -> Encodings:
    ids, vectors, meta = read_vectors(path, "prompt_id")
    if len(np.unique(ids)) != len(ids):
        raise DataError(f"{path}: duplicate prompt_id values; the file is damaged — re-run `locus encode`.")
    if not np.isfinite(vectors).all():
        raise DataError(f"{path}: encodings hold NaN/Inf values; the file is damaged — re-run `locus encode`.")
    return Encodings(
        prompt_ids=ids,
        vectors=vectors,
        encoder=meta.get("encoder", "unknown"),
        source=str(path),
        data_fingerprint=meta.get(FINGERPRINT_KEY) or None,
        subset=meta.get(SUBSET_KEY) or None,
    )


def check_matches(encodings: Encodings, queries: pd.DataFrame, dataset: str) -> str:
    """DataError unless `encodings` were made from exactly these queries (``prompt_id``, ``prompt``) of the
    data set directory `dataset`; returns the fingerprint."""
    expected = data_fingerprint(queries["prompt_id"], queries["prompt"])
    redo = (
        f"re-run `locus encode --data {dataset} --encoder {encodings.encoder} --out {encodings.source}` "
        f"(in the workflow: delete the file, or `snakemake --forcerun encode`)"
    )
    if encodings.data_fingerprint is None:
        raise DataError(
            f"encodings {encodings.source} record no data-set fingerprint (made by an older locus), so "
            f"nothing shows they encode {dataset}; {redo}."
        )
    if encodings.data_fingerprint != expected:
        covered = np.isin(queries["prompt_id"].to_numpy(np.int64), encodings.prompt_ids).mean() if len(queries) else 0
        raise DataError(
            f"encodings {encodings.source} were made for another data set than {dataset} (fingerprint "
            f"{encodings.data_fingerprint[:12]}... vs {expected[:12]}...; they cover {covered:.0%} of its "
            f"prompt ids); {redo}."
        )
    missing = ~np.isin(queries["prompt_id"].to_numpy(np.int64), encodings.prompt_ids)
    if missing.any() and not encodings.subset:  # a consistent file cannot get here; an edited or damaged one can
        raise DataError(
            f"encodings {encodings.source} lack {int(missing.sum())} of the {len(missing)} prompt ids of "
            f"{dataset} although their fingerprint matches (the file was modified); {redo}."
        )
    return expected
