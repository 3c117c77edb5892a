"""The Snakemake DAG: dry run of the default config, a real run of the data + encodings stages on the
tiny config, a no-op second run, and config validation errors."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = [sys.executable, "-m", "snakemake"]
TINY = REPO / "tests" / "configs" / "tiny.yaml"


def snakemake(*args, cwd=REPO, timeout=600):
    cmd = [*SNAKEMAKE, "-s", str(REPO / "Snakefile"), *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def planned_outputs(stdout: str) -> list[str]:
    """The output files of the jobs a dry run plans (their ``output:`` lines). What must NOT be planned is
    checked here, not in the whole text, which also holds the checkout's and the working directory's paths."""
    return [f for line in re.findall(r"^\s+output: (.*)$", stdout, re.M) for f in line.split(", ")]


def test_dry_run_default_config(tmp_path):
    res = snakemake("-n", "--directory", str(tmp_path))
    assert res.returncode == 0, res.stderr + res.stdout
    out = res.stdout
    for rule in ("data", "encode", "summary", "train_run", "routing_table"):
        assert rule in out
    assert "results/encodings/synthetic/all-MiniLM-L6-v2.parquet" in out
    assert "results/runs/synthetic/all-MiniLM-L6-v2/locus/n1024/d128/s0/metrics.json" in out
    # the sample-efficiency figure covers the paper's grid up to 4,096
    assert "results/runs/synthetic/all-MiniLM-L6-v2/locus/n4096/d128/s0/metrics.json" in out
    # the longest training runs start first (priority n // 1024), the short ones keep the default 0
    train_jobs = [block for block in out.split("\n\n") if "rule train_run:" in block]
    big = [block for block in train_jobs if "n=4096" in block]
    small = [block for block in train_jobs if "n=256," in block]
    assert big and small
    assert all("priority: 4" in block for block in big)
    assert not any("priority:" in block for block in small)


def test_seed_bands_config_adds_seeds_to_the_figure_only(tmp_path):
    res = snakemake(
        "-n",
        "results/figures/train_sample_eff.pdf",
        "results/tables/routing.tex",
        "--directory",
        str(tmp_path),
        "--configfile",
        str(REPO / "config" / "seed-bands.yaml"),
    )
    assert res.returncode == 0, res.stderr + res.stdout
    out = res.stdout
    for seed in (0, 1, 2):
        assert f"results/runs/synthetic/all-MiniLM-L6-v2/irt_net/n64/d232/s{seed}/metrics.json" in out
    # routing.tex needs only its own methods (LOCUS, EmbedLLM, IRT-Net), not the by-dataset ones
    planned = planned_outputs(out)
    assert "results/runs/synthetic/all-MiniLM-L6-v2/locus/n256/d128/s0/metrics.json" in planned
    assert not [f for f in planned if "/knn_router/" in f or "/embedllm_plus/" in f]


def test_invalid_config_is_refused(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("train_sizes: [0]\n")
    res = snakemake("-n", "--directory", str(tmp_path), "--configfile", str(bad))
    assert res.returncode != 0
    assert "train_sizes" in res.stderr + res.stdout
    bad.write_text("dataset: nowhere\n")  # not a key of `datasets`
    res = snakemake("-n", "--directory", str(tmp_path), "--configfile", str(bad))
    assert res.returncode != 0
    assert "dataset 'nowhere' is not a key of `datasets`" in res.stderr + res.stdout


# Wrong values fail when the DAG is built (a dry run), with the offending key, not in the last job.
CONFIG_ERRORS = [
    ("unknown-encoder", "encoder: all-MiniLM-L7-v2\n", r"encoder 'all-MiniLM-L7-v2' is unknown"),
    (
        "unknown-method-param",
        "methods:\n  locus: {dim: 128, params: {lr: 0.1}}\n",
        r"methods.locus.params: unknown parameter\(s\) \['lr'\]",
    ),
    (
        "locus-param-value",
        "methods:\n  locus: {dim: 128, params: {heads: 3}}\n",
        r"methods.locus.params: heads must be a divisor of dim \(128\), got 3",
    ),
    (
        "dim-in-params",
        "methods:\n  locus: {dim: 128, params: {dim: 64}}\n",
        r"methods.locus.params.dim: set it with methods.locus.dim",
    ),
    (
        "threads-in-params",
        "methods:\n  irt_net: {dim: 232, params: {threads: 4}}\n",
        r"params.threads: set it with the top-level",
    ),
    (
        "dim-for-knn",
        "methods:\n  knn_router: {dim: 16}\n",
        r"methods.knn_router.dim = 16: this method has no embedding",
    ),
    ("duplicate-seeds", "seeds: [0, 0]\n", r"seeds"),
    ("duplicate-sizes", "train_sizes: [256, 256]\n", r"train_sizes"),
    (
        "reference-not-a-method",
        "sample_efficiency:\n  reference_method: knn_router\n",
        r"reference_method 'knn_router' is not among",
    ),
    (
        "unregistered-method",
        "table_methods: [locus, gpt_router]\n",
        r"method 'gpt_router' has no entry under `methods`",
    ),
    ("unregistered-method-entry", "methods:\n  gpt_router: {dim: 0}\n", r"'gpt_router' is not a registered method"),
    (
        "n-queries-too-small",
        "datasets:\n  synthetic: {source: synthetic, params: {n_queries: 5}}\n",
        r"datasets.synthetic.params",
    ),
    ("old-data-label-key", "data_label: mine\n", r"data_label"),
    # a data source's parameters, as `locus data` checks them
    (
        "synthetic-seed-not-an-integer",
        "datasets:\n  synthetic: {source: synthetic, params: {seed: abc}}\n",
        r"config error: datasets.synthetic.params: synthetic data: seed must be an integer >= 0, got 'abc'",
    ),
    (
        "csv-path-not-text",
        "datasets:\n  mine: {source: csv, params: {path: 5}}\n",
        r"config error: datasets.mine.params: csv: path must be a non-empty text",
    ),
    (
        "empty-knn-k-grid",
        "methods:\n  knn_router: {dim: 0, params: {k_grid: []}}\n",
        r"config error: methods.knn_router.params: k_grid must be a non-empty list",
    ),
    # schema errors: one line naming the key (its path in the config), not Snakemake's multi-line report
    ("seed-not-an-integer", "seeds: [0, x]\n", r"config error: seeds\[1\]: 'x' is not of type 'integer'"),
    (
        "dim-not-an-integer",
        "methods:\n  locus: {dim: big}\n",
        r"config error: methods.locus.dim: 'big' is not of type 'integer'",
    ),
    (
        "confidence-out-of-range",
        "bootstrap: {confidence: 2}\n",
        r"config error: bootstrap.confidence: 2 is greater than or equal to the maximum of 1",
    ),
    (
        "precision-effect-size-not-trained",
        "precision_effect: {train_sizes: [2048]}\n",
        r"precision_effect.train_sizes \[2048\] must be among train_sizes",
    ),
    ("unknown-precision", "time_complexity: {precisions: [float16]}\n", r"precisions"),
    # model names against the pool's (its source read in memory when the data set is not built yet)
    (
        "unknown-fallback-model",
        "decisions: {fallbacks: [best_single, gpt-9]}\n",
        r"config error: decisions.fallbacks: 'gpt-9' is not among the 112 models",
    ),
    (
        "unknown-held-out-model",
        "onboarding: {held_out: [nobody/model-x]}\n",
        r"config error: onboarding.held_out: 'nobody/model-x' is not among the 112 models",
    ),
    ("tta-seed-not-seeds", "time_to_accuracy: {seed: 1}\n", r"'seed' was unexpected"),
    (
        "geometry-extra-seed-is-the-seed",
        "geometry: {extra_seeds: [0, 1]}\n",
        r"geometry.extra_seeds \[0, 1\] holds geometry.seed 0",
    ),
    (
        "regeneration-extra-seed-is-the-seed",
        "regeneration: {seed: 3, extra_seeds: [3]}\n",
        r"regeneration.extra_seeds \[3\] holds regeneration.seed 3",
    ),
    ("onboarding-extra-seed-negative", "onboarding: {extra_seeds: [-1]}\n", r"-1 is less than the minimum of 0"),
]


@pytest.mark.parametrize("name,yaml_text,message", CONFIG_ERRORS, ids=[c[0] for c in CONFIG_ERRORS])
def test_config_errors_at_dag_build_time(tmp_path, name, yaml_text, message):
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml_text)
    res = snakemake("-n", "--directory", str(tmp_path), "--configfile", str(bad))
    out = res.stderr + res.stdout
    assert res.returncode != 0, out[-3000:]
    assert re.search(message, out), out[-3000:]
    # one line, the project's, naming the key: no Snakemake validation report, no Python traceback
    assert len(re.findall(r"^config error: ", out, re.M)) == 1, out[-3000:]
    assert "Traceback" not in out and "Error validating config file" not in out, out[-3000:]
    assert not (tmp_path / "results").exists()


def test_checks_that_need_the_data_set_run_at_the_first_rule_that_reads_it(tmp_path):
    """A source that cannot be read when the DAG is built (here a CSV that another rule writes first) is checked
    by the first rules that read the built data set, with the message the next DAG build gives; a config that
    passes there passes every later, unchanged run."""
    from test_pool_plan import _pool_csv

    pool = _pool_csv(tmp_path / "evals.csv")
    wrapper = tmp_path / "Snakefile"
    wrapper.write_text(
        f'include: "{REPO / "Snakefile"}"\n\n'
        f'rule pool_csv:\n    output:\n        "pool.csv",\n    shell:\n        "cp {pool} {{output}}"\n'
    )
    mine = "dataset: mine\ndatasets:\n  mine: {source: csv, params: {path: pool.csv}}\n"
    target = "results/data/mine/summary.md"

    def run(fallback):
        (tmp_path / "mine.yaml").write_text(mine + f"decisions: {{fallbacks: [{fallback}]}}\n")
        args = ("-s", str(wrapper), target, "--cores", "1", "--directory", str(tmp_path))
        cmd = [*SNAKEMAKE, *args, "--configfile", str(tmp_path / "mine.yaml")]
        res = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
        return res.returncode, res.stdout + res.stderr

    message = "config error: decisions.fallbacks: 'org/model-99' is not among the 12 models"
    code, out = run("org/model-99")
    assert code != 0 and message in out, out[-3000:]
    assert (tmp_path / "results/data/mine/dataset.json").is_file() and not (tmp_path / target).exists()
    code, again = run("org/model-99")  # the data set is there now: refused when the DAG is built
    assert code != 0 and message in again and "rule data" not in again, again[-3000:]
    code, out = run("org/model-03")
    assert code == 0 and (tmp_path / target).is_file(), out[-3000:]
    code, out = run("org/model-03")
    assert code == 0 and "Nothing to be done" in out, out[-3000:]


def test_unreadable_configfile_is_named(tmp_path):
    """A missing or non-YAML --configfile is read by Snakemake before the Snakefile runs, so the project
    cannot word the error; what users see (README 'Configuration') is kept here."""
    res = snakemake("-n", "--directory", str(tmp_path), "--configfile", str(tmp_path / "nowhere.yaml"))
    assert res.returncode != 0
    assert f"No such file or directory: '{tmp_path / 'nowhere.yaml'}'" in res.stderr + res.stdout
    bad = tmp_path / "bad.yaml"
    bad.write_text("seeds: [0, 1\n")
    res = snakemake("-n", "--directory", str(tmp_path), "--configfile", str(bad))
    assert res.returncode != 0
    assert "Config file is not valid JSON or YAML" in res.stderr + res.stdout
    bad.write_text("just text\n")
    res = snakemake("-n", "--directory", str(tmp_path), "--configfile", str(bad))
    assert res.returncode != 0
    assert "Config file must be given as JSON or YAML with keys at top level" in res.stderr + res.stdout


def test_list_values_on_the_command_line(tmp_path):
    """README's own example: --config seeds='[0,1,2]' (a string on the command line) means three seeds."""
    res = snakemake("-n", "results/tables/routing.tex", "--directory", str(tmp_path), "--config", "seeds=[0,1,2]")
    assert res.returncode == 0, res.stderr + res.stdout
    for seed in (0, 1, 2):
        assert f"results/runs/synthetic/all-MiniLM-L6-v2/locus/n256/d128/s{seed}/metrics.json" in res.stdout


