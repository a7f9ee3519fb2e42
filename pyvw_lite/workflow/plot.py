"""``pyvw-lite plot``: the progressive loss curve of one or more runs, from their progress tables.

A run's progress table is the text VW (and pyvw-lite) print on stderr: a header line starting
``average  since``, then one row per report, ``average loss``, ``since last``, ``example
counter``, ``example weight``, label, prediction, features, and `` h`` at the end of a holdout
row.  Save it with ``2> run.txt``; every table in the file is read (a file may hold several
passes' rows, holdout rows among them).
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

from ..io.atomic import atomic_write
from ..io.plotting import plain_text


@dataclass
class Curve:
    name: str
    examples: list[float] = field(default_factory=list)  # example weight at each report
    average: list[float] = field(default_factory=list)
    since: list[float] = field(default_factory=list)
    holdout: list[bool] = field(default_factory=list)


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:  # "n.a.", "unknown"
        return math.nan


def read_progress(path: str, text: str | None = None) -> Curve:
    """The rows of every progress table in ``path`` (or in ``text``, named ``path``)."""
    if text is None:
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    curve = Curve(os.path.basename(path))
    in_table = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("average  since"):
            in_table = True
            continue
        if not in_table or line.startswith("loss     last"):
            continue
        fields = line.split()
        if not fields or line.startswith("finished run"):
            in_table = False
            continue
        holdout = fields[-1] == "h"  # a holdout row ends in " h"
        if holdout:
            fields = fields[:-1]
        if len(fields) < 4:
            continue  # a line printed between rows (a warning): not a row
        average, since, weight = _number(fields[0]), _number(fields[1]), _number(fields[3])
        if math.isnan(weight):
            raise ValueError(f"{path}:{number}: not a progress row: {line.strip()!r}")
        curve.examples.append(weight)
        curve.average.append(average)
        curve.since.append(since)
        curve.holdout.append(holdout)
    if not curve.examples:
        raise ValueError(f"{path}: no progress table (run without --quiet and save its stderr, "
                         "e.g. 2> run.txt)")
    return curve


def plot_progress(curves: list[Curve], path: str, since: bool = False,
                  title: str | None = None) -> str:
    """Average loss (and with ``since``, the loss since the last report) against the examples
    seen, log-scaled, one line per run; holdout rows are marked.  Written atomically."""
    try:
        import matplotlib
    except ImportError:
        raise ValueError("plotting needs matplotlib: pip install 'pyvw-lite[plot]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    figure, axes = plt.subplots(figsize=(7, 4.2))
    for index, curve in enumerate(curves):
        colour = f"C{index % 10}"
        rows = [k for k, flag in enumerate(curve.holdout) if not flag]
        held = [k for k, flag in enumerate(curve.holdout) if flag]
        axes.plot([curve.examples[k] for k in rows], [curve.average[k] for k in rows],
                  color=colour, marker=".", label=plain_text(curve.name))
        if since:
            axes.plot([curve.examples[k] for k in rows], [curve.since[k] for k in rows],
                      color=colour, linestyle=":", alpha=0.7,
                      label=plain_text(f"{curve.name} (since last)"))
        if held:  # after the first pass the rows report the held-out loss instead
            axes.plot([curve.examples[k] for k in held], [curve.average[k] for k in held],
                      color=colour, marker="s", markersize=4, linestyle="--",
                      label=plain_text(f"{curve.name} (holdout)"))
    axes.set_xscale("log")
    axes.set_xlabel("examples seen (weighted)")
    axes.set_ylabel("average loss (progressive)")
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize=8)
    if title:
        axes.set_title(plain_text(title))
    figure.tight_layout()
    with atomic_write(path, binary=True) as handle:
        figure.savefig(handle, format="png", dpi=120)
    plt.close(figure)
    return path
