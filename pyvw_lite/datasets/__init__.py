"""Real crowd and rating sets: the bundled ones (``datasets/`` of the project; inside the package
in a wheel) and the registered ones, fetched on first use from their public source, converted,
checked against the SHA-256 the registry records, and cached.

    >>> from pyvw_lite import datasets
    >>> answers, truth = datasets.load("act_CF")
    >>> len(answers["task"]), len(truth)
    (1720, 300)

``fetch(name)`` returns the set's folder; ``load(name)`` reads it: ``(answers, truth)`` for a
crowd set, ``(train, test)`` paths of VW files for a ratings set.  Registered sets are cached in
``$PYVW_LITE_DATA_HOME``, else ``$XDG_CACHE_HOME/pyvw-lite/datasets``, else
``~/.cache/pyvw-lite/datasets``.  Where ``$PYVW_LITE_DATASETS_MIRROR`` names a folder laid out as
``crowd/NAME/answers.csv``, ``crowd/NAME/truth.csv`` and ``ratings/NAME.train.vw``,
``ratings/NAME.test.vw``, the files are copied from there instead of downloaded (and checked
the same way).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

MIRROR_VARIABLE = "PYVW_LITE_DATASETS_MIRROR"
HOME_VARIABLE = "PYVW_LITE_DATA_HOME"
DOWNLOAD_LIMIT = 64 << 20  # bytes per source file: the largest registered source is 10 MB


class DatasetError(ValueError):
    """A set that cannot be had: an unknown name, a failed download, a file whose SHA-256 is
    not the registry's, or a source that does not convert."""


def _roots() -> list[Path]:
    package = Path(__file__).resolve().parent.parent
    return [package / "_datasets", package.parent / "datasets"]


def bundled() -> list[str]:
    """The sets shipped with the package."""
    names = set()
    for root in _roots():
        if root.is_dir():
            names.update(path.name for path in root.iterdir() if (path / "answers.csv").exists())
    return sorted(names)


def registry() -> dict[str, dict]:
    """The registered sets by name: source repository, commit, paths, URLs, licence as stated,
    how they convert, and the SHA-256 and size of each converted file."""
    with open(Path(__file__).resolve().parent / "registry.json", encoding="utf-8") as handle:
        entries = json.load(handle)
    return {entry["name"]: entry for entry in entries}


def available() -> list[str]:
    """Every name ``load`` and ``fetch`` accept: the bundled sets and the registered ones."""
    return sorted(set(bundled()) | set(registry()))


def cache_home() -> Path:
    """Where fetched sets are kept."""
    if os.environ.get(HOME_VARIABLE):
        return Path(os.environ[HOME_VARIABLE]).expanduser()
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]).expanduser() / "pyvw-lite" / "datasets"
    return Path.home() / ".cache" / "pyvw-lite" / "datasets"


def _unknown(name: str) -> DatasetError:
    return DatasetError(f"no dataset {name!r}; available: {', '.join(available())}")


def folder(name: str) -> Path:
    """The folder of a bundled set (answers.csv, truth.csv, README.md with its licence), or of
    a registered set already in the cache; ``fetch`` gets a registered set first."""
    for root in _roots():
        candidate = root / name
        if (candidate / "answers.csv").exists():
            return candidate
    entries = registry()
    if name in entries and is_cached(entries[name]):
        return cache_home() / name
    if name in entries:
        raise DatasetError(f"{name} is not fetched yet: pyvw_lite.datasets.fetch({name!r}) or "
                           f"`pyvw-lite datasets fetch {name}`")
    raise _unknown(name)


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def is_cached(entry: dict) -> bool:
    where = cache_home() / entry["name"]
    return all((where / file).is_file() for file in entry["files"])


def fetch(name: str) -> Path:
    """The folder of the set ``name``: bundled, cached, copied from the mirror or downloaded and
    converted.  Every file of a registered set is checked against the registry's SHA-256 before
    the folder appears in the cache (it appears whole or not at all)."""
    if name in bundled():
        return folder(name)
    entries = registry()
    if name not in entries:
        raise _unknown(name)
    entry = entries[name]
    target = cache_home() / name
    if is_cached(entry):
        _check(entry, target, "the cached copy", f"remove {target} to fetch it again")
        return target
    mirror = os.environ.get(MIRROR_VARIABLE)
    if mirror:
        files = {file: Path(mirror).expanduser() / where
                 for file, where in mirror_paths(entry).items()}
        missing = [str(path) for path in files.values() if not path.is_file()]
        if missing:
            raise DatasetError(f"{name}: {MIRROR_VARIABLE} names {mirror}, which lacks "
                               f"{missing[0]}")
        origin = f"the mirror {mirror}"
        produce = lambda staging: _copy(files, staging)  # noqa: E731
    else:
        origin = "the converted download"
        produce = lambda staging: _download_and_convert(entry, staging)  # noqa: E731
    return _publish(entry, target, produce, origin)


