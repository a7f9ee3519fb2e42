"""Sharded learning (``--executor``): one shard is the plain run byte for byte; two shards on a
real Dask LocalCluster come within 1% of one process; every executor gives the same model, also
after a worker is killed mid-pass; every reduction and the dyadic learner shard."""
from __future__ import annotations

import re

import numpy as np
import pytest
from conftest import kill_a_busy_dask_worker, run_workspace

from pyvw_lite import Workspace
from pyvw_lite.api.sharded import sharded_learn
from pyvw_lite.distributed.executor import executor_from
from pyvw_lite.distributed.learn import combine, cut_shards
from pyvw_lite.synthetic import rater_task, write_vw


@pytest.fixture(scope="module")
def big_binary(tmp_path_factory):
    """The issue's 200,000-line rater-task file (binary labels for logistic loss)."""
    path = tmp_path_factory.mktemp("sharded") / "rt200k.vw"
    write_vw(str(path), rater_task(n_ratings=200_000, n_tasks=20_000, n_raters=500, classes=2,
                                   seed=3), binary=True)
    return path


@pytest.fixture(scope="module")
def small_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sharded_small")
    binary, multiclass = folder / "rt2.vw", folder / "rt3.vw"
    write_vw(str(binary), rater_task(n_ratings=20_000, n_tasks=3_000, n_raters=200, classes=2,
                                     seed=5), binary=True)
    write_vw(str(multiclass), rater_task(n_ratings=20_000, n_tasks=3_000, n_raters=200,
                                         classes=3, seed=5))
    return binary, multiclass


def average_loss(stderr: str) -> float:
    return float(re.search(r"average loss = ([0-9.]+)", stderr).group(1))


def table(stderr: str) -> str:
    return stderr[stderr.index("average  since"):]


def test_one_shard_is_the_plain_run_byte_for_byte(small_files, tmp_path):
    data, _ = small_files
    common = ["-d", str(data), "--loss_function", "logistic", "--passes", "3"]
    _, plain_err, code = run_workspace(common + ["-c", "--cache_file", str(tmp_path / "c"),
                                                 "-f", str(tmp_path / "plain.pvw"),
                                                 "-p", str(tmp_path / "plain.txt")])
    assert code == 0
    _, shard_err, code = run_workspace(common + ["--executor", "serial", "--shards", "1",
                                                 "-f", str(tmp_path / "shard.pvw"),
                                                 "-p", str(tmp_path / "shard.txt")])
    assert code == 0
    assert "executor = serial, shards = 1, averaging = adaptive" in shard_err
    assert table(shard_err) == table(plain_err)
    assert (tmp_path / "shard.pvw").read_bytes() == (tmp_path / "plain.pvw").read_bytes()
    assert (tmp_path / "shard.txt").read_bytes() == (tmp_path / "plain.txt").read_bytes()


@pytest.mark.parametrize("averaging", ["adaptive", "mean"])
def test_two_shards_on_dask_come_within_one_percent(big_binary, dask_executor, tmp_path,
                                                    averaging):
    """200,000 lines, 5 passes: the holdout loss VW reports, one process against 2 shards on a
    real LocalCluster; the serial executor gives the same model file as Dask."""
    common = ["-d", str(big_binary), "--loss_function", "logistic", "--passes", "5"]
    _, single_err, _ = run_workspace(common + ["-c", "--cache_file", str(tmp_path / "cache")])
    address = dask_executor.client.scheduler.address
    _, dask_err, code = run_workspace(common + ["--executor", f"dask:{address}", "--averaging",
                                                averaging, "-f", str(tmp_path / "dask.pvw")])
    assert code == 0
    single, sharded = average_loss(single_err), average_loss(dask_err)
    assert abs(sharded - single) <= 0.01 * single, (single, sharded)
    assert "passes used = 5" in dask_err
    _, serial_err, _ = run_workspace(common + ["--executor", "serial", "--shards", "2",
                                               "--averaging", averaging,
                                               "-f", str(tmp_path / "serial.pvw")])
    assert table(serial_err) == table(dask_err)
    assert (tmp_path / "serial.pvw").read_bytes() == (tmp_path / "dask.pvw").read_bytes()


