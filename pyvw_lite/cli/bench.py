"""``pyvw-lite bench``: pyvw-lite against Vowpal Wabbit on the same seeded rater-task file.

Every scenario runs both tools as separate processes from this one, interleaved, so machine
noise hits both alike; the report gives median wall times, examples per second and the ratio
(pyvw-lite examples/s ÷ VW examples/s), and checks that both reach the same average loss.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field

from ..workflow.peer import vw_available, vw_command

@dataclass
class Scenario:
    name: str
    ours: list[str]
    peer: list[str]
    examples: int
    prepare_ours: list[str] = field(default_factory=list)
    prepare_peer: list[str] = field(default_factory=list)


@dataclass
class Result:
    scenario: str
    examples: int
    ours_seconds: list[float]
    peer_seconds: list[float]
    ours_loss: str | None
    peer_loss: str | None
    key: str = ""  # the scenario's name in SCENARIOS
    load: tuple[float, float] = (0.0, 0.0)  # 1-minute load average before and after its runs
    busy: bool = False  # the machine was not quiet (:func:`busy_machine`): no figure to record

    @property
    def ratio(self) -> float | None:
        if not self.peer_seconds:
            return None
        return statistics.median(self.peer_seconds) / statistics.median(self.ours_seconds)


def ours_command(args: list[str]) -> list[str]:
    """The command that runs pyvw-lite with ``args`` in this Python."""
    return [sys.executable, "-m", "pyvw_lite", *args]


def _peer_command(args: list[str]) -> list[str]:
    return vw_command(args)


def timed(command: list[str], cwd: str) -> tuple[float, str]:
    """Run ``command`` in ``cwd``: its wall seconds and its stderr."""
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command[:4])} ... failed ({done.returncode}):\n"
                           f"{done.stderr[-2000:]}")
    return elapsed, done.stderr


def average_loss(stderr: str) -> str | None:
    """The ``average loss`` a run's summary printed (None without one)."""
    match = re.search(r"^average loss = (.*)$", stderr, re.MULTILINE)
    return match.group(1).strip() if match else None


SCENARIOS = ("text-1", "text-100k", "text", "cache", "sft", "sft-dyad", "ratings-lrq",
             "ratings-dyad")
RATINGS_PASSES = 5
SHORT_FILES = {"text-1": 1, "text-100k": 100_000}  # the first lines of the text scenario's file

# A figure is measured only on a quiet machine: the 1-minute load average at most this much per
# core before a scenario's runs, and after them at most this plus the one process the benchmark
# itself keeps running.  Shared two-core machines drift by a fifth when busier.
QUIET_LOAD_PER_CORE = 0.25


def busy_machine(before: float, after: float, cores: int) -> bool:
    """Whether a scenario measured between load averages ``before`` and ``after`` ran on a busy
    machine (:data:`QUIET_LOAD_PER_CORE`)."""
    limit = QUIET_LOAD_PER_CORE * cores
    return before > limit or after > limit + 1.0


def scenarios(binary_data: str, multiclass_data: str, lines: int, loss: str,
              chosen: tuple[str, ...], ratings_data: str = "", ratings: int = 0
              ) -> list[Scenario]:
    common = ["-d", binary_data, "--loss_function", loss]
    # user x item ratings, passes over a cache made beforehand: --lrq um8 on both sides (VW's
    # reduction both), and pyvw-lite's exact-flow learner --dyad um --rank 8 against it
    lrq = ["-d", ratings_data, "--lrq", "um8", "--passes", str(RATINGS_PASSES), "--holdout_off"]
    # the dyadic scenarios at VW's -b 18 (--dyad's own default is 22): both sides fill one table
    dyad = ["-d", ratings_data, "--dyad", "um", "--rank", "8", "--passes", str(RATINGS_PASSES),
            "--holdout_off", "-b", "18"]
    plan = {
        "text": Scenario("binary logistic, 1 pass, text", common, common, lines),
        **{name: Scenario(f"binary logistic, 1 pass, text, {count:,} line"
                          + ("s" if count > 1 else ""),
                          ["-d", short_file(binary_data, count)] + common[2:],
                          ["-d", short_file(binary_data, count)] + common[2:], count)
           for name, count in short_counts(lines).items() if name in chosen},
        "cache": Scenario("binary logistic, 1 pass, cache",
                          common + ["--cache_file", "ours.cache"],
                          common + ["--cache_file", "vw.cache"], lines,
                          prepare_ours=common + ["--cache_file", "ours.cache", "-k"],
                          prepare_peer=common + ["--cache_file", "vw.cache", "-k"]),
        # the scoring filter tree against VW's filter tree, 5 classes, text, one pass
        "sft": Scenario("--sft 5 (VW: --ect 5), 1 pass, text",
                        ["-d", multiclass_data, "--sft", "5"],
                        ["-d", multiclass_data, "--ect", "5"], lines),
        # the dyadic scoring filter tree against VW's low-rank quadratic one-against-all
        "sft-dyad": Scenario("--sft 5 --dyad rt --rank 2 (VW: --oaa 5 --lrq rt2)",
                             ["-d", multiclass_data, "--sft", "5", "--dyad", "rt", "--rank", "2",
                              "-b", "18"],
                             ["-d", multiclass_data, "--oaa", "5", "--lrq", "rt2"], lines),
        "ratings-lrq": Scenario(f"ratings --lrq um8, {RATINGS_PASSES} passes, cache",
                                lrq + ["--cache_file", "ours.lrq.cache"],
                                lrq + ["--cache_file", "vw.lrq.cache"], ratings * RATINGS_PASSES,
                                prepare_ours=lrq[:4] + ["-k", "--cache_file", "ours.lrq.cache"],
                                prepare_peer=lrq[:4] + ["-k", "--cache_file", "vw.lrq.cache"]),
        "ratings-dyad": Scenario(f"ratings --dyad um --rank 8 (VW: --lrq um8), {RATINGS_PASSES} "
                                 "passes, cache",
                                 dyad + ["--cache_file", "ours.dyad.cache"],
                                 lrq + ["--cache_file", "vw.lrq.cache"], ratings * RATINGS_PASSES,
                                 prepare_ours=dyad[:6] + ["-b", "18", "-k", "--cache_file",
                                                          "ours.dyad.cache"],
                                 prepare_peer=lrq[:4] + ["-k", "--cache_file", "vw.lrq.cache"]),
    }
    return [plan[name] for name in chosen]


