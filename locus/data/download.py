"""Download the public data files of a source once, resumably, with size / checksum checks.

Every adapter also accepts a local directory holding the same files, for machines without internet access;
when the host is unreachable, the :class:`DataError` says which files to place in which directory.

Design choices:

* plain ``urllib`` (no extra dependency); a short socket timeout so an offline machine fails fast;
* each file is streamed to ``<name>.part`` and renamed into place only after its size (and SHA-256,
  when known) has been checked, so a final path never holds a partial file;
* an interrupted download keeps its ``.part`` file; the next call resumes it with an HTTP ``Range``
  request (a server that ignores ``Range`` answers 200 and the file is fetched from the start);
* a file already present with the expected size (or any size, when none is known) is not fetched again.
"""

from __future__ import annotations

import http.client
import logging
import os
import socket
import urllib.error
import urllib.request
from pathlib import Path
from typing import Mapping, Sequence

import platformdirs

from locus.atomic import sha256_file
from locus.errors import DataError

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 15.0
_CHUNK = 1 << 20
_USER_AGENT = "locus-data-download/1 (+https://github.com/)"

# ---- public sources --------------------------------------------------------------------------
EMBEDLLM_URL = "https://huggingface.co/datasets/RZ412/EmbedLLM/resolve/{revision}/"
# The authors' download script suggests pinning this Hub commit; "main" also works.
EMBEDLLM_REVISION = "70dee14af6101604ce1130cfcf2849daba4b6077"
EMBEDLLM_FILES = ("model_order.csv", "question_order.csv", "train.csv", "val.csv", "test.csv")

LLMROUTER_COMMIT = "4e7a796942ce26e9d5f2b93191c7c2585c99c2e3"
LLMROUTER_URL = f"https://raw.githubusercontent.com/ulab-uiuc/LLMRouter/{LLMROUTER_COMMIT}/"
# local name -> path in the repository
LLMROUTER_FILES = {
    "train.json": "data/dcrouter_preprocessed/train.json",
    "test.json": "data/dcrouter_preprocessed/test.json",
    "query_train.jsonl": "data/example_data/query_data/default_query_train.jsonl",
    "query_test.jsonl": "data/example_data/query_data/default_query_test.jsonl",
}
LLMROUTER_SIZES = {"train.json": 4_018_466, "test.json": 361_757}


def cache_dir(*parts: str) -> Path:
    """``$LOCUS_CACHE_DIR``, else the user cache directory of locus (platformdirs; on Linux
    ``$XDG_CACHE_HOME/locus``, else ``~/.cache/locus``) joined with `parts`."""
    root = os.environ.get("LOCUS_CACHE_DIR") or platformdirs.user_cache_dir("locus", appauthor=False)
    return Path(root).expanduser().joinpath(*parts)


def download_files(
    base_url: str,
    files: Sequence[str] | Mapping[str, str],
    dest_dir: str | Path,
    expected_sizes: Mapping[str, int] | None = None,
    *,
    expected_sha256: Mapping[str, str] | None = None,
    param_hint: str = "the source's `dir` parameter",
    timeout: float = DEFAULT_TIMEOUT_S,
    progress: bool = True,
) -> list[Path]:
    """Fetch ``base_url + path`` for each file into `dest_dir`; return the local paths.

    `files` is a list of paths relative to `base_url` (saved under their base name) or a mapping
    ``local name -> relative path``. `expected_sizes` / `expected_sha256` are keyed by local name.
    `param_hint` names the setting that points the adapter at a local copy (used in error messages).
    """
    mapping = dict(files) if isinstance(files, Mapping) else {Path(f).name: f for f in files}
    sizes = dict(expected_sizes or {})
    hashes = dict(expected_sha256 or {})
    dest_dir = Path(dest_dir).expanduser()
    dest_dir.mkdir(parents=True, exist_ok=True)
    out = []
    for name, rel in mapping.items():
        dest = dest_dir / name
        url = base_url.rstrip("/") + "/" + rel.lstrip("/")
        if dest.is_file():
            _check_existing(dest, sizes.get(name), hashes.get(name))
            log.info("%s: already present, not downloaded again", dest)
        else:
            try:
                _fetch(url, dest, sizes.get(name), hashes.get(name), timeout, progress)
            except _Unreachable as exc:
                raise DataError(_offline_message(base_url, url, exc.reason, mapping, dest_dir, param_hint)) from None
        out.append(dest)
    return out


# ---------------------------------------------------------------------------------------------
class _Unreachable(Exception):
    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def _check_existing(dest: Path, size: int | None, sha: str | None) -> None:
    actual = dest.stat().st_size
    if size is not None and actual != size:
        raise DataError(
            f"{dest}: has {actual:,} bytes but {size:,} are expected (incomplete or a different version). "
            f"Delete it and run the download again, or replace it with the right file."
        )
    if sha is not None and sha256_file(dest) != sha.lower():
        raise DataError(f"{dest}: SHA-256 differs from the expected {sha}; delete it and download it again.")