def test_process_pool_gives_the_serial_model(small_files, tmp_path):
    data, _ = small_files
    common = ["-d", str(data), "--loss_function", "logistic", "--passes", "2"]
    run_workspace(common + ["--executor", "processes:2", "-f", str(tmp_path / "pool.pvw")])
    run_workspace(common + ["--executor", "serial", "--shards", "2",
                            "-f", str(tmp_path / "serial.pvw")])
    assert (tmp_path / "pool.pvw").read_bytes() == (tmp_path / "serial.pvw").read_bytes()


def test_a_worker_killed_mid_pass_changes_nothing(big_binary):
    from pyvw_lite.distributed.executor import DaskExecutor
    lines = big_binary.read_text().splitlines()
    argv = ["--loss_function", "logistic"]
    reference = sharded_learn(lines, argv, executor_from("serial"), passes=4, shards=2)
    executor = DaskExecutor(workers=2)
    try:
        killed = []

        def after_pass(number, _):
            if number == 2:  # the kill lands in pass 3, while a shard task runs
                kill_a_busy_dask_worker(executor, killed)

        result = sharded_learn(lines, argv, executor, passes=4, shards=2, report=after_pass)
        assert killed
        np.testing.assert_array_equal(result.weights, reference.weights)
        np.testing.assert_array_equal(result.state, reference.state)
    finally:
        executor.close()


@pytest.mark.parametrize("flags", [
    ["--oaa", "3"], ["--ect", "3"], ["--sft", "3", "--loss_function", "hinge"],
    ["--sft", "3", "--dyad", "rt", "--rank", "2", "--loss_function", "hinge"],
    ["--dyad", "rt", "--rank", "2", "--loss_function", "logistic"]])
def test_every_reduction_and_the_dyadic_learner_shard(small_files, tmp_path, flags):
    binary, multiclass = small_files
    data = str(binary if "--dyad" in flags and "--sft" not in flags else multiclass)
    _, err, code = run_workspace(["-d", data, *flags, "--passes", "3", "--executor", "serial",
                                  "--shards", "3", "-f", str(tmp_path / "m.pvw")])
    assert code == 0, err
    _, sharded_err, _ = run_workspace(["-d", data, "-t", "-i", str(tmp_path / "m.pvw")])
    _, single_err, _ = run_workspace(["-d", data, *flags, "-f", str(tmp_path / "one.pvw")])
    _, single_test, _ = run_workspace(["-d", data, "-t", "-i", str(tmp_path / "one.pvw")])
    # the sharded model is a plain model file; 3 passes on shards fit the data about as well as
    # one pass on one learner
    # (measured: 0.7% to 2.1% above the single learner over these five configurations)
    assert average_loss(sharded_err) <= average_loss(single_test) * 1.04
    if "--dyad" in flags:
        assert Workspace(["-i", str(tmp_path / "m.pvw"), "--quiet"]).touched.any()


def test_cut_shards_keeps_order_and_line_numbers():
    data = b"".join(b"%d |a x\n" % i for i in range(10))
    buf = np.frombuffer(data, np.uint8)
    from pyvw_lite.io.vw_text import split_lines
    starts, ends, _ = split_lines(buf, final=True)
    half = 5 * 7  # the first five lines are 7 bytes each
    chunks = [(buf[:half], starts[:5], ends[:5], 1),
              (buf[half:], starts[5:] - half, ends[5:] - half, 6)]
    shards = cut_shards(chunks, 3)
    joined = [line for shard in shards for piece, _ in shard for line in piece.split(b"\n")]
    assert joined == [b"%d |a x" % i for i in range(10)]
    assert [[first for _, first in shard] for shard in shards] == [[1], [4, 6], [7]]


class _Model:
    """The parts of a Workspace that combine() reads and writes."""

    def __init__(self, weights, state):
        self.weights, self.state = weights, state
        self.touched = np.zeros(1, np.uint8)
        self.dyadic = None
        self.latent = 0


def _shard_result(rows, values, state):
    return {"rows": np.array(rows), "values": np.array(values, np.float32),
            "state": np.array(state, np.float64), "touched": np.zeros(0, np.int64)}