def mirror_paths(entry: dict) -> dict[str, str]:
    """Where each file of a set is in a mirror (relative to it)."""
    if entry["kind"] == "ratings":
        return {file: f"ratings/{file}" for file in entry["files"]}
    return {file: f"crowd/{entry['name']}/{file}" for file in entry["files"]}


def _copy(files: dict[str, Path], staging: Path) -> None:
    for file, source in files.items():
        shutil.copyfile(source, staging / file)


def _download_and_convert(entry: dict, staging: Path) -> None:
    from . import convert  # noqa: PLC0415 (only a download converts)
    settings = entry.get("convert")
    if not settings:
        raise DatasetError(f"{entry['name']}: no converter for its source yet "
                           f"({entry.get('convert_note', 'not written')}); set "
                           f"{MIRROR_VARIABLE} to a folder that holds the converted files")
    sources = {path: _download(url) for path, url in zip(entry["paths"], entry["urls"])}
    try:
        converted = convert.CONVERTERS[settings["format"]](sources, settings)
    except convert.SourceError as exc:
        raise DatasetError(f"{entry['name']}: {exc}") from None
    for file, data in converted.items():
        (staging / file).write_bytes(data)


def _download(url: str) -> bytes:
    import urllib.error  # noqa: PLC0415
    import urllib.request  # noqa: PLC0415
    if not url.startswith("https://"):
        raise DatasetError(f"refusing to download {url}: not https")
    try:
        with urllib.request.urlopen(url, timeout=60) as response:  # noqa: S310 (https only)
            data = response.read(DOWNLOAD_LIMIT + 1)
    except (urllib.error.URLError, OSError) as exc:
        raise DatasetError(f"cannot download {url}: {getattr(exc, 'reason', exc)}; set "
                           f"{MIRROR_VARIABLE} to a local copy to work offline") from None
    if len(data) > DOWNLOAD_LIMIT:
        raise DatasetError(f"{url}: larger than {DOWNLOAD_LIMIT >> 20} MB, refused")
    return data


def _check(entry: dict, where: Path, origin: str, remedy: str = "nothing was cached") -> None:
    for file, expected in entry["files"].items():
        found = sha256_of(where / file)
        if found != expected["sha256"]:
            raise DatasetError(f"{entry['name']}: {file} from {origin} has SHA-256 "
                               f"{found[:16]}..., the registry records "
                               f"{expected['sha256'][:16]}...; {remedy}")


def _publish(entry: dict, target: Path, produce, origin: str) -> Path:
    """Write the files into a staging folder beside ``target``, check them, rename it onto
    ``target``; on any failure the staging folder goes and ``target`` is untouched."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{entry['name']}.", dir=target.parent))
    umask = os.umask(0o022)
    os.umask(umask)
    os.chmod(staging, 0o777 & ~umask)  # mkdtemp's 0700 would hide the set from other users
    try:
        produce(staging)
        _check(entry, staging, origin)
        try:
            os.rename(staging, target)
        except OSError:
            if not is_cached(entry):  # not a concurrent fetch that got there first
                shutil.rmtree(target, ignore_errors=True)
                os.rename(staging, target)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return target


def load(name: str, as_frame: bool | None = None):
    """A crowd set: ``(answers, truth)``, a DataFrame with task, worker, label and a Series
    task -> label when pandas is installed (or ``as_frame=True``), else a dict of arrays and a
    dict; ids and labels are text, as in the files.  A ratings set: ``(train, test)``, the
    paths of its VW files (``RATING |u USER |m ITEM`` per line)."""
    where = fetch(name)
    entry = registry().get(name)
    if entry is not None and entry["kind"] == "ratings":
        return where / f"{name}.train.vw", where / f"{name}.test.vw"
    from ..io.crowd_input import read_columns
    answers = read_columns(str(where / "answers.csv"), ("task", "worker", "label"))
    truth = read_columns(str(where / "truth.csv"), ("task", "label"))
    columns = {key: np.asarray(column.values, dtype=object)[column.codes].astype(str)
               for key, column in answers.items()}
    known = dict(zip(truth["task"].values[truth["task"].codes].astype(str).tolist(),
                     truth["label"].values[truth["label"].codes].astype(str).tolist()))
    if as_frame is None:
        try:
            import pandas  # noqa: F401
            as_frame = True
        except ImportError:
            as_frame = False
    if not as_frame:
        return columns, known
    import pandas as pd
    series = pd.Series(known, name="label")
    series.index.name = "task"
    return pd.DataFrame(columns), series
