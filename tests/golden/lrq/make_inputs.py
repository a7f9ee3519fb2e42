"""Writes ratings.train.vw and ratings.test.vw: seeded ratings 1..5 of a rank-2 user x item model
with biases ("rating 'rating |u user |m item", the lines of VW's movielens demo), for the --lrq
golden files.  Run from this folder: python make_inputs.py"""
import numpy as np


def main(users=40, items=30, ratings=360, seed=11):
    rng = np.random.default_rng(seed)
    a, b = rng.normal(0, 0.8, (users, 2)), rng.normal(0, 0.8, (items, 2))
    bu, bi = rng.normal(0, 0.4, users), rng.normal(0, 0.4, items)
    pairs = rng.choice(users * items, ratings, replace=False)
    u, i = pairs // items, pairs % items
    mean = 3.5 + bu[u] + bi[i] + np.sum(a[u] * b[i], axis=1)
    r = np.clip(np.rint(mean + rng.normal(0, 0.5, ratings)), 1, 5).astype(int)
    lines = [f"{r[k]} '{r[k]} |u {u[k]} |m {i[k]}\n" for k in range(ratings)]
    cut = ratings * 5 // 6
    with open("ratings.train.vw", "w") as out:
        out.write("".join(lines[:cut]))
    with open("ratings.test.vw", "w") as out:
        out.write("".join(lines[cut:]))


if __name__ == "__main__":
    main()