def test_adaptive_averaging_keeps_an_update_only_one_shard_made():
    base = np.zeros((4, 4), np.float32)
    base[:, 1] = 1.0  # squared-gradient sums start at 1
    state = np.zeros(8)
    results = [_shard_result([0, 1], [[0.4, 5.0, 1, 0], [0.2, 2.0, 2, 0]], [3, 0, 0, 0, 0, 0, 0, 0]),
               _shard_result([1], [[0.6, 4.0, 1, 0]], [2, 0, 0, 0, 0, 0, 0, 0])]
    adaptive = _Model(base.copy(), state.copy())
    combine(adaptive, results, "adaptive")
    assert adaptive.weights[0, 0] == pytest.approx(0.4)  # only shard 0 saw feature 0
    # feature 1: moves 0.2 (1 unit of squared gradient) and 0.6 (3 units)
    assert adaptive.weights[1, 0] == pytest.approx((0.2 * 1 + 0.6 * 3) / 4)
    np.testing.assert_allclose(adaptive.weights[:2, 1], [5.0, 1.0 + 1.0 + 3.0])
    assert adaptive.weights[1, 2] == 2.0  # normalizers: the largest seen
    assert adaptive.state[0] == 5.0  # counters add up
    mean = _Model(base.copy(), state.copy())
    combine(mean, results, "mean")
    np.testing.assert_allclose(mean.weights[:2, 0], [0.2, 0.4])
    assert not mean.weights[2:, 0].any()


def test_symmetry_noise_matches_the_kernel():
    from pyvw_lite.reductions.dyad import DYAD_SEED, _noise, symmetry_noise
    rows = np.array([0, 1, 77, 2 ** 20 - 1, 123456, 2 ** 31 - 1])
    for seed in (DYAD_SEED, 7):
        np.testing.assert_allclose(symmetry_noise(rows, 3, 0.01, seed),
                                   [[0.01 * _noise(int(row) * 3 + q, seed) for q in range(3)]
                                    for row in rows], rtol=0, atol=0)
    assert not np.allclose(symmetry_noise(rows, 3, 0.01, 7), symmetry_noise(rows, 3, 0.01))


def test_malformed_lines_warn_once_and_strict_parse_stops(small_files, tmp_path):
    data, _ = small_files
    lines = data.read_text().splitlines()
    lines[1234] = "x |rater r_1 |task t_1"
    bad = tmp_path / "bad.vw"
    bad.write_text("\n".join(lines) + "\n")
    argv = ["-d", str(bad), "--loss_function", "logistic", "--passes", "3",
            "--executor", "serial", "--shards", "2"]
    out, err, code = run_workspace(argv)
    assert code == 0
    assert out.count(f"{bad}:1235") == 1 and "example skipped" in out
    assert "skipped examples = 1" in err
    with pytest.raises(ValueError, match=f"{re.escape(str(bad))}:1235"):
        run_workspace(argv + ["--strict_parse"])


@pytest.mark.parametrize("flags, message", [
    (["--audit"], "--audit"), (["--active", "--simulation"], "--active"),
    (["--executor", "threads"], "--executor 'threads'")])
def test_refusals_name_the_option(small_files, flags, message):
    from pyvw_lite.options import OptionError
    data, _ = small_files
    argv = ["-d", str(data), "--loss_function", "logistic", "--executor", "serial"]
    if "--executor" in flags:
        argv = argv[:-2]
    with pytest.raises(OptionError, match=re.escape(message)):
        run_workspace(argv + flags)


def test_bench_scale_runs_every_executor_and_agrees_on_the_result(tmp_path):
    """`pyvw-lite bench-scale` end to end on small inputs: every executor learns the same model
    (same loss) and fits the same EM objective; speed-ups are reported against serial."""
    import io

    from pyvw_lite.cli.scale_bench import run_scale_bench
    out = io.StringIO()
    rows = run_scale_bench(lines=3000, tasks=300, passes=2, repeat=1, workdir=str(tmp_path),
                           out=out)
    learning = {row["executor"]: row for row in rows if row["job"] == "learning"}
    em = {row["executor"]: row for row in rows if row["job"] == "batch EM"}
    assert set(em) == {"one process", "serial", "processes:2", "dask-local:2"}
    assert set(learning) == set(em) | {"processes:2 -c"}
    assert len({learning[name]["result"] for name in ("serial", "processes:2",
                                                      "processes:2 -c", "dask-local:2")}) == 1
    assert len({row["result"] for row in em.values()}) == 1
    assert learning["serial"]["speedup_vs_serial"] == 1.0
    assert "speedup = serial executor's median wall time" in out.getvalue()


