"""The files a learner's options name, and the one check every entry point runs on them.

A learner reads ``-d`` (data) and ``-i`` (a model) and may write ``-f``, ``-p``, ``-r``,
``--readable_model``, ``--invert_hash``, the ``--save_per_pass`` files and a cache.  The
command line, :class:`pyvw_lite.Workspace` (and so the scikit-learn estimators, the online
learner and the workflow commands built on it) and the model files written from Python all
pass :func:`check_outputs` or :func:`check_output`, which hand the pairs to
:func:`pyvw_lite.io.atomic.check_paths`: no output over an input, whichever way it is named.
"""
from __future__ import annotations

import os

from ..io import cache as cache_io
from ..io.atomic import check_paths
from ..io.source import is_regular_file
from ..options import OptionError, Options

# -f may name the -i model (continue a model and save it back, as in VW), and so may the
# --save_per_pass files named after -f; no other output may name an input.
MAY_REPLACE = (("-f", "-i"), ("--save_per_pass", "-i"))


def cache_path(o: Options) -> str | None:
    """``--cache_file``, or with ``-c`` the data file's name plus ``.pvwcache`` (VW's
    ``.cache`` holds VW's own format)."""
    if o.cache_file is None and o.cache:
        if o.data in (None, "-"):
            raise OptionError("option '--cache': reading standard input needs "
                              "--cache_file FILE")
        if os.path.exists(o.data) and not is_regular_file(o.data):
            raise OptionError(f"option '--cache': {o.data} is a pipe or device, so the cache "
                              "cannot go next to it; name one with --cache_file FILE")
        return o.data + cache_io.SUFFIX
    return o.cache_file


def inputs(o: Options, run: bool = False) -> list[tuple[str, str | None]]:
    """``(flag, path)`` of what the options read: the data and the ``-i`` model.  Without
    ``-d`` a ``run`` reads standard input (nothing under ``--no_stdin``); a workspace used
    from Python reads no data file."""
    data = o.data
    if data is None and run and not o.no_stdin:
        data = "-"
    return [("-d", data), ("-i", o.initial_regressor)]


def check_outputs(o: Options, caches: list[str] | None = None, run: bool = False) -> None:
    """Every output the options name can be written, and none is an input or another output (a
    cache counts as an output: it is written whenever it is not current).  ``caches``: the
    cache files the run writes, when not the one cache (the shards' own under --executor);
    ``run``: checked for a run (standard input is its data without ``-d``)."""
    if caches is None:
        caches = [o.cache_file if o.data in (None, "-") else cache_path(o)]
    per_pass = [("--save_per_pass", f"{o.final_regressor}.{k + 1}")
                for k in range(o.passes)] if o.save_per_pass and o.final_regressor else []
    check_paths(inputs(o, run),
                [("-f", o.final_regressor), ("-p", o.predictions), ("-r", o.raw_predictions),
                 ("--readable_model", o.readable_model), ("--invert_hash", o.invert_hash)]
                + [("--cache_file", cache) for cache in caches] + per_pass,
                reusable=("--cache_file",), may_replace=MAY_REPLACE)


def check_output(o: Options, flag: str, path: str) -> None:
    """One file written from Python (``save``, ``write_readable_model``, ``finish``) under
    ``flag``'s rule: it may not be the data or, unless it is a model (``-f``), the ``-i``
    model."""
    check_paths(inputs(o), [(flag, path)], may_replace=MAY_REPLACE)
