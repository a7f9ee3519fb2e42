"""Start-up: a plain run imports only what it uses.

Each run below is a whole ``pyvw-lite`` process whose ``sys.modules`` is read at exit; a module
of the scale-out, workflow, Python-API or plotting layers (or a heavy optional library) on the
path of an everyday command fails the test, so a stray top-level import cannot slow every run
again.  Speed itself is measured by ``pyvw-lite bench`` and tools/figures.py, never here.
"""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pyvw_lite.io import crowd_input

ROOT = Path(__file__).resolve().parent.parent

# layers and libraries an everyday run has no use for
HELD = ("pyvw_lite.distributed", "pyvw_lite.workflow", "pyvw_lite.api", "pyvw_lite.synthetic",
        "pyvw_lite.datasets", "pyvw_lite.cli.bench", "pyvw_lite.cli.crowd_bench",
        "pyvw_lite.cli.scale_bench", "dask", "distributed",
        "matplotlib", "pandas", "sklearn", "vowpalwabbit", "mkdocs")
# and what a VW-style run (no subcommand) also leaves out: the subcommands' parser and the
# crowd models; rich only draws the live bar on a terminal
HELD_VW = HELD + ("typer", "click", "rich", "pyvw_lite.cli.app", "pyvw_lite.crowd")

DUMP = """
import atexit, json, sys
atexit.register(lambda: open(sys.argv[1], "w").write(json.dumps(sorted(sys.modules))))
from pyvw_lite.cli.main import main
raise SystemExit(main(sys.argv[2:]))
"""


def modules_of_run(args, tmp_path) -> list[str]:
    out = tmp_path / "modules.json"
    done = subprocess.run([sys.executable, "-c", DUMP, str(out), *args], capture_output=True,
                          text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return json.loads(out.read_text())


def held_in(modules, held) -> list[str]:
    return [name for name in modules if any(name == h or name.startswith(h + ".") for h in held)]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    where = tmp_path_factory.mktemp("startup")
    lines = [f"{1 if i % 3 else -1} |rater r_{i % 4} |task t_{i % 7}" for i in range(30)]
    (where / "train.vw").write_text("\n".join(lines) + "\n")
    (where / "classes.vw").write_text(
        "\n".join(f"{1 + i % 3} |rater r_{i % 4} |task t_{i % 7}" for i in range(30)) + "\n")
    return where


@pytest.mark.parametrize("args", [
    ["-d", "train.vw", "--binary", "--loss_function", "logistic", "-f", "m.pvw", "--quiet"],
    ["-d", "train.vw", "-t", "-i", "m.pvw", "-p", "p.txt", "--quiet"],
    ["-d", "classes.vw", "--oaa", "3", "--quiet"],
], ids=["learn", "test-only", "oaa"])
def test_a_vw_style_run_imports_only_the_learner(args, model, tmp_path):
    for name in ("train.vw", "classes.vw"):
        (tmp_path / name).write_bytes((model / name).read_bytes())
    if "-i" in args:  # the model the test-only run reads
        modules_of_run(["-d", "train.vw", "-f", "m.pvw", "--quiet"], tmp_path)
    modules = modules_of_run(args, tmp_path)
    assert "pyvw_lite.workspace" in modules  # the run did run
    assert held_in(modules, HELD_VW) == []


def test_crowd_batch_on_a_small_file_imports_no_pandas_or_scale_out(tmp_path):
    answers = ROOT / "datasets" / "act_MS" / "answers.csv"
    modules = modules_of_run(["crowd", str(answers), "--batch", "-p", "labels.csv", "--quiet"],
                             tmp_path)
    assert "pyvw_lite.crowd.run" in modules
    assert held_in(modules, HELD) == []


TRICKY = {
    "plain": "task,worker,label\nt1,w1,a\nt1,w2,b\nt2,w1,a\n",
    "leading zeros and spaces": "task, worker ,label\n007, w1,1\n7,w1 , 01\n007,w2,1\n",
    "quoted and BOM": "\ufeff\"task\",\"worker\",\"label\"\n\"t,1\",w1,\"x y\"\nt2,w1,x y\n",
    "tabs and CRLF": "task\tworker\tlabel\r\nt1\tw1\t0\r\nt2\tw2\t1\r\n",
    "blank lines at the end": "task,worker,label\nt1,w1,a\nt2,w1,b\n\n\n",
    "a blank line inside": "task,worker,label\nt1,w1,a\n\nt2,w1,b\n",
    "extra and empty fields": "task,worker,label\nt1,w1,a\nt2,w1,b,c\nt3,,a\nt4,w2,b\n",
    "extra column": "worker,task,label,time\nw1,t1,a,3\nw2,t1,b,4\n",
}


def read_both(path, monkeypatch):
    """read_table through the csv module and through pandas: (columns, lines, warnings) each."""
    results = []
    for reader in ("csv", "pandas"):
        with monkeypatch.context() as patch:
            if reader == "csv":
                patch.setitem(sys.modules, "pandas", None)
            else:
                pytest.importorskip("pandas")
                patch.setattr(crowd_input, "PANDAS_FROM_BYTES", 0)
            warnings = []
            policy = crowd_input.RowPolicy(strict=False, warn=warnings.append)
            columns, lines = crowd_input.read_table(str(path), ("task", "worker", "label"), policy)
        results.append((columns, lines, warnings))
    return results


@pytest.mark.parametrize("name", sorted(TRICKY))
def test_the_csv_module_and_pandas_read_answers_alike(name, tmp_path, monkeypatch):
    """Small files are read by the csv module, large ones by pandas when installed: the same
    columns, line numbers and warnings either way."""
    path = tmp_path / "answers.csv"
    path.write_bytes(TRICKY[name].encode("utf-8"))
    (by_csv, lines_csv, warned_csv), (by_pandas, lines_pandas, warned_pandas) = \
        read_both(path, monkeypatch)
    assert warned_csv == warned_pandas
    rows = lambda columns: {c: [columns[c].values[k] for k in columns[c].codes] for c in columns}
    assert rows(by_csv) == rows(by_pandas)
    for column in by_csv:  # first-appearance order, so equal rows give equal codes
        np.testing.assert_array_equal(by_csv[column].codes, by_pandas[column].codes)
    n = len(by_csv["task"].codes)
    line_of = lambda lines: list(range(2, n + 2)) if lines is None else list(lines)
    assert line_of(lines_csv) == line_of(lines_pandas)


def test_a_small_crowd_file_is_read_without_importing_pandas(tmp_path):
    path = tmp_path / "answers.csv"
    path.write_text(TRICKY["plain"])
    code = ("import sys; from pyvw_lite.io.crowd_input import read_table; "
            f"read_table({str(path)!r}, ('task', 'worker', 'label')); "
            "print('pandas' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
