"""LOCUS on a CUDA device (marker ``gpu``). Skipped, with the reason printed, where torch sees no CUDA
device: these tests are not CPU coverage and CI has no GPU. Run them on a GPU machine:

    .venv/bin/python -m pytest -m gpu -v tests/test_gpu.py
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from test_locus_method import (  # noqa: E402  (tests/ is on sys.path)
    TINY,
    check_ema_keeps_the_moving_average,
    check_lr_schedule_sets_the_rates_of_every_step,
    specialist_problem,
)

from locus.methods import create  # noqa: E402
from locus.methods.base import FitData  # noqa: E402
from locus.methods.locus_method import ModelSets, lr_factor  # noqa: E402

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(
        not torch.cuda.is_available(), reason=f"GPU TESTS NOT RUN: torch {torch.__version__} sees no CUDA device"
    ),
]


def fit(problem, params, seed):
    train, val, _, enc, _ = problem
    data = FitData(train=train, val=val, encodings=enc, model_ids=np.sort(train["model_id"].unique()))
    return create("locus", params, seed=seed).fit(data)


def _step_inputs(device):
    """A method, its network, optimiser, inputs and a fixed batch on `device` (same weights everywhere)."""
    train, val, test, enc, _ = specialist_problem()
    method = create("locus", {**TINY, "device": device}, seed=0)
    method.model_ids = np.sort(train["model_id"].unique())
    sets = ModelSets(train, method.model_ids)
    torch.manual_seed(0)
    net = method._build(enc.dim)  # built on the CPU from the seed, then moved: identical weights
    sets.to(method.device)
    phi = torch.from_numpy(np.ascontiguousarray(enc.take(sets.prompt_ids))).to(method.device)
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
    models = torch.arange(4, device=method.device)
    return method, net, opt, phi, sets, models


def test_one_training_step_on_cuda_equals_the_cpu_step():
    """Noise off, no random subsets (max_tokens/max_targets cover every evaluation), dropout off: the same
    step on CUDA and on the CPU gives the same loss and the same updated weights within fp32 tolerance."""
    results = {}
    for device in ("cpu", "cuda"):
        method, net, opt, phi, sets, models = _step_inputs(device)
        method.params = method.params.replace(max_tokens=0, max_targets=0, decoder_dropout=0.0)
        net.eval()  # no dropout
        gen = torch.Generator(device=method.device).manual_seed(1)
        loss = method._train_step(net, opt, phi, sets, models, 0.0, gen)
        results[device] = (float(loss), {k: v.detach().cpu() for k, v in net.state_dict().items()})
    assert results["cuda"][0] == pytest.approx(results["cpu"][0], rel=1e-4, abs=1e-5)
    for name, cpu_value in results["cpu"][1].items():
        torch.testing.assert_close(results["cuda"][1][name], cpu_value, rtol=1e-3, atol=1e-4, msg=name)


def check_steps_never_wait_for_the_device(scheduler=None):
    """Three CUDA training steps (each followed by `scheduler(opt).step()` when given) under CUDA's sync
    debug mode, which turns any host synchronisation into an error."""
    method, net, opt, phi, sets, models = _step_inputs("cuda")
    after = scheduler(opt).step if scheduler is not None else (lambda: None)
    gen = torch.Generator(device=method.device).manual_seed(1)
    method._train_step(net, opt, phi, sets, models, 0.1, gen)  # warm-up (lazy CUDA initialisation)
    after()
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        for _ in range(3):
            method._train_step(net, opt, phi, sets, models, 0.1, gen)
            after()
    finally:
        torch.cuda.set_sync_debug_mode("default")


def test_training_step_does_not_wait_for_the_device():
    """The hot loop has no host synchronisation."""
    check_steps_never_wait_for_the_device()


def test_a_short_cuda_run_is_reproducible():
    problem = specialist_problem()
    params = {**TINY, "device": "cuda", "deterministic": True}
    a, b = fit(problem, params, seed=3), fit(problem, params, seed=3)
    assert a.summary["device"].startswith("cuda")
    np.testing.assert_array_equal(a.z, b.z)
    assert a.history["val_routing"].tolist() == b.history["val_routing"].tolist()


def test_checkpoint_saved_on_cuda_predicts_the_same_on_cpu(tmp_path):
    problem = specialist_problem()
    _, _, _, enc, test_ids = problem
    trained = fit(problem, {**TINY, "device": "cuda"}, seed=0)
    on_gpu = trained.predict_logits(enc.take(test_ids))
    trained.save(tmp_path / "run")
    loaded = type(trained).load(tmp_path / "run")
    loaded.params = {**loaded.params, "device": "cpu"}
    loaded.net = loaded.net.to("cpu")
    on_cpu = loaded.predict_logits(enc.take(test_ids))
    np.testing.assert_allclose(on_cpu, on_gpu, rtol=1e-4, atol=1e-4)
    assert (np.argmax(on_cpu, 1) == np.argmax(on_gpu, 1)).mean() > 0.99


def test_bench_on_cuda_quick(tmp_path):
    out = tmp_path / "bench.json"
    res = subprocess.run(
        [sys.executable, "-m", "locus", "bench", "--device", "cuda", "--quick", "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert out.is_file() and "embed one new model" in res.stdout


def test_bfloat16_precision_on_cuda_is_close_to_float32():
    problem = specialist_problem()
    _, _, _, enc, test_ids = problem
    trained = fit(problem, {**TINY, "device": "cuda"}, seed=0)
    exact = trained.predict_logits(enc.take(test_ids))
    trained.params = trained.params.replace(precision="bfloat16")
    low = trained.predict_logits(enc.take(test_ids))
    assert low.dtype == np.float32 and not np.array_equal(low, exact)
    assert np.abs(low - exact).max() < 0.1
    res = subprocess.run(
        [sys.executable, "-m", "locus", "bench", "--device", "cuda", "--quick", "--precision", "bfloat16"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert "bfloat16 square-matmul peak" in res.stdout


def test_tf32_steps_stay_close_and_validation_stays_float32():
    """`tf32`: training steps on TF32 tensor cores stay close to float32; the validation pass (checkpoint
    selection) is float32 whatever `tf32` says, bit for bit."""
    results = {}
    for tf32 in (False, True):
        method, net, opt, phi, sets, models = _step_inputs("cuda")
        method.params = method.params.replace(tf32=tf32, max_tokens=0, max_targets=0, decoder_dropout=0.0)
        net.eval()
        gen = torch.Generator(device=method.device).manual_seed(1)
        with method._arithmetic(method.device, autocast=False):
            results[tf32] = float(method._train_step(net, opt, phi, sets, models, 0.0, gen))
    assert results[True] == pytest.approx(results[False], rel=1e-2)
    method, net, opt, phi, sets, models = _step_inputs("cuda")
    exact = method._grid_logits(method._embed_sets(phi, sets, exact=True), phi, exact=True).cpu()
    method.params = method.params.replace(tf32=True)
    with method._arithmetic(method.device, autocast=False):
        inside = method._grid_logits(method._embed_sets(phi, sets, exact=True), phi, exact=True).cpu()
    torch.testing.assert_close(inside, exact, rtol=0, atol=0)
    assert torch.get_float32_matmul_precision() == "highest"  # restored


def test_one_big_chunk_on_cuda_equals_small_chunks():
    """`eval_chunk_tokens` 0 (by device: one chunk of every model on CUDA) embeds and scores like small chunks."""
    method, net, opt, phi, sets, models = _step_inputs("cuda")
    z_big = method._embed_sets(phi, sets, exact=True)
    method.params = method.params.replace(eval_chunk_tokens=16)
    z_small = method._embed_sets(phi, sets, exact=True)
    torch.testing.assert_close(z_big, z_small, rtol=1e-4, atol=1e-5)


def test_moving_average_of_the_weights_on_cuda():
    """`ema_decay` on CUDA: the kept weights are the moving average of the raw ones (same check as on the CPU)."""
    check_ema_keeps_the_moving_average(specialist_problem(), "cuda")


def test_learning_rate_schedule_on_cuda():
    """`lr_warmup_steps` and `lr_decay_steps` on CUDA: each step runs at the scheduled rates (same check as
    on the CPU), and a step under the scheduler still never waits for the device."""
    check_lr_schedule_sets_the_rates_of_every_step(specialist_problem(), "cuda")
    check_steps_never_wait_for_the_device(  # the scheduler as fit builds it
        lambda opt: torch.optim.lr_scheduler.LambdaLR(opt, lambda step: lr_factor(step, 2, 4))
    )
