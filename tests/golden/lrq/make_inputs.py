"""Writes ratings.train.vw and ratings.test.vw: seeded ratings 1..5 of a rank-2 user x item model
with biases ("rating 'rating |u user |m item", the lines of VW's movielens demo), for the --lrq
golden files.  Run from this folder: python make_inputs.py (the lines come from tests/ratings_data.py)"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from ratings_data import rated_lines  # noqa: E402


def main(users=40, items=30, ratings=360, seed=11):
    lines = rated_lines(users, items, ratings, seed)
    cut = ratings * 5 // 6
    with open("ratings.train.vw", "w") as out:
        out.write("".join(lines[:cut]))
    with open("ratings.test.vw", "w") as out:
        out.write("".join(lines[cut:]))


if __name__ == "__main__":
    main()
