"""``pyvw-lite experiment CONFIG``: the seed's rater-task experiment from a TOML file.

Crowd answers become rater-task lines (shuffled, seeded), are split into train and test (15/16
and 1/16 by default, SPEC §G), and every model of the config is trained on the train lines and
scored on the test lines: 0/1 loss with a 95% Wilson interval.  Every model is also compared
with the baseline (``baseline = "linear"`` by default, when a model has that name) on the same
test examples: the paired difference of 0/1 losses with its 95% interval and the exact McNemar
p-value, which tells a real difference from test-set noise far more sharply than two
overlapping intervals do.  ``best constant`` predicts the
most frequent training label.  Models given in ``[[peer]]`` run under Vowpal Wabbit when the
``vowpalwabbit`` package is installed, in the same run, with only the VW options on
``peer.py``'s list (a config is data: docs/security.md).  The table is printed; a JSON record
and, with matplotlib installed, a PNG bar chart with error bars are written next to the data.

With ``task = "regression"`` (ratings, any numeric label) every model is scored by its test MSE
with a 95% interval instead, ``best constant`` predicts the training mean, and the comparison
with the baseline is the paired difference of squared errors with its interval and a paired
z-test's p-value.

A config::

    [experiment]
    answers = "datasets/act_MS/answers.csv"   # task,worker,label; or data = "lines.vw"
    test_fraction = 0.0625
    seed = 0
    passes = 5
    common = "--loss_function hinge --holdout_off -b 22"

    [[models]]
    name = "best constant"
    constant = true

    [[models]]
    name = "dyadic k=1"
    args = "--sft {K} --dyad rt --rank 1"     # {K}: the number of labels
"""
from __future__ import annotations

import contextlib
import io
import json
import math
import os
import re
import shlex
import stat
import subprocess
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, field

import numpy as np

from ..io.atomic import atomic_write, check_paths
from ..io.plotting import plain_text
from ..options import FILES_AND_EXECUTOR, OptionError, parse_argv
from .convert import crowd_to_vw
from .evaluate import (RegressionEvaluation, evaluate_predictions, mean_interval,
                       paired_difference, wilson_interval)
from .peer import PeerArgsError, check_peer_args, peer_memory, vw_available, vw_command
from .split import split_file

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

class ConfigError(ValueError):
    """An unusable experiment config; the message names the file and the key."""


@dataclass
class ModelResult:
    name: str
    tool: str  # pyvw-lite | VW | -
    args: str
    test_examples: int
    errors: int
    loss: float
    low: float
    high: float
    seconds: float
    versus: dict | None = None  # PairedDifference against the baseline, as a dict


@dataclass
class ExperimentResult:
    name: str
    config: str
    labels: list[str]
    split: dict
    results: list[ModelResult] = field(default_factory=list)
    baseline: str | None = None
    metric: str = "test 0/1 loss"

    def table(self) -> str:
        width = max(12, max(len(r.name) for r in self.results) + 2)
        paired = f"minus {self.baseline}, paired 95%" if self.baseline else ""
        span = max(len(paired), 28)
        test = "McNemar p" if self.metric == "test 0/1 loss" else "paired p"
        lines = [f"{'model':<{width}} {'tool':<9} {self.metric:>13} {'95% interval':>19} "
                 f"{'seconds':>8}" + (f"  {paired:<{span}} {test:>9}" if paired else "")]
        for r in self.results:
            line = (f"{r.name:<{width}} {r.tool:<9} {r.loss:>13.4f} "
                    f"{f'{r.low:.4f} .. {r.high:.4f}':>19} {r.seconds:>8.2f}")
            if paired and r.versus and r.name != self.baseline:
                v = r.versus
                cell = f"{v['difference']:+.4f} ({v['low']:+.4f} .. {v['high']:+.4f})"
                line += f"  {cell:<{span}} {v['p_value']:>9.2g}"
            lines.append(line)
        return "\n".join(lines) + "\n"


