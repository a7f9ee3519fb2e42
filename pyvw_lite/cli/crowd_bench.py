"""``pyvw-lite bench-crowd``: label extraction against crowd-kit on the same seeded answers.

Each measurement is a separate process started from this one (ours, then the peer, interleaved
per repeat); both time only the fit (CSV loading excluded) and score accuracy on the truth.
Online EM is scored, and timed, up to the labels the command writes: those of the final model
(a fresh model's one pass is a warm-up whose own posteriors are a vote).  Memory is each
process's own peak, which Linux's getrusage maxrss is not (it carries over exec).
The peer is crowd-kit's DawidSkene, run by whichever Python has crowd-kit installed
(``--peer-python``; crowd-kit pins versions of pandas and scikit-learn that a project
environment may not want).
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

from .bench import bench_workdir

OURS_RUNNER = r"""
import json, sys, time
import numpy as np
from pyvw_lite.io.crowd_input import read_triples, read_gold, label_index
from pyvw_lite.io.progress import peak_memory  # VmHWM: getrusage's carries over exec


mode, answers, truth = sys.argv[1:4]
data = read_triples(answers)
index = label_index(data.label_names)
position = {name: i for i, name in enumerate(data.task_names.tolist())}
pairs = [(position[t], index[l]) for t, (l, _) in read_gold(truth).items() if t in position]
items = np.array([p[0] for p in pairs]); expected = np.array([p[1] for p in pairs])
extra = {}
if mode == "batch":
    from pyvw_lite.crowd.batch import batch_em
    from pyvw_lite.crowd.model import CrowdConfig
    config = CrowdConfig(n_labels=data.n_labels, label_names=data.label_names, worker_map="exact")
    batch_em(data, config, max_iters=2)  # load the cached kernels outside the timing
    start = time.perf_counter()
    result = batch_em(data, config)
    seconds = time.perf_counter() - start
    labels = result.labels
    extra["iterations"] = result.iterations
else:
    from pyvw_lite.crowd.model import CrowdConfig, CrowdModel
    from pyvw_lite.crowd.online import run_online
    config = CrowdConfig(n_labels=data.n_labels, label_names=data.label_names)
    run_online(data, CrowdModel(config))  # load every kernel (the closing M-steps' too) untimed
    model = CrowdModel(config)
    start = time.perf_counter()
    result = run_online(data, model)
    fitted = time.perf_counter()
    # the labels `pyvw-lite crowd -p` writes: every item labelled by the final model.  The pass's
    # own posteriors are the progressive ones (--progressive); on a fresh model's one pass they
    # are the warm-up's, at the prior parameters: a vote
    labels = run_online(data, model, test_only=True).q.argmax(axis=1)
    seconds = time.perf_counter() - start
    extra["label_seconds"] = seconds - (fitted - start)
    extra["progressive_accuracy"] = float((result.q.argmax(axis=1)[items] == expected).mean())
    extra["table_bytes"] = int(model.alpha.nbytes + model.stats.nbytes + model.stamp.nbytes
                               + model.mu.nbytes)
extra["max_rss_mb"] = peak_memory() / 2**20 or None
print(json.dumps(dict(seconds=seconds, ratings=int(data.n_ratings),
                      accuracy=float((labels[items] == expected).mean()), **extra)))
"""

PEER_RUNNER = r"""
import json, sys, time, warnings
warnings.filterwarnings("ignore")
import pandas as pd
from crowdkit.aggregation import DawidSkene
answers, truth = sys.argv[1:3]
frame = pd.read_csv(answers, dtype=str, keep_default_na=False)
known = pd.read_csv(truth, dtype=str, keep_default_na=False).drop_duplicates("task")
known = known.set_index("task")["label"]
model = DawidSkene(n_iter=100)
start = time.perf_counter()
labels = model.fit_predict(frame)
seconds = time.perf_counter() - start
accuracy = float((labels.reindex(known.index).astype(str) == known.values).mean())
print(json.dumps(dict(seconds=seconds, ratings=len(frame), accuracy=accuracy,
                      iterations=len(model.loss_history_))))
"""


def run_measured(command: list[str]) -> dict:
    """Run a measuring script; the JSON it prints last (its stderr in the error if it fails)."""
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command[:3])} ... failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _default_whole_process(answers: str, truth: str, folder: str) -> dict:
    """``pyvw-lite crowd ANSWERS --batch -p LABELS`` as a user runs it, timed from process
    start to exit (Python, imports, reading, the default's choice and fit, writing)."""
    import time

    import numpy as np
    labels = os.path.join(folder, "default_labels.csv")
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pyvw_lite", "crowd", answers, "--batch",
                           "-p", labels], capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"pyvw-lite crowd --batch failed:\n{done.stderr[-2000:]}")
    with open(labels) as handle:
        next(handle)
        found = dict(line.split(",", 2)[:2] for line in handle)
    with open(truth) as handle:
        next(handle)
        known = [line.rstrip("\n").split(",", 1) for line in handle]
    hits = [found.get(task) == label for task, label in known if task in found]
    chosen = next((line.split(": ", 1)[1].split(" ")[0] for line in done.stderr.splitlines()
                   if line.startswith("method = auto: ")), "?")
    return dict(seconds=seconds, ratings=sum(1 for _ in open(answers)) - 1,
                accuracy=float(np.mean(hits)), chosen=chosen)


def has_crowdkit(python: str) -> bool:
    try:
        probe = subprocess.run([python, "-c", "import crowdkit"], capture_output=True)
    except OSError:  # not there, or not a program
        return False
    return probe.returncode == 0


