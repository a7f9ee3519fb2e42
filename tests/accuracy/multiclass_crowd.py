"""Progressive 0/1 loss on the shared crowd datasets as rater-task lines:
pyvw-lite --sft K against VW --ect K and --oaa K (same -b, same learning rate), side by side.

    python tests/accuracy/multiclass_crowd.py [--write-fixture]

Needs the shared datasets (../shared/datasets/crowd) and, for the VW columns, the
``vowpalwabbit`` package; ``--write-fixture`` stores VW's figures for the test suite.

A measurement, not a test: it asserts nothing and pytest does not collect it; it prints its
table (and writes its JSON record where it says so). The asserted figures live in tests/test_*.py.
"""
from __future__ import annotations

import csv
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from crowd_shared import SHARED as CROWD  # noqa: E402  (the mirror, else the fetched sets)
FIXTURE = Path(__file__).parent / "vw_multiclass_crowd.json"
PEER = "import sys\nfrom vowpalwabbit import Workspace\nWorkspace(arg_list=sys.argv[1:]).finish()\n"


def token(text: str) -> str:
    """An id as a VW feature name: no ':', '|' or whitespace (they are VW syntax)."""
    return "".join("_" if c in ":| \t" else c for c in text)


def rater_task_lines(answers: Path, seed: int = 0) -> tuple[list[str], int]:
    """``label |rater r_<worker> |task t_<task>``, labels mapped to 1..K, shuffled (seeded)."""
    with answers.open() as handle:
        rows = list(csv.DictReader(handle))
    values = sorted({row["label"] for row in rows})
    index = {value: k + 1 for k, value in enumerate(values)}
    lines = [f"{index[row['label']]} |rater r_{token(row['worker'])} |task t_{token(row['task'])}"
             for row in rows]
    random.Random(seed).shuffle(lines)
    return lines, len(values)


def average_loss(stderr: str) -> float:
    for line in stderr.splitlines():
        if line.startswith("average loss = "):
            return float(line.split("=")[1].split()[0])
    raise RuntimeError(stderr[-500:])


def run(command: list[str]) -> float:
    done = subprocess.run(command, capture_output=True, text=True)
    return average_loss(done.stderr)


def measure(with_peer: bool) -> dict[str, dict[str, float]]:
    table = {}
    with tempfile.TemporaryDirectory() as work:
        for folder in sorted(p for p in CROWD.iterdir() if (p / "answers.csv").exists()):
            lines, classes = rater_task_lines(folder / "answers.csv")
            data = Path(work) / f"{folder.name}.vw"
            data.write_text("\n".join(lines) + "\n")
            row = {"classes": classes, "ratings": len(lines)}
            row["sft"] = run([sys.executable, "-m", "pyvw_lite", "-d", str(data), "--sft",
                              str(classes)])
            if with_peer:
                for reduction in ("ect", "oaa"):
                    row[f"vw_{reduction}"] = run([sys.executable, "-c", PEER, "-d", str(data),
                                                  f"--{reduction}", str(classes)])
            table[folder.name] = row
    return table


def main() -> None:
    write = "--write-fixture" in sys.argv
    table = measure(with_peer=True)
    print(f"{'dataset':<34} {'K':>2} {'ratings':>8} {'sft':>8} {'VW ect':>8} {'VW oaa':>8}")
    for name, row in table.items():
        print(f"{name:<34} {row['classes']:>2} {row['ratings']:>8} {row['sft']:>8.4f} "
              f"{row['vw_ect']:>8.4f} {row['vw_oaa']:>8.4f}")
    mean = {key: sum(r[key] for r in table.values()) / len(table) for key in ("sft", "vw_ect",
                                                                             "vw_oaa")}
    print(f"{'mean':<46} {mean['sft']:>8.4f} {mean['vw_ect']:>8.4f} {mean['vw_oaa']:>8.4f}")
    if write:
        FIXTURE.write_text(json.dumps({name: {k: row[k] for k in ("vw_ect", "vw_oaa")}
                                       for name, row in table.items()}, indent=1) + "\n")


if __name__ == "__main__":
    main()