def test_time_to_accuracy_over_several_seeds(tmp_path):
    """`time_to_accuracy.seeds` trains every recipe once per seed; the figure reads all of them."""
    extra = tmp_path / "seeds.yaml"
    extra.write_text("time_to_accuracy: {seeds: [0, 3]}\n")
    res = snakemake(
        "-n",
        "results/figures/time_to_accuracy.pdf",
        "--directory",
        str(tmp_path),
        "--configfile",
        str(REPO / "config" / "config.yaml"),
        str(extra),
    )
    assert res.returncode == 0, res.stderr + res.stdout
    for seed in (0, 3):
        for recipe in ("paper", "fast"):
            assert (
                f"results/time_to_accuracy/synthetic/all-MiniLM-L6-v2/n256/s{seed}/{recipe}/metrics.json" in res.stdout
            )


def test_every_run_file_is_a_declared_output(tmp_path):
    """Experiments can depend on any file of a run: embeddings and checkpoints included."""
    from locus import run_artifacts

    targets, expected = [], {}
    for method, rule in (("locus", "train_run"), ("knn_router", "train_run_cpu")):
        run = f"results/runs/synthetic/all-MiniLM-L6-v2/{method}/n256/d{128 if method == 'locus' else 0}/s0"
        files = run_artifacts.run_files(method)
        assert {"metrics.json", "scores_val.parquet", "scores_test.parquet", "train_pairs.parquet", "log.csv"} <= set(
            files
        )
        if method == "locus":
            assert {"embeddings.parquet", "model.safetensors", "config.json"} <= set(files)
        targets += [f"{run}/{name}" for name in files]
        expected[rule] = [f"{run}/{name}" for name in files]
    res = snakemake("-n", *targets, "--directory", str(tmp_path))
    assert res.returncode == 0, res.stderr + res.stdout
    blocks = res.stdout.split("\nrule ")
    for rule, paths in expected.items():
        block = next(b for b in blocks if b.startswith(f"{rule}:"))
        for path in paths:
            assert path in block, (rule, path, block)


