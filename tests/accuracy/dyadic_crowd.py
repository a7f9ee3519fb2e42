"""Progressive 0/1 loss on s4_Relevance and smem_web as rater-task lines: the dyadic scoring
filter tree against the linear one and VW's low-rank quadratic one-against-all (same -b, same
passes), side by side.

    python tests/accuracy/dyadic_crowd.py [-b BITS] [extra pyvw-lite options]

``-b`` goes to both tools (default 18, VW's).  A feature's latent vector shares the row of its
linear weight, so the dyadic model fills no more rows than the linear one (README).

A measurement, not a test: it asserts nothing and pytest does not collect it; it prints its
table (and writes its JSON record where it says so). The asserted figures live in tests/test_*.py.
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from multiclass_crowd import CROWD, PEER, rater_task_lines, run

SETS = ("s4_Relevance", "smem_web")


def main() -> None:
    extra = sys.argv[1:]
    if {"-h", "--help"} & set(extra):
        print(__doc__)
        return
    bits = ["-b", "18"]
    if "-b" in extra:
        at = extra.index("-b")
        bits = extra[at:at + 2]
        del extra[at:at + 2]
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for name in SETS:
            lines, classes = rater_task_lines(CROWD / name / "answers.csv")
            data = Path(work) / f"{name}.vw"
            data.write_text("\n".join(lines) + "\n")
            ours = [sys.executable, "-m", "pyvw_lite", "-d", str(data), "--sft", str(classes),
                    *bits]
            row = {"set": name, "K": classes,
                   "sft": run(ours + extra),
                   "sft_dyad_rt2": run(ours + ["--dyad", "rt", "--rank", "2"] + extra),
                   "sft_dyad_rt2_rate1": run(ours + ["--dyad", "rt", "--rank", "2",
                                                      "--dyad_rate", "1"] + extra)}
            try:
                row["vw_oaa_lrq_rt2"] = run([sys.executable, "-c", PEER, "-d", str(data),
                                             "--oaa", str(classes), "--lrq", "rt2", *bits])
            except (RuntimeError, FileNotFoundError):
                row["vw_oaa_lrq_rt2"] = float("nan")
            rows.append(row)
    keys = ["sft", "sft_dyad_rt2", "sft_dyad_rt2_rate1", "vw_oaa_lrq_rt2"]
    print(f"-b {bits[1]}, one pass, progressive 0/1 loss")
    print(f"{'dataset':<14} {'K':>2} " + " ".join(f"{k:>18}" for k in keys))
    for row in rows:
        print(f"{row['set']:<14} {row['K']:>2} " + " ".join(f"{row[k]:>18.4f}" for k in keys))


if __name__ == "__main__":
    main()
