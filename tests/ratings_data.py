"""Seeded ratings for the movielens-shaped tests and golden files: 1..5 from a rank-2 user x
item model with biases, each line tagged with its rating (``rating 'rating |u user |m item``,
the lines of VW's movielens demo, so a ``-p`` line is "prediction rating")."""
from __future__ import annotations

import numpy as np


def rated_lines(users: int, items: int, ratings: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    a, b = rng.normal(0, 0.8, (users, 2)), rng.normal(0, 0.8, (items, 2))
    bu, bi = rng.normal(0, 0.4, users), rng.normal(0, 0.4, items)
    pairs = rng.choice(users * items, ratings, replace=False)
    u, i = pairs // items, pairs % items
    mean = 3.5 + bu[u] + bi[i] + np.sum(a[u] * b[i], axis=1)
    r = np.clip(np.rint(mean + rng.normal(0, 0.5, ratings)), 1, 5).astype(int)
    return [f"{r[k]} '{r[k]} |u {u[k]} |m {i[k]}\n" for k in range(ratings)]