def test_encodings_stage_runs_and_is_idempotent(tmp_path):
    targets = ["results/encodings/synthetic/all-MiniLM-L6-v2.parquet", "results/data/synthetic/summary.md"]
    # targets first: --configfile takes several values and would swallow them
    res = snakemake(*targets, "--cores", "2", "--directory", str(tmp_path), "--configfile", str(TINY))
    assert res.returncode == 0, res.stderr[-4000:]
    enc = pd.read_parquet(tmp_path / targets[0])
    queries = pd.read_parquet(tmp_path / "results/data/synthetic/queries.parquet")
    assert len(enc) == len(queries) == 600
    assert len(enc["embedding"].iloc[0]) == 384
    summary = (tmp_path / targets[1]).read_text()
    assert "models: 12" in summary and "synthetic" in summary
    assert (tmp_path / "results/benchmarks/encode/synthetic/all-MiniLM-L6-v2.tsv").is_file()
    assert (tmp_path / "results/logs/encode/synthetic/all-MiniLM-L6-v2.log").is_file()
    again = snakemake(*targets, "--cores", "2", "--directory", str(tmp_path), "--configfile", str(TINY))
    assert again.returncode == 0
    assert "Nothing to be done" in again.stdout + again.stderr


def test_figure_seeds_are_separate_from_table_seeds(tmp_path):
    own = tmp_path / "figure-seeds.yaml"
    own.write_text(
        "sample_efficiency:\n  methods: [locus, irt_net, embedllm]\n"
        "  train_sizes: [64, 128, 256, 512, 1024, 2048, 4096]\n  seeds: [5]\n"
    )
    res = snakemake(
        "-n", "results/figures/train_sample_eff.pdf", "--directory", str(tmp_path), "--configfile", str(own)
    )
    assert res.returncode == 0, res.stderr + res.stdout
    planned = planned_outputs(res.stdout)
    assert "results/runs/synthetic/all-MiniLM-L6-v2/locus/n64/d128/s5/metrics.json" in planned
    assert not [f for f in planned if f.endswith("/s0/metrics.json")]
    res = snakemake("-n", "results/tables/routing.tex", "--directory", str(tmp_path), "--configfile", str(own))
    assert res.returncode == 0, res.stderr + res.stdout
    planned = planned_outputs(res.stdout)
    assert not [f for f in planned if "/s5/" in f]
    assert "results/runs/synthetic/all-MiniLM-L6-v2/locus/n256/d128/s0/metrics.json" in planned