@pytest.mark.parametrize("block", [1 << 26, 97, 1])
def test_byte_range_shards_hold_the_lines_that_cut_shards_hold(tmp_path, monkeypatch, block):
    """A local file's shards travel as byte ranges each worker reads itself; they must hold
    exactly the lines (and first line numbers) of the shards cut from the read file, for any
    shard count, with or without a final newline, blank lines and CRLF included, however the
    file is scanned (one block, blocks of 97 bytes, or of one byte)."""
    from pyvw_lite.distributed import learn
    from pyvw_lite.distributed.learn import file_shards, local_file, range_shards
    monkeypatch.setattr(learn, "RANGE_BLOCK", block)
    rng = np.random.default_rng(8)
    for ending in ("\n", ""):
        lines = [("" if rng.random() < 0.05 else f"{rng.integers(2)} |a x{k}")
                 + ("\r" if rng.random() < 0.1 else "") for k in range(1003)]
        path = tmp_path / f"d{len(ending)}.vw"
        path.write_bytes(("\n".join(lines) + ending).encode())
        assert local_file(str(path))
        for n in (1, 2, 3, 7, 1500):
            cut, _ = file_shards(str(path), n)
            ranged = range_shards(str(path), n)
            raw = path.read_bytes()
            for piece, span in zip(cut, ranged):
                cut_lines = [line for data, _ in piece["pieces"] for line in data.split(b"\n")]
                part = raw[span["start"]:span["end"]]
                range_lines = part[:-1].split(b"\n") if part.endswith(b"\n") else \
                    (part.split(b"\n") if part else [])
                assert range_lines == cut_lines
                if piece["pieces"]:
                    assert span["first_line"] == piece["pieces"][0][1]
    gz = tmp_path / "d.vw.gz"
    import gzip
    gz.write_bytes(gzip.compress(b"1 |a x\n"))
    assert not local_file(str(gz)) and not local_file("-")


def test_sharded_models_are_the_same_from_a_file_and_from_its_lines(tmp_path):
    """The byte-range path (a local file) and the shipped-lines path (standard input, gzip)
    learn the same model."""
    import gzip
    lines = [f"{1 if k % 3 else -1} |a x{k % 11} |b y{k % 7}" for k in range(900)]
    plain, packed = tmp_path / "d.vw", tmp_path / "d.vw.gz"
    plain.write_text("\n".join(lines) + "\n")
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    models = []
    for data in (plain, packed):
        model = tmp_path / f"{data.name}.pvw"
        _, err, code = run_workspace(["-d", str(data), "--loss_function", "logistic", "--passes",
                                      "2", "--executor", "serial", "--shards", "3", "-f",
                                      str(model), "--quiet"])
        assert code == 0, err
        models.append(model.read_bytes())
    assert models[0] == models[1]


def test_timings_say_where_each_pass_went(tmp_path):
    lines = [f"{1 if k % 3 else -1} |a x{k % 11}" for k in range(300)]
    data = tmp_path / "d.vw"
    data.write_text("\n".join(lines) + "\n")
    _, err, code = run_workspace(["-d", str(data), "--passes", "2", "--executor", "serial",
                                  "--shards", "2", "--timings"])
    assert code == 0
    rows = [line for line in err.splitlines() if line.startswith("timings: ")]
    assert rows[0].startswith("timings: read and cut 2 shards")
    assert [row.split(":")[1].strip() for row in rows[1:]] == ["pass 1", "pass 2"]
    assert all("parse" in row and "learn" in row and "averaging" in row for row in rows[1:])


