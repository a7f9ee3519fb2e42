"""Map-reduce batch EM on executors: any sharding gives the single-machine fit, on the serial
executor, a local process pool and a real Dask LocalCluster (2 workers, loopback), also when a
worker is killed mid-run.  Sharded learning: tests/test_sharded_learning.py."""
from __future__ import annotations

import os
import signal

import numpy as np
import pytest
from conftest import kill_a_busy_dask_worker

from pyvw_lite import datasets
from pyvw_lite.crowd.batch import batch_em
from pyvw_lite.crowd.model import CrowdConfig
from pyvw_lite.distributed.crowd_em import sharded_batch_em
from pyvw_lite.distributed.executor import DaskExecutor, executor_from
from pyvw_lite.io.crowd_input import read_triples


@pytest.fixture(scope="module")
def problem():
    data = read_triples(str(datasets.folder("act_MS") / "answers.csv"))
    config = CrowdConfig(n_labels=data.n_labels, label_names=data.label_names, worker_map="exact")
    return data, config, batch_em(data, config)


def assert_same_fit(result, reference):
    assert result.iterations == reference.iterations
    for ours, theirs in ((result.model.alpha, reference.model.alpha),
                         (result.model.mu, reference.model.mu),
                         (result.model.theta, reference.model.theta), (result.q, reference.q)):
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-9)
    assert result.objective == pytest.approx(reference.objective, rel=1e-12)


@pytest.mark.parametrize("shards", [1, 2, 5])
def test_serial_shards_equal_one_machine(problem, shards):
    data, config, reference = problem
    assert_same_fit(sharded_batch_em(data, config, executor_from("serial"), shards=shards),
                    reference)


def test_process_pool_equals_one_machine(problem):
    data, config, reference = problem
    executor = executor_from("processes:2")
    try:
        assert_same_fit(sharded_batch_em(data, config, executor), reference)
    finally:
        executor.close()


def test_dask_local_cluster_equals_one_machine(problem, dask_executor):
    data, config, reference = problem
    assert dask_executor.workers == 2
    assert_same_fit(sharded_batch_em(data, config, dask_executor, shards=2), reference)


def test_a_worker_killed_mid_pass_changes_nothing(problem):
    data, config, reference = problem
    executor = DaskExecutor(workers=2)
    try:
        killed, watching = [], []

        def after_pass(iteration, *_):
            if iteration == 3 and not watching:  # the kill lands in a later item pass
                watching.append(kill_a_busy_dask_worker(executor, killed, patience=0.2))

        result = sharded_batch_em(data, config, executor, shards=2, report=after_pass)
        assert killed  # during the fit, not after it
        watching[0].join()
        assert_same_fit(result, reference)
    finally:
        executor.close()


def test_executor_specs():
    assert executor_from("serial").name == "serial"
    assert executor_from("processes:3").workers == 3
    for bad in ("threads", "processes:x", "dask-local:y"):
        with pytest.raises(ValueError, match="--executor"):
            executor_from(bad)
    for bad in ("processes:0", "processes:-1", "dask-local:0"):  # dask-local:0 named --shards
        with pytest.raises(ValueError, match=f"--executor '{bad}': .*N of at least 1"):
            executor_from(bad)


def test_models_outside_the_sharded_scope_are_refused(problem):
    data, _, _ = problem
    config = CrowdConfig(n_labels=data.n_labels, label_names=data.label_names, sigma_b=1.0)
    with pytest.raises(ValueError, match="difficulty model"):
        sharded_batch_em(data, config, executor_from("serial"))


def doubled_after(data, seconds):
    """A shard task for the process-pool tests (module level: the workers import it)."""
    import time
    time.sleep(seconds)
    return data * 2


def test_process_pool_keeps_shards_in_place_and_survives_a_killed_worker():
    import threading
    executor = executor_from("processes:2")
    try:
        handles = [executor.put(np.arange(3) + 10 * i) for i in range(4)]
        first = executor.map(doubled_after, handles, [(0.0,)] * 4)
        assert [list(r) for r in first] == [[20 * i, 20 * i + 2, 20 * i + 4] for i in range(4)]
        assert [executor.owner[h] for h in handles] == [0, 1, 0, 1]  # shards stay put
        victim = executor.processes[0]
        timer = threading.Timer(0.5, os.kill, (victim.pid, signal.SIGKILL))
        timer.start()
        again = executor.map(doubled_after, handles, [(1.0,)] * 4)  # killed mid-task
        timer.join()
        assert executor.processes[0] is not victim
        assert all(np.array_equal(a, b) for a, b in zip(again, first))
        os.kill(executor.processes[1].pid, signal.SIGKILL)  # dead while idle
        executor.processes[1].join()
        assert all(np.array_equal(a, b) for a, b in
                   zip(executor.map(doubled_after, handles, [(0.0,)] * 4), first))
    finally:
        executor.close()


def test_a_task_error_reaches_the_driver():
    executor = executor_from("processes:1")
    try:
        handle = executor.put("text")
        with pytest.raises(TypeError):
            executor.map(doubled_after, [handle], [("not seconds",)])
    finally:
        executor.close()
