"""Compiling the learner's kernels: a tiny job per learner mode of ``pyvw-lite compile``, and the
helper process a cold run starts to compile its learning kernels beside the parser."""
from __future__ import annotations

import io
import multiprocessing
import os

import numpy as np

from ..io.arrays import matrix_batch
from ..io.vw_text import parse_lines
from ..jit import CACHE, is_cached
from ..options import shard_options
from .core import Learner

_LINES = [f"{1 if i % 3 else -1} {1 + i % 3} 'e{i} |r r{i % 5} |t t{i % 7}:0.5 |f f{i % 4}"
          for i in range(40)]


def learner_job(*args: str) -> None:
    """A tiny learn-and-predict job of the learner ``args`` configure: a ``pyvw-lite compile``
    mode of the learner, which compiles the kernels a real run of that mode loads."""
    labels_as_classes = any(a in args for a in ("--oaa", "--ect", "--sft"))
    lines = [line.split(" ", 1)[1] if labels_as_classes else
             " ".join(line.split(" ")[:1] + line.split(" ")[2:]) for line in _LINES]
    ws = Learner.from_args(list(args) + ["--quiet", "-b", "12"], stdout=io.StringIO(),
                           stderr=io.StringIO())
    ws.learn(lines)
    ws.predict(lines[:3])


def compile_learning(options) -> None:
    """A helper process's task: compile the learning kernels ``options`` need into the cache,
    from a tiny numeric batch, so the text parser is not compiled here (the run that started
    this helper is compiling it meanwhile)."""
    os.environ["PYVW_LITE_QUIET_COMPILE"] = "1"
    ws = Learner(options, stdout=io.StringIO(), stderr=io.StringIO())
    ws.learn(matrix_batch(np.eye(2), np.ones(2)))


def start_learning_compile(learner):
    """On a cold start (neither the parser nor the learning kernels cached), a helper process
    that compiles the learning kernels while this one compiles the parser: on two cores a first
    run waits for the longer of the two instead of their sum.  ``None`` when there is nothing
    to overlap; join the process before the first learning call."""
    if not CACHE or (os.cpu_count() or 1) < 2 or is_cached(parse_lines) \
            or all(is_cached(kernel) for kernel in learner.learning_kernels()):
        return None
    try:
        process = multiprocessing.get_context("spawn").Process(
            target=compile_learning, args=(shard_options(learner.options),), daemon=True)
        process.start()
    except (OSError, RuntimeError):
        return None  # no helper: this process compiles everything, as before
    return process
