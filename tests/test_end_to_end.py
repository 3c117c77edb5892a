"""The whole DAG on the tiny config, from raw synthetic data to tables, figures and the HTML report."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import skip_or_fail  # tests/ is on sys.path (see conftest.py)

REPO = Path(__file__).resolve().parents[1]
TINY = REPO / "tests" / "configs" / "tiny.yaml"
TARGETS = [  # = rule all of the tiny config (the report needs every file marked for it)
    "results/data/synthetic/summary.md",
    "results/tables/routing.tex",
    "results/tables/routing_by_dataset.tex",
    "results/tables/correctness_by_dataset.tex",
    "results/figures/train_sample_eff.pdf",
    "results/tables/distance_correlation.tex",
    "results/tables/precision_effect.tex",
    *(f"results/tables/{kind}_ablation_{metric}.tex" for kind in ("dim", "encoder") for metric in ("routing", "correctness")),
    *(f"results/figures/{name}.pdf" for name in (
        "performance_distance_correlation", "models_family_clustering", "nearest_neighbor_proxies",
        "fallback_routing", "model_portfolio", "hypothetical_model_embedding", "query_encodings_tsne",
        "embedding_robustness_tsne", "overlap_convergence", "anchor_size_convergence", "perf_vs_size_and_overlap",
        "sample_eff_ood_test", "time_complexity", "relearn_embedllm_heatmap_cosine_distance",
        "relearn_embedllm_heatmap_test_disagreement", "relearning_embedllm_embeddings")),
]


def snakemake(workdir, *args, timeout=900):
    cmd = [sys.executable, "-m", "snakemake", *args, "-s", str(REPO / "Snakefile"), "--directory", str(workdir),
           "--cores", "2", "--configfile", str(TINY)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("tiny_workflow")
    res = snakemake(workdir, *TARGETS)
    assert res.returncode == 0, res.stderr[-6000:]
    return workdir


def test_tables_and_figure_exist(tiny_run):
    tex = (tiny_run / "results/tables/routing.tex").read_text()
    assert "\\toprule" in tex and "Oracle" in tex and "tiny synthetic test pool" in tex
    assert (tiny_run / "results/tables/routing.csv").is_file()
    for name in ("routing_by_dataset", "correctness_by_dataset"):
        assert (tiny_run / f"results/tables/{name}.tex").is_file()
    for ext in ("pdf", "png", "csv"):
        assert (tiny_run / f"results/figures/train_sample_eff.{ext}").stat().st_size > 0


def test_geometry_outputs_exist(tiny_run):
    """rule all builds every geometry output: each figure with its PNG and plotted numbers, the table with its CSV."""
    for target in TARGETS:
        path = tiny_run / target
        if "/figures/" in target and path.stem != "train_sample_eff":
            for ext in ("pdf", "png", "csv"):
                assert path.with_suffix(f".{ext}").stat().st_size > 0, path.with_suffix(f".{ext}")
    table = (tiny_run / "results/tables/distance_correlation.tex").read_text()
    assert "Pearson" in table and "tiny synthetic test pool" in table
    assert (tiny_run / "results/tables/distance_correlation.csv").stat().st_size > 0


def test_run_directory_contents(tiny_run):
    runs = sorted((tiny_run / "results/runs").rglob("metrics.json"))
    assert runs, "no run directories"
    locus_run = next(p.parent for p in runs if "/locus/" in str(p))
    for name in ("config.json", "model.safetensors", "train_pairs.parquet", "scores_val.parquet",
                 "scores_test.parquet", "embeddings.parquet", "log.csv"):
        assert (locus_run / name).is_file(), name
    metrics = json.loads((locus_run / "metrics.json").read_text())
    overall = metrics["test"]["overall"]
    assert 0 <= overall["routing_acc"] <= overall["oracle"] <= 1
    assert metrics["reference"]["oracle"]["overall"] == pytest.approx(overall["oracle"])


def test_rerun_does_nothing(tiny_run):
    res = snakemake(tiny_run, *TARGETS)
    assert res.returncode == 0
    assert "Nothing to be done" in res.stdout + res.stderr


CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]


def test_html_report_renders_in_a_real_browser(tiny_run):
    """`snakemake --report` builds one self-contained HTML file; headless Chromium opens it, shows the
    result categories, and every embedded figure decodes to a real image (no broken images)."""
    report = tiny_run / "results" / "report.html"
    res = snakemake(tiny_run, "--report", str(report))
    assert res.returncode == 0, res.stderr[-3000:]
    html = report.read_text()
    assert "train_sample_eff.png" in html and "routing.tex" in html and "summary.md" in html
    assert "model_portfolio.png" in html and "distance_correlation.tex" in html and "Geometry" in html
    if not Path(CHROMIUM).exists():
        skip_or_fail("browser", "REPORT BROWSER TEST NOT RUN: Debian's chromium is not installed "
                                "(bash install.sh --test installs it)")
    try:
        from playwright import sync_api
    except ImportError:
        skip_or_fail("browser", "REPORT BROWSER TEST NOT RUN: playwright is missing (bash install.sh --test)")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            errors = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(report.as_uri())
            page.get_by_text("Figures", exact=True).wait_for(timeout=30_000)
            assert page.get_by_text("Tables", exact=True).count() >= 1
            images = page.evaluate("""async () => {
              const out = {};
              for (const [name, r] of Object.entries(results)) {
                if (!r.mime_type.startsWith('image/')) continue;
                out[name] = await new Promise(done => {
                  const im = new Image();
                  im.onload = () => done([im.naturalWidth, im.naturalHeight]);
                  im.onerror = () => done(null);
                  im.src = r.data_uri;
                });
              }
              return out;
            }""")
            page.get_by_text("Figures", exact=True).click()
            page.get_by_text("train_sample_eff.png").first.wait_for(timeout=10_000)
            page.screenshot(path=str(tiny_run / "results" / "report.png"), full_page=True)
        finally:
            browser.close()
    assert images, "no figure embedded in the report"
    broken = [name for name, size in images.items() if not size or min(size) < 50]
    assert not broken, f"broken images in the report: {broken}"
    assert not errors, errors


def test_onboarding_through_locus_embed_matches_the_rule(tiny_run, tmp_path):
    """Training-free onboarding as a user does it: a held-out model's scored prompts (the same draw as the
    figure's cell) go through `locus embed` with a run trained without it; the embedding's test
    correctness accuracy equals the figure's."""
    import numpy as np
    import pandas as pd

    from locus import run_artifacts
    from locus.data.canonical import read_dataset
    from locus.data.encodings import read_encodings, read_vectors
    from locus.evaluation import correctness_metrics
    from locus.experiments.onboarding import draw_evaluations

    frame = pd.read_csv(tiny_run / "results/figures/sample_eff_ood_test.csv")
    draw = frame[(frame["kind"] == "draw") & (frame["row"].astype(str) == "4") & (frame["k"] == 32)].iloc[0]
    data = read_dataset(tiny_run / "results/data/synthetic")
    ids, scores = draw_evaluations(data.split_scores("train"), int(draw["model_id"]), 32, repeat=0, seed=0)
    prompts = data.queries.set_index("prompt_id").loc[ids, "prompt"]
    pd.DataFrame({"prompt": prompts.to_numpy(), "score": scores}).to_csv(tmp_path / "scores.csv", index=False)
    run = tiny_run / "results/onboarding/synthetic/all-MiniLM-L6-v2/m4/n64/s0"
    res = subprocess.run([sys.executable, "-m", "locus", "embed", "--checkpoint", str(run), "--scores",
                          str(tmp_path / "scores.csv"), "--out", str(tmp_path / "z.parquet")],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    assert "embedded 32 scored prompts" in res.stdout
    _, z, _ = read_vectors(tmp_path / "z.parquet", "model_id")
    method = run_artifacts.load_checkpoint(run).method
    test_ids = data.split_queries("test")["prompt_id"].to_numpy()
    enc = read_encodings(tiny_run / "results/encodings/synthetic/all-MiniLM-L6-v2.parquet")
    logits = method.logits_for_embeddings(enc.take(test_ids), z)
    labels = data.label_matrix(test_ids, np.array([int(draw["model_id"])]))
    metrics = correctness_metrics(logits, labels)
    assert metrics["n_pairs"] == draw["n_pairs"]
    # the prompts are re-encoded by the sentence encoder: identical up to float rounding, so at most one
    # borderline pair may flip
    assert abs(round(metrics["correctness_acc"] * metrics["n_pairs"]) - draw["correct"]) <= 1


def test_time_to_accuracy_rule(tiny_run):
    """Both recipes train in their own run directories (the tiny config's LOCUS settings apply to both) and
    the figure reads their logs and Snakemake benchmark files (peak memory)."""
    res = snakemake(tiny_run, "results/figures/time_to_accuracy.pdf")
    assert res.returncode == 0, res.stderr[-6000:]
    summary = json.loads((tiny_run / "results/figures/time_to_accuracy.json").read_text())
    assert set(summary["recipes"]) == {"paper", "fast"} and summary["train_size"] == 64
    assert all(s["peak_rss_mb"] > 0 for s in summary["recipes"].values())
    assert 0 < summary["constant_router_val_routing"] <= 1  # the rule passes the data set (--data)
    for recipe, s in summary["recipes"].items():  # the test hit@1 of the selected checkpoint, for context
        run = json.loads((tiny_run / f"results/time_to_accuracy/synthetic/all-MiniLM-L6-v2/n64/s0/{recipe}/metrics.json")
                         .read_text())
        assert s["test_routing"] == run["test"]["overall"]["routing_acc"]
    base = tiny_run / "results/time_to_accuracy/synthetic/all-MiniLM-L6-v2/n64/s0"
    paper = json.loads((base / "paper/metrics.json").read_text())["params"]
    assert (paper["recipe"], paper["model_batch"], paper["patience"], paper["max_steps"]) == ("paper", 0, 500, 40)
    for ext in ("png", "csv"):
        assert (tiny_run / f"results/figures/time_to_accuracy.{ext}").stat().st_size > 0
