"""Map-reduce batch EM on executors: any sharding gives the single-machine fit, on the serial
executor, a local process pool and a real Dask LocalCluster (2 workers, loopback), also when a
worker is killed mid-run."""
from __future__ import annotations

import os
import signal

import numpy as np
import pytest

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


@pytest.fixture(scope="module")
def dask_executor():
    executor = DaskExecutor(workers=2)  # a real LocalCluster: 2 worker processes on loopback
    yield executor
    executor.close()


def test_dask_local_cluster_equals_one_machine(problem, dask_executor):
    data, config, reference = problem
    assert dask_executor.workers == 2
    assert_same_fit(sharded_batch_em(data, config, dask_executor, shards=2), reference)


def test_a_worker_killed_mid_run_changes_nothing(problem):
    data, config, reference = problem
    executor = DaskExecutor(workers=2)
    try:
        pids = executor.client.run(os.getpid)
        killed = []

        def kill_one(iteration, *_):
            if iteration == 3 and not killed:
                victim = sorted(pids.values())[0]
                os.kill(victim, signal.SIGKILL)  # the nanny restarts it; its shard is lost
                killed.append(victim)

        result = sharded_batch_em(data, config, executor, shards=2, report=kill_one)
        assert killed
        assert_same_fit(result, reference)
    finally:
        executor.close()


def test_executor_specs():
    assert executor_from("serial").name == "serial"
    assert executor_from("processes:3").workers == 3
    for bad in ("threads", "processes:x", "dask-local:y"):
        with pytest.raises(ValueError, match="--executor"):
            executor_from(bad)


def test_models_outside_the_sharded_scope_are_refused(problem):
    data, _, _ = problem
    config = CrowdConfig(n_labels=data.n_labels, label_names=data.label_names, sigma_b=1.0)
    with pytest.raises(ValueError, match="difficulty model"):
        sharded_batch_em(data, config, executor_from("serial"))


@pytest.fixture(scope="module")
def rater_lines():
    from pyvw_lite.synthetic import rater_task
    lines = rater_task(n_ratings=22_000, n_tasks=4_000, n_raters=300, classes=2,
                       seed=7).vw_lines(binary=True)
    return lines[:20_000], lines[20_000:]


def held_out_loss(workspace, held):
    labels = np.array([float(line.split()[0]) for line in held])
    return float(np.mean(np.log1p(np.exp(-labels * workspace.predict(held)))))


def test_one_shard_is_plain_multi_pass_learning(rater_lines):
    from pyvw_lite import Workspace
    from pyvw_lite.distributed.learn import sharded_learn
    lines, _ = rater_lines
    argv = ["--loss_function", "logistic", "-b", "18"]
    single = Workspace(argv + ["--quiet"])
    for _ in range(3):
        single.learn(lines)
    sharded = sharded_learn(lines, argv, executor_from("serial"), passes=3, shards=1)
    # weights, squared-gradient sums, normalizers (column 3 is a per-update scratch rate)
    np.testing.assert_array_equal(sharded.weights[:, :3], single.weights[:, :3])
    np.testing.assert_array_equal(sharded.state, single.state)


@pytest.mark.parametrize("averaging", ["adaptive", "mean"])
def test_sharded_learning_matches_single_process_on_held_out_data(rater_lines, averaging,
                                                                  dask_executor):
    from pyvw_lite import Workspace
    from pyvw_lite.distributed.learn import sharded_learn
    lines, held = rater_lines
    argv = ["--loss_function", "logistic", "-b", "18"]
    single = Workspace(argv + ["--quiet"])
    for _ in range(5):
        single.learn(lines)
    serial = sharded_learn(lines, argv, executor_from("serial"), passes=5, shards=2,
                           averaging=averaging)
    on_dask = sharded_learn(lines, argv, dask_executor, passes=5, shards=2, averaging=averaging)
    np.testing.assert_array_equal(on_dask.weights, serial.weights)  # the executor is irrelevant
    assert held_out_loss(serial, held) <= held_out_loss(single, held) * 1.02
