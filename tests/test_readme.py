"""Every command README.md and the docs pages show runs: their ``sh`` blocks, line by line (in
bash, so redirections work), in a scratch directory holding small seeded files under the names
the pages use, and README's Python blocks with those names bound to small data.  The few lines
that cannot run here are listed in :data:`NOT_RUN` with the reason, and must still be shown."""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
PAGES = ["README.md"] + sorted(str(path.relative_to(ROOT)) for path in (ROOT / "docs").rglob("*.md")
                               if path.relative_to(ROOT / "docs").parts[0] != "reference")

# shown in the docs, not run here: why
NOT_RUN = {
    "pyvw-lite bench --repeat 5": "minutes of timing; tests/test_cli.py runs the bench small",
    "pyvw-lite -d train.vw --oaa 5 --passes 5 --executor dask:tcp://scheduler:8786 "
    "--averaging mean": "needs a running Dask scheduler; tests/test_distributed.py runs one",
    "pyvw-lite -d train.vw --passes 5 --executor dask:tcp://SCHEDULER:8786 -c -f model.pvw":
    "the several-machine recipe; tests/test_sharded_learning.py runs it on a LocalCluster",
    "pyvw-lite experiment configs/seed_smem_web.toml --data-root DIR": "the shared smem_web "
    "answers are not bundled; tests/test_workflow.py runs --data-root on its own data",
}


def blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, re.S)


def commands(page: str) -> list[str]:
    """A page's shell lines that run pyvw-lite (``make`` lines are the Makefile's)."""
    found = []
    for block in blocks((ROOT / page).read_text(), "sh"):
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
    crowd_answers(n_tasks=400, n_workers=40, seed=4).write(str(folder / "answers.csv"),
                                                           str(folder / "truth.csv"))
    return folder


def run_line(line: str, folder: Path, python: str = sys.executable, env=None) -> None:
    """One documented line in bash, ``pyvw-lite`` being ``python``'s package (this
    interpreter's unless another environment's ``python`` and ``env`` are given)."""
    if "--versus p0.txt" in line:  # "another model": one-against-all's predictions
        for extra in ("-d train.vw --oaa 5 -f p0.pvw", "-d test.vw -t -i p0.pvw -p p0.txt"):
            run_line(f"pyvw-lite {extra} --quiet", folder, python, env)
    if "other.txt" in line and not (folder / "other.txt").exists():  # a second run's table
        shutil.copy(folder / "run.txt", folder / "other.txt")
    command = f'pyvw-lite() {{ "{python}" -m pyvw_lite "$@"; }}; {line}'
    done = subprocess.run(["bash", "-c", command], cwd=folder, capture_output=True, text=True,
                          timeout=600, env=env)
    assert done.returncode == 0, f"{line}\n{done.stderr[-2000:]}"


def test_the_pages_show_commands_and_the_readme_is_short():
    assert len(commands("README.md")) >= 12
    assert len(README.splitlines()) < 150
    shown = {line for page in PAGES for line in commands(page)}
    assert set(NOT_RUN) <= shown  # an exclusion for a line no page shows any more is stale


@pytest.mark.parametrize("page", PAGES)
def test_every_command_a_page_shows_runs_in_order(page, workdir):
    """In the page's order: later lines read what earlier ones wrote (all.vw, m.pvw, p.txt)."""
    for line in commands(page):
        if line not in NOT_RUN:
            run_line(line, workdir)


def test_readme_python_runs(workdir, monkeypatch):
    monkeypatch.chdir(workdir)
    for block in blocks(README, "python"):
        exec(compile(block, "README.md", "exec"), {})


def test_readme_blocks_run_in_the_demo_environment(workdir, tmp_path):
    """`make demo`'s own recipe builds a fresh venv (the Makefile's target, reusing pip's cache);
    in it README's Python blocks run as shown and its shell lines run with that venv's
    pyvw-lite, and every docs page's Python imports import (a page names any other extra its
    shell lines need).  A few minutes, most of it pip."""
    venv = tmp_path / "venv"
    made = subprocess.run(["make", "-s", f"VENV={venv}", f"PYTHON={sys.executable}",
                           f"{venv}/.demo-installed"], cwd=ROOT, capture_output=True, text=True,
                          timeout=1200)
    assert made.returncode == 0, made.stderr[-3000:]
    python = str(venv / "bin" / "python")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    for block in blocks(README, "python"):
        done = subprocess.run([python, "-c", block], cwd=workdir, env=env, capture_output=True,
                              text=True, timeout=600)
        assert done.returncode == 0, f"README.md block:\n{block}\n{done.stderr[-2000:]}"
    for line in commands("README.md"):
        if line not in NOT_RUN:
            run_line(line, workdir, python, env)
    for page in PAGES:
        for block in blocks((ROOT / page).read_text(), "python"):
            imports = "\n".join(line.split("  #")[0].strip() for line in block.splitlines()
                                 if re.match(r"(from \S+ )?import ", line))
            done = subprocess.run([python, "-c", imports], env=env, capture_output=True,
                                  text=True, timeout=600)
            assert done.returncode == 0, f"{page}:\n{imports}\n{done.stderr[-2000:]}"
