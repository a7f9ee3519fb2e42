"""``pyvw-lite compile``'s work: fill numba's kernel cache ahead of time.

Each mode runs a tiny job in this process through the same entry points a real run uses, so
the kernels it compiles (same array types and layouts) are the ones a real run of that mode
loads.  For Docker images, clusters and CI: afterwards the first real run of each mode starts
from cached machine code.  The command line (``cli/app.py``) and dask-worker's preload
(``distributed/preload.py``) call :func:`prebuild`; it sits with the learner, the lowest layer
that sees every family of kernels (the learner's and the crowd models').
"""
from __future__ import annotations

import multiprocessing
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed

import numpy as np

from ..crowd.run import CrowdRun
from ..crowd.run import run as run_crowd
from .compile import learner_job


def _crowd(method: str, batch: bool) -> None:
    rng = np.random.default_rng(0)
    rows = "".join(f"t{i},w{rng.integers(9)},{rng.integers(3)}\n" for i in range(60)
                   for _ in range(3))
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "answers.csv")
        with open(path, "w") as handle:
            handle.write("task,worker,label\n" + rows)
        run_crowd(CrowdRun(answers=path, batch=batch, method=method, quiet=True, restarts=1))


MODES = {
    "binary": lambda: learner_job("--loss_function", "logistic"),
    "squared": lambda: learner_job("-q", "rt"),
    "oaa": lambda: learner_job("--oaa", "3"),
    "ect": lambda: learner_job("--ect", "3"),
    "sft": lambda: learner_job("--sft", "3"),
    "dyad": lambda: learner_job("--dyad", "rt", "--rank", "2"),
    "sft-dyad": lambda: learner_job("--sft", "3", "--dyad", "rt", "--rank", "2"),
    "oaa-dyad": lambda: learner_job("--oaa", "3", "--dyad", "rt", "--rank", "2"),
    "lrq": lambda: learner_job("--lrq", "rt2", "--lrqdropout"),
    "active": lambda: learner_job("--active", "--simulation", "--loss_function", "logistic"),
    "crowd-online": lambda: _crowd("em", False),
    "crowd-batch": lambda: _crowd("em", True),
    "crowd-auto": lambda: _crowd("auto", True),
}


# Modes in the order worker processes take them: the two heaviest families first, so each
# worker starts on its own (the binary kernels and the dyadic ones), then the longest first
# (seconds measured from an empty cache: dyad 31, binary 18, sft-dyad 17, crowd-batch 13,
# oaa-dyad 11, sft 8, crowd-online 8, ect 6, oaa 5, crowd-auto 4; squared and active reuse;
# lrq, its own loop over the binary kernels, last)
PARALLEL_ORDER = ("binary", "dyad", "sft-dyad", "crowd-batch", "oaa-dyad", "sft",
                  "crowd-online", "ect", "oaa", "crowd-auto", "squared", "active", "lrq")


def _compile_mode(name: str) -> float:
    """A worker's task: compile one mode into the shared cache; its seconds."""
    os.environ["PYVW_LITE_QUIET_COMPILE"] = "1"
    begun = time.perf_counter()
    MODES[name]()
    return time.perf_counter() - begun


def prebuild(modes, out=sys.stderr, jobs: int = 1) -> float:
    """Compile the kernels of ``modes`` (names of :data:`MODES`); returns the seconds spent.

    ``jobs`` > 1 compiles modes in that many worker processes at once, all filling the same
    cache (numba writes each cache file whole, then renames it); a kernel two modes share may
    be compiled by two workers, which costs time, never correctness."""
    unknown = [name for name in modes if name not in MODES]
    if unknown:
        raise ValueError(f"unknown mode {unknown[0]!r}; modes: {', '.join(MODES)}")
    started = time.perf_counter()
    if jobs > 1 and len(modes) > 1:
        _prebuild_parallel(modes, out, jobs)
    else:
        for position, name in enumerate(modes, start=1):
            begun = time.perf_counter()
            out.write(f"[{position}/{len(modes)}] {name} ...")
            out.flush()
            MODES[name]()
            out.write(f" {time.perf_counter() - begun:.1f} s\n")
            out.flush()
    total = time.perf_counter() - started
    out.write(f"compiled {len(modes)} mode{'s' if len(modes) != 1 else ''} in {total:.1f} s; "
              "later runs load the cached kernels\n")
    return total


def _prebuild_parallel(modes, out, jobs: int) -> None:
    ordered = [name for name in PARALLEL_ORDER if name in modes] + \
        [name for name in modes if name not in PARALLEL_ORDER]
    workers = min(jobs, len(ordered))
    out.write(f"compiling {len(ordered)} modes in {workers} processes ...\n")
    out.flush()
    with ProcessPoolExecutor(max_workers=workers,
                             mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {pool.submit(_compile_mode, name): name for name in ordered}
        for position, future in enumerate(as_completed(futures), start=1):
            out.write(f"[{position}/{len(ordered)}] {futures[future]} {future.result():.1f} s\n")
            out.flush()