# The keys a config may hold, with their types; anything else is a typo and refused.
EXPERIMENT_KEYS = {"name": str, "answers": str, "data": str, "test_fraction": (int, float),
                   "seed": int, "passes": int, "common": str, "baseline": str, "task": str}
TASKS = ("classification", "regression")
MODEL_KEYS = {"name": str, "args": str, "constant": bool}


def _check_keys(where: str, table: dict, allowed: dict) -> None:
    for key, value in table.items():
        if key not in allowed:
            raise ConfigError(f"{where}: unknown key {key!r} (known: {', '.join(allowed)})")
        wanted = allowed[key]
        if not isinstance(value, wanted) or isinstance(value, bool) and wanted is not bool:
            kinds = " or ".join(kind.__name__ for kind in
                                (wanted if isinstance(wanted, tuple) else (wanted,)))
            raise ConfigError(f"{where}: {key} = {value!r} should be {kinds}")


def _split_args(where: str, text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError as exc:
        raise ConfigError(f"{where}: cannot split {text!r} into options ({exc})") from None


# A config is data (docs/security.md): the experiment names every file a run reads and writes,
# inside its work directory, and the command line alone may choose an executor.  Our options
# that name a file or an executor are refused inside a config; a [[peer]] gets only the VW
# options on peer.py's list.
CONFIG_REFUSED = FILES_AND_EXECUTOR + ("kill_cache", "shards", "averaging")


def _refuse_ours(where: str, argv: list[str]) -> None:
    """Our options must parse, and none may name a file or an executor."""
    try:
        options = parse_argv(argv)
    except OptionError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    refused = sorted(name for name in options.given if name in CONFIG_REFUSED)
    if refused:
        what = "a data file" if refused[0] == "data" else f"--{refused[0]}"
        raise ConfigError(f"{where}: {what} may not be given in a config (the experiment "
                          "names every file in its work directory; an executor comes from "
                          "the command line)")


def _refuse_peer(where: str, argv: list[str]) -> None:
    try:
        check_peer_args(argv)
    except PeerArgsError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _with_labels(where: str, text: str, labels: int) -> str:
    """``text`` with ``{K}`` (exactly) replaced by the number of labels.  str.format is not used:
    a format spec such as ``{K:>2000000000}`` would build a string of any size."""
    for match in re.finditer(r"\{[^{}]*\}?|\}", text):
        if match.group() != "{K}":
            raise ConfigError(f"{where}: args = {text!r}: the only placeholder is {{K}} (the "
                              f"number of labels, written exactly so), not {match.group()}")
    return text.replace("{K}", str(labels))


def _check_model_args(where: str, text: str, ours: bool, common: list[str]) -> None:
    """``{K}`` is the only placeholder; our own models' options must parse and name no file or
    executor; a peer's, with ``common`` before them, must be on the peer's list."""
    argv = common + _split_args(where, _with_labels(where, text, 2))
    if ours:
        _refuse_ours(where, argv)
    else:
        _refuse_peer(where, argv)


def _regular_file(path: str, where: str = "") -> None:
    """A config, and a file it names, is read whole: a FIFO or a device could be endless or
    block forever (/dev/zero, /dev/stdin), and a folder is no data."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise ConfigError(f"{where}{': ' if where else ''}{path}: {exc.strerror}") from None
    if not stat.S_ISREG(mode):
        kind = ("a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode)
                else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a socket")
        raise ConfigError(f"{where}{': ' if where else ''}{path} is {kind}, not a regular file")
    if os.path.realpath(path).startswith(("/proc/", "/sys/")):  # "regular", yet endless
        raise ConfigError(f"{where}{': ' if where else ''}{path} is a kernel file "
                          "(/proc, /sys), not data")


def _check_name(where: str, name: str) -> None:
    """An experiment's name becomes a folder under experiments/: a plain name, no path."""
    if not name or name in (".", "..") or any(c in name for c in "/\\\0") \
            or name != name.strip() or name.startswith("-"):
        raise ConfigError(f"{where}: name = {name!r} must be a plain name (no folders, no "
                          "'..'): it names the folder experiments/NAME")


def load_config(path: str) -> dict:
    """The config, checked whole before any work starts: every error names the file and key."""
    _regular_file(path)
    try:
        with open(path, "rb") as handle:
            config = tomllib.load(handle)
    except OSError as exc:
        raise ConfigError(f"{path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from None
    except (RecursionError, ValueError) as exc:  # [[[[...]]]]; an integer of 5,000 digits
        reason = "nested too deeply" if isinstance(exc, RecursionError) else exc
        raise ConfigError(f"{path}: not a usable config ({reason})") from None
    for key in config:
        if key not in ("experiment", "models", "peer"):
            raise ConfigError(f"{path}: unknown table [{key}] (known: [experiment], [[models]], "
                              "[[peer]])")
    experiment = config.get("experiment")
    if not isinstance(experiment, dict):
        raise ConfigError(f"{path}: missing [experiment] table")
    _check_keys(f"{path}: [experiment]", experiment, EXPERIMENT_KEYS)
    if not ("answers" in experiment) ^ ("data" in experiment):
        raise ConfigError(f"{path}: [experiment] needs exactly one of answers = (crowd triples) "
                          "or data = (VW lines)")
    if not 0.0 < experiment.get("test_fraction", 0.5) < 1.0:
        raise ConfigError(f"{path}: [experiment] test_fraction = {experiment['test_fraction']} "
                          "must lie strictly between 0 and 1")
    if experiment.get("seed", 0) < 0:  # numpy's generators take seeds of 0 and up
        raise ConfigError(f"{path}: [experiment] seed = {experiment['seed']} must be 0 or "
                          "more")
    if experiment.get("passes", 1) < 1:
        raise ConfigError(f"{path}: [experiment] passes = {experiment['passes']} must be at "
                          "least 1")
    common = _split_args(f"{path}: [experiment] common", experiment.get("common", ""))
    _refuse_ours(f"{path}: [experiment] common", common)
    if config.get("peer"):
        _refuse_peer(f"{path}: [experiment] common (given to the [[peer]] models too)", common)
    if "name" in experiment:
        _check_name(f"{path}: [experiment]", experiment["name"])
    names = set()
    for table in ("models", "peer"):
        models = config.get(table, [])
        if not isinstance(models, list):
            raise ConfigError(f"{path}: [{table}] must be an array of tables: write "
                              f"[[{table}]] before each model")
        for position, model in enumerate(models, start=1):
            where = f"{path}: [[{table}]] {position}"
            _check_keys(where, model, MODEL_KEYS)
            if "name" not in model:
                raise ConfigError(f"{where}: needs name =")
            if model["name"] in names:
                raise ConfigError(f"{where}: a second model named {model['name']!r} (the table "
                                  "and the comparisons need one name per model)")
            names.add(model["name"])
            if model.get("constant") and table == "models":
                continue
            if "args" not in model:
                raise ConfigError(f"{where}: needs args ="
                                  + (" (or constant = true)" if table == "models" else ""))
            _check_model_args(where, model["args"], table == "models", common)
    if not config.get("models"):
        raise ConfigError(f"{path}: no [[models]]")
    if experiment.get("baseline", "linear") not in names and "baseline" in experiment:
        raise ConfigError(f"{path}: [experiment] baseline = {experiment['baseline']!r} names no "
                          f"model (models: {', '.join(sorted(names))})")
    return config


def _resolve(base: str, path: str, data_root: str | None = None) -> str:
    """A config's data path: under ``data_root`` (``--data-root``) when given, else relative to
    the working directory, the config's folder or the folder above it (``configs/x.toml``
    naming ``datasets/...`` of the same project).  A path found nowhere is a ConfigError that
    names every place tried."""
    if os.path.isabs(path):
        if os.path.exists(path):
            return path
        raise ConfigError(f"{base}: {path}: no such file")
    folder = os.path.dirname(os.path.abspath(base))
    roots = list(dict.fromkeys(([os.path.abspath(data_root)] if data_root else [])
                               + [os.getcwd(), folder, os.path.dirname(folder)]))
    for root in roots:
        candidate = os.path.join(root, path)
        if os.path.exists(candidate):
            return candidate if root != os.getcwd() else path
    tried = ", ".join(os.path.normpath(os.path.join(root, path)) for root in roots)
    raise ConfigError(f"{base}: {path}: no such file (a relative data path is looked up under "
                      f"--data-root, the working directory, the config's folder and the folder "
                      f"above it; tried {tried}); give --data-root DIR for data kept elsewhere")


def _labels_of(path: str) -> list[str]:
    labels = []
    with open(path, encoding="utf-8") as handle:
        try:
            for line in handle:
                fields = line.split()
                if fields and not fields[0].startswith("|"):
                    labels.append(fields[0].split(":", 1)[0])
        except UnicodeDecodeError:
            raise ConfigError(f"{path}: not UTF-8 text (an experiment's data is plain VW "
                              "text; decompress a .gz first)") from None
    return labels


class _ModelFailed(Exception):
    """A model's run failed; the message is the last line it printed."""


def _last_line(text: str) -> str:
    """The last line a failed run printed, without the name of a traceback's exception."""
    lines = [" ".join(line.split()) for line in text.splitlines() if line.strip()]
    if not lines:
        return "no message"
    kind, colon, message = lines[-1].partition(": ")
    return message if colon and kind.isidentifier() and kind.endswith("Error") else lines[-1]


def _run_ours(argv: list[str]) -> None:
    from ..workspace import Workspace
    sink = io.StringIO()
    with contextlib.redirect_stderr(sink):
        code = Workspace(argv).run()
    if code:
        raise _ModelFailed(f"pyvw-lite failed: {_last_line(sink.getvalue())}")


def _run_peer(argv: list[str]) -> None:
    done = subprocess.run(vw_command(argv, memory=peer_memory()), stdin=subprocess.DEVNULL,
                          capture_output=True, text=True)
    if done.returncode:
        line = _last_line(done.stderr)
        raise _ModelFailed(("out of memory in VW: " if "allocat" in line else "VW failed: ")
                           + line)


def run_experiment(config_path: str, workdir: str | None = None, with_peer: bool = True,
                   out=None, plot: bool = True, data_root: str | None = None
                   ) -> ExperimentResult:
    out = out or sys.stdout  # looked up now: a redirected stdout is the one in force
    if data_root is not None and not os.path.isdir(data_root):
        raise ConfigError(f"--data-root {data_root}: no such directory")
    config = load_config(config_path)
    setup = config["experiment"]
    name = setup.get("name", os.path.splitext(os.path.basename(config_path))[0])
    workdir = workdir or os.path.join("experiments", name)
    seed = int(setup.get("seed", 0))
    all_lines = os.path.join(workdir, "all.vw")
    key = "answers" if "answers" in setup else "data"
    source = _resolve(config_path, setup[key], data_root)
    _regular_file(source, f"{config_path}: [experiment] {key}")
    os.makedirs(workdir, exist_ok=True)
    outputs = ["all.vw", "labels.json", "train.vw", "test.vw", "results.json", "results.png"]
    outputs += [f"model{k}{end}" for k in range(len(config["models"]) + len(config.get("peer", [])))
                for end in (".cache", ".vwcache", ".model", ".pred")]
    try:  # the data may live anywhere; what the run writes stays in the work directory
        check_paths([(key, source), ("config", config_path)],
                    [(output, os.path.join(workdir, output)) for output in outputs])
    except ValueError as exc:
        raise ConfigError(f"{config_path}: {exc}") from None
    for output in outputs:  # VW opens its -p, -f and cache by name: a planted link would lead
        path = os.path.join(workdir, output)  # it out of the work directory
        if os.path.islink(path):
            os.unlink(path)
    if "answers" in setup:
        report = crowd_to_vw(source, all_lines,
                             os.path.join(workdir, "labels.json"), shuffle_seed=seed)
        labels = report.labels
    else:
        all_lines = source
        labels = sorted(set(_labels_of(all_lines)), key=lambda text: (len(text), text))
    K = len(labels)
    train, test = os.path.join(workdir, "train.vw"), os.path.join(workdir, "test.vw")
    split = split_file(all_lines, train, test, float(setup.get("test_fraction", 1 / 16)), seed)
    if split.train_lines == 0 or split.test_lines == 0:
        raise ConfigError(f"{config_path}: the split left {split.train_lines} train and "
                          f"{split.test_lines} test lines; the data needs more lines (or another "
                          "test_fraction or seed)")
    task = setup.get("task", "classification")
    if task not in TASKS:
        raise ConfigError(f"{config_path}: [experiment] task = {task!r}: choose "
                          + " or ".join(map(repr, TASKS)))
    regression = task == "regression"
    out.write(f"{name}: {split.train_lines} train / {split.test_lines} test lines"
              + ("" if regression else f", K = {K}")
              + "".join(f"{'; ' if k == 0 else ', '}test {what} seen in training {seen}/{total}"
                        for k, (what, seen, total) in enumerate(split.overlaps())) + "\n")
    result = ExperimentResult(name=name, config=config_path, labels=labels, split=asdict(split),
                              metric="test MSE" if regression else "test 0/1 loss")
    passes = int(setup.get("passes", 1))
    common = shlex.split(setup.get("common", ""))
    test_labels = _labels_of(test)
    peers = config.get("peer", []) if with_peer and config.get("peer") else []
    if peers and not vw_available():
        out.write("vowpalwabbit is not installed: the [[peer]] models are skipped\n")
        peers = []
    plan = [(model, "pyvw-lite") for model in config["models"]] + [(m, "VW") for m in peers]
    names = [model["name"] for model, _ in plan]
    baseline = setup.get("baseline", "linear" if "linear" in names else None)
    if baseline is not None and baseline not in names:
        raise ConfigError(f"{config_path}: baseline = {baseline!r} names no model "
                          f"(models: {', '.join(names)})")
    result.baseline = baseline
    hits = {}
    from ..jit import compile_seconds
    for position, (model, tool) in enumerate(plan):
        started = time.perf_counter()
        compiled_before = compile_seconds()
        if model.get("constant") and regression:  # the training mean, best for squared error
            mean = float(np.mean([_number(label, train) for label in _labels_of(train)]))
            hits[model["name"]] = np.array([mean - _number(label, test)
                                            for label in test_labels])
            args, tool = f"predicts {mean:g}", "-"
        elif model.get("constant"):
            constant = Counter(_labels_of(train)).most_common(1)[0][0]
            hits[model["name"]] = np.array([label == constant for label in test_labels])
            errors = int(np.count_nonzero(~hits[model["name"]]))
            n = len(test_labels)
            args, tool = f"predicts {constant}", "-"
        else:
            args = _with_labels(config_path, model["args"], K)
            stem = os.path.join(workdir, f"model{position}")
            cache = stem + (".vwcache" if tool == "VW" else ".cache")
            train_argv = (["-d", train, "--passes", str(passes), "-c", "-k", "--cache_file", cache,
                           "-f", stem + ".model", "--quiet"] + common + shlex.split(args))
            test_argv = ["-d", test, "-t", "-i", stem + ".model", "-p", stem + ".pred", "--quiet"]
            runner = _run_peer if tool == "VW" else _run_ours
            try:
                runner(train_argv)
                runner(test_argv)
            except MemoryError as exc:  # one line naming the model, as the command line's
                raise ConfigError(f"{config_path}: model {model['name']!r}: out of memory "
                                  f"({str(exc) or 'an allocation failed'}; the weight table halves "
                                  "with each bit less of -b)") from None
            except (_ModelFailed, ValueError) as exc:
                raise ConfigError(f"{config_path}: model {model['name']!r}: {exc}") from None
            evaluation = evaluate_predictions(stem + ".pred", test)
            if regression != isinstance(evaluation, RegressionEvaluation):
                raise ConfigError(f"{config_path}: model {model['name']!r} predicts "
                                  + ("classes; task = 'regression' scores numbers" if regression
                                     else "numbers; give task = 'regression' to score them"))
            if regression:
                hits[model["name"]] = evaluation.errors
            else:
                errors, n = evaluation.errors, evaluation.n
                hits[model["name"]] = evaluation.hits
        seconds = time.perf_counter() - started - (compile_seconds() - compiled_before)
        if regression:  # hits holds each test example's error (prediction minus label)
            squared = hits[model["name"]] ** 2
            loss, low, high = mean_interval(squared)
            result.results.append(ModelResult(name=model["name"], tool=tool, args=args,
                                              test_examples=int(squared.size), errors=0,
                                              loss=loss, low=low, high=high, seconds=seconds))
            continue
        low, high = wilson_interval(errors, n)
        result.results.append(ModelResult(name=model["name"], tool=tool, args=args,
                                          test_examples=n, errors=int(errors), loss=errors / n,
                                          low=low, high=high, seconds=seconds))
    if baseline is not None:
        for r in result.results:
            r.versus = (_squared_error_difference(hits[baseline], hits[r.name]) if regression
                        else asdict(paired_difference(hits[baseline], hits[r.name])))
    out.write(result.table())
    record = os.path.join(workdir, "results.json")
    with atomic_write(record, binary=False) as handle:  # never through a planted symlink
        json.dump(asdict(result), handle, indent=1)
    out.write(f"record: {record}\n")
    if plot:
        picture = plot_results(result, os.path.join(workdir, "results.png"))
        out.write(f"plot: {picture}\n" if picture else
                  "plot: skipped (pip install 'pyvw-lite[plot]' for matplotlib)\n")
    return result


def _number(label: str, path: str) -> float:
    try:
        return float(label)
    except ValueError:
        raise ConfigError(f"{path}: label {label!r} is not a number (task = 'regression')") \
            from None


def _squared_error_difference(base: np.ndarray, other: np.ndarray) -> dict:
    """Model B's squared error minus the baseline's on the same test examples: the mean, its
    paired 95% interval and the two-sided p-value of a paired z-test."""
    difference = other ** 2 - base ** 2
    mean, low, high = mean_interval(difference)
    spread = float(difference.std(ddof=1)) if difference.size > 1 else 0.0
    if spread == 0.0:
        p_value = 1.0 if mean == 0.0 else 0.0
    else:
        z = abs(mean) / (spread / math.sqrt(difference.size))
        p_value = math.erfc(z / math.sqrt(2.0))
    return {"n": int(difference.size), "difference": mean, "low": low, "high": high,
            "p_value": p_value}


def plot_results(result: ExperimentResult, path: str) -> str | None:
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = [plain_text(f"{r.name}\n({r.tool})" if r.tool == "VW" else r.name)
             for r in result.results]
    losses = [r.loss for r in result.results]
    below = [r.loss - r.low for r in result.results]
    above = [r.high - r.loss for r in result.results]
    figure, axes = plt.subplots(figsize=(1.4 * len(names) + 2, 4))
    axes.bar(range(len(names)), losses, yerr=[below, above], capsize=4,
             color=["#999999" if r.tool == "-" else "#d62728" if r.tool == "VW" else "#1f77b4"
                    for r in result.results])
    axes.set_xticks(range(len(names)), names, fontsize=8)
    axes.set_ylabel(f"{result.metric} (95% interval)")
    axes.set_title(plain_text(result.name))
    figure.tight_layout()
    with atomic_write(path) as handle:
        figure.savefig(handle, format="png", dpi=120)
    plt.close(figure)
    return path
