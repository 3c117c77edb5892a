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
_SCAN_ELEMENTS = 1_000_000  # values per array held at once by ece_resampled (8 MB)
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
    resample of queries), bins equal in weight: one value per row (NaN for a row of zero weight).

    Per row: the bins are cut where the cumulative weight at the pairs' midpoints (``2 * cum - w``, which
    never decreases) crosses multiples of ``2 * total / bins`` (:func:`_bin_of_sorted`'s rule), and each
    bin's gap sum(w * (p - y)) is a difference of one cumulative sum, so a row costs a few passes."""
    p, y = _pairs(probs, correct)
    bins = _check_bins(bins)
    w = np.atleast_2d(np.asarray(weights, dtype=np.float64))
    if w.ndim != 2 or w.shape[1] != p.size:
        raise ValueError(f"weights must be [k x {p.size}] for {p.size} pairs, got {w.shape}")
    order = np.argsort(p, kind="stable")
    w = w[:, order]
    gap = np.zeros((len(w), p.size + 1))
    np.cumsum(w * (p - y)[order], axis=1, out=gap[:, 1:])
    mid2 = np.cumsum(w, axis=1)
    total = mid2[:, -1].copy() if p.size else np.zeros(len(w))
    mid2 *= 2
    mid2 -= w
    steps = np.arange(bins + 1) * 2.0 / bins
    out = np.full(len(w), math.nan)
    for r in np.nonzero(total > 0)[0]:
        edges = np.searchsorted(mid2[r], steps * total[r], side="left")
        edges[-1] = p.size  # zero-weight pairs past the last midpoint: the last bin (they add nothing)
        out[r] = np.abs(np.diff(gap[r, edges])).sum() / total[r]
    return out


def ece_resampled(probs, correct, groups, counts, bins: int = BINS, block: int | None = None) -> np.ndarray:
    """``ece_weighted(probs, correct, counts[:, groups], bins)`` for `counts` [k x groups] (each group's
    multiplicity in k resamples; `groups`: the group index 0.. of every pair, e.g. its query) without the
    k x pairs weights: the pairs in ascending probability are cut into blocks of `block` (default
    sqrt(pairs)); each resample's cumulative weight and gap at every block start is one matrix product
    with the groups' per-block counts, and only the block holding each bin edge is scanned pair by pair."""
    p, y = _pairs(probs, correct)
    bins = _check_bins(bins)
    g = np.asarray(groups).reshape(-1)
    counts = np.atleast_2d(np.asarray(counts, dtype=np.float64))
    if g.shape != p.shape or (g.size and (g.min() < 0 or g.max() >= counts.shape[1])):
        raise ValueError(f"groups must give each of the {p.size} pairs an index below {counts.shape[1]}")
    n = p.size
    out = np.full(len(counts), math.nan)
    if n == 0:
        return out
    order = np.argsort(p, kind="stable")
    gs, ds = g[order].astype(np.int64), (p - y)[order]
    k = int(block) if block else max(1, math.isqrt(n))
    nb = -(-n // k)
    starts_w = np.zeros((nb + 1, counts.shape[1]))  # [block start x group]: the group's pairs before it
    starts_d = np.zeros((nb + 1, counts.shape[1]))  # ... and the sum of their p - y
    np.add.at(starts_w, (np.arange(n) // k + 1, gs), 1.0)
    np.add.at(starts_d, (np.arange(n) // k + 1, gs), ds)
    starts_w, starts_d = np.cumsum(starts_w, axis=0), np.cumsum(starts_d, axis=0)
    pad = (nb + 1) * k - n  # one block of zero-weight pairs past the end: every scan stays in range
    gs = np.concatenate([gs, np.zeros(pad, dtype=np.int64)])
    ds = np.concatenate([ds, np.zeros(pad)])
    real = np.concatenate([np.ones(n), np.zeros(pad)])
    steps = np.arange(1, bins) * 2.0 / bins
    scan = np.arange(k + 1)  # the block holding an edge and the next block's first pair
    rows_at_once = max(1, _SCAN_ELEMENTS // max(1, (bins - 1) * (k + 1), nb + 1))
    for lo in range(0, len(counts), rows_at_once):
        c = counts[lo : lo + rows_at_once]
        w_at, d_at = c @ starts_w.T, c @ starts_d.T  # [rows x block starts]
        total = w_at[:, -1]
        edge_gap = np.zeros((len(c), bins + 1))
        edge_gap[:, -1] = d_at[:, -1]
        if bins > 1:
            t = steps[None, :] * total[:, None]  # edges on the midpoint scale 2 * cum - w
            # the last block starting below each edge: the edge's pair is in it or is the next block's first
            b = np.stack([np.searchsorted(2 * w_at[r], t[r], side="left") - 1 for r in range(len(c))])
            b = np.clip(b, 0, nb - 1)
            idx = b[..., None] * k + scan  # [rows x edges x k + 1] pair positions
            w = np.take_along_axis(c, gs[idx].reshape(len(c), -1), axis=1).reshape(idx.shape) * real[idx]
            before = np.cumsum(w, axis=-1) - w  # weight of the scanned pairs before each one
            base = np.take_along_axis(w_at, b, axis=1)[..., None]
            first = np.argmax(2 * (base + before) + w >= t[..., None], axis=-1)[..., None]
            gap_before = np.cumsum(w * ds[idx], axis=-1) - w * ds[idx]
            edge_gap[:, 1:-1] = np.take_along_axis(d_at, b, axis=1) + np.take_along_axis(gap_before, first, -1)[..., 0]
        with np.errstate(invalid="ignore", divide="ignore"):
            out[lo : lo + len(c)] = np.where(total > 0, np.abs(np.diff(edge_gap, axis=1)).sum(axis=1) / total, math.nan)
    return out


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