@pytest.mark.parametrize("seed", range(6))
def test_shard_totals_account_as_the_examples_do(seed):
    """A shard's progress goes to the driver as totals unless a row falls due inside it: for
    runs of random examples (weights, unlabelled and held-out ones, labels with two or more
    values) cut anywhere, totals and remote accounting leave the table and its printed rows
    exactly as accounting each shard's examples in the driver does (as it did with the
    records shipped back)."""
    import io
    from pyvw_lite.io.progress import ProgressTable, totals
    rng = np.random.default_rng(seed)
    n = int(rng.integers(50, 3000))
    labels = rng.choice([-1.0, 1.0] if seed % 2 else [0.0, 1.0, 2.5, 4.0], n)
    examples = dict(weight=rng.choice([1.0, 0.5, 3.0], n) if seed % 3 else np.ones(n),
                    loss=rng.random(n), labelled=rng.random(n) > 0.1,
                    holdout=(np.arange(n) % 10 == 9) if seed >= 3 else np.zeros(n, bool),
                    label=labels, features=rng.integers(1, 9, n))
    texts = dict(label_text=lambda i: f"{labels[i]:.4f}", prediction_text=lambda i: "0.0000")
    whole_out, parts_out = io.StringIO(), io.StringIO()
    whole = ProgressTable(whole_out, holdout_off=seed < 3)
    parts = ProgressTable(parts_out, holdout_off=seed < 3)
    cuts = np.sort(rng.choice(np.arange(1, n), size=5, replace=False))
    for pass_index in range(2):
        remote = 0
        for piece in np.split(np.arange(n), cuts):
            part = {name: values[piece] for name, values in examples.items()}
            whole.account(**part, label_text=lambda i, p=piece: texts["label_text"](p[i]),
                          prediction_text=texts["prediction_text"])
            shard_totals = totals(**part)
            if parts.due_within(shard_totals):  # as account_shard does where the shard lives
                out = io.StringIO()
                there = ProgressTable(out)
                there.restore(parts.snapshot())
                there.account(**part, label_text=lambda i, p=piece: texts["label_text"](p[i]),
                              prediction_text=texts["prediction_text"])
                parts.restore(there.snapshot())
                parts.write(out.getvalue())
                remote += 1
            else:
                parts.add_totals(shard_totals)
        assert remote < 6 if pass_index else remote >= 1
        whole.end_pass()
        parts.end_pass()
    assert parts_out.getvalue() == whole_out.getvalue()
    assert parts.snapshot() == whole.snapshot()


class ForgetfulExecutor:
    """The serial executor, except that each shard forgets its progress records right after
    learning, as a worker restarted between the two calls would."""
    name, workers, same_machine = "serial", 1, True

    def put(self, data):
        return data

    def __init__(self):
        self.relearned = 0
        self.missing = False

    def map(self, task, handles, args):
        results = [task(handle, *extra) for handle, extra in zip(handles, args)]
        if task.__name__ == "learn_shard":
            if self.missing:  # the driver's second call, after hearing the records were lost
                self.relearned += 1
            else:
                for handle in handles:
                    handle.pop("records", None)
        self.missing = task.__name__ == "account_shard" and results[0].get("missing", False)
        return results

    def close(self):
        pass


def test_progress_lost_with_a_worker_is_learned_again(small_files, tmp_path, monkeypatch):
    """A row that falls due in a shard whose worker lost its records: the driver has the shard
    learn the same pass again from the same broadcast, and the table is unchanged."""
    import pyvw_lite.distributed.learn as learn
    data, _ = small_files
    common = ["-d", str(data), "--loss_function", "logistic", "--passes", "2", "--executor",
              "serial", "--shards", "3"]
    _, plain_err, code = run_workspace(common)
    assert code == 0
    forgetful = ForgetfulExecutor()
    monkeypatch.setattr(learn, "executor_from", lambda spec: forgetful)
    _, forgetful_err, code = run_workspace(common)
    assert code == 0
    assert forgetful.relearned >= 2  # rows fall due in both passes
    assert table(forgetful_err) == table(plain_err)


