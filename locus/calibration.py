"""Calibrated correctness probabilities: a map from a run's logits to P(correct), fitted on validation only.

- :class:`Calibration`: ``identity`` (sigmoid of the logit), ``temperature`` (sigmoid(logit / T + bias)) or
  ``isotonic`` (a monotone step-linear map on the logit scale, knots applied by ``np.interp``, clipped to
  [EPS, 1 - EPS]); :meth:`Calibration.probabilities` applies it to logits of any shape.
- :func:`fit`: fits temperature scaling (log-loss, L-BFGS) and isotonic regression on validation pairs and
  keeps the candidate (identity included) with the lowest K-fold cross-validated log-loss (folds seeded,
  over queries when `groups` are given): an isotonic map judged on its own fitting pairs would always win.
  The chosen kind is then refitted on all pairs.
- Metrics: :func:`ece` (equal-mass bins), :func:`brier`, :func:`log_loss`, :func:`reliability`.
- :func:`save` / :func:`load`: one JSON file (atomic) holding the map, the fit report, the identity of the
  run it belongs to and the SHA-256 of those three; :func:`load` refuses a file of another run, an edited
  one, bad JSON or non-finite values (the run directory's ``calibration.json``: see
  :func:`locus.run_artifacts.read_calibration`).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from locus.atomic import write_text
from locus.errors import DataError

KINDS = ("identity", "temperature", "isotonic")
EPS = 1e-6  # probabilities are kept in [EPS, 1 - EPS] where a log is taken or a step map could reach 0 / 1
BINS = 15
CV_FOLDS = 5
CV_SEED = 0
FORMAT = "locus-calibration"
VERSION = 1
MIN_PAIRS = 2 * CV_FOLDS  # fewer validation pairs (or a single class): the identity map is kept


def sigmoid(x: np.ndarray) -> np.ndarray:
    out = np.empty_like(x)
    pos = x >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-x[pos]))
    ex = np.exp(x[~pos])
    out[~pos] = ex / (1.0 + ex)
    return out


@dataclass(frozen=True)
class Calibration:
    """A logit -> probability map. ``temperature``: T > 0 and `bias`; ``isotonic``: `knots_x` (logits,
    non-decreasing) and `knots_y` (probabilities in [0, 1], non-decreasing), at least one knot."""

    kind: str = "identity"
    temperature: float = 1.0
    bias: float = 0.0
    knots_x: tuple[float, ...] = ()
    knots_y: tuple[float, ...] = ()

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"calibration kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if not (math.isfinite(self.temperature) and self.temperature > 0 and math.isfinite(self.bias)):
            raise ValueError(f"temperature must be finite and > 0 and bias finite, got {self.temperature}, {self.bias}")
        x, y = np.asarray(self.knots_x, dtype=np.float64), np.asarray(self.knots_y, dtype=np.float64)
        if x.shape != y.shape or x.ndim != 1:
            raise ValueError(f"isotonic knots: {x.size} logits but {y.size} probabilities")
        if self.kind == "isotonic" and x.size == 0:
            raise ValueError("an isotonic calibration needs at least one knot")
        if not (np.isfinite(x).all() and np.isfinite(y).all()):
            raise ValueError("isotonic knots must be finite")
        if (np.diff(x) < 0).any() or (np.diff(y) < 0).any() or ((y < 0) | (y > 1)).any():
            raise ValueError("isotonic knots must be non-decreasing, with probabilities in [0, 1]")

    def probabilities(self, logits) -> np.ndarray:
        """P(correct) for `logits` (any shape), float64 in [0, 1]."""
        x = np.asarray(logits, dtype=np.float64)
        if self.kind == "isotonic":
            return np.clip(np.interp(x, self.knots_x, self.knots_y), EPS, 1 - EPS)
        if self.kind == "temperature":
            x = x / self.temperature + self.bias
        return sigmoid(x.reshape(-1)).reshape(x.shape)

    def to_dict(self) -> dict:
        out = {"kind": self.kind}
        if self.kind == "temperature":
            out |= {"temperature": float(self.temperature), "bias": float(self.bias)}
        if self.kind == "isotonic":
            out |= {"knots_x": [float(v) for v in self.knots_x], "knots_y": [float(v) for v in self.knots_y]}
        return out

    @classmethod
    def from_dict(cls, d: dict) -> Calibration:
        if not isinstance(d, dict) or set(d) - {"kind", "temperature", "bias", "knots_x", "knots_y"}:
            raise ValueError("the map must be an object with kind and its parameters only")
        return cls(
            kind=d.get("kind"),
            temperature=float(d.get("temperature", 1.0)),
            bias=float(d.get("bias", 0.0)),
            knots_x=tuple(float(v) for v in d.get("knots_x", ())),
            knots_y=tuple(float(v) for v in d.get("knots_y", ())),
        )


# ----------------------------------------------------------------------------------------------
# metrics
# ----------------------------------------------------------------------------------------------
def _pairs(probs, correct) -> tuple[np.ndarray, np.ndarray]:
    p = np.asarray(probs, dtype=np.float64).reshape(-1)
    y = np.asarray(correct, dtype=np.float64).reshape(-1)
    if p.shape != y.shape:
        raise ValueError(f"{p.size} probabilities but {y.size} correctness values")
    if not (np.isfinite(p).all() and ((p >= 0) & (p <= 1)).all()):
        raise ValueError("probabilities must be finite and in [0, 1]")
    if not np.isin(y, (0.0, 1.0)).all():
        raise ValueError("correctness values must be 0 or 1")
    return p, y


def log_loss(probs, correct) -> float:
    """Mean negative log-likelihood (natural log), probabilities clipped to [EPS, 1 - EPS]."""
    p, y = _pairs(probs, correct)
    p = np.clip(p, EPS, 1 - EPS)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log1p(-p))) if p.size else math.nan


def brier(probs, correct) -> float:
    p, y = _pairs(probs, correct)
    return float(np.mean((p - y) ** 2)) if p.size else math.nan


def _bin_of_sorted(w: np.ndarray, bins: int) -> np.ndarray:
    """Equal-mass bins of pairs in ascending probability with weights `w` (rows: weightings, e.g.
    bootstrap resamples): a pair goes to the bin holding the midpoint of its weight on the cumulative
    scale, so unit weights give bins whose sizes differ by at most one. Ties are split by position
    (stable sort): a step map repeating a value still gets equal-mass bins."""
    cum = np.cumsum(w, axis=-1)
    total = cum[..., -1:]
    with np.errstate(invalid="ignore", divide="ignore"):
        b = np.floor((cum - w / 2) / total * bins)
    return np.clip(np.nan_to_num(b), 0, bins - 1).astype(np.int64)


def _check_bins(bins) -> int:
    if int(bins) < 1:
        raise ValueError(f"bins must be >= 1, got {bins}")
    return int(bins)


def reliability(probs, correct, bins: int = BINS) -> pd.DataFrame:
    """Per non-empty equal-mass bin: ``bin`` (0-based, ascending probability), ``mean_prob``,
    ``frac_correct``, ``count``."""
    p, y = _pairs(probs, correct)
    bins = _check_bins(bins)
    order = np.argsort(p, kind="stable")
    b = _bin_of_sorted(np.ones(p.size), bins)
    count = np.bincount(b, minlength=bins)
    keep = count > 0
    with np.errstate(invalid="ignore"):
        mean_p = np.bincount(b, weights=p[order], minlength=bins) / count
        frac = np.bincount(b, weights=y[order], minlength=bins) / count
    frame = pd.DataFrame({"bin": np.arange(bins), "mean_prob": mean_p, "frac_correct": frac, "count": count})
    return frame[keep].reset_index(drop=True)


def ece(probs, correct, bins: int = BINS) -> float:
    """Expected calibration error over `bins` equal-mass bins: sum of |mean_prob - frac_correct| weighted
    by each bin's share of the pairs."""
    p, y = _pairs(probs, correct)
    return float(ece_weighted(p, y, np.ones((1, p.size)), bins)[0]) if p.size else math.nan


