"""One parameter system for every method (locus.methods.params): a frozen dataclass per method, read by
attribute, each default written once, checked once from user input."""

from __future__ import annotations

import dataclasses
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from locus import methods
from locus.errors import ConfigError
from locus.methods.base import Method
from locus.methods.params import TYPES, MethodParams, param

sys.path.insert(0, str(Path(__file__).parent))  # tests/: the tiny data set of test_views


@pytest.mark.parametrize("name", sorted(methods.REGISTRY))
def test_each_method_has_one_frozen_parameter_class_read_by_attribute(name):
    cls = methods.method_class(name)
    p = cls().params
    assert type(p) is cls.Params and issubclass(cls.Params, MethodParams) and cls.Params.method == name
    assert cls.defaults == p.as_dict() == cls.Params().as_dict()  # derived: each default written once
    for f in dataclasses.fields(p):
        assert f.type in TYPES and f.metadata["doc"], (name, f.name)
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.select_by = "val_bce"
    with pytest.raises(AttributeError):
        p.selectby  # noqa: B018  (a misspelt name fails at once)
    with pytest.raises(TypeError):
        p["select_by"]  # noqa: B018  (no dict access)


@pytest.mark.parametrize("name", sorted(methods.REGISTRY))
def test_from_dict_is_the_one_check_and_a_checked_object_is_used_as_it_is(name):
    cls = methods.method_class(name)
    given = cls.validate_params({"select_by": "val_bce"})
    assert given.select_by == "val_bce" and given == cls.Params.from_dict({"select_by": "val_bce"})
    assert cls(given).params is given  # Method.__init__ does not check it again
    with pytest.raises(ConfigError, match=rf"^method '{name}': unknown parameter\(s\) \['nope'\]; known: \["):
        cls.validate_params({"nope": 1})
    with pytest.raises(ConfigError, match=rf"^method '{name}': select_by must be one of \['val_routing'"):
        cls({"select_by": "val_test"})
    with pytest.raises(ConfigError, match="parameters must be a mapping"):
        cls.validate_params([1])


def test_replace_is_checked_and_keeps_the_rest():
    p = methods.method_class("locus").Params.from_dict({"recipe": "paper", "dim": 16, "heads": 2})
    q = p.replace(precision="bfloat16")
    assert (q.precision, q.dim, q.recipe, q.max_steps) == ("bfloat16", 16, "paper", 2500) and p.precision == "float32"
    with pytest.raises(ConfigError, match="precision must be one of"):
        p.replace(precision="float16")
    with pytest.raises(ConfigError, match=r"unknown parameter\(s\) \['precison'\]"):
        p.replace(precison="bfloat16")
    with pytest.raises(ConfigError, match=r"heads must be a divisor of dim \(6\), got 4"):
        methods.method_class("locus").Params.from_dict({"dim": 6})


def test_list_parameters_are_tuples_inside_and_lists_in_json():
    p = methods.method_class("knn_router").Params.from_dict({"k_grid": [3, 7]})
    assert p.k_grid == (3, 7) and hash(p)
    assert p.as_dict()["k_grid"] == [3, 7] and json.loads(json.dumps(p.as_dict())) == p.as_dict()
    assert methods.method_class("kmeans_router").defaults["K_grid"] == [4, 8, 16, 32, 64]


def test_a_variant_changes_one_default_and_keeps_its_declaration():
    from locus.methods.embedllm import EmbedLLMParams, EmbedLLMPlusParams

    base, plus = EmbedLLMParams.specs(), EmbedLLMPlusParams.specs()
    assert list(base) == list(plus)  # the same fields in the same order (config.json keeps its order)
    assert {k for k in base if base[k] != plus[k]} == {"hidden_layers"}
    assert dataclasses.replace(plus["hidden_layers"], default=0) == base["hidden_layers"]
    with pytest.raises(ConfigError, match="^method 'embedllm_plus': hidden_layers must be an integer >= 0"):
        EmbedLLMPlusParams.from_dict({"hidden_layers": -1})


def test_declaring_parameters():
    @dataclass(frozen=True)
    class ToyParams(MethodParams):
        method = "toy"
        width: int = param(4, "width", at_least=1)
        rate: float = param(0.5, "rate", above=0, below=1)
        sizes: tuple[float, ...] = param([0.5], "sizes", at_least=0)

        def check_together(self) -> None:
            if self.width * self.rate > 10:
                self.refuse("rate", f"<= 10 / width ({self.width})")

    assert ToyParams().as_dict() == {"width": 4, "rate": 0.5, "sizes": [0.5]}
    assert ToyParams.specs()["rate"].allowed() == "a number > 0 and < 1"
    with pytest.raises(ConfigError, match=re.escape("method 'toy': sizes must be a non-empty list of numbers >= 0")):
        ToyParams.from_dict({"sizes": []})
    with pytest.raises(ConfigError, match=re.escape("method 'toy': rate must be <= 10 / width (40), got 0.5")):
        ToyParams.from_dict({"width": 40})

    with pytest.raises(TypeError, match="is for method 'toy', not 'other'"):

        class Other(Method):  # a parameter class belongs to the method named in it
            name = "other"
            Params = ToyParams


def test_locus_train_checks_the_parameters_once_and_records_them_as_given(tmp_path, monkeypatch):
    """`locus train` turns --params into the method's Params once (run_params); the run records as_dict()."""
    pytest.importorskip("torch")
    from test_views import write_tiny

    from locus.cli import main
    from locus.methods.knn_router import KNNRouterParams

    data, enc = write_tiny(tmp_path)
    calls = []
    check = MethodParams.__post_init__
    monkeypatch.setattr(MethodParams, "__post_init__", lambda self: (calls.append(type(self)), check(self))[1])
    argv = ["train", "--method", "knn_router", "--data", str(data), "--encodings", str(enc), "--train-size", "10"]
    assert main([*argv, "--params", '{"k_grid": [2, 4], "clip": 0.01}', "--out", str(tmp_path / "run")]) == 0
    assert calls == [KNNRouterParams]  # checked once: the method used the object it was given
    recorded = json.loads((tmp_path / "run" / "metrics.json").read_text())["params"]
    assert recorded == {**KNNRouterParams().as_dict(), "k_grid": [2, 4], "clip": 0.01}
    loaded = methods.method_class("knn_router").load(tmp_path / "run")
    assert loaded.params == KNNRouterParams(k_grid=(2, 4), clip=0.01)


def test_each_default_is_written_once():
    """LOCUS's `fast` recipe is the class defaults; `paper` lists only values that differ from them."""
    from locus.methods.locus_params import PAPER, PRESETS, LocusParams

    fast = LocusParams().as_dict()
    assert PRESETS["fast"] == LocusParams() and [k for k, v in PAPER.items() if fast[k] == v] == []
    assert PRESETS["paper"].as_dict() == {**fast, **PAPER}
