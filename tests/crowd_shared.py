"""Where the shared real crowd sets are, and which of them each test iterates over.

The folder ``../shared/datasets/crowd`` beside the repository holds 27 sets; the defaults were
chosen on the first 21 of them (``FIRST_21``), and the tests that hold the defaults to their
promises name those sets rather than whatever the folder holds, so that a set added there is
studied before it is scored on.  ``ALL_27`` names every set of the folder, sorted by name, for
tests that hold a property on all of them.
"""
from __future__ import annotations

from pathlib import Path

SHARED = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "crowd"

FIRST_21 = (
    "act_CF", "act_MS", "cifar10n", "crowdtruth_medrel_cause", "cubam_bluebirds", "d_jn-product",
    "d_sentiment", "gal_hitspam_crowdflower", "geirhos_sketch", "geirhos_stylized",
    "labelme_rodrigues", "nyt_relevance_3p", "roitero_politifact_s6",
    "s4_Face_Sentiment_Identification", "s4_Relevance", "slr_loneliness", "smem_dog", "smem_web",
    "snow_rte", "snow_temp", "snow_wsd",
)

ALL_27 = (
    "act_CF", "act_MS", "act_ZenCrowd_all", "act_ZenCrowd_in", "act_ZenCrowd_us", "cifar10n",
    "crowdscale13_fact_eval", "crowdtruth_medrel_cause", "cubam_bluebirds", "cubam_ducks",
    "d_jn-product", "d_sentiment", "gal_hitspam_crowdflower", "geirhos_sketch",
    "geirhos_stylized", "labelme_rodrigues", "nyt_relevance_3p", "roitero_politifact_s6",
    "s4_Face_Sentiment_Identification", "s4_Relevance", "s5_AdultContent", "slr_loneliness",
    "smem_dog", "smem_web", "snow_rte", "snow_temp", "snow_wsd",
)


def present(names=FIRST_21) -> list[str]:
    """The named sets, or none where the shared folder is not beside this checkout."""
    return list(names) if SHARED.is_dir() else []