def ece_weighted(probs, correct, weights, bins: int = BINS) -> np.ndarray:
    """:func:`ece` under each row of `weights` [k x pairs] (pair multiplicities, e.g. of a bootstrap
    resample of queries), bins equal in weight: one value per row (NaN for a row of zero weight)."""
    p, y = _pairs(probs, correct)
    bins = _check_bins(bins)
    w = np.atleast_2d(np.asarray(weights, dtype=np.float64))
    if w.shape[1] != p.size:
        raise ValueError(f"weights have {w.shape[1]} columns for {p.size} pairs")
    order = np.argsort(p, kind="stable")
    w = w[:, order]
    b = _bin_of_sorted(w, bins) + bins * np.arange(len(w))[:, None]
    gap = np.bincount(b.ravel(), weights=(w * (p - y)[order]).ravel(), minlength=len(w) * bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.abs(gap.reshape(len(w), bins)).sum(axis=1) / w.sum(axis=1)


# ----------------------------------------------------------------------------------------------
# fitting
# ----------------------------------------------------------------------------------------------
def fit_temperature(logits, correct) -> Calibration:
    """sigmoid(logit / T + bias) minimising the log-loss of the pairs (L-BFGS on log(1/T) and bias)."""
    from scipy.optimize import minimize

    x, y = np.asarray(logits, dtype=np.float64), np.asarray(correct, dtype=np.float64)

    def loss(theta):
        a, b = math.exp(theta[0]), theta[1]
        z = a * x + b
        g = sigmoid(z) - y  # d loss / d z
        return float(np.mean(np.logaddexp(0.0, z) - y * z)), np.array([np.mean(g * a * x), np.mean(g)])

    res = minimize(loss, np.zeros(2), jac=True, method="L-BFGS-B", bounds=[(-10.0, 10.0), (-50.0, 50.0)])
    return Calibration("temperature", temperature=float(math.exp(-res.x[0])), bias=float(res.x[1]))


def fit_isotonic(logits, correct) -> Calibration:
    """The isotonic regression of correctness on the logit (clipped beyond the fitted range), as knots."""
    from sklearn.isotonic import IsotonicRegression

    iso = IsotonicRegression(y_min=0.0, y_max=1.0, increasing=True, out_of_bounds="clip")
    iso.fit(np.asarray(logits, dtype=np.float64), np.asarray(correct, dtype=np.float64))
    kx, ky = iso.X_thresholds_.astype(np.float64), np.clip(iso.y_thresholds_.astype(np.float64), 0.0, 1.0)
    return Calibration("isotonic", knots_x=tuple(kx.tolist()), knots_y=tuple(np.maximum.accumulate(ky).tolist()))


_FITTERS = {"identity": lambda x, y: Calibration(), "temperature": fit_temperature, "isotonic": fit_isotonic}


def _folds(n: int, groups, k: int, seed: int) -> np.ndarray:
    """Fold number per pair: groups (queries) are dealt to folds in a seeded random order."""
    rng = np.random.default_rng(seed)
    if groups is None:
        return rng.permutation(n) % k
    _, inverse = np.unique(np.asarray(groups).reshape(-1), return_inverse=True)
    fold_of_group = rng.permutation(inverse.max() + 1) % k
    return fold_of_group[inverse]


def fit(logits, correct, groups=None, folds: int = CV_FOLDS, seed: int = CV_SEED) -> tuple[Calibration, dict]:
    """The calibration of validation pairs (`logits`, `correct` in {0, 1}: 1-d, equal length) and its report.

    Each candidate of :data:`KINDS` is scored by its `folds`-fold cross-validated log-loss (pairs pooled
    over folds; folds over `groups`, e.g. the pairs' query ids, when given; seeded); the best one is refitted
    on all pairs. Report: ``n_pairs``, ``n_groups``, ``positive_rate``, ``folds``, ``seed``, ``cv_log_loss``
    ({kind: value}), ``chosen`` and ``reason``."""
    x = np.asarray(logits, dtype=np.float64)
    y = np.asarray(correct, dtype=np.float64)
    if x.ndim != 1 or y.ndim != 1 or x.shape != y.shape:
        raise ValueError(f"logits {x.shape} and correct {y.shape} must be 1-d arrays of one length")
    if not np.isfinite(x).all():
        raise ValueError("logits must be finite")
    _pairs(np.zeros_like(y), y)  # correctness in {0, 1}
    n_groups = int(np.unique(np.asarray(groups).reshape(-1)).size) if groups is not None else int(x.size)
    if groups is not None and np.asarray(groups).reshape(-1).shape != x.shape:
        raise ValueError("groups must give one group per pair")
    report = {
        "n_pairs": int(x.size),
        "n_groups": n_groups,
        "positive_rate": float(y.mean()) if x.size else None,
        "folds": int(folds),
        "seed": int(seed),
        "cv_log_loss": {},
    }
    if x.size < MIN_PAIRS or n_groups < folds or y.min(initial=1) == y.max(initial=0):
        why = "fewer validation pairs or groups than the cross-validation needs, or a single class"
        return Calibration(), report | {"chosen": "identity", "reason": why}
    fold = _folds(x.size, groups, int(folds), int(seed))
    for kind, fitter in _FITTERS.items():
        held_out = np.empty_like(x)
        for f in range(int(folds)):
            test = fold == f
            train = ~test
            if np.unique(y[train]).size < 2:  # a one-class training fold: a map fitted on it is degenerate
                held_out[test] = Calibration().probabilities(x[test])
            else:
                held_out[test] = fitter(x[train], y[train]).probabilities(x[test])
        report["cv_log_loss"][kind] = log_loss(held_out, y)
    chosen = min(KINDS, key=lambda k: (report["cv_log_loss"][k], KINDS.index(k)))  # ties: the simpler map
    report |= {"chosen": chosen, "reason": f"lowest {folds}-fold cross-validated log-loss on validation pairs"}
    return _FITTERS[chosen](x, y), report


# ----------------------------------------------------------------------------------------------
# the file
# ----------------------------------------------------------------------------------------------
def _digest(payload: dict) -> str:
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def save(cal: Calibration, path, run_identity: dict, report: dict | None = None) -> None:
    """Write `cal` with its fit `report` and the `run_identity` it belongs to, atomically, as JSON."""
    payload = {"map": cal.to_dict(), "fit": report or {}, "run": dict(run_identity)}
    doc = {"format": FORMAT, "version": VERSION, **payload, "sha256": _digest(payload)}
    write_text(path, json.dumps(doc, indent=2, sort_keys=True, allow_nan=False) + "\n")


def _reject_constant(name):
    raise ValueError(f"non-finite value {name}")


def load(path, run_identity: dict, run=None) -> Calibration:
    """The map saved at `path` for the run whose identity is `run_identity` (`run`: its directory, for the
    message; default the file's directory). Another run's file, an edited one, bad JSON or non-finite
    values are a DataError naming the file and the fix."""
    path = Path(path)
    fix = f"re-run `locus calibrate --run {run if run is not None else path.parent}`"
    try:
        doc = json.loads(path.read_text(encoding="utf-8"), parse_constant=_reject_constant)
    except FileNotFoundError:
        raise DataError(f"{path}: calibration file not found; {fix}.") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        detail = " ".join(str(exc).split())
        raise DataError(f"{path}: not a readable calibration file ({detail}); {fix}.") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("version") != VERSION:
        raise DataError(f"{path}: not a version-{VERSION} calibration file of `locus calibrate`; {fix}.")
    payload = {k: doc.get(k) for k in ("map", "fit", "run")}
    try:
        same = _digest(payload) == doc.get("sha256")
    except (TypeError, ValueError):
        same = False
    if not same:
        raise DataError(f"{path}: edited or damaged (its SHA-256 does not match its content); {fix}.")
    if payload["run"] != dict(run_identity):
        raise DataError(f"{path}: fitted for another run (its run identity differs from this run's); {fix}.")
    try:
        return Calibration.from_dict(payload["map"])
    except (TypeError, ValueError) as exc:
        raise DataError(f"{path}: invalid calibration map ({exc}); {fix}.") from None