def _fetch(url: str, dest: Path, size: int | None, sha: str | None, timeout: float, progress: bool) -> None:
    part = dest.with_name(dest.name + ".part")
    offset = part.stat().st_size if part.is_file() else 0
    if size is not None and offset > size:  # a stale partial file from another version
        part.unlink()
        offset = 0
    headers = {"User-Agent": _USER_AGENT}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    request = urllib.request.Request(url, headers=headers)
    try:
        response = urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and offset:  # nothing left to fetch: the .part may already be complete
            total = _total_from_content_range(exc.headers.get("Content-Range")) or size
            if total is not None and offset == total:
                _finish(part, dest, url, total, size, sha)
                return
            part.unlink()
            raise DataError(f"{url}: the server refused to resume {part.name}; it was removed, run again.") from None
        raise DataError(
            f"{url}: HTTP {exc.code} {exc.reason}. Check the URL / revision, or place the file at {dest} by hand."
        ) from None
    except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
        reason = getattr(exc, "reason", exc)
        raise _Unreachable(str(reason)) from None

    with response:
        if response.status == 206 and offset:
            mode = "ab"
            total = _total_from_content_range(response.headers.get("Content-Range"))
        else:  # 200: the server sent the whole file (it ignored Range, or there was no Range)
            mode, offset = "wb", 0
            length = response.headers.get("Content-Length")
            total = int(length) if length is not None else None
        if total is not None and size is not None and total != size:
            raise DataError(
                f"{url}: the server announces {total:,} bytes but {size:,} are expected; the remote file "
                f"changed or the URL is wrong. Place the expected file at {dest} by hand."
            )
        bar = _progress_bar(dest.name, total or size, offset, progress)
        try:
            with open(part, mode) as fh:
                while True:
                    try:
                        chunk = response.read(_CHUNK)
                    except (socket.timeout, OSError, http.client.HTTPException) as exc:
                        fh.flush()
                        raise DataError(
                            f"{url}: download interrupted after {fh.tell():,} bytes ({exc}); the partial file "
                            f"{part} is kept, run the same command again to resume."
                        ) from None
                    if not chunk:
                        break
                    fh.write(chunk)
                    bar.update(len(chunk))
        finally:
            bar.close()
    _finish(part, dest, url, total, size, sha)


def _finish(part: Path, dest: Path, url: str, total: int | None, size: int | None, sha: str | None) -> None:
    """Check the complete .part file and rename it into place (or delete it when it is wrong)."""
    actual = part.stat().st_size
    for want, what in ((total, "announced by the server"), (size, "expected")):
        if want is not None and actual != want:
            if actual > want:
                part.unlink()
                raise DataError(
                    f"{url}: received {actual:,} bytes, more than the {want:,} {what}; "
                    f"the download was removed. Check the URL / revision."
                )
            raise DataError(
                f"{url}: download interrupted: received {actual:,} of the {want:,} bytes {what}; "
                f"the partial file {part} is kept, run the same command again to resume."
            )
    if sha is not None:
        got = sha256_file(part)
        if got != sha.lower():
            part.unlink()
            raise DataError(f"{url}: SHA-256 {got} differs from the expected {sha}; the download was removed.")
    os.replace(part, dest)
    log.info("downloaded %s (%d bytes)", dest, actual)


def _total_from_content_range(value: str | None) -> int | None:
    """``bytes 100-199/200`` or ``bytes */200`` -> 200."""
    if not value or "/" not in value:
        return None
    tail = value.rsplit("/", 1)[1].strip()
    return int(tail) if tail.isdigit() else None


def _progress_bar(name: str, total: int | None, initial: int, enabled: bool):
    from tqdm.auto import tqdm  # only needed when downloading

    # disable=None: tqdm shows the bar only on a terminal
    return tqdm(
        total=total,
        initial=initial,
        unit="B",
        unit_scale=True,
        unit_divisor=1024,
        desc=name,
        disable=None if enabled else True,
        leave=False,
    )


def _offline_message(
    base_url: str, url: str, reason: str, mapping: Mapping[str, str], dest_dir: Path, hint: str
) -> str:
    base = base_url.rstrip("/")
    listed = "\n".join(f"  - {name}  (from {base}/{rel.lstrip('/')})" for name, rel in mapping.items())
    return (
        f"cannot download {url}: {reason}. This machine seems to be offline or the host is unreachable.\n"
        f"On a machine with internet access, download these files and place them in one "
        f"directory, e.g. {dest_dir}:\n{listed}\n"
        f"Then point {hint} at that directory and leave `download` off."
    )
