"""How often online EM takes its M-step: chosen by leave one source out on the shared crowd sets.

    python tests/accuracy/crowd_online_schedule.py [--fractions 0,0.1,0.25,1] [--passes 3,10]
                                                  [--datasets DIR] [--cache OUT.json]

Online EM (crowd/online.py) gathers each item's posterior into the statistics; the M-step runs
once per block of items, a block being ``fraction`` of the file's items (0: every item, the
incremental EM of Neal & Hinton; 1: once a pass, which is batch EM).  Each candidate runs at
each pass count on every set; the gap is online minus batch EM's accuracy over the truth items.
Leave one source out: the sets of one source group (the shared folder's README: zencrowd, snow,
geirhos and cubam hold several sets, every other set is its own group) are held out together,
the fraction with the smallest mean |gap| at the largest pass count over the other groups (each
group's mean, then their mean) is chosen, and the held-out group is scored with it.

A measurement, not a test: it asserts nothing and pytest does not collect it.  ``--cache``
keeps every accuracy measured, so an interrupted run resumes.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from crowd_shared import SHARED as DEFAULT_DATASETS  # noqa: E402  (the mirror, else the fetched sets)
GROUPS = {"zencrowd": ("act_ZenCrowd_all", "act_ZenCrowd_in", "act_ZenCrowd_us"),
          "snow": ("snow_rte", "snow_temp", "snow_wsd"),
          "geirhos": ("geirhos_sketch", "geirhos_stylized"),
          "cubam": ("cubam_bluebirds", "cubam_ducks")}


def group_of(name: str) -> str:
    return next((group for group, names in GROUPS.items() if name in names), name)


def measure(folder: Path, fractions, passes, cache: dict, save) -> None:
    from pyvw_lite.crowd import online
    from pyvw_lite.crowd.batch import batch_em
    from pyvw_lite.crowd.model import CrowdConfig, CrowdModel
    from pyvw_lite.io.crowd_input import known_labels, read_answers, read_gold
    data = read_answers(str(folder / "answers.csv"))
    known = known_labels(data, read_gold(str(folder / "truth.csv")), "truth")
    scored = known >= 0

    def accuracy(q: np.ndarray) -> float:
        return float((q.argmax(axis=1)[scored] == known[scored]).mean())

    name = folder.name
    if f"{name}|batch" not in cache:
        config = CrowdConfig(n_labels=data.n_labels, label_names=data.label_names,
                             worker_map="exact")
        cache[f"{name}|batch"] = accuracy(batch_em(data, config).q)
        save()
    for fraction in fractions:
        for count in passes:
            key = f"{name}|{fraction}|{count}"
            if key in cache:
                continue
            model = CrowdModel(CrowdConfig(n_labels=data.n_labels, label_names=data.label_names))
            online.run_online(data, model, passes=count, block_fraction=fraction)
            cache[key] = accuracy(online.run_online(data, model, test_only=True).q)
            save()


def gap(cache: dict, name: str, fraction: float, count: int) -> float:
    return cache[f"{name}|{fraction}|{count}"] - cache[f"{name}|batch"]


def mean_by_group(values: dict[str, float]) -> float:
    groups: dict[str, list[float]] = {}
    for name, value in values.items():
        groups.setdefault(group_of(name), []).append(value)
    return statistics.mean(statistics.mean(v) for v in groups.values())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fractions", default="0,0.1,0.25,1")
    parser.add_argument("--passes", default="3,10")
    parser.add_argument("--datasets", default=str(DEFAULT_DATASETS))
    parser.add_argument("--cache", default=None, help="JSON of the accuracies measured so far")
    args = parser.parse_args()
    fractions = [float(x) for x in args.fractions.split(",")]
    passes = [int(x) for x in args.passes.split(",")]
    folder = Path(args.datasets)
    if not folder.is_dir():
        print(f"no datasets at {folder}", file=sys.stderr)
        return 1
    names = sorted(p.name for p in folder.iterdir() if (p / "answers.csv").is_file())
    cache_path = Path(args.cache) if args.cache else None
    cache = json.loads(cache_path.read_text()) if cache_path and cache_path.exists() else {}

    def save():
        if cache_path:
            cache_path.write_text(json.dumps(cache, indent=0, sort_keys=True))

    for name in names:
        measure(folder / name, fractions, passes, cache, save)
        print(f"measured {name}", file=sys.stderr, flush=True)
    last = passes[-1]
    groups = sorted({group_of(n) for n in names})
    print("| held-out source | sets | chosen | " + " | ".join(
        f"{f:g} x{c}" for c in passes for f in fractions)
          + "".join(f" | chosen x{c}" for c in passes) + " |")
    print("|---" * (3 + len(passes) * (len(fractions) + 1)) + "|")
    picked = {}
    for held in groups:
        inside = [n for n in names if group_of(n) == held]
        others = [n for n in names if group_of(n) != held]
        chosen = min(fractions, key=lambda f: mean_by_group(
            {n: abs(gap(cache, n, f, last)) for n in others}))
        picked[held] = chosen
        cells = [f"{statistics.mean(abs(gap(cache, n, f, c)) for n in inside):.4f}"
                 for c in passes for f in fractions]
        own = [f"{statistics.mean(abs(gap(cache, n, chosen, c)) for n in inside):.4f}"
               for c in passes]
        print(f"| {held} | {len(inside)} | {chosen:g} | " + " | ".join(cells + own) + " |")
    print()
    print("| set | batch EM | " + " | ".join(f"{f:g} x{c}" for c in passes for f in fractions)
          + " |")
    print("|---" * (2 + len(passes) * len(fractions)) + "|")
    for name in names:
        print(f"| {name} | {cache[f'{name}|batch']:.4f} | " + " | ".join(
            f"{gap(cache, name, f, c):+.4f}" for c in passes for f in fractions) + " |")
    for fraction in fractions:
        far = [n for n in names if abs(gap(cache, n, fraction, last)) > 0.01]
        print(f"fraction {fraction:g}: x{last} more than 0.01 from batch EM on {len(far)} sets"
              + (f" ({', '.join(far)})" if far else ""))
    counts = {f: list(picked.values()).count(f) for f in fractions}
    print("chosen in folds: " + ", ".join(f"{f:g}: {c}" for f, c in counts.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
