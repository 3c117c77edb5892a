"""The workflow's cross-field config checks (locus.workflow_config.check), on hand-made configs: the default
config merged with a few keys, as `snakemake --configfile` merges them, then the schema's defaults filled in
as the workflow fills them. No Snakemake run; tests/test_workflow.py runs the same checks through a DAG build."""

from __future__ import annotations

import copy
from pathlib import Path

import pandas as pd
import pytest
import yaml
from snakemake.utils import update_config, validate

from locus import capacity
from locus import workflow_config as wc
from locus.errors import ConfigError

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
DEFAULT = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
NAMES = ("Qwen/Qwen1.5-7B-Chat", "codellama/CodeLlama-13b-Instruct-hf", "meta-llama/Meta-Llama-3-70B-Instruct")
NAMES += ("microsoft/phi-2", "org/model-a", "org/model-b")
FACTS = capacity.PoolFacts(models=6, train_queries=5000, val_queries=500, test_queries=500, names=NAMES)


def config(text: str = "") -> dict:
    """The default config with the YAML `text` merged over it, validated, the schema's defaults filled in."""
    cfg = copy.deepcopy(DEFAULT)
    update_config(cfg, yaml.safe_load(text) or {})
    wc.check_schema(cfg, SCHEMA)
    validate(cfg, str(SCHEMA), set_default=True)
    return cfg


def refused(cfg: dict, facts=None) -> str:
    with pytest.raises(ConfigError) as caught:
        wc.check(cfg, facts)
    message = str(caught.value)
    assert message.startswith("config error: ") and message.endswith(wc.HELP) and "\n" not in message
    return message


def test_the_shipped_configs_pass():
    wc.check(config())
    wc.check(config((REPO / "tests" / "configs" / "tiny.yaml").read_text()))
    wc.check(config((REPO / "config" / "paper.yaml").read_text()))
    wc.check(config(), FACTS)  # the paper's default view models are in this pool


CASES = [
    ("dataset: nowhere", "dataset 'nowhere' is not a key of `datasets`"),
    ("datasets: {synthetic: {source: synthetic, params: {seed: abc}}}", "datasets.synthetic.params: synthetic data"),
    ("methods: {gpt_router: {dim: 0}}", "methods: 'gpt_router' is not a registered method"),
    ("table_methods: [locus, gpt_router]", "table_methods: method 'gpt_router' has no entry under `methods`"),
    ("methods: {locus: {dim: 128, params: {dim: 64}}}", "methods.locus.params.dim: set it with methods.locus.dim"),
    ("methods: {irt_net: {dim: 232, params: {threads: 4}}}", "methods.irt_net.params.threads: set it with the top"),
    ("methods: {knn_router: {dim: 16}}", "methods.knn_router.dim = 16: this method has no embedding"),
    ("methods: {irt_net: {dim: 0}}", "methods.irt_net.dim = 0: this method has an embedding"),
    ("methods: {locus: {dim: 128, params: {heads: 3}}}", "methods.locus.params: heads must be a divisor of dim"),
    ("sample_efficiency: {reference_method: knn_router}", "sample_efficiency.reference_method 'knn_router' is not"),
    ("encoder: all-MiniLM-L7-v2", "encoder 'all-MiniLM-L7-v2' is unknown; offline:"),
    ("bootstrap: {reference_method: knn_router}", "bootstrap.reference_method 'knn_router' is not among table_methods"),
    ("methods: {locus: {dim: 64}}", "methods.locus.dim 64 is not among ablation.dims [32, 128]"),
    ("ablation: {dims: [128, 30]}", "ablation.dims: d = 30 does not fit LOCUS's parameters"),
    ("encoder: paraphrase-albert-small-v2", "encoder 'paraphrase-albert-small-v2' is not among ablation.encoders"),
    ("ablation: {encoders: [all-MiniLM-L6-v2, all-MiniLM-L7-v2]}", "ablation.encoders: 'all-MiniLM-L7-v2' is unknown"),
    ("geometry: {methods: [locus, knn_router]}", "geometry.methods: 'knn_router' has no model embeddings"),
    ("geometry: {neighbours: {reference_method: embedllm_plus}}", "is not among geometry.methods"),
    ("geometry: {neighbours: {linkage: ward, cluster_metric: cosine}}", "linkage ward assumes Euclidean distances"),
    ("geometry: {reference_train_size: 8}", "geometry.views.sizes [16, 32, 64"),
    ("regeneration: {tsne: {hidden_layers: 5}}", "regeneration.tsne: the cell (hidden_layers 5, dim 128)"),
    ("regeneration: {sizes: [1024]}", "regeneration.sizes [1024]: all exceed regeneration.train_size 512"),
    ("precision_effect: {train_sizes: [2048]}", "precision_effect.train_sizes [2048] must be among train_sizes"),
    ("calibration: {train_size: 999}", "calibration.train_size 999 must be one of train_sizes"),
    ("decisions: {train_size: 999}", "decisions.train_size 999 must be one of train_sizes"),
]


