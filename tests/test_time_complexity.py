"""Time complexity (locus.experiments.time_complexity, `locus bench --time-complexity`): the plotted frame on
hand-made measurements with known FLOPs and reference rows, refusals, a tiny real run through the CLI, and
bad arguments."""

from __future__ import annotations

import csv
import json
import math

import pytest

from locus import benchmark as bench
from locus.cli import main
from locus.errors import ConfigError, DataError
from locus.experiments import time_complexity as tc
from locus.methods.locus_method import LocusMethod

PARAMS = dict(LocusMethod.defaults)
META = {"device": "cpu", "device_name": "test-cpu", "cpu_model": "Test CPU", "threads": 2, "torch": "9.9"}
TINY = '{"dim":16,"heads":2,"layers":1,"latents":8,"decoder_hidden":16}'


def point(what, m, n, median, low=None, high=None, cold=1.0, repeats=3):
    return {
        "what": what,
        "n_models": m,
        "n": n,
        "median_s": median,
        "min_s": median if low is None else low,
        "max_s": median if high is None else high,
        "cold_s": cold,
        "repeats": repeats,
    }


def test_frame_of_hand_made_measurements():
    ms = [
        point("predict", 112, 4096, 0.04, 0.03, 0.05),
        point("embed", 112, 4096, 3.0, 2.0, 4.0, cold=5.0),
        point("embed", 16, 64, 0.01),
    ]
    frame = tc.build_frame(ms, PARAMS, META)
    assert list(frame.columns) == tc.CSV_COLUMNS
    measured = frame[frame["source"] == "measured"]
    # sorted by what, pool size, n; the reference rows follow
    assert list(zip(measured["what"], measured["n_models"], measured["n"])) == [
        ("embed", 16, 64),
        ("embed", 112, 4096),
        ("predict", 112, 4096),
    ]
    assert frame["source"].tolist()[3:] == ["paper", "target", "paper", "target"]
    big = measured.iloc[1]
    assert (big["median_s"], big["min_s"], big["max_s"], big["cold_s"], big["repeats"]) == (3.0, 2.0, 4.0, 5.0, 3)
    assert big["gflop"] == pytest.approx(bench.embed_flops(112, 4096, 4096, PARAMS) / 1e9)
    assert big["gflop_s"] == pytest.approx(big["gflop"] / 3.0)
    pred = measured.iloc[2]
    assert pred["gflop"] == pytest.approx(bench.predict_grid_flops(4096, 112, PARAMS) / 1e9)
    assert (measured["device_name"] == "test-cpu").all() and (measured["threads"] == 2).all()
    assert (measured["torch"] == "9.9").all() and (measured["cpu_model"] == "Test CPU").all()
    refs = frame[frame["source"] != "measured"].set_index(["source", "what"])["median_s"]
    assert refs[("paper", "embed")] == bench.PAPER["embed"] and refs[("paper", "predict")] == bench.PAPER["predict"]
    assert refs[("target", "embed")] == tc.TARGETS["embed"] and refs[("target", "predict")] == tc.TARGETS["predict"]
    assert (frame.loc[frame["source"] != "measured", ["n_models", "n"]] == [112, 4096]).all().all()


def test_headline_compares_the_reference_shape_with_the_target():
    frame = tc.build_frame([point("embed", 112, 4096, 3.0, 2.0, 4.0), point("predict", 112, 4096, 0.04)], PARAMS, META)
    h = tc.headline(frame)
    assert h["embed"]["median_s"] == 3.0 and h["embed"]["meets_target"] is False
    assert h["embed"]["paper_s"] == bench.PAPER["embed"] and h["embed"]["target_s"] == tc.TARGETS["embed"]
    assert h["predict"]["meets_target"] is True
    lines = tc.report_lines(frame)
    assert any("embed at 112 models" in line and "misses" in line for line in lines)
    assert any("predict at 112 models" in line and "meets" in line for line in lines)


