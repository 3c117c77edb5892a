"""Bad parameter values, generated from the typed declarations themselves: for every parameter of every
method (its ``Params`` dataclass: ``Params.specs()``) and every data source (``PARAMS``), a value of the wrong
type and, where the parameter has bounds, a value just outside them. Each must be refused by `locus train`
/ `locus data` before any work, in one line naming the parameter, the value and what is allowed.

``before`` is estimated from the code before the typed declarations, not measured case by case: LOCUS
already checked its parameters (ok); the baselines and adapters converted values with int()/float() or
passed them on unchecked (traceback for a wrong type, silent for a value out of range).
"""

from __future__ import annotations

import json
import re

from bad_inputs.harness import Case
from locus.data.validation import Param
from locus.methods import method_class, names
from locus.params import SOURCES, adapter

WRONG_TYPE = {"int": "two", "float": "fast", "bool": "yes", "str": 7, "path": 5, "int_list": ["a"], "float_list": "0.5"}


def _outside(p: Param):
    """A value of the right type just outside the bounds, or None when the parameter has none."""
    integer = p.type.startswith("int")
    step = 1 if integer else 0.5
    value = None
    if p.at_least is not None:
        value = p.at_least - step
    elif p.above is not None:
        value = p.above if not integer else p.above
    elif p.at_most is not None:
        value = p.at_most + step
    elif p.below is not None:
        value = p.below
    if value is None:
        return None
    value = int(value) if integer else float(value)
    return [value] * (p.length or 1) if p.type.endswith("_list") else value


def _values(p: Param):
    yield "type", WRONG_TYPE[p.type]
    if p.type not in ("bool", "str", "path"):
        out = _outside(p)
        if out is not None:
            yield "range", out


def _train(method: str, params: dict):
    return lambda ws: [
        "train",
        "--method",
        method,
        "--data",
        "nowhere",
        "--encodings",
        "nowhere.parquet",
        "--train-size",
        "5",
        "--params",
        json.dumps(params),
        "--out",
        "run",
    ]


def _data(source: str, params: dict):
    return lambda ws: ["data", source, "--out", "out", "--params", json.dumps(params)]


def _message(owner: str, name: str, p: Param) -> str:
    return rf"{re.escape(owner)}: {re.escape(name)} must be {re.escape(p.allowed())}, got"


CASES = []
for _method in names():
    _cls = method_class(_method)
    for _name, _p in _cls.Params.specs().items():
        for _kind, _value in _values(_p):
            CASES.append(
                Case(
                    id=f"param-{_method}-{_name}-{_kind}",
                    klass="parameters",
                    before="ok"
                    if _method == "locus" or _name == "select_by"
                    else ("traceback" if _kind == "type" else "silent"),
                    argv=_train(_method, {_name: _value}),
                    message=_message(f"method {_method!r}", _name, _p)
                    if not (_method == "locus" and _name == "recipe")
                    else r"recipe must be one of",
                )
            )
_OWNER = {"csv": "csv", "llmrouter": "llmrouter", "embedllm": "embedllm", "synthetic": "synthetic data"}
for _source in SOURCES:
    _module = adapter(_source)
    for _name, _p in _module.PARAMS.items():
        if _name == "split_overlap":
            continue  # a data-set option, checked by its own message (cases_data)
        for _kind, _value in _values(_p):
            _params = {_name: _value}
            if _source == "csv" and _name != "path":
                _params["path"] = "evaluations.csv"  # never read: the parameters are checked first
            CASES.append(
                Case(
                    id=f"param-{_source}-{_name}-{_kind}",
                    klass="parameters",
                    before="traceback" if _kind == "type" else "silent",
                    argv=_data(_source, _params),
                    message=_message(_OWNER[_source], _name, _p),
                )
            )
