"""Active against passive learning on the shared binary crowd sets as rater-task lines.

    python tests/accuracy/active_rater_task.py [--loss logistic] [--curve d_jn-product]

Each set's answers become ``±1 |rater r_<worker> |task t_<task>`` lines (shuffled, seeded) and
are split 15/16 train, 1/16 test by the product's hash rule.  One pass learns the train lines
passively (every label) and with ``--active --simulation`` at several ``--mellowness`` values;
the table gives the labels each used and the 0/1 loss on the test lines.  ``--curve SET`` adds
the query curve of that set: at growing prefixes of the stream, the labels the active learner
asked for and both learners' test loss (the learner is online and the sampler seeded, so a
prefix run is exactly the full run stopped early).

Needs the shared datasets (../shared/datasets/crowd).

A measurement, not a test: it asserts nothing and pytest does not collect it; it prints its
table (and writes its JSON record where it says so). The asserted figures live in tests/test_*.py.
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from multiclass_crowd import CROWD, rater_task_lines

from pyvw_lite.workflow.split import split_file

SETS = ("cubam_bluebirds", "d_jn-product", "d_sentiment", "snow_rte")
MELLOWNESS = ("1e-3", "1e-4", "1e-5", "1e-6")


def summary(text: str, key: str) -> float:
    found = re.search(rf"^{key} = (\S+)", text, re.M)
    if not found:
        raise RuntimeError(text[-800:])
    return float(found.group(1))


def pyvw(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "pyvw_lite", *args], capture_output=True,
                          text=True)
    if done.returncode:
        raise RuntimeError(done.stderr[-800:])
    return done.stderr


def learn_and_test(train: Path, test: Path, loss: str, extra: list[str]) -> tuple[int, float]:
    """(labels used, test 0/1 loss) of one pass over ``train``."""
    model = train.with_suffix(".model")
    log = pyvw("-d", str(train), "--loss_function", loss, "--binary", "-f", str(model), *extra)
    with open(train) as handle:
        used = int(summary(log, "total queries")) if extra else sum(1 for _ in handle)
    scored = pyvw("-d", str(test), "-t", "-i", str(model), "--binary")
    return used, summary(scored, "average loss")


def binary_split(name: str, work: Path) -> tuple[Path, Path, int]:
    lines, classes = rater_task_lines(CROWD / name / "answers.csv")
    if classes != 2:
        raise ValueError(f"{name} has {classes} classes")
    everything = work / f"{name}.vw"
    everything.write_text("".join(("-1" if line[0] == "1" else "1") + line[1:] + "\n"
                                  for line in lines))
    train, test = work / f"{name}.train.vw", work / f"{name}.test.vw"
    report = split_file(str(everything), str(train), str(test))
    return train, test, report.train_lines


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--loss", default="logistic")
    parser.add_argument("--curve", default=None)
    parser.add_argument("--curve-mellowness", default="1e-5")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        print(f"loss {options.loss}, one pass; labels used / test 0/1 loss")
        print(f"{'dataset':<16} {'train':>6} {'passive':>15} " +
              " ".join(f"{'mellowness ' + m:>19}" for m in MELLOWNESS))
        for name in SETS:
            train, test, n = binary_split(name, work)
            passive = learn_and_test(train, test, options.loss, [])
            cells = [f"{used:>6} / {loss:.4f}" for used, loss in
                     [passive] + [learn_and_test(train, test, options.loss,
                                                 ["--active", "--simulation", "--mellowness", m])
                                  for m in MELLOWNESS]]
            print(f"{name:<16} {n:>6} {cells[0]:>15} " + " ".join(f"{c:>19}" for c in cells[1:]))
        if options.curve:
            train, test, n = binary_split(options.curve, work)
            lines = train.read_text().splitlines(keepends=True)
            print(f"\nquery curve on {options.curve} (mellowness {options.curve_mellowness})")
            print(f"{'examples seen':>13} {'labels asked':>12} {'active loss':>11} "
                  f"{'passive loss':>12}")
            size = 1000
            while True:
                prefix = work / "prefix.vw"
                prefix.write_text("".join(lines[:size]))
                asked, active = learn_and_test(prefix, test, options.loss,
                                               ["--active", "--simulation", "--mellowness",
                                                options.curve_mellowness])
                _, passive = learn_and_test(prefix, test, options.loss, [])
                print(f"{size:>13} {asked:>12} {active:>11.4f} {passive:>12.4f}")
                if size == len(lines):
                    break
                size = min(2 * size, len(lines))


if __name__ == "__main__":
    main()
