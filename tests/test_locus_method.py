"""LocusMethod: a tiny end-to-end fit, determinism, onboarding without training, save/load round trip."""

import re

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")

from test_baselines import flushing_off, subnormals_flushed  # noqa: E402

from locus import evaluation  # noqa: E402
from locus.data.canonical import pairs_to_matrix  # noqa: E402
from locus.data.encodings import Encodings  # noqa: E402
from locus.errors import ConfigError, DataError  # noqa: E402
from locus.methods import create  # noqa: E402
from locus.methods.base import FitData  # noqa: E402

TINY = {
    "dim": 16,
    "heads": 2,
    "layers": 1,
    "latents": 4,
    "decoder_hidden": 16,
    "enc_lr": 3e-3,
    "dec_lr": 5e-3,
    "max_steps": 120,
    "eval_every": 20,
    "patience": 200,
    "model_batch": 4,
    "max_tokens": 32,
    "noise_anneal_steps": 50,
    "threads": 1,
}


def specialist_problem(n_models=6, n_queries=260, d_phi=8, seed=0):
    """Query clusters; model m is good on cluster m % 3 and poor elsewhere, so routing needs the query."""
    rng = np.random.default_rng(seed)
    centers = np.eye(d_phi)[:3] * 3
    cluster = rng.integers(0, 3, n_queries)
    phi = (centers[cluster] + rng.normal(size=(n_queries, d_phi)) * 0.3).astype(np.float32)
    p = np.where(cluster[:, None] == (np.arange(n_models)[None] % 3), 0.9, 0.15)
    y = (rng.random(p.shape) < p).astype(float)
    pid, mid = np.meshgrid(np.arange(n_queries), np.arange(n_models), indexing="ij")
    pairs = pd.DataFrame({"prompt_id": pid.ravel(), "model_id": mid.ravel(), "score": y.ravel()})
    train_ids, val_ids, test_ids = np.arange(0, 160), np.arange(160, 210), np.arange(210, n_queries)
    enc = Encodings(np.arange(n_queries), phi, encoder="synthetic")
    split = lambda ids: pairs[pairs["prompt_id"].isin(ids)].reset_index(drop=True)  # noqa: E731
    return split(train_ids), split(val_ids), split(test_ids), enc, test_ids


@pytest.fixture(scope="module")
def problem():
    return specialist_problem()


@pytest.fixture(scope="module")
def fitted(problem):
    torch.set_num_threads(1)
    train, val, _, enc, _ = problem
    # one model has fewer evaluations than the others (padding + masks in training)
    train = train[~((train["model_id"] == 5) & (train["prompt_id"] >= 60))]
    data = FitData(train=train, val=val, encodings=enc, model_ids=np.arange(6))
    return create("locus", TINY, seed=3).fit(data), data


def test_fit_beats_random_routing(fitted, problem):
    model, _ = fitted
    _, _, test, enc, test_ids = problem
    logits = model.predict_logits(enc.take(test_ids))
    labels = pairs_to_matrix(test, test_ids, np.arange(6))
    r = evaluation.routing_metrics(logits, labels)
    assert logits.shape == (len(test_ids), 6) and logits.dtype == np.float32
    assert r["routing_acc"] > r["random"] + 0.25, r
    hist = model.history
    assert {"step", "train_loss", "val_bce", "val_routing", "val_acc", "noise_std", "seconds"} <= set(hist)
    assert hist["noise_std"].iloc[0] > hist["noise_std"].iloc[-1]


def test_prediction_is_in_eval_mode_and_restores_the_mode(fitted, problem):
    """Logits are the eval-mode ones whatever mode the network is in, and its mode (every module's) is kept."""
    model, _ = fitted
    _, _, _, enc, test_ids = problem
    vectors = enc.take(test_ids[:7])
    model.net.eval()
    evaluated = model.predict_logits(vectors)
    assert not any(m.training for m in model.net.modules())
    model.net.train()
    try:
        assert np.array_equal(model.predict_logits(vectors), evaluated)
        assert all(m.training for m in model.net.modules())
        next(iter(model.net.children())).eval()  # a mixed state: one part in eval mode only
        assert np.array_equal(model.predict_logits(vectors), evaluated)
        assert all(m.training for m in model.net.modules())  # net.train(True) as before the call
    finally:
        model.net.eval()


def test_same_seed_same_result(fitted):
    model, data = fitted
    params = {**TINY, "max_steps": 20, "eval_every": 10}
    a = create("locus", params, seed=3).fit(data)
    b = create("locus", params, seed=3).fit(data)
    c = create("locus", params, seed=4).fit(data)
    assert np.array_equal(a.model_embeddings()[1], b.model_embeddings()[1])
    pd.testing.assert_frame_equal(a.history.drop(columns="seconds"), b.history.drop(columns="seconds"))
    assert not np.array_equal(a.model_embeddings()[1], c.model_embeddings()[1])


def test_onboarding_is_a_forward_pass(fitted, problem):
    model, data = fitted
    train = problem[0]
    ids, z_before = model.model_embeddings()
    weights = {k: v.clone() for k, v in model.net.state_dict().items()}
    rows = train[train["model_id"] == 2]
    z_new = model.embed(data.encodings.take(rows["prompt_id"]), rows["score"].to_numpy())
    assert z_new.shape == (16,)
    # the same evaluations as a pool model give that model's embedding back
    assert np.abs(z_new - z_before[2]).max() < 1e-4
    assert np.array_equal(model.model_embeddings()[1], z_before)
    assert all(torch.equal(weights[k], v) for k, v in model.net.state_dict().items())
    # shuffled evaluations: same embedding
    perm = np.random.default_rng(0).permutation(len(rows))
    z_perm = model.embed(data.encodings.take(rows["prompt_id"].to_numpy()[perm]), rows["score"].to_numpy()[perm])
    assert np.abs(z_perm - z_new).max() < 1e-5


@pytest.mark.parametrize(
    "vectors,scores,message",
    [
        (np.zeros((3, 8)), [0.0, 1.5, 1.0], r"\[0, 1\]"),
        (np.zeros((3, 8)), [0.0, np.nan, 1.0], r"\[0, 1\]"),
        (np.zeros((3, 5)), np.zeros(3), "shape"),
        (np.zeros((3, 8)), np.zeros(2), "one score per query"),
        (np.zeros((0, 8)), np.zeros(0), "at least one"),
        (np.zeros((3, 8)), np.zeros((3, 2)), "one model"),
        (np.full((3, 8), np.inf), np.zeros(3), "NaN/Inf"),
    ],
)
def test_embed_refuses_bad_input(fitted, vectors, scores, message):
    model, _ = fitted
    with pytest.raises(DataError, match=message):
        model.embed(np.asarray(vectors, np.float32), np.asarray(scores))