def test_bfloat16_series_sit_beside_float32():
    ms = [
        point("embed", 112, 4096, 3.0),
        {**point("embed", 112, 4096, 2.0), "precision": "bfloat16"},
        {**point("predict", 112, 4096, 0.04), "precision": "bfloat16"},
        point("predict", 112, 4096, 0.1),
    ]
    frame = tc.build_frame(ms, PARAMS, META)
    measured = frame[frame["source"] == "measured"]
    assert list(zip(measured["what"], measured["precision"])) == [
        ("embed", "float32"),
        ("embed", "bfloat16"),
        ("predict", "float32"),
        ("predict", "bfloat16"),
    ]
    assert measured["label"].tolist()[1] == "112 models, bfloat16"
    h = tc.headline(frame)
    assert h["embed"]["median_s"] == 3.0 and h["embed/bfloat16"]["median_s"] == 2.0
    assert h["embed/bfloat16"]["meets_target"] is True and h["predict"]["meets_target"] is False
    assert h["predict/bfloat16"]["precision"] == "bfloat16"
    with pytest.raises(DataError, match="measured twice"):
        tc.build_frame(ms + [{**point("embed", 112, 4096, 2.5), "precision": "bfloat16"}], PARAMS, META)
    with pytest.raises(DataError, match="'precision' must be one of"):
        tc.build_frame([{**point("embed", 4, 8, 0.1), "precision": "float16"}], PARAMS, META)
    fig = __import__("locus.render.time_complexity", fromlist=["x"]).time_complexity_figure(frame)
    styles = {c.get_label(): c.lines[0].get_linestyle() for c in fig.axes[0].containers}  # errorbar series
    assert styles.get("112 models") == "-" and styles.get("112 models, bfloat16") == "--"


def test_headline_is_none_when_the_reference_shape_was_not_measured():
    frame = tc.build_frame([point("embed", 16, 64, 0.01)], PARAMS, META)
    assert tc.headline(frame) == {"embed": None, "predict": None}
    assert any("not measured" in line for line in tc.report_lines(frame))


@pytest.mark.parametrize(
    "bad, message",
    [
        ([], "no measurements"),
        ([point("train", 4, 8, 0.1)], "'what' must be one of"),
        ([point("embed", 0, 8, 0.1)], "n_models must be >= 1"),
        ([point("embed", 4, 8, 0.0)], "positive seconds"),
        ([point("embed", 4, 8, math.nan)], "positive seconds"),
        ([point("embed", 4, 8, 0.5, 0.6, 0.7)], "min_s <= median_s <= max_s"),
        ([point("embed", 4, 8, 0.1), point("embed", 4, 8, 0.2)], "measured twice"),
    ],
)
def test_frame_refuses_bad_measurements(bad, message):
    with pytest.raises(DataError, match=message):
        tc.build_frame(bad, PARAMS, META)