@contextmanager
def bench_workdir(workdir: str | None, prefix: str):
    """``workdir`` (kept), or a temporary directory removed when the benchmark ends."""
    own = workdir is None
    path = workdir or tempfile.mkdtemp(prefix=prefix)
    os.makedirs(path, exist_ok=True)
    try:
        yield path
    finally:
        if own:
            shutil.rmtree(path, ignore_errors=True)


CACHES = ("ours.cache", "vw.cache", "ours.lrq.cache", "vw.lrq.cache")


def bench_files(lines: int, seed: int) -> list[str]:
    """The files ``bench`` makes in its work folder (its data and caches): no output may name
    one."""
    return [f"rt2_{lines}_{seed}.vw", f"rt5_{lines}_{seed}.vw", f"ratings_{lines}_{seed}.vw",
            *(short_file(f"rt2_{lines}_{seed}.vw", count) for count in short_counts(lines).values()),
            *CACHES]


def short_counts(lines: int) -> dict[str, int]:
    """The short text scenarios' line counts (no more than the file has)."""
    return {name: min(count, lines) for name, count in SHORT_FILES.items()}


def short_file(data: str, count: int) -> str:
    """The name of the file of ``data``'s first ``count`` lines (:func:`write_short_files`)."""
    stem, suffix = os.path.splitext(data)
    return f"{stem}_first{count}{suffix}"


def write_short_files(data: str, lines: int, chosen: tuple[str, ...]) -> None:
    """The short text scenarios' files: the first lines of the binary file, made once."""
    for name, count in short_counts(lines).items():
        path = short_file(data, count)
        if name in chosen and not os.path.exists(path):
            with open(data, "rb") as source, open(path, "wb") as target:
                for _, line in zip(range(count), source):
                    target.write(line)


def binary_rater_file(workdir: str, lines: int, seed: int, out) -> str:
    """The seeded binary rater-task file of ``lines`` lines in ``workdir`` (made once)."""
    from ..synthetic import rater_task, write_vw
    data = os.path.join(workdir, f"rt2_{lines}_{seed}.vw")
    if not os.path.exists(data):
        out.write(f"generating {lines:,} binary rater-task lines (seed {seed}) ...\n")
        write_vw(data, rater_task(n_ratings=lines, classes=2, seed=seed), binary=True)
    return data


def ratings_file(workdir: str, lines: int, seed: int, out) -> tuple[str, int]:
    """The seeded user x item ratings file of about ``lines`` ratings (6,040 users and 3,700
    items, as MovieLens-1M) and its line count (made once)."""
    from ..synthetic import user_item_ratings, write_ratings
    data = os.path.join(workdir, f"ratings_{lines}_{seed}.vw")
    if not os.path.exists(data):
        out.write(f"generating {lines:,} user x item ratings (seed {seed}) ...\n")
        write_ratings(data, *user_item_ratings(n_ratings=lines, seed=seed))
    with open(data, "rb") as handle:
        return data, sum(1 for _ in handle)


