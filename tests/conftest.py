import io
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

GOLDEN = Path(__file__).parent / "golden" / "vw-suite"
# a run that compiles kernels says so on stderr; the suite compares stderr with VW's, and which
# test compiles first depends on the cache: tests/test_install.py checks the notice itself
os.environ["PYVW_LITE_QUIET_COMPILE"] = "1"


def run_workspace(args, cwd=None):
    """Run a VW-style command in-process; returns (stdout, stderr, exit code)."""
    from pyvw_lite.workspace import Workspace
    out, err = io.StringIO(), io.StringIO()
    old = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        code = Workspace(list(args), stdout=out, stderr=err).run()
    finally:
        os.chdir(old)
    return out.getvalue(), err.getvalue(), code


def byte_mutation(raw: bytes, rng, kind: int) -> bytes:
    """``raw`` with one seeded mutation of a fuzz test's four kinds: 0 flips a bit, 1 overwrites
    four bytes, 2 cuts the file, 3 inserts 1-8 random bytes."""
    mutated = bytearray(raw)
    at = int(rng.integers(len(raw)))
    if kind == 0:
        mutated[at] ^= 1 << int(rng.integers(8))
    elif kind == 1:
        mutated[at:at + 4] = rng.integers(256, size=4, dtype=np.uint8).tobytes()
    elif kind == 2:
        del mutated[at:]
    else:
        mutated[at:at] = rng.integers(256, size=int(rng.integers(1, 9)), dtype=np.uint8).tobytes()
    return bytes(mutated)


@pytest.fixture
def suite_dir(tmp_path):
    """A scratch directory laid out like VW's test/ folder (train-sets/, models/)."""
    shutil.copytree(GOLDEN / "data", tmp_path / "train-sets")
    (tmp_path / "models").mkdir()
    return tmp_path


@pytest.fixture
def rater_task_file(tmp_path):
    from pyvw_lite.synthetic import rater_task, write_vw
    path = tmp_path / "rt2.vw"
    write_vw(str(path), rater_task(n_ratings=3000, n_raters=50, n_tasks=400, classes=2, seed=7),
             binary=True)
    return path


@pytest.fixture
def rng():
    return np.random.default_rng(20261121)


@pytest.fixture(scope="session")
def dask_executor():
    """A real Dask LocalCluster: 2 worker processes on loopback, shared by the session."""
    from pyvw_lite.distributed.executor import DaskExecutor
    executor = DaskExecutor(workers=2)
    yield executor
    executor.close()


def kill_a_busy_dask_worker(executor, killed: list, patience: float = 30.0):
    """Start a thread that SIGKILLs the first Dask worker seen running a task (its nanny
    restarts it; the shards scattered to it are lost) and records its address in ``killed``;
    after ``patience`` seconds without seeing one busy it kills one anyway."""
    import signal
    import threading
    import time
    pids = executor.client.run(os.getpid)

    def watch():
        deadline = time.monotonic() + patience
        busy = []
        while not busy and time.monotonic() < deadline:
            busy = sorted(worker for worker, tasks in executor.client.processing().items()
                          if tasks)
            time.sleep(0.0 if busy else 0.001)
        victim = busy[0] if busy else sorted(pids)[0]
        os.kill(pids[victim], signal.SIGKILL)
        killed.append(victim)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread
