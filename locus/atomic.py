"""Write files, directories and sets of files atomically: to a temporary sibling first, then rename.

Nothing half-written is ever left at a final path: on any exception the temporary is removed.
Final files and directories get the permissions the user's umask gives (``0o666 & ~umask`` for files,
``0o777 & ~umask`` for directories), not the private ``0600`` / ``0700`` of the temporaries.

A *file set* (:func:`write_file_set`) is a group of files in one directory that belong together,
e.g. the three Parquet files of a canonical data set. Next to them a manifest (JSON) lists every file
with its size and SHA-256; :func:`verify_file_set` refuses a directory whose files do not match their
manifest, so a set interrupted half-way (or mixed with files of another generation) is never read as
valid. The write order makes that hold at every instant: the new manifest is renamed in first, then
the files; until the last rename the old files disagree with the new manifest.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import hashlib
import json
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Mapping


def current_umask() -> int:
    """The process umask, read without changing it where the OS allows (Linux /proc)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)  # fallback: read by setting and restoring (not thread-safe, but brief)
    os.umask(mask)
    return mask


def default_mode(directory: bool = False) -> int:
    """The mode a new file (or directory) gets from open()/mkdir() under the current umask."""
    return (0o777 if directory else 0o666) & ~current_umask()


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path in the same directory; rename it to `path` on success."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp)
    try:
        yield tmp
        os.chmod(tmp, default_mode())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


@contextmanager
def atomic_dir(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a fresh temporary directory; on success it replaces `path` (an old `path` is removed).

    Where the OS can swap two directories in one step (Linux ``renameat2(RENAME_EXCHANGE)``) the old
    directory is exchanged for the new one atomically; elsewhere the old one is moved aside first and
    moved back if the rename fails.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    try:
        yield tmp
        os.chmod(tmp, default_mode(directory=True))
        _replace_dir(tmp, path)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _replace_dir(new: Path, path: Path) -> None:
    """Move directory `new` to `path`; an existing `path` ends up at `new` (the caller removes it)."""
    if not path.exists():
        os.replace(new, path)
        return
    if not path.is_dir() or path.is_symlink():
        raise FileExistsError(f"{path} exists and is not a directory; remove it or choose another path")
    if _exchange(new, path):
        return
    aside = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".old", dir=path.parent))
    os.rmdir(aside)
    os.replace(path, aside)
    try:
        os.replace(new, path)
    except BaseException:
        os.replace(aside, path)
        raise
    os.replace(aside, new)  # so the caller's cleanup removes the old directory


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux renameat2 RENAME_EXCHANGE); False where not supported."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    rc = renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange)
    return rc == 0  # EINVAL / ENOSYS (file system or kernel without it): fall back


def write_text(path: str | os.PathLike, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_json(path: str | os.PathLike, obj) -> None:
    write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=_json_default) + "\n")


def write_parquet(path: str | os.PathLike, df) -> None:
    """Write a pandas DataFrame (index dropped) to Parquet atomically."""
    with atomic_path(path) as tmp:
        df.to_parquet(tmp, index=False)


# ----------------------------------------------------------------------------------------------
# sets of files with a checksum manifest
# ----------------------------------------------------------------------------------------------
class FileSetError(Exception):
    """A file set does not match its manifest (the message says which file and how)."""


def sha256_file(path: str | os.PathLike) -> str:
    """Hex SHA-256 of a file's bytes (the one file-hashing helper of the package)."""
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def write_file_set(
    directory: str | os.PathLike,
    writers: Mapping[str, Callable[[Path], None]],
    manifest: str,
    info: Mapping | None = None,
) -> dict:
    """Write the files ``{name: writer(tmp_path)}`` into `directory` as one set, plus `manifest`.

    All files are first written into a temporary directory beside `directory`. If `directory` does
    not exist yet, that temporary directory is renamed into place in one step. Otherwise the new
    manifest is renamed in first, then each file; other files in `directory` are left alone. On an
    exception nothing is left behind (no temporary, no new empty `directory`). Returns the manifest.
    """
    directory = Path(os.path.abspath(directory))
    if directory.exists() and not directory.is_dir():
        raise FileExistsError(f"{directory} exists and is not a directory; remove it or choose another path")
    new_dir = not directory.exists()
    # stage beside a new directory (renamed into place in one step) or inside an existing one
    # (its parent may not be writable); both are on the same file system as the final paths
    where = directory.parent if new_dir else directory
    where.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{directory.name}.", suffix=".staging", dir=where))
    try:
        for name, writer in writers.items():
            writer(stage / name)
        files = {
            name: {"bytes": (stage / name).stat().st_size, "sha256": sha256_file(stage / name)} for name in writers
        }
        fingerprint = hashlib.sha256("".join(f"{n}:{f['sha256']};" for n, f in sorted(files.items())).encode())
        content = {**dict(info or {}), "files": files, "fingerprint": fingerprint.hexdigest()}
        (stage / manifest).write_text(
            json.dumps(content, indent=2, sort_keys=True, default=_json_default) + "\n", encoding="utf-8"
        )
        for name in [*writers, manifest]:
            os.chmod(stage / name, default_mode())
        if new_dir:
            os.chmod(stage, default_mode(directory=True))
            os.replace(stage, directory)
        else:
            for name in [manifest, *writers]:  # manifest first: old files now disagree with it
                os.replace(stage / name, directory / name)
        return content
    finally:
        if stage.exists():
            shutil.rmtree(stage, ignore_errors=True)


def read_manifest(directory: str | os.PathLike, manifest: str) -> dict | None:
    """The manifest of a file set, or None when there is none; FileSetError when it is unreadable."""
    path = Path(directory) / manifest
    if not path.is_file():
        return None
    try:
        content = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FileSetError(f"{path}: manifest is not readable JSON ({exc})") from None
    if not isinstance(content, dict) or not isinstance(content.get("files"), dict):
        raise FileSetError(f"{path}: manifest has no 'files' table")
    return content


def verify_file_set(directory: str | os.PathLike, manifest: str) -> dict | None:
    """Check every file listed in the manifest (size, then SHA-256); return the manifest (None if absent).

    Raises :class:`FileSetError` naming the first file that is missing or differs.
    """
    directory = Path(directory)
    content = read_manifest(directory, manifest)
    if content is None:
        return None
    for name, want in sorted(content["files"].items()):
        path = directory / name
        if not path.is_file():
            raise FileSetError(f"{name} is listed in {manifest} but missing")
        try:
            size, sha = int(want["bytes"]), str(want["sha256"])
        except (KeyError, TypeError, ValueError):
            raise FileSetError(f"{manifest}: entry of {name} lacks 'bytes' / 'sha256'") from None
        if path.stat().st_size != size or sha256_file(path) != sha:
            raise FileSetError(
                f"{name} differs from the version recorded in {manifest} (it comes from another write of the data set)"
            )
    return content


def _json_default(value):
    # numpy scalars and arrays
    if hasattr(value, "item") and getattr(value, "shape", None) == ():
        return value.item()
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")
