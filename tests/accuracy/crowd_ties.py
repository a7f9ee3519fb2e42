"""How majority vote should break its ties, chosen over the 27 shared crowd sets by source.

    python tests/accuracy/crowd_ties.py [--shared DIR] [--json OUT]

For each set: how many tasks with truth tie, and the accuracy of majority vote under each tie
rule of ``baselines.TIE_RULES`` (``lowest``: the lowest label; ``confusion``: where all of
three or more answers differ, the answered label of highest posterior under a confusion matrix and
class prior pooled over all workers, else the lowest).  The rules tried before this one (the label
answered most often over the set; the label whose workers agree most with the others'
pluralities; the pooled posterior on every tie, or without its class prior; the class most
often the plurality) each lost
more than 0.005 to the lowest label on some set: see docs/crowd.md.  The rules are compared by
each source's mean (sets of one source count once) and
by leave one source out: for each source, the rule with the best mean over the other sources'
means is scored on it.  Prints markdown; pytest does not collect it.
"""
from __future__ import annotations

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.dirname(HERE))

from crowd_shared import ALL, measurement_parser, read_record, source_of, write_record  # noqa: E402
from pyvw_lite.crowd.baselines import TIE_RULES, majority_vote  # noqa: E402
from pyvw_lite.io.crowd_input import known_labels, read_answers, read_gold  # noqa: E402

RULES = ("lowest", "confusion")


def measure(shared) -> dict:
    rows = {}
    for name in ALL:
        data = read_answers(os.path.join(shared, name, "answers.csv"))
        known = known_labels(data, read_gold(os.path.join(shared, name, "truth.csv")), "truth")
        scored = known >= 0
        shares = majority_vote(data, ties="lowest")
        tied = (shares >= shares.max(axis=1, keepdims=True) - 1e-6).sum(axis=1) > 1
        row = dict(tasks=int(scored.sum()), ties=int((tied & scored).sum()))
        for rule in RULES:
            right = majority_vote(data, ties=rule).argmax(axis=1) == known
            row[rule] = float(right[scored].mean())
            row[rule + "_on_ties"] = float(right[tied & scored].mean()) if row["ties"] else None
        rows[name] = row
        print(name, row, file=sys.stderr, flush=True)
    return rows


def by_source(rows: dict) -> dict:
    groups: dict[str, list[str]] = {}
    for name in rows:
        groups.setdefault(source_of(name), []).append(name)
    return {g: {rule: float(np.mean([rows[s][rule] for s in names])) for rule in RULES}
            for g, names in groups.items()}


def report(rows: dict) -> str:
    lines = ["| set | tasks with truth | ties | " + " | ".join(RULES)
             + " | right on ties: " + " / ".join(RULES) + " |", "|---" * (len(RULES) + 4) + "|"]
    for s, r in rows.items():
        on_ties = " / ".join("—" if r[x + "_on_ties"] is None else f"{r[x + '_on_ties']:.3f}"
                             for x in RULES)
        lines.append(f"| {s} | {r['tasks']:,} | {r['ties']:,} | "
                     + " | ".join(f"{r[x]:.4f}" for x in RULES) + f" | {on_ties} |")
    sources = by_source(rows)
    lines += ["", "| source | " + " | ".join(RULES) + " | rule chosen on the other sources |"
              " its accuracy |", "|---" * (len(RULES) + 3) + "|"]
    held = []
    for g, means in sources.items():
        others = [o for o in sources if o != g]
        chosen = max(RULES, key=lambda x: (np.mean([sources[o][x] for o in others]),
                                           -RULES.index(x)))
        held.append(means[chosen])
        lines.append(f"| {g} | " + " | ".join(f"{means[x]:.4f}" for x in RULES)
                     + f" | {chosen} | {means[chosen]:.4f} |")
    lines.append("| **mean over sources** | " + " | ".join(
        f"**{np.mean([m[x] for m in sources.values()]):.4f}**" for x in RULES)
        + f" | | **{np.mean(held):.4f}** |")
    worst = {x: min(rows[s][x] - rows[s]["lowest"] for s in rows) for x in RULES}
    lines.append("\nLargest loss to the lowest-label rule on any set: "
                 + ", ".join(f"{x} {worst[x]:+.4f}" for x in RULES))
    return "\n".join(lines)


def main() -> int:
    parser = measurement_parser(__doc__, os.path.join(HERE, "crowd_ties.json"))
    options = parser.parse_args()
    assert set(RULES) == set(TIE_RULES)
    rows = read_record(options.json) if options.from_json else measure(options.shared)
    if not options.from_json:
        write_record(rows, options.json)
    print(report(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