def test_schema_vocabularies_and_defaults_are_the_package_ones():
    """The schema (JSON, so it cannot import) spells the package's vocabularies and shared defaults; the
    rules read every default from it (validate fills them in), so this is the one place they must agree."""
    import yaml

    from locus import constants
    from locus.methods import locus_method

    schema = yaml.safe_load((REPO / "workflow" / "schemas" / "config.schema.yaml").read_text())
    props = schema["properties"]
    assert tuple(props["duplicates"]["enum"]) == constants.DUPLICATE_POLICIES
    assert props["duplicates"]["default"] == constants.DEFAULT_DUPLICATE_POLICY
    assert tuple(props["sampling"]["enum"]) == constants.SAMPLING
    assert props["sampling"]["default"] == constants.DEFAULT_SAMPLING
    assert props["bootstrap"]["properties"]["n_resamples"]["default"] == constants.BOOTSTRAP_RESAMPLES
    tta = props["time_to_accuracy"]["properties"]
    assert sorted(tta["recipes"]["items"]["enum"]) == sorted(tta["reference"]["enum"]) == sorted(constants.RECIPES)
    assert sorted(locus_method.RECIPES) == sorted(constants.RECIPES)
    precisions = props["time_complexity"]["properties"]["precisions"]
    assert tuple(precisions["items"]["enum"]) == tuple(locus_method.PRECISIONS) == constants.PRECISIONS


