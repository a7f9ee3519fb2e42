"""The tournament bracket shared by the filter trees (SPEC §D.1, VW's ``ect`` with no errors).

Competitors start as classes ``0..K-1``; each round pairs neighbours ``(0,1), (2,3), ...`` into
new internal nodes, numbered in creation order; an odd last competitor gets a bye.  Node ids
``0..K-1`` are the leaves (classes) and ``K + n`` is internal node ``n``; the root is the last
node created.  Every node covers a contiguous class interval ``[lo, hi]``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Bracket:
    classes: int
    left: np.ndarray  # (K-1,) node id of the left child of internal node n
    right: np.ndarray  # (K-1,)
    parent: np.ndarray  # (2K-1,) node id of the parent, -1 for the root
    lo: np.ndarray  # (2K-1,) first class under each node
    hi: np.ndarray  # (2K-1,) last class under each node

    @property
    def root(self) -> int:
        return 2 * self.classes - 2

    def depth(self, leaf: int) -> int:
        depth, node = 0, leaf
        while self.parent[node] >= 0:
            node = int(self.parent[node])
            depth += 1
        return depth


def bracket(classes: int) -> Bracket:
    if classes < 1:
        raise ValueError("a tournament needs at least one class")
    left, right = [], []
    parent = [-1] * (2 * classes - 1)
    lo = list(range(classes)) + [0] * (classes - 1)
    hi = list(range(classes)) + [0] * (classes - 1)
    competitors = list(range(classes))
    next_id = classes
    while len(competitors) > 1:
        advancing = []
        for j in range(0, len(competitors) - 1, 2):
            a, b = competitors[j], competitors[j + 1]
            left.append(a)
            right.append(b)
            parent[a] = parent[b] = next_id
            lo[next_id], hi[next_id] = lo[a], hi[b]
            advancing.append(next_id)
            next_id += 1
        if len(competitors) % 2:
            advancing.append(competitors[-1])  # bye
        competitors = advancing
    as_array = lambda values: np.asarray(values, dtype=np.int64)  # noqa: E731
    return Bracket(classes, as_array(left), as_array(right), as_array(parent), as_array(lo),
                   as_array(hi))
