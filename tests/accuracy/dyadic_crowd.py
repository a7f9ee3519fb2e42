"""Progressive 0/1 loss on s4_Relevance and smem_web as rater-task lines: the dyadic scoring
filter tree against the linear one and VW's low-rank quadratic one-against-all (same -b, same
passes), side by side.

    python tests/accuracy/dyadic_crowd.py [extra pyvw-lite options]
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from multiclass_crowd import CROWD, PEER, rater_task_lines, run

SETS = ("s4_Relevance", "smem_web")


def main() -> None:
    extra = sys.argv[1:]
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for name in SETS:
            lines, classes = rater_task_lines(CROWD / name / "answers.csv")
            data = Path(work) / f"{name}.vw"
            data.write_text("\n".join(lines) + "\n")
            ours = [sys.executable, "-m", "pyvw_lite", "-d", str(data), "--sft", str(classes)]
            row = {"set": name, "K": classes,
                   "sft": run(ours + extra),
                   "sft_plain_rate": run(ours + ["--sgd", "--invariant"] + extra),
                   "sft_dyad_rt2": run(ours + ["--dyad", "rt", "--rank", "2"] + extra)}
            try:
                row["vw_oaa_lrq_rt2"] = run([sys.executable, "-c", PEER, "-d", str(data),
                                             "--oaa", str(classes), "--lrq", "rt2"])
            except (RuntimeError, FileNotFoundError):
                row["vw_oaa_lrq_rt2"] = float("nan")
            rows.append(row)
    keys = ["sft", "sft_plain_rate", "sft_dyad_rt2", "vw_oaa_lrq_rt2"]
    print(f"{'dataset':<14} {'K':>2} " + " ".join(f"{k:>15}" for k in keys))
    for row in rows:
        print(f"{row['set']:<14} {row['K']:>2} " + " ".join(f"{row[k]:>15.4f}" for k in keys))


if __name__ == "__main__":
    main()