@pytest.mark.parametrize("text,message", CASES, ids=[c[1][:40] for c in CASES])
def test_each_cross_field_check_is_one_line_naming_the_key(text, message):
    assert message in refused(config(text))


def test_checks_the_schema_cannot_express():
    cfg = config()
    del cfg["methods"]["locus"]  # every experiment beyond the tables is about LOCUS
    for key in ("table_methods", "by_dataset_methods", "sample_efficiency", "geometry"):
        cfg.pop(key, None)
    cfg["table_methods"] = cfg["by_dataset_methods"] = ["irt_net"]
    cfg["bootstrap"]["reference_method"] = "irt_net"
    cfg["sample_efficiency"] = {"methods": ["irt_net"], "train_sizes": [64, 256], "reference_method": "irt_net"}
    cfg["geometry"] = config()["geometry"] | {"methods": ["irt_net"]}
    cfg["geometry"]["neighbours"]["reference_method"] = "irt_net"
    assert "add locus under `methods`" in refused(cfg)
    cfg = config()
    cfg["time_to_accuracy"]["recipes"] = ["fast"]  # the schema asks for both today
    assert "time_to_accuracy.reference 'paper' is not among" in refused(cfg)


def test_the_smallest_training_size_is_the_default_of_calibration_and_decisions():
    cfg = config("train_sizes: [512, 256]\nprecision_effect: {train_sizes: [256]}")
    assert wc.train_size(cfg, "calibration") == wc.train_size(cfg, "decisions") == 256
    assert wc.train_size(config("decisions: {train_size: 1024}"), "decisions") == 1024


@pytest.mark.parametrize(
    "text,message",
    [
        ("decisions: {fallbacks: [best_single, gpt-9]}", "decisions.fallbacks: 'gpt-9' is not among the 6 models"),
        ("onboarding: {held_out: [org/model-a, org/model-z]}", "onboarding.held_out: 'org/model-z' is not among"),
        ("geometry: {views: {convergence_model: org/model-q}}", "geometry.views.convergence_model: 'org/model-q'"),
        ("geometry: {views: {robustness_models: [org/model-a, x/y]}}", "geometry.views.robustness_models: 'x/y'"),
    ],
)
def test_model_names_are_checked_against_the_pool(text, message):
    cfg = config(text)
    wc.check(cfg)  # without the pool's facts: nothing to check them against
    assert message in refused(cfg, FACTS)


def test_model_names_match_as_the_commands_resolve_them():
    # case-insensitive, or the part after the organisation, when unique; best_single and abstain are policies
    cfg = config("decisions: {fallbacks: [abstain, PHI-2, best_single]}\nonboarding: {held_out: [model-a]}")
    wc.check(cfg, FACTS)


def _pool(directory: Path, names=NAMES, train=480) -> Path:
    """A canonical data set as far as the pool's facts read it: the queries' split and the models."""
    directory.mkdir(parents=True, exist_ok=True)
    pd.DataFrame({"split": ["train"] * train + ["val"] * 60 + ["test"] * 60}).to_parquet(directory / "queries.parquet")
    pd.DataFrame({"model_id": range(len(names)), "name": list(names)}).to_parquet(directory / "models.parquet")
    return directory