def test_rules_take_defaults_from_the_schema():
    """No `.get(key, literal)` copy of a schema default in the rules: a config key is read as config[...]
    after validation has filled in the schema's defaults (a default derived from another value may stay)."""
    copies = [
        f"{path.name}:{n}: {line.strip()}"
        for path in sorted((REPO / "workflow" / "rules").glob("*.smk"))
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(
            r"\b(config|GEO|SE|TTA|REG|ABL|ONB|TC|PE|NB|PF|VIEWS)(\[[^]]+\])*\.get\([^,)]+,\s*"
            r"([\"'\[{\d-]|True|False|None)",
            line,
        )
    ]
    assert not copies, "read these from config[...] and give the key a default in the schema:\n" + "\n".join(copies)


def claims_job(stdout: str) -> tuple[set[str], str]:
    """The claims rule's inputs and shell command in a dry run's (-p) output."""
    block = next(b for b in stdout.split("\n\n") if "rule claims_table:" in b)
    inputs = set(re.search(r"^\s+input: (.*)$", block, re.M).group(1).split(", "))
    return inputs, re.search(r"^Shell command: (.*)$", block, re.M).group(1)


def test_claims_rule_reads_the_ledger_files_and_the_geometry_seeds(tmp_path):
    """The claims rule's inputs are exactly what the ledger reads (claims.FILES; with SECTION.extra_seeds also
    their files at each further seed, which the `*_seed` rules write); the default run plans no `*_seed` job
    and its command is the one-seed one."""
    from locus.experiments import claims

    fixed = {"results/data/synthetic/summary.md", "results/tables/pool_plan.json"}
    res = snakemake("-n", "-p", "results/tables/claims.tex", "--directory", str(tmp_path))
    assert res.returncode == 0, res.stderr + res.stdout
    inputs, command = claims_job(res.stdout)
    assert inputs == {f"results/{f}" for f in claims.FILES} | fixed
    assert "--geometry-seeds" not in command
    assert not [f for f in planned_outputs(res.stdout) if "/seeds/" in f]

    res = snakemake(
        "-n", "-p", "results/tables/claims.tex", "--directory", str(tmp_path),
        "--configfile", str(REPO / "config" / "seed-bands.yaml"),
    )  # fmt: skip
    assert res.returncode == 0, res.stderr + res.stdout
    inputs, command = claims_job(res.stdout)
    seeded = {
        f"results/{claims.seed_path(f, s)}" for s in (1, 2) for files in claims.SEEDED_FILES.values() for f in files
    }
    assert inputs == {f"results/{f}" for f in claims.FILES} | seeded | fixed
    seeds = "--geometry-seeds 0,1,2 --onboarding-seeds 0,1,2 --regeneration-seeds 0,1,2"
    assert f"{seeds} --out results/tables/claims.tex" in command
    planned = planned_outputs(res.stdout)
    assert seeded <= set(planned)  # each written by a planned job
    for rule in ("distance_correlation_table", "nearest_neighbor_proxies_figure", "fallback_routing_figure",
                 "models_family_clustering_figure", "model_portfolio_figure", "hypothetical_model_embedding",
                 "perf_vs_size_and_overlap", "overlap_convergence", "anchor_size_convergence", "onboarding_figure",
                 "regeneration_measure_locus", "relearn_embedllm_heatmap_test_disagreement"):  # fmt: skip
        assert len(re.findall(rf"^rule {rule}_seed:$", res.stdout, re.M)) == 2, rule
    # the onboarding and regeneration runs of each further seed, and the figures' commands read them
    assert "--seed 2 --params '{}' --hold-out column --train-models 0 " in res.stdout
    assert "--runs results/onboarding/synthetic/all-MiniLM-L6-v2/m0/n1024/s1 " in res.stdout
    assert "--out results/figures/seeds/s1/sample_eff_ood_test.pdf" in res.stdout
    assert "--locus-run results/runs/synthetic/all-MiniLM-L6-v2/locus/n4096/d128/s2 " in res.stdout
    assert "results/regeneration/synthetic/all-MiniLM-L6-v2/measures/h2_d128_n512_s2.csv " in res.stdout
    # the seed's own reference runs, and their commands read them
    assert "--runs results/runs/synthetic/all-MiniLM-L6-v2/locus/n4096/d128/s2 " in res.stdout
    assert "--out results/tables/seeds/s2/distance_correlation.tex" in res.stdout
    assert "--run results/runs/synthetic/all-MiniLM-L6-v2/locus/n4096/d128/s1 " in res.stdout
