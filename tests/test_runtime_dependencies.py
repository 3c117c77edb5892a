"""The README's install (`bash install.sh`, no extras) runs `locus serve` end to end: a run is encoded and served in
a process that can import only what the runtime dependencies bring, and one chat completion is routed through it
by the `openai` SDK. (`tests/test_lint.py::test_declared_dependencies` checks the imports statically with deptry.)

The process gets an import hook that refuses every module whose distributions are outside the closure of locus's
runtime requirements (markers and extras evaluated as pip does): what an install without extras would lack."""

import json
import os
import re
import subprocess
import sys
import time
from importlib import metadata

import numpy as np
import pytest

torch = pytest.importorskip("torch")
httpx = pytest.importorskip("httpx")
openai = pytest.importorskip("openai")
from packaging.requirements import Requirement  # noqa: E402
from test_embed_route import write_tiny_dataset  # noqa: E402
from test_serve_proxy import backend, closed_port  # noqa: E402,F401

from locus.runs import execute  # noqa: E402

BLOCKER = """
import sys
blocked = frozenset(sys.argv[1].split(","))
class NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in blocked:
            raise ModuleNotFoundError(f"No module named {name!r} (not installed without extras)", name=name)
        return None
sys.meta_path.insert(0, NotInstalled())
sys.argv = ["locus", *sys.argv[2:]]
from locus.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _name(dist: str) -> str:
    return re.sub(r"[-_.]+", "-", dist).lower()


def runtime_closure(root: str = "locus") -> set[str]:
    """Normalised names of the distributions a plain `pip install locus` brings (locus included)."""
    seen, todo = set(), [(root, frozenset())]
    while todo:
        dist, extras = todo.pop()
        key = (_name(dist), extras)
        if key in seen:
            continue
        seen.add(key)
        try:
            requirements = metadata.requires(dist) or []
        except metadata.PackageNotFoundError:
            continue  # a marker-selected requirement not installed here: not importable anyway
        for text in requirements:
            req = Requirement(text)
            wanted = [""] + sorted(extras)
            if req.marker is None or any(req.marker.evaluate({"extra": e}) for e in wanted):
                todo.append((req.name, frozenset(req.extras)))
    return {name for name, _ in seen}


def blocked_modules() -> list[str]:
    allowed = runtime_closure()
    blocked = set()
    for module, dists in metadata.packages_distributions().items():
        if module.isidentifier() and not any(_name(d) in allowed for d in dists):
            blocked.add(module)
    return sorted(blocked)


def test_the_closure_is_what_pip_installs():
    allowed = runtime_closure()
    assert {"locus", "torch", "fastapi", "httpx", "uvicorn", "uvloop", "httptools"} <= allowed  # uvicorn[standard]
    blocked = blocked_modules()
    assert {"openai", "pytest", "playwright", "deptry"} <= set(blocked)
    assert "httpx" not in blocked and "fastapi" not in blocked


def test_an_install_without_extras_serves_a_chat_completion(tmp_path, backend):  # noqa: F811
    n_m = 3
    prompts = [f"What is {i} plus {i + 1}?" for i in range(40)]
    write_tiny_dataset(tmp_path / "data", prompts, n_m, (24, 8, 8), np.random.default_rng(0))
    blocked = ",".join(blocked_modules())
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}

    def locus(*args, **kw):
        return [sys.executable, "-c", BLOCKER, blocked, *args]

    enc = tmp_path / "enc.parquet"
    done = subprocess.run(
        locus("encode", "--data", str(tmp_path / "data"), "--encoder", "all-MiniLM-L6-v2", "--out", str(enc)),
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    params = {"dim": 8, "heads": 2, "layers": 1, "latents": 4, "decoder_hidden": 8, "max_steps": 5, "eval_every": 5}
    execute(
        "locus",
        {**params, "model_batch": 3, "max_tokens": 16, "threads": 1},
        tmp_path / "data",
        enc,
        16,
        0,
        tmp_path / "run",
    )
    backends = tmp_path / "backends.json"
    backends.write_text(
        json.dumps({f"org/model-{i}": {"base_url": f"{backend.url}/m{i}/v1", "model": "m"} for i in range(n_m)})
    )
    port = closed_port()
    proc = subprocess.Popen(
        locus("serve", "--run", str(tmp_path / "run"), "--port", str(port), "--backends", str(backends)),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="none", max_retries=0)
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, proc.stdout.read()
            try:
                httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).raise_for_status()
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "locus serve did not answer"
                time.sleep(0.2)
        messages = [{"role": "user", "content": "What is 2 plus 3?"}]
        raw = client.chat.completions.with_raw_response.create(model="locus-auto", messages=messages)
        assert raw.status_code == 200
        chosen = raw.headers["x-locus-model"]
        assert raw.parse().choices[0].message.content == f"hello from m{chosen[-1]}"
        assert [m.id for m in client.models.list().data] == ["locus-auto"] + [f"org/model-{i}" for i in range(n_m)]
    finally:
        client.close()
        proc.terminate()
        out, _ = proc.communicate(timeout=60)
    assert "not installed without extras" not in out and "Traceback" not in out, out
