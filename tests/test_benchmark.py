"""`locus bench` (locus/benchmark.py): FLOPs of this implementation, honest timings, a quick run."""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from locus import benchmark as bench  # noqa: E402
from locus.cli import main  # noqa: E402
from locus.methods.locus_net import forward_flops, predict_flops  # noqa: E402


@pytest.fixture(scope="module")
def locus_cpu():
    torch.set_num_threads(2)
    return bench._Locus("cpu")


def counted(fn) -> int:
    """FLOPs torch counts for fn() (math attention, so the attention matmuls are counted too)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as fc:
        fn()
    return fc.get_total_flops()


@pytest.mark.parametrize("n,m", [(64, 4), (300, 3)])
def test_flops_are_those_of_this_implementation(locus_cpu, n, m):
    """embed_flops / one_model_flops / predict_grid_flops equal what torch counts for the calls timed,
    up to the latents' and the PMA seed's query projections (once per call, not per model)."""
    lm, p = locus_cpu, locus_cpu.p
    phi, pairs = bench.random_inputs(torch, n, m, "cpu", np.random.default_rng(0))
    sets = lm.sets(pairs, m)
    shared = 2 * (p["layers"] * p["latents"] * p["dim"] ** 2 + p["dim"] ** 2)
    assert counted(lambda: lm.embed_all(phi, sets)) - shared == bench.embed_flops(m, n, n, p)
    assert counted(lambda: lm.embed_one(phi[None], torch.ones(1, n))) - shared == bench.one_model_flops(n, p)
    z = lm.embed_all(phi, sets)
    assert counted(lambda: lm.predict(z, phi)) == bench.predict_grid_flops(n, m, p)


def test_paper_shapes_count_the_query_projection_once(locus_cpu):
    p = locus_cpu.p
    shared = bench.embed_flops(112, 4096, 4096, p)
    per_model = 112 * forward_flops(4096, p["dim"], p["heads"], p["layers"], p["latents"], bench.D_PHI)
    assert 330e9 < shared < 340e9  # this implementation: ~336 GFLOP
    assert 510e9 < per_model < 520e9  # a projection per (model, query) would be ~515 GFLOP: not what runs
    assert predict_flops(4096, 112, p["dim"], p["decoder_hidden"], bench.D_PHI) == pytest.approx(8.45e9, rel=1e-3)


def test_measure_reports_the_cold_call_apart_and_the_median(monkeypatch):
    calls = []
    clock = iter([0.0, 5.0, 5.0, 6.0, 6.0, 9.0, 9.0, 11.0])  # calls of 5 s (cold), then 1, 3 and 2 s
    monkeypatch.setattr(bench.time, "perf_counter", lambda: next(clock))
    out = bench.measure(lambda: calls.append(1), 3)
    assert len(calls) == 4
    assert out["cold_s"] == 5.0 and out["median_s"] == 2.0 and (out["min_s"], out["max_s"]) == (1.0, 3.0)
    assert out["repeats"] == 3


def test_bench_quick_writes_json(tmp_path, capsys):
    out = tmp_path / "bench" / "quick.json"
    assert main(["bench", "--quick", "--device", "cpu", "--threads", "2", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["device"] == "cpu" and result["quick"] is True and result["paper_shapes"] is False
    assert result["peak_gflop_s"] > 0 and result["dtype"] == "float32"
    rows = {r["what"]: r for r in result["rows"]}
    embed = rows["embed 16 models x 512 evaluations"]
    assert embed["gflop"] * 1e9 == pytest.approx(bench.embed_flops(16, 512, 512, result["params"]))
    for r in result["rows"]:
        assert r["cold_s"] > 0 and r["min_s"] <= r["median_s"] <= r["max_s"]
        if "gflop" in r:
            assert r["gflop_s"] == pytest.approx(r["gflop"] / r["median_s"])
            assert r["peak_fraction"] == pytest.approx(r["gflop_s"] / result["peak_gflop_s"])
    text = capsys.readouterr().out
    assert "median s" in text and "cold s" in text and f"wrote {out}" in text


def test_format_table_leaves_flops_blank_where_not_counted():
    row = {"what": "train step", "cold_s": 0.5, "median_s": 0.2, "min_s": 0.1, "max_s": 0.3, "note": "x"}
    flop = {**row, "what": "embed", "gflop": 2.0, "gflop_s": 10.0, "peak_fraction": 0.5}
    text = bench.format_table({"rows": [row, flop]})
    assert "0.1000-0.3000" in text and "50.0%" in text and text.splitlines()[1].count("%") == 0
