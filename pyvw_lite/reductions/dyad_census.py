"""What a dyadic run's first pass saw of its data, for the end-of-run summary: the pairs (a
user and an item, a rater and a task) that come back more than once, and labels outside the
scale the others use (a rating of 0 on a 1-5 scale).  Neither is dropped or changed: every
example is learned as it is given; the summary only says they are there.
"""
from __future__ import annotations

import numpy as np

from ..io.vw_text import LABEL, NLABEL, SEG_END, SEG_START
from ..jit import kernel
from ..learners.gd import namespace_range

# labels that take at most this many values are read as a rating scale
SCALE_VALUES = 64
# a value at either end of the scale that fewer than this share of the labels take lies outside
# the scale the others span (Ciao: 32 zeros among 255,678 ratings of 1 to 5)
RARE_SHARE = 1e-3
_MIX = np.uint64(0x9E3779B97F4A7C15)
_PRIME = np.uint64(0x100000001B3)


@kernel
def pair_keys(rows, ex_int, seg, feat_hash, feat_value, pairs, ignore, out):
    """A 64-bit key per example of the features of its ``--dyad`` namespaces (hashes and
    values, in any order within a namespace) into ``out``; 0 for an example without both
    namespaces of every pair."""
    for e in range(rows.shape[0]):
        s0 = ex_int[rows[e], SEG_START]
        s1 = ex_int[rows[e], SEG_END]
        key = np.uint64(0xCBF29CE484222325)
        whole = True
        for m in range(pairs.shape[0]):
            for half in range(2):
                first, last = namespace_range(seg, s0, s1, pairs[m, half], ignore)
                if first == last:
                    whole = False
                side = np.uint64(0)
                for j in range(first, last):
                    value = np.uint64(np.int64(np.rint(np.float64(feat_value[j]) * 1048576.0)))
                    side += (np.uint64(feat_hash[j]) + value * _PRIME) * _MIX
                key = (key ^ side) * _PRIME
        out[e] = key if whole else np.uint64(0)


class DyadCensus:
    """Pair keys and label counts of the examples a run reads in its first pass."""

    def __init__(self, pairs: np.ndarray, names: list[str]):
        self.pairs = pairs
        self.names = names  # the --dyad terms, e.g. ["um"]
        self.keys: list[np.ndarray] = []
        self.labels: dict[float, int] | None = {}

    def add(self, batch, rows: np.ndarray, ignore: np.ndarray) -> None:
        """Count the labelled examples ``rows`` of ``batch``."""
        rows = rows[batch.ex_int[rows, NLABEL] > 0]
        keys = np.zeros(rows.size, dtype=np.uint64)
        if rows.size:
            pair_keys(rows, batch.ex_int, batch.seg, batch.feat_hash, batch.feat_value,
                      self.pairs, ignore, keys)
        self.keys.append(keys[keys != 0])
        if self.labels is not None:
            values, counts = np.unique(batch.ex_float[rows, LABEL], return_counts=True)
            for value, count in zip(values.tolist(), counts.tolist()):
                self.labels[value] = self.labels.get(value, 0) + count
            if len(self.labels) > SCALE_VALUES:
                self.labels = None  # not a rating scale

    def repeated(self) -> tuple[int, int]:
        """``(examples, pairs)``: the examples whose pair came earlier, and the pairs that
        came more than once."""
        if not self.keys:
            return 0, 0
        _, counts = np.unique(np.concatenate(self.keys), return_counts=True)
        again = counts[counts > 1]
        return int(np.sum(again - 1)), int(again.size)

    def outside_scale(self) -> tuple[dict[float, int], float, float]:
        """The label values at either end that fewer than ``RARE_SHARE`` of the labels take,
        with their counts, and the scale's ends without them; ``({}, 0, 0)`` when there are
        none (or the labels are no scale: over ``SCALE_VALUES`` values, or all rare)."""
        if not self.labels:
            return {}, 0.0, 0.0
        values = sorted(self.labels)
        total = sum(self.labels.values())
        common = [v for v in values if self.labels[v] >= RARE_SHARE * total]
        if not common:
            return {}, 0.0, 0.0
        low, high = common[0], common[-1]
        rare = {v: self.labels[v] for v in values if v < low or v > high}
        return rare, low, high

    def summary(self) -> list[str]:
        """The summary's lines: repeated pairs and labels outside the scale, when there are."""
        lines = []
        examples, pairs = self.repeated()
        if examples:
            term = "+".join(self.names)
            lines.append(f"repeated {term} pairs = {examples} examples repeat one of {pairs} "
                         "pairs seen before (each learned as an example)")
        rare, low, high = self.outside_scale()
        if rare:
            listed = ", ".join(f"{count} label{'s' if count > 1 else ''} of {value:g}"
                               for value, count in rare.items())
            lines.append(f"labels outside the scale = {sum(rare.values())} ({listed}; the "
                         f"others span {low:g} to {high:g}), learned as given")
        return lines