def test_bench_time_complexity_tiny_run(tmp_path, capsys):
    pytest.importorskip("torch")
    out = tmp_path / "figs" / "tc.pdf"
    assert (
        main(
            [
                "bench",
                "--time-complexity",
                str(out),
                "--pool-sizes",
                "4,2",
                "--eval-sizes",
                "8,16",
                "--query-sizes",
                "16,8",
                "--repeat",
                "1",
                "--device",
                "cpu",
                "--threads",
                "1",
                "--params",
                TINY,
                "--precision",
                "float32,bfloat16",
                "--bfloat16-on-cpu",
                "always",
            ]
        )
        == 0
    )
    for ext in ("pdf", "png", "csv"):
        assert (tmp_path / "figs" / f"tc.{ext}").stat().st_size > 0
    assert (tmp_path / "figs" / "tc.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "figs" / "tc.pdf").read_bytes()[:5] == b"%PDF-"
    with open(tmp_path / "figs" / "tc.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == tc.CSV_COLUMNS
    measured = [r for r in rows if r["source"] == "measured"]
    expected = [
        ("embed", "2", "8"),
        ("embed", "2", "16"),
        ("embed", "4", "8"),
        ("embed", "4", "16"),
        ("predict", "4", "8"),
        ("predict", "4", "16"),
    ]  # prediction: the largest pool
    assert [(r["what"], r["n_models"], r["n"]) for r in measured if r["precision"] == "float32"] == expected
    assert [(r["what"], r["n_models"], r["n"]) for r in measured if r["precision"] == "bfloat16"] == expected
    assert sorted((r["source"], r["what"]) for r in rows if r["source"] != "measured") == [
        ("paper", "embed"),
        ("paper", "predict"),
        ("target", "embed"),
        ("target", "predict"),
    ]
    tiny = {"dim": 16, "heads": 2, "layers": 1, "latents": 8, "decoder_hidden": 16}
    p = {**LocusMethod.defaults, **tiny}
    for r in measured:
        assert r["device"] == "cpu" and r["device_name"] and r["threads"] == "1" and r["repeats"] == "1"
        assert r["torch"] == __import__("torch").__version__
        assert 0 < float(r["min_s"]) <= float(r["median_s"]) <= float(r["max_s"]) and float(r["cold_s"]) > 0
        n, m = int(r["n"]), int(r["n_models"])
        flops = bench.embed_flops(m, n, n, p) if r["what"] == "embed" else bench.predict_grid_flops(n, m, p)
        assert float(r["gflop"]) == pytest.approx(flops / 1e9)
    text = capsys.readouterr().out
    assert "not measured" in text and f"wrote {out}" in text


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--time-complexity", "{tmp}/tc.pdf", "--pool-sizes", "16,0"], "argument --pool-sizes: must be >= 1, got 0"),
        (
            ["--time-complexity", "{tmp}/tc.pdf", "--eval-sizes", "64,x"],
            "argument --eval-sizes: expected a whole number >= 1, got 'x'",
        ),
        (
            ["--time-complexity", "{tmp}/tc.pdf", "--query-sizes", ","],
            "argument --query-sizes: expected comma-separated whole numbers >= 1",
        ),
        (
            ["--time-complexity", "{tmp}/tc.png"],
            "argument --time-complexity: {tmp}/tc.png: expected a path ending in .pdf",
        ),
        (["--pool-sizes", "16"], "--pool-sizes only apply with --time-complexity"),
        (["--time-complexity", "{tmp}/tc.pdf", "--quick"], "leave out --time-to-accuracy, --quick and --json"),
        (
            [
                "--time-complexity",
                "{tmp}/tc.pdf",
                "--pool-sizes",
                "2",
                "--eval-sizes",
                "8",
                "--query-sizes",
                "8",
                "--params",
                '{"dimm": 3}',
            ],
            "unknown parameter(s) ['dimm']",
        ),
    ],
)
def test_bad_arguments_exit_2_with_one_line(tmp_path, capsys, argv, message):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert main(["bench", *argv]) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if "error" in line]
    assert len(errors) == 1 and "Traceback" not in err
    assert errors[0].startswith("locus bench: error: ") and message.replace("{tmp}", str(tmp_path)) in errors[0]
    assert list(tmp_path.iterdir()) == []  # nothing written


@pytest.mark.parametrize(
    "native, policy, timed, note",
    [
        (False, "native", ["float32"], "not timed: no bfloat16 in this CPU's hardware"),
        (False, "always", ["float32", "bfloat16"], "emulated"),
        (True, "native", ["float32", "bfloat16"], "native"),
    ],
)
def test_bfloat16_is_timed_on_a_cpu_only_where_it_is_native(monkeypatch, native, policy, timed, note):
    pytest.importorskip("torch")
    monkeypatch.setattr(tc, "native_bfloat16", lambda: native)  # the CPU's flags, as /proc/cpuinfo would say
    rows, params, meta = tc.measure_points(
        [2],
        [8],
        [8],
        repeat=1,
        device="cpu",
        params=json.loads(TINY),
        precisions=("float32", "bfloat16"),
        bfloat16_on_cpu=policy,
    )
    assert sorted({r["precision"] for r in rows}, key=timed.index) == timed
    assert meta["bfloat16"].startswith(note)
    frame = tc.build_frame(rows, params, meta)
    assert set(frame.loc[frame["source"] == "measured", "bfloat16"]) == {meta["bfloat16"]}


def test_only_bfloat16_on_a_cpu_without_it_is_refused(monkeypatch):
    pytest.importorskip("torch")
    monkeypatch.setattr(tc, "native_bfloat16", lambda: False)
    with pytest.raises(ConfigError, match="nothing to time; add float32 or pass --bfloat16-on-cpu always"):
        tc.measure_points([2], [8], [8], repeat=1, device="cpu", params=json.loads(TINY), precisions=("bfloat16",))


def test_size_list_sorts_and_drops_duplicates():
    from locus.commands.bench import size_list

    assert size_list("4096, 64,256,64") == [64, 256, 4096]