def test_save_load_round_trip(fitted, problem, tmp_path):
    model, _ = fitted
    enc, test_ids = problem[3], problem[4]
    model.save(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.json", "model.safetensors"]
    loaded = type(model).load(tmp_path)
    q = enc.take(test_ids)
    # the same call is bit-identical after a round trip ...
    assert np.array_equal(model.predict_logits(q), loaded.predict_logits(q))
    assert np.array_equal(model.predict_logits(q, [4, 1]), loaded.predict_logits(q, [4, 1]))
    # ... while a different matmul shape may sum in another order (last float digit differs on some CPUs)
    np.testing.assert_allclose(
        loaded.predict_logits(q, [4, 1]), loaded.predict_logits(q)[:, [4, 1]], rtol=1e-5, atol=1e-6
    )
    assert np.array_equal(loaded.model_embeddings()[1], model.model_embeddings()[1])
    with pytest.raises(DataError, match="unknown model"):
        loaded.predict_logits(q, [99])


def test_unknown_parameter_is_refused():
    with pytest.raises(ConfigError, match="unknown parameter"):
        create("locus", {"dimension": 3})


@pytest.mark.parametrize(
    "params",
    [
        {"select_by": "accuracy_on_test"},
        {"select": "val_bce"},
        {"heads": 3},
        {"encoder_kind": "lstm"},
        {"max_steps": 0},
        {"eval_chunk_tokens": -1},
        {"ema_decay": 1.0},
        {"ema_decay": -0.1},
        {"lr_warmup_steps": -1},
        {"lr_warmup_steps": 10, "lr_decay_steps": 10},
    ],
)
def test_bad_parameters_fail_at_construction(params):
    with pytest.raises(ConfigError):
        create("locus", {**TINY, **params}, seed=0)


def test_bce_selection_trains_and_records_choice(problem):
    train, val, _, enc, _ = problem
    data = FitData(train=train, val=val, encodings=enc, model_ids=np.arange(6))
    model = create("locus", {**TINY, "max_steps": 40, "select_by": "val_bce"}, seed=1).fit(data)
    assert model.summary["select_by"] == "val_bce"
    best = model.history.loc[model.history["step"] == model.summary["best_step"], "val_bce"].iloc[0]
    assert best == pytest.approx(model.history["val_bce"].min())


def test_max_targets_caps_decoder_targets_per_step(problem):
    train, val, _, enc, test_ids = problem
    data = FitData(train=train, val=val, encodings=enc, model_ids=np.arange(6))
    model = create("locus", {**TINY, "max_targets": 24}, seed=3)
    widths = []
    original = None

    def build(d_phi):
        nonlocal original
        net = type(model)._build(model, d_phi)
        original = net.decoder.pair_logits

        def recording(z, u, uh):
            widths.append(u.shape[1])
            return original(z, u, uh)

        net.decoder.pair_logits = recording
        return net

    model._build = build
    model.fit(data)
    assert widths and max(widths) == 24  # every model has 160 training queries; 24 are scored per step
    logits = model.predict_logits(enc.take(test_ids))
    labels = pairs_to_matrix(problem[2], test_ids, np.arange(6))
    r = evaluation.routing_metrics(logits, labels)
    assert r["routing_acc"] > r["random"] + 0.2, r


def check_ema_keeps_the_moving_average(problem, device: str) -> None:
    """Train 3 steps with `ema_decay` on `device`, recording the raw weights after each step: the kept
    weights are their exponential moving average (the first update copies), not the last raw weights."""
    train, val, _, enc, _ = problem
    data = FitData(train=train, val=val, encodings=enc, model_ids=np.arange(6))
    decay = 0.6
    model = create("locus", {**TINY, "max_steps": 3, "eval_every": 3, "ema_decay": decay, "device": device}, seed=0)
    raw = []
    step = type(model)._train_step

    def recording(self, net, *args, **kwargs):
        loss = step(self, net, *args, **kwargs)
        raw.append({k: v.detach().cpu().clone() for k, v in net.state_dict().items()})
        return loss

    model._train_step = recording.__get__(model)
    model.fit(data)
    assert model.summary["device"].startswith(device)
    assert len(raw) == 3 and model.summary["best_step"] == 3
    kept = {k: v.detach().cpu() for k, v in model.net.state_dict().items()}
    for key, value in kept.items():
        expected = raw[0][key].float()  # the first update copies the weights, then w <- d w + (1 - d) w_t
        for later in raw[1:]:
            expected = decay * expected + (1 - decay) * later[key].float()
        assert torch.allclose(value.float(), expected, atol=1e-6), key
    # the kept weights are not the last raw ones (the average is what was validated and restored)
    assert any(not torch.equal(kept[k], raw[-1][k]) for k in kept)


def test_ema_decay_keeps_the_moving_average_of_the_weights(problem):
    check_ema_keeps_the_moving_average(problem, "cpu")


def test_lr_factor_warms_up_linearly_then_decays_by_a_cosine_to_zero():
    from locus.methods.locus_method import lr_factor

    assert [lr_factor(s, 0, 0) for s in (0, 5, 10_000)] == [1.0, 1.0, 1.0]  # the authors: constant
    assert [lr_factor(s, 4, 0) for s in range(6)] == [0.25, 0.5, 0.75, 1.0, 1.0, 1.0]
    assert [round(lr_factor(s, 2, 6), 6) for s in range(8)] == [0.5, 1.0, 1.0, 0.853553, 0.5, 0.146447, 0.0, 0.0]
    assert [round(lr_factor(s, 0, 4), 6) for s in range(5)] == [1.0, 0.853553, 0.5, 0.146447, 0.0]


def check_lr_schedule_sets_the_rates_of_every_step(problem, device: str) -> None:
    """With a warm-up and a decay, each step on `device` runs at lr x lr_factor(step), in every parameter
    group; the defaults keep the authors' constant rates."""
    train, val, _, enc, _ = problem
    data = FitData(train=train, val=val, encodings=enc, model_ids=np.arange(6))
    for schedule, expected in (
        ({}, [1.0] * 5),
        ({"lr_warmup_steps": 2, "lr_decay_steps": 4}, [0.5, 1.0, 1.0, 0.5, 0.0]),
    ):
        model = create("locus", {**TINY, "max_steps": 5, "eval_every": 5, "device": device, **schedule}, seed=0)
        seen = []
        step = type(model)._train_step

        def recording(self, net, opt, *args, _seen=seen, _step=step, **kwargs):
            _seen.append([g["lr"] for g in opt.param_groups])
            return _step(self, net, opt, *args, **kwargs)

        model._train_step = recording.__get__(model)
        model.fit(data)
        base = [model.params.enc_lr, model.params.dec_lr, model.params.dec_lr]
        assert len(seen) == 5
        for lrs, factor in zip(seen, expected):
            assert lrs == pytest.approx([b * factor for b in base], abs=1e-12), (schedule, seen)
        assert model.summary["device"].startswith(device)
        assert np.isfinite(model.z).all()


def test_lr_schedule_sets_the_learning_rates_of_every_step(problem):
    check_lr_schedule_sets_the_rates_of_every_step(problem, "cpu")


def test_min_steps_delays_early_stopping(problem):
    train, val, _, enc, _ = problem
    data = FitData(train=train, val=val, encodings=enc, model_ids=np.arange(6))
    frozen = {**TINY, "enc_lr": 0.0, "dec_lr": 0.0, "patience": 20, "eval_every": 20, "max_steps": 200}
    # nothing learns, so validation never improves after the first check (step 20)
    assert create("locus", {**frozen, "min_steps": 0}, seed=0).fit(data).summary["steps"] == 40
    assert create("locus", {**frozen, "min_steps": 100}, seed=0).fit(data).summary["steps"] == 100


def test_device_parameter(problem):
    """`device` is validated; `cuda` refuses to train where torch sees no CUDA device (clear message)."""
    with pytest.raises(ConfigError, match=re.escape("device must be one of ['auto', 'cpu', 'cuda']")):
        create("locus", {**TINY, "device": "tpu"})
    train, val, _, enc, _ = problem
    data = FitData(train=train, val=val, encodings=enc, model_ids=np.arange(6))
    if not torch.cuda.is_available():
        with pytest.raises(ConfigError, match="no CUDA device"):
            create("locus", {**TINY, "device": "cuda"}).fit(data)
    model = create("locus", {**TINY, "device": "cpu", "max_steps": 20}).fit(data)
    assert model.summary["device"] == "cpu"


def test_chunk_size_by_device_and_tf32_change_nothing_on_a_cpu(problem):
    """`eval_chunk_tokens` 0 is 8,192 tokens on a CPU, and `tf32` (CUDA only) leaves CPU arithmetic alone:
    the same run, bit for bit."""
    train, val, _, enc, _ = problem
    data = FitData(train=train, val=val, encodings=enc, model_ids=np.arange(6))
    params = {**TINY, "device": "cpu", "max_steps": 30, "eval_every": 10}
    runs = [
        create("locus", {**params, **extra}, seed=1).fit(data)
        for extra in ({}, {"eval_chunk_tokens": 8192}, {"tf32": True})
    ]
    for other in runs[1:]:
        np.testing.assert_array_equal(other.z, runs[0].z)
        assert other.history["val_routing"].tolist() == runs[0].history["val_routing"].tolist()
    assert torch.get_float32_matmul_precision() == "highest"  # the process-wide setting is restored


def test_embedding_in_several_chunks_gives_the_unchunked_result(fitted):
    """`eval_chunk_tokens` embeds the models in chunks of about that many tokens (at least one model each):
    the chunks are really used, and the embeddings do not depend on them (up to the last float digit: a
    matrix product of another shape may sum in another order)."""
    import copy

    from locus.methods.locus_method import ModelSets

    model, data = copy.deepcopy(fitted[0]), fitted[1]
    sets = ModelSets(data.train, model.model_ids)
    phi = torch.from_numpy(np.ascontiguousarray(data.encodings.take(sets.prompt_ids)))
    assert sets.idx.shape == (6, 160)  # 6 models, at most 160 evaluations each
    forward, chunks = model.net.encoder.forward, []

    def counting(tokens, y, mask=None):
        chunks.append(tokens.shape[0])
        return forward(tokens, y, mask)

    model.net.encoder.forward = counting
    embedded = {}
    for tokens in (0, 320, 1):  # 0: 8,192 tokens on a CPU = one chunk; 2 models a chunk; 1 model a chunk
        model.params = model.params.replace(eval_chunk_tokens=tokens)
        chunks.clear()
        embedded[tokens] = (model._embed_sets(phi, sets).numpy(), list(chunks))
    assert [c for _, c in embedded.values()] == [[6], [2, 2, 2], [1] * 6]
    for tokens in (320, 1):
        np.testing.assert_allclose(embedded[tokens][0], embedded[0][0], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(embedded[0][0], model.z)  # what fit() stored: the same pass


def test_training_step_returns_a_device_scalar(problem):
    """The step hands back the loss as a detached tensor (summed on the device; read only when logged)."""
    from locus.methods.locus_method import ModelSets

    train, _, _, enc, _ = problem
    method = create("locus", TINY, seed=0)
    sets = ModelSets(train, np.arange(6)).to("cpu")
    phi = torch.from_numpy(np.ascontiguousarray(enc.take(sets.prompt_ids)))
    net = method._build(enc.dim)
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
    loss = method._train_step(net, opt, phi, sets, torch.arange(3), 0.1, torch.Generator().manual_seed(0))
    assert isinstance(loss, torch.Tensor) and loss.ndim == 0 and not loss.requires_grad
    assert 0.0 < float(loss) < 5.0


# ------------------------------------------------------------------------------------------------
# recipes (named schedules) and the authors' shared token draw
# ------------------------------------------------------------------------------------------------
def test_fast_recipe_is_the_class_default_and_paper_is_the_authors_schedule():
    from locus.methods.locus_method import RECIPES, LocusMethod
    from locus.methods.locus_params import LocusParams

    assert RECIPES["fast"] == LocusParams() and LocusMethod.defaults == LocusParams().as_dict()
    paper = create("locus", {"recipe": "paper"}).params
    assert paper == RECIPES["paper"]
    # the authors: all models per step, <= 2,500 steps, patience 500 from the start, validate every step,
    # all targets, tokens K ~ U[1,024, n] shared, noise 0.10 -> 0.05 over 500 steps
    assert (
        paper.model_batch,
        paper.max_steps,
        paper.patience,
        paper.min_steps,
        paper.eval_every,
        paper.max_targets,
        paper.max_tokens,
        paper.token_draw,
        paper.min_tokens,
    ) == (0, 2500, 500, 0, 1, 0, 0, "shared", 1024)
    assert (paper.enc_lr, paper.dec_lr, paper.weight_decay, paper.grad_clip) == (2e-4, 8e-4, 0.05, 1.0)
    assert paper.ema_decay == 0.0  # the authors keep the raw weights
    assert (paper.lr_warmup_steps, paper.lr_decay_steps) == (0, 0)  # and constant learning rates
    assert (paper.noise_start, paper.noise_end, paper.noise_anneal_steps, paper.noise_per_pair) == (
        0.10,
        0.05,
        500,
        True,
    )


# every parameter's value before the parameters became a dataclass: the presets must not drift
OLD_DEFAULTS = {
    "dim": 128,
    "heads": 4,
    "layers": 2,
    "latents": 64,
    "decoder_hidden": 64,
    "decoder_dropout": 0.1,
    "encoder_kind": "isab",
    "query_dropout": 0.0,
    "enc_lr": 2e-4,
    "dec_lr": 8e-4,
    "weight_decay": 0.05,
    "grad_clip": 1.0,
    "noise_start": 0.10,
    "noise_end": 0.05,
    "noise_anneal_steps": 500,
    "noise_per_pair": True,
    "max_steps": 800,
    "min_steps": 600,
    "patience": 400,
    "eval_every": 25,
    "model_batch": 16,
    "max_tokens": 256,
    "max_targets": 1024,
    "encoder_fraction": 1.0,
    "token_draw": "per_model",
    "min_tokens": 1024,
    "eval_chunk_tokens": 0,
    "max_seconds": 0.0,
    "recipe": "fast",
    "precision": "float32",
    "select_by": "val_routing",
    "label_smoothing": 0.0,
    "query_weight_decay": -1.0,
    "ema_decay": 0.0,
    "lr_warmup_steps": 0,
    "lr_decay_steps": 0,
    "threads": 0,
    "device": "auto",
    "deterministic": False,
    "tf32": False,
}
OLD_PAPER = {
    **OLD_DEFAULTS,
    "recipe": "paper",
    "model_batch": 0,
    "max_steps": 2500,
    "min_steps": 0,
    "patience": 500,
    "eval_every": 1,
    "max_tokens": 0,
    "token_draw": "shared",
    "max_targets": 0,
}


def test_presets_keep_the_values_and_types_of_before():
    from locus.methods.locus_params import PRESETS, LocusParams

    def typed(d):
        return {k: (type(v).__name__, v) for k, v in d.items()}

    assert typed(PRESETS["fast"].as_dict()) == typed(OLD_DEFAULTS)
    assert typed(PRESETS["paper"].as_dict()) == typed(OLD_PAPER)
    assert typed(create("locus", {"recipe": "paper"}).params.as_dict()) == typed(OLD_PAPER)
    assert list(PRESETS["fast"].as_dict()) == list(OLD_DEFAULTS)  # the order config.json records
    docs = {name: spec.doc for name, spec in LocusParams.specs().items()}
    assert set(docs) == set(LocusParams.names()) == set(OLD_DEFAULTS) and all(docs.values())
    # measurements and history stay out of the parameters' docs
    assert not [k for k, d in docs.items() if re.search(r"\d(\.\d+)?x\b|%|\.md\b", d)]


@pytest.mark.parametrize(
    "params, message",
    [
        ({"heads": "two"}, "method 'locus': heads must be an integer >= 1, got 'two'"),
        ({"dim": 8.5}, "method 'locus': dim must be an integer >= 1, got 8.5"),
        ({"dim": 8.0}, "dim must be an integer >= 1, got 8.0"),
        ({"max_steps": True}, "max_steps must be an integer >= 1, got True"),  # bool is not an int here
        ({"enc_lr": -0.001}, "method 'locus': enc_lr must be a number >= 0, got -0.001"),
        ({"enc_lr": "2e-4"}, "enc_lr must be a number >= 0, got '2e-4'"),  # YAML reads 2e-4 as a string
        ({"dec_lr": float("nan")}, "dec_lr must be a number >= 0, got nan"),
        ({"heads": 3}, "method 'locus': heads must be a divisor of dim (128), got 3"),
        ({"max_steps": -1}, "method 'locus': max_steps must be an integer >= 1, got -1"),
        ({"noise_per_pair": 1}, "noise_per_pair must be true or false, got 1"),
        ({"precision": "float16"}, "precision must be one of ['float32', 'bfloat16'], got 'float16'"),
        ({"select_by": "val_loss"}, "select_by must be one of ['val_routing', 'val_bce', 'val_acc'], got 'val_loss'"),
        ({"recipe": ["paper"]}, "recipe must be one of ['fast', 'paper'], got ['paper']"),
        ({"encoder_fraction": 0}, "encoder_fraction must be a number > 0 and <= 1, got 0"),
        ({"decoder_dropout": 1.0}, "decoder_dropout must be a number >= 0 and < 1, got 1.0"),
        ({"dimension": 3}, "unknown parameter(s) ['dimension']; known: ["),
    ],
)
def test_each_bad_value_is_one_line_naming_key_value_and_allowed(params, message):
    from locus.methods.locus_method import LocusMethod

    with pytest.raises(ConfigError) as info:
        create("locus", params)
    assert message in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(ConfigError, match=re.escape(message)):  # without building a method (the DAG check)
        LocusMethod.validate_params(params)


def test_ints_are_accepted_for_floats_and_kept_as_given():
    params = create("locus", {"enc_lr": 0, "max_seconds": 5, "query_weight_decay": -2}).params
    assert (params.enc_lr, params.max_seconds, params.query_weight_decay) == (0, 5, -2)
    assert isinstance(params.enc_lr, int)  # recorded as given: metrics.json does not change


def test_train_command_refuses_bad_params_in_one_line(tmp_path, capsys):
    from locus.cli import main

    for params in ('{"heads": "two"}', '{"dim": 8.5}', '{"enc_lr": -0.001}', '{"heads": 3}', '{"max_steps": -1}'):
        code = main(
            [
                "train",
                "--method",
                "locus",
                "--data",
                str(tmp_path / "none"),
                "--encodings",
                str(tmp_path / "none.parquet"),
                "--train-size",
                "8",
                "--params",
                params,
                "--out",
                str(tmp_path / "run"),
            ]
        )
        err = capsys.readouterr().err.strip()
        assert code == 2 and len(err.splitlines()) == 1 and "method 'locus'" in err, (params, err)


def test_own_parameters_win_over_the_recipe():
    params = create("locus", {"recipe": "paper", "max_steps": 7, "eval_every": 3}).params
    assert (params.max_steps, params.eval_every, params.patience) == (7, 3, 500)


@pytest.mark.parametrize(
    "params, message",
    [
        ({"recipe": "slow"}, "recipe must be one of"),
        ({"token_draw": "random"}, "token_draw must be"),
        ({"max_tokens": -1}, "max_tokens must be an integer >= 0"),
    ],
)
def test_bad_recipe_values_are_refused(params, message):
    with pytest.raises(ConfigError, match=message):
        create("locus", params)


def test_shared_token_draw_uses_one_position_set_of_size_between_min_and_n(problem):
    """token_draw shared: K ~ U[min_tokens, n] per step, the same K positions for every model of the step."""
    train, val, _, enc, _ = problem
    data = FitData(train=train, val=val, encodings=enc, model_ids=np.arange(6))
    model = create(
        "locus",
        {
            **TINY,
            "token_draw": "shared",
            "max_tokens": 0,
            "min_tokens": 100,
            "model_batch": 0,
            "max_steps": 12,
            "eval_every": 6,
            "noise_start": 0.0,
            "noise_end": 0.0,
        },
        seed=0,
    )
    seen = []

    def build(d_phi):
        net = type(model)._build(model, d_phi)
        original = net.encoder.forward

        def recording(tokens, y, mask=None):
            if net.training:
                seen.append((tokens.shape[1], tokens.detach().clone()))
            return original(tokens, y, mask)

        net.encoder.forward = recording
        return net

    model._build = build
    model.fit(data)
    sizes = [k for k, _ in seen]
    assert len(sizes) == 12 and all(100 <= k <= 160 for k in sizes) and len(set(sizes)) > 1
    # every model has the same training queries (shared sampling) and no noise here: the same positions give
    # every model the same query projections
    for _, proj in seen:
        assert proj.shape[0] == 6 and torch.equal(proj, proj[:1].expand_as(proj))


def test_training_flushes_subnormal_floats(problem):
    # as the torch baselines do (tests/test_baselines.py): subnormals cost ~10x on x86 CPUs
    train, val, _, enc, _ = problem
    data = FitData(train=train, val=val, encodings=enc, model_ids=np.arange(6))
    supported = flushing_off()
    create("locus", {**TINY, "max_steps": 2, "eval_every": 1}, seed=0).fit(data)
    assert subnormals_flushed() == supported
