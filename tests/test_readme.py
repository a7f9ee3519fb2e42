"""Every command README.md shows runs: its ``sh`` blocks, line by line, in a scratch directory
holding small seeded files under the names the README uses, and its Python blocks with those
names bound to small data."""
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, re.S)


def commands() -> list[str]:
    """The README's shell lines that run pyvw-lite (``make`` lines are the Makefile's)."""
    found = []
    for block in blocks("sh"):
        for line in block.splitlines():
            line = line.split("  #")[0].strip()
            if line.startswith("pyvw-lite "):
                found.append(line)
    return found


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    from pyvw_lite.synthetic import (crowd_answers, rater_task, user_item_ratings, write_ratings,
                                     write_vw)
    folder = tmp_path_factory.mktemp("readme")
    shutil.copytree(ROOT / "configs", folder / "configs")
    shutil.copytree(ROOT / "datasets", folder / "datasets")
    write_vw(str(folder / "train.vw"), rater_task(n_ratings=3000, n_raters=50, n_tasks=400,
                                                  seed=1))
    write_vw(str(folder / "test.vw"), rater_task(n_ratings=300, n_raters=50, n_tasks=400, seed=2))
    write_ratings(str(folder / "ratings.vw"), *user_item_ratings(n_ratings=3000, n_users=100,
                                                                 n_items=80, seed=3))
    crowd_answers(n_tasks=400, n_workers=40, seed=4).write(str(folder / "answers.csv"))
    return folder


def test_the_readme_shows_commands():
    assert len(commands()) >= 12
    assert len(README.splitlines()) <= 200


def test_readme_commands_run_in_order(workdir):
    """In the README's order: later lines read what earlier ones wrote (all.vw, m.pvw, p.txt)."""
    for line in commands():
        if "--versus p0.txt" in line:  # "another model": one-against-all's predictions
            for extra in (["-d", "train.vw", "--oaa", "5", "-f", "p0.pvw"],
                          ["-d", "test.vw", "-t", "-i", "p0.pvw", "-p", "p0.txt"]):
                done = subprocess.run([sys.executable, "-m", "pyvw_lite", *extra, "--quiet"],
                                      cwd=workdir)
                assert done.returncode == 0
        args = shlex.split(line)[1:]
        done = subprocess.run([sys.executable, "-m", "pyvw_lite", *args], cwd=workdir,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"{line}\n{done.stderr[-2000:]}"


def test_readme_python_runs(workdir, monkeypatch):
    import pandas as pd
    monkeypatch.chdir(workdir)
    df = pd.read_csv(workdir / "answers.csv")
    for block in blocks("python"):
        exec(compile(block, "README.md", "exec"), {"df": df})
