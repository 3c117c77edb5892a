"""Data sources have one registry, :data:`locus.params.SOURCES` (name -> adapter module): the workflow's schema
lists exactly its names, the sources that write the generator's truth are exactly those whose adapter can, and a
new source is its module plus one registry line (built here through `locus data`, as the workflow's data rule
does)."""

from __future__ import annotations

from pathlib import Path

import yaml

from locus.cli import main
from locus.data.canonical import read_dataset
from locus.data.truth import SOURCES_WITH_TRUTH
from locus.params import SOURCES, adapter

SCHEMA = Path(__file__).resolve().parents[1] / "workflow" / "schemas" / "config.schema.yaml"


def schema_sources() -> list[str]:
    """The `source` enum of a data set entry in the workflow's config schema."""
    schema = yaml.safe_load(SCHEMA.read_text(encoding="utf-8"))
    return schema["properties"]["datasets"]["additionalProperties"]["properties"]["source"]["enum"]


def test_the_schema_lists_exactly_the_registered_sources():
    # a config is checked against the schema before any Python runs, so the enum cannot import the registry: this
    # test is what keeps the two equal (add the new name to datasets.*.source in the schema)
    assert schema_sources() == list(SOURCES), f"{SCHEMA}: datasets.*.source enum must be {list(SOURCES)}"


def test_the_sources_with_truth_are_those_whose_adapter_builds_it():
    # `locus data` calls build_with_truth only for SOURCES_WITH_TRUTH: an adapter that has it but is not listed
    # would silently write no truth.parquet
    assert list(SOURCES_WITH_TRUTH) == [s for s in SOURCES if hasattr(adapter(s), "build_with_truth")]


# a source module as a contributor writes it: typed parameters, their check, and build -> the three frames
TOY_SOURCE = '''
"""A toy source: every model answers a fixed share of the queries, in a fixed order."""
import pandas as pd

from locus.data.validation import Param, check_params, defaults_of
from locus.errors import ConfigError

PARAMS = {
    "n_queries": Param(60, "queries in all (every third one in val or test)", "int", at_least=6),
    "n_models": Param(3, "models", "int", at_least=2),
}
DEFAULTS = defaults_of(PARAMS)


def validate_params(params):
    unknown = sorted(set(params or {}) - set(DEFAULTS))
    if unknown:
        raise ConfigError(f"toy: unknown parameter(s) {unknown}; known: {sorted(DEFAULTS)}")
    p = {**DEFAULTS, **(params or {})}
    check_params("toy", PARAMS, p)
    return p


def build(params):
    n, m = params["n_queries"], params["n_models"]
    split = ["train" if i % 3 == 0 else "val" if i % 3 == 1 else "test" for i in range(n)]
    queries = pd.DataFrame({"prompt_id": range(n), "prompt": [f"toy question {i}" for i in range(n)],
                            "benchmark": "toy", "category": "toy", "split": split})
    models = pd.DataFrame({"model_id": range(m), "name": [f"toy/model-{j}" for j in range(m)]})
    scores = pd.DataFrame([(i, j, float((i + j) % (j + 2) == 0)) for i in range(n) for j in range(m)],
                          columns=["prompt_id", "model_id", "score"])
    return queries, models, scores
'''


def test_a_new_source_is_its_module_plus_one_registry_line(tmp_path, monkeypatch):
    (tmp_path / "toy_source.py").write_text(TOY_SOURCE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(SOURCES, "toy", "toy_source")  # the one line: SOURCES["toy"] = "toy_source" in locus.params
    out = tmp_path / "data" / "toy"
    # the normal path: the command's choices, the parameter check, the adapter's build, the canonical writer
    assert main(["data", "toy", "--out", str(out), "--params", '{"n_queries": 30}']) == 0
    data = read_dataset(out)
    assert len(data.queries) == 30 and list(data.models["name"]) == ["toy/model-0", "toy/model-1", "toy/model-2"]
    assert sorted(data.queries["split"].unique()) == ["test", "train", "val"] and len(data.scores) == 90
    assert main(["summary", "--data", str(out), "--out", str(tmp_path / "summary.md")]) == 0
    assert (tmp_path / "summary.md").read_text(encoding="utf-8").startswith("# Data summary: toy\n")
    # what a workflow config still needs beside that line: the schema's enum (the test above names it)
    assert "toy" not in schema_sources()
