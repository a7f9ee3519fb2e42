"""``pyvw-lite bench-scale``: what an executor buys on this machine, against the serial executor
on the same shards (and one plain process for reference).

Learning: whole ``pyvw-lite --executor ...`` processes on a seeded rater-task file, several
passes.  Batch EM: one process per measurement that loads the answers, then times executor
start-up, shard distribution and the fit together (loading the CSV is the same for all).  Runs
are interleaved per repeat, so machine noise hits every executor alike; medians are reported.
"""
from __future__ import annotations

import json
import os
import statistics
import sys

from .bench import average_loss, bench_workdir, binary_rater_file, ours_command, timed
from .crowd_bench import crowd_dataset, crowd_folder_files, run_measured

EXECUTORS = ("serial", "processes:2", "dask-local:2")

EM_RUNNER = r"""
import json, sys, time
from pyvw_lite.io.crowd_input import read_triples
from pyvw_lite.crowd.batch import batch_em
from pyvw_lite.crowd.model import CrowdConfig
from pyvw_lite.distributed.crowd_em import sharded_batch_em
from pyvw_lite.distributed.executor import executor_from
def main():
    spec, answers, shards = sys.argv[1], sys.argv[2], int(sys.argv[3])
    data = read_triples(answers)
    config = CrowdConfig(n_labels=data.n_labels, label_names=data.label_names, worker_map="exact")
    batch_em(data, config, max_iters=2)  # load the cached kernels outside the timing
    start = time.perf_counter()
    if spec == "one process":
        result = batch_em(data, config)
    else:
        executor = executor_from(spec)
        try:
            result = sharded_batch_em(data, config, executor, shards=shards)
        finally:
            executor.close()
    seconds = time.perf_counter() - start
    print(json.dumps(dict(seconds=seconds, iterations=result.iterations,
                          objective=result.objective[-1])))
if __name__ == "__main__":
    main()
"""


def scale_bench_files(lines: int, tasks: int, seed: int) -> list[str]:
    """The files ``bench-scale`` makes in its work folder (data, caches, the shards'
    caches): no output may name one."""
    caches = ["scale.cache", "shards.cache"] + [f"shards.cache.shard{k}of2" for k in (1, 2)]
    return ([f"rt2_{lines}_{seed}.vw"] + caches if lines else []) \
        + (crowd_folder_files(tasks, 2_000, seed) if tasks else [])


def _learning(data: str, passes: int, repeat: int, workdir: str, out) -> list[dict]:
    common = ["-d", data, "--loss_function", "logistic", "--passes", str(passes),
              "--holdout_off"]
    runs = {"one process": common + ["--cache_file", "scale.cache"]}
    runs.update({spec: common + ["--executor", spec] + (["--shards", "2"] if spec == "serial"
                                                         else []) for spec in EXECUTORS})
    # as the one process reads its cache, shards can read theirs (docs/scale.md)
    runs[f"{EXECUTORS[1]} -c"] = runs[EXECUTORS[1]] + ["--cache_file", "shards.cache"]
    timed(ours_command(runs["one process"] + ["-k", "--quiet"]), workdir)  # cache, numba
    timed(ours_command(runs[f"{EXECUTORS[1]} -c"] + ["-k", "--quiet"]), workdir)
    times: dict[str, list[float]] = {name: [] for name in runs}
    losses: dict[str, str | None] = {}
    for _ in range(repeat):
        for name, argv in runs.items():
            seconds, stderr = timed(ours_command(argv), workdir)
            times[name].append(seconds)
            losses[name] = average_loss(stderr)
    return _rows("learning", times, losses, out)


def _batch_em(answers: str, repeat: int, out) -> list[dict]:
    names = ("one process",) + EXECUTORS
    times: dict[str, list[float]] = {name: [] for name in names}
    objectives: dict[str, str] = {}
    for _ in range(repeat):
        for name in names:
            result = run_measured([sys.executable, "-c", EM_RUNNER, name, answers, "2"])
            times[name].append(result["seconds"])
            objectives[name] = f"F = {result['objective']:.6f} ({result['iterations']} passes)"
    return _rows("batch EM", times, objectives, out)


def _rows(job: str, times: dict, results: dict, out) -> list[dict]:
    serial = statistics.median(times["serial"])
    rows = []
    for name, seconds in times.items():
        median = statistics.median(seconds)
        rows.append(dict(job=job, executor=name, seconds=median, runs=seconds,
                         speedup_vs_serial=serial / median, result=results.get(name)))
        out.write(f"{job:<10} {name:<14} {median:>9.3f} {serial / median:>8.2f}  "
                  f"{results.get(name)}\n")
    return rows


def run_scale_bench(lines: int = 1_000_000, tasks: int = 1_000_000, passes: int = 3,
                    repeat: int = 3, seed: int = 12345, workdir: str | None = None,
                    out=sys.stdout) -> list[dict]:
    with bench_workdir(workdir, "pyvw-lite-scale-bench-") as workdir:
        data = binary_rater_file(workdir, lines, seed, out) if lines else None
        answers, _ = crowd_dataset(workdir, tasks, 2_000, seed, out) if tasks else (None, None)
        out.write(f"{'job':<10} {'executor':<14} {'seconds':>9} {'speedup':>8}  result\n")
        rows = _learning(os.path.abspath(data), passes, repeat, workdir, out) if lines else []
        if answers:
            rows += _batch_em(answers, repeat, out)
        out.write(f"speedup = serial executor's median wall time ÷ this one's (2 shards each; "
                  f"learning: {passes} passes (no holdout) over {lines:,} lines, whole "
                  f"processes; batch EM: {tasks:,} tasks, executor start-up + fit)\n")
        return rows


def rows_json(rows: list[dict]) -> str:
    return json.dumps(rows, indent=2)
