"""Label accuracy on every shared crowd dataset: pyvw-lite's batch and online EM and baselines
against crowd-kit's DawidSkene, MajorityVote and OneCoinDawidSkene, side by side in one run.

    python tests/accuracy/crowd_vs_crowdkit.py [--peer-python PY|none] [--passes 1,10] [--spec]
                                               [--datasets DIR] [--json OUT]

crowd-kit runs in a child process of ``--peer-python`` (default: this Python, if it has
crowd-kit; ``none``: not at all).  Online EM runs each of ``--passes``; ``--spec`` adds batch EM
under SPEC §E.1's settings where the defaults depart from them (crowd/defaults.py).  Accuracy
is over the tasks that have a truth label and at least one answer.

A measurement, not a test: it asserts nothing and pytest does not collect it; it prints its
table (and writes its JSON record where it says so). The asserted figures live in tests/test_*.py.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from crowd_shared import SHARED as DEFAULT_DATASETS  # noqa: E402  (the mirror, else the fetched sets)

PEER = r"""
import json, sys, time, warnings
warnings.filterwarnings("ignore")
import pandas as pd
from crowdkit.aggregation import DawidSkene, MajorityVote, OneCoinDawidSkene
folder = sys.argv[1]
answers = pd.read_csv(folder + "/answers.csv", dtype=str, keep_default_na=False)
truth = pd.read_csv(folder + "/truth.csv", dtype=str, keep_default_na=False)
truth = truth.drop_duplicates("task").set_index("task")["label"]
truth = truth[truth.index.isin(answers.task.unique())]
out = {}
for name, model in (("DS", DawidSkene(n_iter=100)), ("MV", MajorityVote()),
                    ("OneCoinDS", OneCoinDawidSkene(n_iter=100))):
    start = time.perf_counter()
    labels = model.fit_predict(answers)
    out[name] = dict(accuracy=float((labels.reindex(truth.index).astype(str) == truth.values).mean()),
                     seconds=time.perf_counter() - start)
print(json.dumps(out))
"""


# batch EM under SPEC §E.1's settings, one departure of the defaults at a time
SPEC = {"SPEC worker prior": dict(sigma_alpha=1.0, nu=-1.0, sigma_mu=1.0),
        "fixed class prior": dict(learn_priorz=False),
        "difficulty model": dict(sigma_b=1.0)}


def ours(folder: Path, passes=(1, 10), spec: bool = False) -> dict:
    from pyvw_lite.crowd import baselines
    from pyvw_lite.crowd.batch import batch_em
    from pyvw_lite.crowd.model import CrowdConfig, CrowdModel
    from pyvw_lite.crowd.online import run_online
    from pyvw_lite.io.crowd_input import label_index, read_gold, read_triples
    data = read_triples(str(folder / "answers.csv"))
    index = label_index(data.label_names)
    position = {name: i for i, name in enumerate(data.task_names.tolist())}
    pairs = [(position[t], index[l]) for t, (l, _) in read_gold(str(folder / "truth.csv")).items()
             if t in position]
    items = np.array([p[0] for p in pairs])
    expected = np.array([p[1] for p in pairs])

    def score(q):
        return float((q.argmax(axis=1)[items] == expected).mean())

    out = {}
    start = time.perf_counter()
    result = batch_em(data, CrowdConfig(n_labels=data.n_labels, label_names=data.label_names,
                                        worker_map="exact"))
    out["batch EM"] = dict(accuracy=score(result.q), seconds=time.perf_counter() - start)
    for name, settings in (SPEC.items() if spec else ()):
        start = time.perf_counter()
        result = batch_em(data, CrowdConfig(n_labels=data.n_labels, label_names=data.label_names,
                                            worker_map="exact", **settings))
        out[name] = dict(accuracy=score(result.q), seconds=time.perf_counter() - start)
    for passes in passes:
        start = time.perf_counter()
        model = CrowdModel(CrowdConfig(n_labels=data.n_labels, label_names=data.label_names))
        run_online(data, model, passes=passes)
        final = run_online(data, model, test_only=True)
        out[f"online EM x{passes}"] = dict(accuracy=score(final.q),
                                           seconds=time.perf_counter() - start)
    out["MV"] = dict(accuracy=score(baselines.majority_vote(data)), seconds=0.0)
    out["one-coin"] = dict(accuracy=score(baselines.one_coin_dawid_skene(data)[0]), seconds=0.0)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default=str(DEFAULT_DATASETS))
    parser.add_argument("--peer-python", default=None)
    parser.add_argument("--passes", default="1,10", help="online EM's pass counts")
    parser.add_argument("--spec", action="store_true", help="batch EM under SPEC's settings too")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    passes = [int(p) for p in args.passes.split(",")]
    peer = args.peer_python
    if peer == "none":
        peer = None
    elif peer is None and subprocess.run([sys.executable, "-c", "import crowdkit"],
                                       capture_output=True).returncode == 0:
        peer = sys.executable
    folders = sorted(path for path in Path(args.datasets).iterdir() if (path / "truth.csv").exists())
    columns = (["batch EM"] + [f"online EM x{p}" for p in passes] + ["MV", "one-coin"]
               + (list(SPEC) if args.spec else []))
    peer_columns = ["DS", "MV", "OneCoinDS"] if peer else []
    print("| dataset | " + " | ".join(columns) + " | "
          + " | ".join(f"crowd-kit {name}" for name in peer_columns) + " |")
    print("|---" * (1 + len(columns) + len(peer_columns)) + "|")
    records = []
    for folder in folders:
        mine = ours(folder, passes, args.spec)
        theirs = {}
        if peer:
            done = subprocess.run([peer, "-c", PEER, str(folder)], capture_output=True, text=True)
            theirs = json.loads(done.stdout) if done.returncode == 0 else {}
        records.append(dict(dataset=folder.name, ours=mine, crowdkit=theirs))
        cells = [f"{mine[name]['accuracy']:.4f}" for name in columns]
        cells += [f"{theirs[name]['accuracy']:.4f}" if name in theirs else "err"
                  for name in peer_columns]
        print(f"| {folder.name} | " + " | ".join(cells) + " |", flush=True)
    means = {name: np.mean([r["ours"][name]["accuracy"] for r in records]) for name in columns}
    line = [f"{means[name]:.4f}" for name in columns]
    if peer:
        peer_means = {name: np.mean([r["crowdkit"][name]["accuracy"] for r in records
                                     if name in r["crowdkit"]]) for name in peer_columns}
        line += [f"{peer_means[name]:.4f}" for name in peer_columns]
        wins = sum(r["ours"]["batch EM"]["accuracy"] >= r["crowdkit"]["DS"]["accuracy"] - 1e-12
                   for r in records if "DS" in r["crowdkit"])
        print("| **mean** | " + " | ".join(line) + " |")
        print(f"\nbatch EM at or above crowd-kit DawidSkene on {wins} of {len(records)} datasets")
    else:
        print("| **mean** | " + " | ".join(line) + " |")
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
