"""The bundled real crowd datasets (``datasets/`` of the project; inside the package in a wheel):
answers as crowd-kit expects them and the truth, for the Python API.

    >>> from pyvw_lite import datasets
    >>> answers, truth = datasets.load("act_CF")
    >>> len(answers["task"]), len(truth)
    (1720, 300)
"""
from __future__ import annotations

from pathlib import Path

import numpy as np


def _roots() -> list[Path]:
    package = Path(__file__).resolve().parent
    return [package / "_datasets", package.parent / "datasets"]


def folder(name: str) -> Path:
    """The folder of a bundled dataset (answers.csv, truth.csv, README.md with its licence)."""
    for root in _roots():
        candidate = root / name
        if (candidate / "answers.csv").exists():
            return candidate
    raise ValueError(f"no bundled dataset {name!r}; available: {', '.join(available())}")


def available() -> list[str]:
    names = set()
    for root in _roots():
        if root.is_dir():
            names.update(path.name for path in root.iterdir() if (path / "answers.csv").exists())
    return sorted(names)


def load(name: str, as_frame: bool | None = None):
    """(answers, truth): a DataFrame with task, worker, label and a Series task -> label when
    pandas is installed (or ``as_frame=True``), else a dict of arrays and a dict.  Ids and labels
    are text, as in the files."""
    from .io.crowd_input import read_columns
    where = folder(name)
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