def test_the_plan_is_fitted_before_the_checks(tmp_path):
    """Sizes capped by a small pool stay consistent (calibration's size and the tables' capped alike), and the
    views' default models, the paper's, are replaced by the pool's own before their names are checked."""
    facts = capacity.read_facts(_pool(tmp_path / "mine", names=("org/model-a", "org/model-b", "org/model-c")))
    cfg = config("calibration: {train_size: 1024}")
    with pytest.raises(ConfigError, match="robustness_models"):
        wc.check(copy.deepcopy(cfg), facts)  # unfitted: the paper's models are not in this pool
    plan = wc.fit_to_pool(cfg, "synthetic", facts, SCHEMA)
    wc.check(cfg, facts)
    assert cfg["train_sizes"] == [256, 480] and cfg["calibration"]["train_size"] == 480
    assert cfg["geometry"]["views"]["convergence_model"] == "org/model-a"
    assert "train_sizes: [256, 512, 1024] -> [256, 480]: the pool's training queries (480)" in plan.lines()
    assert wc.fit_to_pool(config(), "synthetic", None, SCHEMA) is None  # unknown pool: nothing changed


def test_the_first_rule_reading_the_data_runs_the_same_checks(tmp_path):
    """When the pool was unknown at DAG build, check_data (a params function of the rules that read the data
    set first) fits a copy of the config to the data set now built and checks it: the message the next DAG
    build gives. A pool known at DAG build was checked there: nothing is read again."""
    data = _pool(tmp_path / "data" / "synthetic")
    cfg = config("decisions: {fallbacks: [gpt-9]}")
    with pytest.raises(ConfigError) as at_dag_build:
        wc.check(copy.deepcopy(cfg), capacity.read_facts(data))
    with pytest.raises(ConfigError) as at_first_rule:
        wc.check_data(cfg, "synthetic", data, SCHEMA, checked=False)
    assert str(at_first_rule.value) == str(at_dag_build.value)
    assert cfg == config("decisions: {fallbacks: [gpt-9]}")  # the workflow's config is left as it was
    assert wc.check_data(cfg, "synthetic", data, SCHEMA, checked=True) == ""
    assert wc.check_data(config(), "synthetic", data, SCHEMA, checked=False) == ""
    assert wc.check_data(cfg, "synthetic", tmp_path / "not-built", SCHEMA, checked=False) == ""


def test_pool_facts_from_the_canonical_files_else_the_source(tmp_path):
    cfg = config("datasets: {mine: {source: csv, params: {path: nowhere.csv}}}\ndataset: mine")
    assert wc.pool_facts(cfg, "mine", tmp_path / "results") is None  # the source cannot be read yet
    _pool(tmp_path / "results" / "data" / "mine")
    assert wc.pool_facts(cfg, "mine", tmp_path / "results").names == NAMES
    assert wc.pool_facts(cfg, "elsewhere", tmp_path / "results") is None  # not a data set: check() says so


def test_schema_errors_are_one_line_naming_the_key():
    cfg = copy.deepcopy(DEFAULT)
    cfg["seeds"] = [0, "x"]
    with pytest.raises(ConfigError, match=r"^config error: seeds\[1\]: 'x' is not of type 'integer'"):
        wc.check_schema(cfg, SCHEMA)
    cfg = {"seeds": "[0, 1, 2]", "train_sizes": "256"}  # as --config gives them
    wc.parse_list_values(cfg, SCHEMA)
    assert cfg == {"seeds": [0, 1, 2], "train_sizes": [256]}


def test_training_rules_group_methods_by_torch():
    rules = wc.train_rules(config())
    assert rules["train_run_cpu"] == ["knn_router", "kmeans_router"]
    assert "locus" in rules["train_run"] and not set(rules["train_run"]) & set(rules["train_run_cpu"])