def byte_compile_package() -> None:
    """Write the package's ``.pyc`` files, as an install does, so no timed run compiles Python
    source (an editable install under ``PYTHONDONTWRITEBYTECODE`` otherwise does, every run:
    ~0.1 s); a read-only package is left as it is."""
    import compileall
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        compileall.compile_dir(package, quiet=2)
    except OSError:
        pass


def run_bench(lines: int = 1_000_000, repeat: int = 3, seed: int = 12345, loss: str = "logistic",
              workdir: str | None = None, peer: bool = True, out=sys.stdout,
              chosen: tuple[str, ...] = SCENARIOS) -> list[Result]:
    from ..synthetic import rater_task, write_vw
    with bench_workdir(workdir, "pyvw-lite-bench-") as workdir:
        data = binary_rater_file(workdir, lines, seed, out)
        multiclass = os.path.join(workdir, f"rt5_{lines}_{seed}.vw")
        if {"sft", "sft-dyad"} & set(chosen) and not os.path.exists(multiclass):
            out.write(f"generating {lines:,} five-class rater-task lines (seed {seed}) ...\n")
            write_vw(multiclass, rater_task(n_ratings=lines, classes=5, seed=seed))
        ratings_data, ratings = "", 0
        if {"ratings-lrq", "ratings-dyad"} & set(chosen):
            ratings_data, ratings = ratings_file(workdir, lines, seed, out)
        use_peer = peer and vw_available()
        if peer and not use_peer:
            out.write("vowpalwabbit is not installed (pip install vowpalwabbit): "
                      "timing pyvw-lite alone\n")
        plan = scenarios(os.path.abspath(data), os.path.abspath(multiclass), lines, loss, chosen,
                         os.path.abspath(ratings_data) if ratings_data else "", ratings)
        write_short_files(os.path.abspath(data), lines, chosen)
        byte_compile_package()
        for scenario in plan:
            # warm the numba cache (and the page cache) so no timed run pays a compile
            timed(ours_command(scenario.ours + ["--quiet", "-t"]), workdir)
            if scenario.prepare_ours:
                timed(ours_command(scenario.prepare_ours + ["--quiet"]), workdir)
            if use_peer and scenario.prepare_peer:
                timed(_peer_command(scenario.prepare_peer + ["--quiet"]), workdir)
        results = []
        for key, scenario in zip(chosen, plan):
            before = os.getloadavg()[0]
            ours, theirs = [], []
            ours_loss = peer_loss = None
            for _ in range(repeat):
                seconds, stderr = timed(ours_command(scenario.ours), workdir)
                ours.append(seconds)
                ours_loss = average_loss(stderr)
                if use_peer:
                    seconds, stderr = timed(_peer_command(scenario.peer), workdir)
                    theirs.append(seconds)
                    peer_loss = average_loss(stderr)
            after = os.getloadavg()[0]
            results.append(Result(scenario.name, scenario.examples, ours, theirs, ours_loss,
                                  peer_loss, key, (before, after),
                                  busy_machine(before, after, os.cpu_count() or 1)))
        report(results, out)
        return results


def report(results: list[Result], out=sys.stdout) -> None:
    out.write(f"{'scenario':<48} {'pyvw-lite s':>11} {'VW s':>8} {'pyvw-lite ex/s':>15} "
              f"{'VW ex/s':>11} {'ratio':>6}  average loss (ours / VW)\n")
    for r in results:
        name = r.scenario + (" (busy)" if r.busy else "")
        ours = statistics.median(r.ours_seconds)
        peer = statistics.median(r.peer_seconds) if r.peer_seconds else None
        loss = r.ours_loss or "-"
        if peer:
            out.write(f"{name:<48} {ours:>11.3f} {peer:>8.3f} {r.examples / ours:>15,.0f} "
                      f"{r.examples / peer:>11,.0f} {r.ratio:>6.2f}  {loss} / "
                      f"{r.peer_loss or '-'}\n")
        else:  # VW not timed: its cells stay empty
            out.write(f"{name:<48} {ours:>11.3f} {'-':>8} {r.examples / ours:>15,.0f} "
                      f"{'-':>11} {'-':>6}  {loss}\n")
    out.write("ratio = pyvw-lite examples/s ÷ VW examples/s (medians, runs interleaved, "
              "whole processes)\n")
    busy = [r for r in results if r.busy]
    for r in busy:
        out.write(f"busy: {r.scenario}: load average {r.load[0]:.2f} before, {r.load[1]:.2f} "
                  "after\n")
    if busy:
        out.write(f"busy rows were measured above {QUIET_LOAD_PER_CORE} load per core (plus the "
                  "benchmark's own process after): not figures to publish\n")


def results_json(results: list[Result]) -> str:
    return json.dumps([{**asdict(r), "ratio": r.ratio} for r in results], indent=2)
