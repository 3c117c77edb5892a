"""Method parameters: one frozen dataclass per method, read by attribute and checked once (nanoGPT-style).

Every method (LOCUS and each baseline) declares its parameters as a subclass of :class:`MethodParams`, one
field per parameter with :func:`param`: the annotation is its type, then its default, a one-line doc and its
allowed values, each written once::

    @dataclass(frozen=True)
    class KNNRouterParams(MethodParams):
        method = "knn_router"
        k: int = param(0, "> 0: use this k, no tuning; 0 = tune on k_grid", at_least=0)

- :meth:`MethodParams.from_dict` is the one way in from user input (``locus train --params``, a config's
  ``methods.<name>.params``, a checkpoint's ``config.json``): an unknown name, a value of the wrong type or
  outside its bounds, or a bad combination (:meth:`MethodParams.check_together`) is a one-line
  :class:`~locus.errors.ConfigError` ``method 'NAME': PARAM must be ALLOWED, got VALUE (DOC)``;
- the object is frozen: training reads ``p.enc_lr``, never ``p["enc_lr"]``, so a misspelt name fails at once;
  :meth:`MethodParams.replace` gives a changed copy, checked again;
- :meth:`MethodParams.as_dict` is what ``config.json`` and ``metrics.json`` record (values as given: an int
  given for a float stays an int; a list parameter is stored as a tuple and recorded as a list);
- :meth:`MethodParams.specs` gives each parameter as a :class:`locus.data.validation.Param` (type, default,
  bounds, doc), the same declaration the data sources use, e.g. for generated bad-input tests.

Types: ``int`` (never a bool), ``float`` (a finite number; an int is accepted), ``bool``, ``str`` (one of
``choices``), ``tuple[int, ...]`` / ``tuple[float, ...]`` (a non-empty list of such numbers).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from locus.data.validation import Param
from locus.errors import ConfigError

# annotation of a field -> the type of its Param (locus.data.validation.PARAM_TYPES)
TYPES = {
    "int": "int",
    "float": "float",
    "bool": "bool",
    "str": "str",
    "tuple[int, ...]": "int_list",
    "tuple[float, ...]": "float_list",
}
BOUNDS = ("at_least", "above", "at_most", "below", "choices")


def param(default, doc: str, *, at_least=None, above=None, at_most=None, below=None, choices=None) -> Any:
    """A parameter field: its default, one-line doc and allowed values (bounds inclusive unless named
    above/below; for a list, of each item). A list default is stored as a tuple (fields are immutable)."""
    if isinstance(default, list):
        default = tuple(default)
    bounds = {"at_least": at_least, "above": above, "at_most": at_most, "below": below, "choices": choices}
    return field(default=default, metadata={"doc": doc, **bounds})


def redefault(base: type[MethodParams], name: str, default) -> Any:
    """Field `name` of `base` with another default, its doc and allowed values kept (a variant's own default)."""
    return field(default=default, metadata=base.__dataclass_fields__[name].metadata)


def _type_name(f: dataclasses.Field) -> str:
    name = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
    if name not in TYPES:
        raise TypeError(f"parameter {f.name!r}: annotation {name!r} is not one of {sorted(TYPES)}")
    return TYPES[name]


def _plain(value):
    """A value as JSON records it: tuples as lists."""
    return list(value) if isinstance(value, tuple) else value


_SPECS: dict[type, dict[str, Param]] = {}


@dataclass(frozen=True)
class MethodParams:
    """Base of every method's parameters (a frozen dataclass; subclasses add the fields and set `method`)."""

    method: ClassVar[str] = ""  # the method's registry name, in messages: "method 'locus': ..."

    def __post_init__(self):
        specs = self.specs()
        for name, spec in specs.items():
            value = getattr(self, name)
            spec.check(self.owner(), name, value)
            if isinstance(value, list):
                object.__setattr__(self, name, tuple(value))
        self.check_together()

    # -- checks ---------------------------------------------------------------------------------
    def check_together(self) -> None:
        """Checks across parameters (each value already has its type and range): :meth:`refuse` when they clash."""

    @classmethod
    def owner(cls) -> str:
        return f"method {cls.method!r}"

    def refuse(self, name: str, allowed: str) -> None:
        """:class:`ConfigError` ``method 'NAME': PARAM must be ALLOWED, got VALUE``."""
        raise ConfigError(f"{self.owner()}: {name} must be {allowed}, got {getattr(self, name)!r}")

    # -- construction ---------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, params: Mapping[str, Any] | None = None):
        """The parameters from user input: :meth:`preset` of `params`, then `params` over it, every name and
        value checked (the one check, before any work)."""
        if params is not None and not isinstance(params, Mapping):
            raise ConfigError(f"{cls.owner()}: parameters must be a mapping of names to values, got {params!r}")
        params = dict(params or {})
        cls._refuse_unknown(params)
        return cls(**{**cls.preset(params), **params})

    @classmethod
    def preset(cls, params: dict) -> dict:
        """Values applied under the user's own ones (none here; LOCUS: its recipe's)."""
        return {}

    def replace(self, **changes):
        """A copy with `changes` over these values (checked; no preset applied)."""
        self._refuse_unknown(changes)
        return dataclasses.replace(self, **changes)

    @classmethod
    def _refuse_unknown(cls, params: Mapping) -> None:
        names = cls.names()
        unknown = sorted(set(params) - set(names))
        if unknown:
            raise ConfigError(f"{cls.owner()}: unknown parameter(s) {unknown}; known: {sorted(names)}")

    # -- reading --------------------------------------------------------------------------------
    def as_dict(self) -> dict[str, Any]:
        """Every parameter by name, in declaration order, as JSON records it (values as given, lists as lists)."""
        return {name: _plain(getattr(self, name)) for name in self.names()}

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def specs(cls) -> dict[str, Param]:
        """Each parameter as a :class:`~locus.data.validation.Param` (type, default, bounds, doc), by name."""
        if cls not in _SPECS:
            _SPECS[cls] = {
                f.name: Param(_plain(f.default), f.metadata["doc"], _type_name(f), **{k: f.metadata[k] for k in BOUNDS})
                for f in dataclasses.fields(cls)
            }
        return _SPECS[cls]
