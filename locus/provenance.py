"""Where a result came from: the machine (CPU model, accelerator, torch) and the code (locus version and,
in a git checkout, the commit). Runs record it in ``metrics.json`` so that every documented number can
name the machine and commit that produced it; CPU results repeat exactly only on the same CPU model."""

from __future__ import annotations

import functools
import platform
import subprocess
from pathlib import Path


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo`` on Linux, else :func:`platform.processor`)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_flags() -> set[str]:
    """The CPU's feature flags (``flags`` on x86, ``Features`` on ARM, from ``/proc/cpuinfo``); empty elsewhere."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key = line.split(":", 1)[0].strip().lower()
                if key in ("flags", "features"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


# bfloat16 arithmetic in hardware: AVX-512 BF16 or AMX on x86, the BF16 extension on ARM; without it torch
# converts in software and a bfloat16 embedding is several times slower than float32
NATIVE_BFLOAT16_FLAGS = frozenset({"avx512_bf16", "amx_bf16", "bf16"})
# Intel AMX: tile matrix units (Sapphire Rapids and later Xeons), bfloat16 and int8 products
AMX_FLAGS = frozenset({"amx_bf16", "amx_tile"})


def native_bfloat16(flags: set[str] | frozenset[str] | None = None) -> bool:
    """Whether this CPU (or one with these `flags`) computes bfloat16 in hardware (:data:`NATIVE_BFLOAT16_FLAGS`)."""
    return bool((cpu_flags() if flags is None else set(flags)) & NATIVE_BFLOAT16_FLAGS)


def has_amx(flags: set[str] | frozenset[str] | None = None) -> bool:
    """Whether this CPU (or one with these `flags`) has AMX tiles for bfloat16 (:data:`AMX_FLAGS`)."""
    return bool((cpu_flags() if flags is None else set(flags)) & AMX_FLAGS)


@functools.cache
def code_version() -> str:
    """The package version, and ``+g<commit>`` (``.dirty`` with uncommitted changes) when the package
    runs from a git checkout; the version alone elsewhere (an installed wheel, no git)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        text = version("locus")
    except PackageNotFoundError:
        text = "unknown"
    root = Path(__file__).resolve().parents[1]
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True, timeout=10
        )
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no", "--", "locus"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return text
    if commit.returncode != 0 or not commit.stdout.strip():
        return text
    return f"{text}+g{commit.stdout.strip()}" + (".dirty" if dirty.returncode == 0 and dirty.stdout.strip() else "")


def machine(device: str = "cpu") -> dict:
    """{cpu, device, torch}: the CPU model, the accelerator's name when `device` is CUDA (else "cpu")
    and torch's version."""
    import torch

    name = "cpu"
    if str(device).startswith("cuda") and torch.cuda.is_available():
        name = torch.cuda.get_device_name(torch.device(device))
    return {"cpu": cpu_model(), "device": name, "torch": torch.__version__}


def record(device: str = "cpu") -> dict:
    """What a run writes under ``provenance`` in its ``metrics.json``."""
    return {"code": code_version(), **machine(device)}