def test_a_cache_streams_each_shard_in_flat_memory(tmp_path):
    """``--executor`` with a cache: each worker streams its shard through a cache file of its
    own, so it holds a chunk at a time.  Under a data-memory limit (RLIMIT_DATA, as ``ulimit -d``
    sets it, on the driver and the workers it starts) that the in-memory shards of 500,000 lines
    exceed (they need about 380 MB here, a streamed shard about 180 MB whatever its size), the
    streamed run completes with the model of the unlimited in-memory run; a second run reads the
    shard caches instead of the text."""
    import subprocess
    import sys
    resource = pytest.importorskip("resource")
    data = tmp_path / "rt500k.vw"
    write_vw(str(data), rater_task(n_ratings=500_000, n_tasks=50_000, n_raters=1_000,
                                   classes=2, seed=8), binary=True)
    common = [sys.executable, "-m", "pyvw_lite", "-d", str(data), "--loss_function", "logistic",
              "--passes", "2", "--executor", "processes:1", "--quiet"]

    def run(extra, limit_mb=None):
        def limit():
            size = limit_mb << 20
            resource.setrlimit(resource.RLIMIT_DATA, (size, size))
        return subprocess.run(common + extra, capture_output=True, text=True,
                              preexec_fn=limit if limit_mb else None)

    free = run(["-f", str(tmp_path / "free.pvw")])  # also fills the kernel cache unlimited
    assert free.returncode == 0, free.stderr
    cache = tmp_path / "rt.cache"
    streamed = run(["--cache_file", str(cache), "-f", str(tmp_path / "streamed.pvw")], 260)
    assert streamed.returncode == 0, streamed.stderr
    assert (tmp_path / "streamed.pvw").read_bytes() == (tmp_path / "free.pvw").read_bytes()
    assert (tmp_path / "rt.cache.shard1of1").exists()
    assert not [p for p in tmp_path.iterdir() if "progress" in p.name]  # scratch files removed
    in_memory = run(["-f", str(tmp_path / "held.pvw")], 260)
    assert in_memory.returncode != 0 and "out of memory" in in_memory.stderr
    again = subprocess.run(common[:-1] + ["--cache_file", str(cache), "--timings", "-f",
                                          str(tmp_path / "again.pvw")], capture_output=True,
                           text=True)
    assert again.returncode == 0
    assert re.search(r"pass 1: .*parse 0\.00/0\.00", again.stderr), again.stderr
    assert (tmp_path / "again.pvw").read_bytes() == (tmp_path / "free.pvw").read_bytes()


def test_a_dask_cluster_with_the_preload_runs_a_streamed_job(small_files, tmp_path):
    """The cluster recipe (docs/scale.md): workers started with ``--preload
    pyvw_lite.distributed.preload`` have their kernels ready before the first task, and a job
    sent to the scheduler's address with a cache streams its shards and gives the model of the
    same shards on the serial executor.  A LocalCluster of two worker processes stands in for
    dask-scheduler and dask-worker on several machines."""
    distributed = pytest.importorskip("distributed")
    data, _ = small_files
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0",
                                  preload=["pyvw_lite.distributed.preload"],
                                  env={"PYVW_LITE_PRELOAD_MODES": "binary"}) as cluster, \
            distributed.Client(cluster) as client:
        ready = client.run(lambda dask_worker: dask_worker.pyvw_lite_compiled)
        assert len(ready) == 2 and all(modes == ["binary"] for modes, _ in ready.values())
        common = ["-d", str(data), "--loss_function", "logistic", "--passes", "2"]
        _, err, code = run_workspace(common + ["--executor", f"dask:{cluster.scheduler_address}",
                                               "--cache_file", str(tmp_path / "c"),
                                               "-f", str(tmp_path / "dask.pvw")])
        assert code == 0, err
    _, serial_err, code = run_workspace(common + ["--executor", "serial", "--shards", "2",
                                                  "-f", str(tmp_path / "serial.pvw")])
    assert code == 0
    assert (tmp_path / "dask.pvw").read_bytes() == (tmp_path / "serial.pvw").read_bytes()
    assert table(err) == table(serial_err)


def test_a_note_every_shard_makes_is_printed_once(small_files):
    """Each shard's learner notes that label K makes the labels 1-indexed; the job says it once,
    as one process does."""
    data = small_files[1]
    out, _, code = run_workspace(["-d", str(data), "--oaa", "3", "--executor", "serial",
                                  "--shards", "3"])
    assert code == 0
    assert out.count("labels are now considered 1-indexed") == 1
