"""Where the shared real crowd sets are, and which of them each test iterates over.

The folder ``../shared/datasets`` beside the repository is a mirror of the registered sets
(``pyvw_lite.datasets``): importing this module points ``PYVW_LITE_DATASETS_MIRROR`` at it when
it is there, so ``pyvw_lite.datasets.fetch(name)`` (and ``folder`` below) work offline.  Its
``crowd/`` holds 27 sets (``ALL``); the
defaults before the last round were chosen on the first 21 of them (``FIRST_21``).  The tests
that hold the defaults to their promises name the sets rather than whatever the folder holds, so
that a set added there is studied before it is scored on.  ``SOURCES`` groups the sets by source
(the same tasks under other worker pools, or one collection by the same authors): sets of one
source are one fold when choosing, and one group when checking.
"""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

MIRROR = Path(__file__).resolve().parents[2] / "shared" / "datasets"
if MIRROR.is_dir():
    os.environ.setdefault("PYVW_LITE_DATASETS_MIRROR", str(MIRROR))
    SHARED = MIRROR / "crowd"
else:  # a clone on its own: the sets `pyvw-lite datasets fetch NAME` put in the cache
    from pyvw_lite.datasets import cache_home
    SHARED = cache_home()

FIRST_21 = (
    "act_CF", "act_MS", "cifar10n", "crowdtruth_medrel_cause", "cubam_bluebirds", "d_jn-product",
    "d_sentiment", "gal_hitspam_crowdflower", "geirhos_sketch", "geirhos_stylized",
    "labelme_rodrigues", "nyt_relevance_3p", "roitero_politifact_s6",
    "s4_Face_Sentiment_Identification", "s4_Relevance", "slr_loneliness", "smem_dog", "smem_web",
    "snow_rte", "snow_temp", "snow_wsd",
)

ALL = tuple(sorted(FIRST_21 + (
    "act_ZenCrowd_all", "act_ZenCrowd_in", "act_ZenCrowd_us", "cubam_ducks", "s5_AdultContent",
    "crowdscale13_fact_eval")))

_GROUPED = {
    "zencrowd": ("act_ZenCrowd_all", "act_ZenCrowd_in", "act_ZenCrowd_us"),
    "snow": ("snow_rte", "snow_temp", "snow_wsd"),
    "geirhos": ("geirhos_sketch", "geirhos_stylized"),
    "cubam": ("cubam_bluebirds", "cubam_ducks"),
}


def source_of(name: str) -> str:
    """The source group of a shared set (a set alone in its source is its own group)."""
    for group, names in _GROUPED.items():
        if name in names:
            return group
    return name


SOURCES = {}
for _name in ALL:
    SOURCES.setdefault(source_of(_name), []).append(_name)


def present(names=FIRST_21) -> list[str]:
    """The named sets, or none where the mirror is not beside this checkout (the tests do not
    download)."""
    return list(names) if MIRROR.is_dir() else []


def folder(name: str) -> Path:
    """The set's folder (answers.csv, truth.csv) through the loader: bundled, cached, or copied
    from the mirror and checked against the registry's SHA-256."""
    from pyvw_lite import datasets
    return datasets.fetch(name)


def measurement_parser(doc: str, record: Path) -> argparse.ArgumentParser:
    """The options every measurement script over the shared sets takes: where the sets are,
    its JSON record, and ``--from_json`` to redraw the tables from the record."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--shared", default=str(SHARED))
    parser.add_argument("--json", default=str(record))
    parser.add_argument("--from_json", action="store_true",
                        help="redraw the tables from --json instead of fitting")
    return parser


def read_record(path) -> dict:
    with open(path) as handle:
        return json.load(handle)


def write_record(rows: dict, path) -> None:
    with open(path, "w") as handle:
        json.dump(rows, handle, indent=1)