def peer_python_default() -> str | None:
    return sys.executable if has_crowdkit(sys.executable) else None


def crowd_folder_files(tasks: int, workers: int, seed: int) -> list[str]:
    """The files a crowd benchmark makes for one data set, relative to its work folder."""
    folder = f"crowd_{tasks}_{workers}_{seed}"
    return [os.path.join(folder, name) for name in ("answers.csv", "truth.csv",
                                                    "default_labels.csv")]


def crowd_bench_files(sizes, seed: int, many_workers: int = 200_000) -> list[str]:
    """The files ``bench-crowd`` makes in its work folder: no output may name one."""
    return [name for tasks, workers in [(sizes[0], many_workers)]
            + [(tasks, 2_000) for tasks in sizes]
            for name in crowd_folder_files(tasks, workers, seed)]


def crowd_dataset(workdir: str, tasks: int, workers: int, seed: int, out) -> tuple[str, str]:
    """Seeded crowd answers and their truth under ``workdir`` (made once): their two paths."""
    from ..synthetic import crowd_answers
    folder = os.path.join(workdir, f"crowd_{tasks}_{workers}_{seed}")
    answers = os.path.join(folder, "answers.csv")
    truth = os.path.join(folder, "truth.csv")
    if not os.path.exists(truth):
        os.makedirs(folder, exist_ok=True)
        out.write(f"generating {tasks:,} tasks x 5 answers, K = 5, {workers:,} workers "
                  f"(seed {seed}) ...\n")
        crowd_answers(n_tasks=tasks, n_workers=workers, seed=seed).write(answers, truth)
    return answers, truth


def run_crowd_bench(sizes=(100_000, 1_000_000), repeat: int = 3, seed: int = 12345,
                    peer_python: str | None = None, workdir: str | None = None,
                    peer_sizes=(100_000,), many_workers: int = 200_000,
                    out=sys.stdout) -> list[dict]:
    """Batch and online EM (and the peer where asked) at each size with 2,000 workers; then
    online EM at the first size with ``many_workers`` distinct workers, to show that its
    worker table (and memory) does not grow with them."""
    rows = []
    with bench_workdir(workdir, "pyvw-lite-crowd-bench-") as workdir:
        if many_workers:
            answers, truth = crowd_dataset(workdir, sizes[0], many_workers, seed, out)
            runs = [run_measured([sys.executable, "-c", OURS_RUNNER, "online", answers, truth])
                    for _ in range(repeat)]
            row = dict(runs[-1], tasks=sizes[0], method=f"online, {many_workers:,} workers",
                       seconds=statistics.median(run["seconds"] for run in runs))
            rows.append(row)
        for tasks in sizes:
            answers, truth = crowd_dataset(workdir, tasks, 2_000, seed, out)
            measured = {"default": [], "batch": [], "online": [], "peer": []}
            use_peer = peer_python is not None and tasks in peer_sizes
            for _ in range(repeat):
                measured["default"].append(_default_whole_process(  # beside the peer's fit
                    answers, truth, os.path.dirname(answers)))
                for mode in ("batch", "online"):
                    measured[mode].append(run_measured([sys.executable, "-c", OURS_RUNNER, mode, answers,
                                                truth]))
                if use_peer:
                    measured["peer"].append(run_measured([peer_python, "-c", PEER_RUNNER, answers, truth]))
            for mode, runs in measured.items():
                if not runs:
                    continue
                row = dict(runs[-1])
                row.update(tasks=tasks, method={"default": "default, whole process",
                                                "batch": "batch EM", "online": "online EM",
                                                "peer": "crowd-kit DawidSkene"}[mode],
                           seconds=statistics.median(run["seconds"] for run in runs),
                           all_seconds=[run["seconds"] for run in runs])
                rows.append(row)
        report(rows, out)
        return rows


def report(rows: list[dict], out=sys.stdout) -> None:
    out.write(f"{'tasks':>9} {'method':<28} {'fit s':>8} {'ratings/s':>12} {'accuracy':>9} "
              f"{'iters':>6} {'speed-up':>9} {'table MB':>9} {'max RSS MB':>11}\n")
    for row in rows:
        peer = next((other for other in rows if other["tasks"] == row["tasks"]
                     and other["method"].startswith("crowd-kit")), None)
        comparable = peer and row is not peer and "workers" not in row["method"]
        speedup = f"{peer['seconds'] / row['seconds']:.1f}" if comparable else "-"
        table = row.get("table_bytes")
        table = f"{table / 2**20:.1f}" if table else "-"
        rss = f"{row['max_rss_mb']:.0f}" if row.get("max_rss_mb") is not None else "-"
        out.write(f"{row['tasks']:>9,} {row['method']:<28} {row['seconds']:>8.3f} "
                  f"{row['ratings'] / row['seconds']:>12,.0f} {row['accuracy']:>9.4f} "
                  f"{row.get('iterations', '') or '':>6} {speedup:>9} {table:>9} {rss:>11}\n")
    out.write("fit s: median wall seconds of the fit alone (loading excluded; online EM's "
              "with its labelling pass by the final model, whose labels are scored, as "
              "`pyvw-lite crowd -p` writes them), except the default's row: the whole "
              "`pyvw-lite crowd --batch -p` process; speed-up = crowd-kit's fit time / ours; "
              "table MB: the hashed worker table (logits and answer statistics); max RSS: the "
              "measuring process's own peak (Linux VmHWM); '-': does not apply or not "
              "measured; 2,000 workers unless said\n")
