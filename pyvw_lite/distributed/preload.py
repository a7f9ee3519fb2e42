"""Dask worker preload: ``dask-worker SCHEDULER --preload pyvw_lite.distributed.preload``.

Each worker loads (or, on a machine whose cache is empty, compiles) the kernels of the modes
it will run before it takes its first task, so the first pass of a job is not a compile.  The
modes are ``PYVW_LITE_PRELOAD_MODES`` in the worker's environment, comma-separated names of
``pyvw-lite compile`` (default ``binary,crowd-batch``).  What it did is kept on the worker as
``pyvw_lite_compiled`` ``(modes, seconds)`` and logged.
"""
from __future__ import annotations

import io
import logging
import os

from ..learner.prebuild import prebuild

DEFAULT_MODES = "binary,crowd-batch"


def dask_setup(worker) -> None:
    modes = [name.strip() for name in
             os.environ.get("PYVW_LITE_PRELOAD_MODES", DEFAULT_MODES).split(",") if name.strip()]
    seconds = prebuild(modes, out=io.StringIO())  # unknown modes raise: the worker says why
    worker.pyvw_lite_compiled = (modes, seconds)
    logging.getLogger("distributed.worker").info(
        "pyvw-lite: kernels of %s ready in %.1f s", ", ".join(modes), seconds)
