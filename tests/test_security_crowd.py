"""Crowd models and crowd runs: a file from elsewhere is data (docs/security.md, "Models").

A crowd model (``crowd -f``, read with ``crowd -i``) may change the labels, as data does, but may
not corrupt memory, end in a traceback or give NaN posteriors without a word, even when its
digest is valid (anyone can compute one): every field is checked at load, and anything a model
does not write is ``PATH: malformed crowd model (...)``.  A crowd file with free-text labels or
absurd options is refused up front with one line, before memory is asked for.

The structural fuzz runs in a child process (this file run as a script), so that a crash fails
the test instead of ending pytest.
"""
import hashlib
import json
import math
import os
import struct
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import byte_mutation
from pyvw_lite.cli.main import main
from pyvw_lite.io.model_io import MAGIC, ModelError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FUZZ_SEED = 20261127
N_TASKS = 30


def answers_text(n_tasks: int = N_TASKS, labels=("0", "1", "2")) -> str:
    """Four answers per task by six workers; the fourth answer of each task is one label off."""
    rows = [f"t{i},w{(i + j) % 6},{labels[(i + (j == 3)) % len(labels)]}\n"
            for i in range(n_tasks) for j in range(4)]
    return "task,worker,label\n" + "".join(rows)


def model_parts(raw: bytes) -> tuple[dict, dict]:
    """(header, arrays by name) of a model file's bytes."""
    (size,) = struct.unpack_from("<I", raw, len(MAGIC))
    start = len(MAGIC) + 4
    header = json.loads(raw[start:start + size])
    payload = raw[start + size:-32]
    arrays = {entry["name"]: np.frombuffer(payload[entry["offset"]:entry["offset"]
                                                   + entry["nbytes"]],
                                           dtype=entry["dtype"]).reshape(entry["shape"])
              for entry in header["arrays"]}
    return header, arrays


def signed(header: dict, arrays: dict) -> bytes:
    """A model file with a valid digest around any header and arrays (the directory rebuilt
    from the arrays): what a hostile author can write."""
    header = dict(header)
    directory, chunks, offset = [], [], 0
    for name, array in arrays.items():
        raw = np.ascontiguousarray(array).tobytes()
        directory.append({"name": name, "dtype": array.dtype.str, "shape": list(array.shape),
                          "offset": offset, "nbytes": len(raw)})
        chunks.append(raw)
        offset += len(raw)
    header.update(arrays=directory, payload_bytes=offset)
    text = json.dumps(header).encode()
    body = MAGIC + struct.pack("<I", len(text)) + text + b"".join(chunks)
    return body + hashlib.sha256(body).digest()


def edited(model_path, edit) -> bytes:
    """The model file with ``edit(header, arrays)`` applied, signed again."""
    header, arrays = model_parts(open(model_path, "rb").read())
    arrays = dict(arrays)
    edit(header, arrays)
    return signed(header, arrays)


@pytest.fixture(scope="module")
def crowd_models(tmp_path_factory):
    """An answers file and three models of it: online with hashed slots (2^3), batch EM with
    an exact map (one slot per worker), online with an exact map of 2^3 slots."""
    folder = tmp_path_factory.mktemp("crowd-models")
    answers = folder / "answers.csv"
    answers.write_text(answers_text())
    runs = {"hash": ["--n_worker_bits", "3"], "exact": ["--batch", "--method", "em"],
            "exact_online": ["--worker_map", "exact", "--n_worker_bits", "3"]}
    models = {}
    for name, extra in runs.items():
        models[name] = folder / f"{name}.pvw"
        assert main(["crowd", str(answers), *extra, "-f", str(models[name]), "--quiet"]) == 0
    return answers, models


def crowd(args, capsys) -> tuple[int, str]:
    code = main(["crowd", *map(str, args), "--quiet"])
    return code, capsys.readouterr().err


def _child_environment() -> dict:
    return dict(os.environ, PYTHONPATH=os.pathsep.join(
        [ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))


def _memory_bound():
    """A child's address space: 4 GiB, so a runaway allocation fails the test, not the machine."""
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))


def crowd_in_subprocess(args, timeout: float = 60.0) -> tuple[int, str]:
    """The crowd command in a child process: a crash, a hang or a runaway allocation fails the
    test, not pytest."""
    try:
        done = subprocess.run([sys.executable, "-m", "pyvw_lite", "crowd", *map(str, args),
                               "--quiet"], capture_output=True, text=True, timeout=timeout,
                              env=_child_environment(), cwd=ROOT, preexec_fn=_memory_bound)
    except subprocess.TimeoutExpired:
        pytest.fail(f"crowd {' '.join(map(str, args))} still running after {timeout:g} s")
    return done.returncode, done.stderr


def assert_one_line_refusal(code: int, err: str, *needles: str) -> None:
    assert code == 1, (code, err)
    assert "Traceback" not in err and err.count("\n") == 1, err
    for needle in needles:
        assert needle in err, err


# ----------------------------------------------------------------- item 1: sizes and slots
def _one_slot(header, arrays):
    arrays["alpha"], arrays["stamp"] = arrays["alpha"][:1], arrays["stamp"][:1]


def _half_the_slots(header, arrays):
    arrays["alpha"], arrays["stamp"] = arrays["alpha"][:4], arrays["stamp"][:4]


def _short_theta(header, arrays):
    arrays["theta"] = arrays["theta"][:1]


def _long_theta(header, arrays):
    arrays["theta"] = np.concatenate([arrays["theta"], arrays["theta"]])


def _stats_of_one_slot(header, arrays):
    arrays["stats"] = arrays["stats"][:1]


def _short_class_mass(header, arrays):
    arrays["class_mass"] = arrays["class_mass"][:1]


def _slot_beyond_the_table(header, arrays):
    header["state"]["workers"][0][1] = 1 << 20


@pytest.mark.parametrize("base,edit", [("hash", _one_slot), ("hash", _half_the_slots),
                                       ("hash", _short_theta), ("hash", _long_theta),
                                       ("hash", _stats_of_one_slot),
                                       ("hash", _short_class_mass),
                                       ("exact", _stats_of_one_slot),
                                       ("exact_online", _one_slot),
                                       ("exact_online", _slot_beyond_the_table)])
def test_a_signed_crowd_model_whose_arrays_miss_slots_is_refused(crowd_models, tmp_path, base,
                                                                 edit):
    """Issue item 1: alpha/stamp of 1 slot (of 2^n_worker_bits) with a valid digest ended in a
    segfault, a glibc abort or garbage; theta shorter than K read out of bounds, exit 0."""
    answers, models = crowd_models
    evil = tmp_path / "evil.pvw"
    evil.write_bytes(edited(models[base], edit))
    out = tmp_path / "out.csv"
    code, err = crowd_in_subprocess([answers, "-i", evil, "-p", out])
    assert_one_line_refusal(code, err, f"{evil}: malformed crowd model (")
    assert not out.exists()


# ----------------------------------------------------------------- item 7: K and memory
def _many_labels(tmp_path, count: int):
    answers = tmp_path / "free-text.csv"
    rows = "".join(f"t{i % 40},w{i % 7},answer number {i}\n" for i in range(count))
    answers.write_text("task,worker,label\n" + rows)
    return answers


@pytest.mark.parametrize("count,mode", [(300, []), (300, ["--batch"]),
                                        (300, ["--batch", "--method", "em"]),
                                        (100_000, [])])
def test_a_label_column_of_free_text_is_refused_up_front(tmp_path, count, mode):
    """Issue item 7: 300 distinct labels made online EM ask for 43.9 GiB (65,536 slots x K x K),
    100,000 for 74.5 GiB (tracebacks); --batch with K = 300 still ran after 90 s."""
    answers = _many_labels(tmp_path, count)
    started = time.perf_counter()
    code, err = crowd_in_subprocess([answers, "-p", tmp_path / "out.csv", *mode], timeout=60)
    assert_one_line_refusal(code, err, f"{count} distinct labels", f"--n_labels {count}")
    assert time.perf_counter() - started < 30


def test_an_item_block_naming_label_a_billion_is_refused(tmp_path):
    """Item blocks number labels 0..K-1: a rating of 10^9 asked for 10^9 label names."""
    blocks = tmp_path / "blocks.txt"
    blocks.write_text("i1 -1 w1:0 w2:1\ni2 -1 w1:1 w2:1000000000\n")
    code, err = crowd_in_subprocess([blocks, "-p", tmp_path / "out.csv"])
    assert_one_line_refusal(code, err, "1000000001 labels")


def test_the_worker_table_is_bounded_and_names_its_bytes(tmp_path):
    """--n_labels says the classes are meant; the worker table must still fit the stated bound,
    and the error names its size and the way out."""
    answers = _many_labels(tmp_path, 300)
    out = tmp_path / "out.csv"
    code, err = crowd_in_subprocess([answers, "--n_labels", 300, "-p", out])
    assert_one_line_refusal(code, err, "87.9 GiB", "65,536 slots x 300 x 300", "--n_worker_bits")
    assert not out.exists()
    code, err = crowd_in_subprocess([answers, "--n_labels", 300, "--n_worker_bits", 6, "-p", out])
    assert code == 0, err
    assert len(out.read_text().splitlines()[0].split(",")) == 2 + 300
    code, err = crowd_in_subprocess([answers, "--n_labels", 5000, "-p", out])
    assert_one_line_refusal(code, err, "--n_labels 5000", "1024")


# ----------------------------------------------------------------- item 8: field kinds
@pytest.mark.parametrize("edit,needle", [
    (lambda h, a: h["state"]["config"].update(label_names=[{"a": 1}, {"b": 2}, {"c": 3}]),
     "label_names"),
    (lambda h, a: h["state"]["config"].update(label_names=["0", "0", "1"]), "label_names"),
    (lambda h, a: h["state"]["config"].update(label_names=["0", "1"]), "label_names"),
    (lambda h, a: h["state"].update(t=2 ** 70), "t = "),
    (lambda h, a: h["state"].update(t=1.5), "t = "),
    (lambda h, a: a.update(theta=a["theta"].astype(np.uint16)), "theta"),
    (lambda h, a: h["state"]["config"].update(n_labels="3"), "n_labels"),
    (lambda h, a: h["state"]["config"].update(n_labels=1 << 40), "n_labels"),
    (lambda h, a: h["state"]["config"].update(n_worker_bits=2 ** 70), "n_worker_bits"),
    (lambda h, a: h["state"]["config"].update(priorz=[True, 1, 1]), "priorz"),
    (lambda h, a: h["state"]["config"].update(symmetric="yes"), "symmetric"),
    (lambda h, a: h["state"]["config"].update(nu="-2"), "nu"),
    (lambda h, a: h["state"].update(config=[1, 2]), "config"),
    (lambda h, a: h["state"].update(workers={"w": 1}), "workers"),
    (lambda h, a: h["state"].pop("t"), "t"),
    (lambda h, a: a.pop("mu"), "arrays"),
    (lambda h, a: a.update(extra=np.zeros(3)), "arrays"),
    (lambda h, a: h.update(options=["crowd", "--executor", "dask:tcp://127.0.0.1:9"]), "options"),
])
def test_crowd_model_fields_of_the_wrong_kind_are_one_line_errors(crowd_models, tmp_path, edit,
                                                                  needle, capsys):
    """Issue item 8: label_names of dicts (TypeError), t = 2**70 (numba TypingError) and theta
    as uint16 (UFuncTypeError) ended in tracebacks."""
    answers, models = crowd_models
    evil = tmp_path / "evil.pvw"
    evil.write_bytes(edited(models["hash"], edit))
    code, err = crowd([answers, "-i", evil, "-p", tmp_path / "out.csv"], capsys)
    assert_one_line_refusal(code, err, f"{evil}: malformed crowd model (", needle)


# ----------------------------------------------------------------- item 10: non-finite numbers
FLOAT_OPTIONS = [("--nu", []), ("--sigma_alpha", []), ("--sigma_mu", []), ("--sigma_b", []),
                 ("--kappa", []), ("--eta", []), ("--rho", []), ("--initial_t", []),
                 ("--tol", ["--batch", "--method", "em"]), ("--a_pi", ["--method", "ebcc"]),
                 ("--a_v", ["--method", "bcc"]), ("--b_v", ["--method", "bcc"]),
                 ("--tol", ["--method", "bcc"]), ("--sparse_workers", ["--batch"]),
                 ("--sigma_mu", ["--batch", "--method", "em"]),
                 ("--kappa", ["--batch", "--method", "em"])]


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
@pytest.mark.parametrize("flag,mode", FLOAT_OPTIONS)
def test_non_finite_crowd_options_are_refused(tmp_path, flag, mode, value, capsys):
    """Issue item 10: --sigma_mu nan (and --rho nan, --kappa inf, --initial_t nan) gave exit 0
    and every posterior NaN, without a word."""
    answers = tmp_path / "a.csv"
    answers.write_text(answers_text())
    out = tmp_path / "out.csv"
    code, err = crowd([answers, *mode, flag, value, "-p", out], capsys)
    assert_one_line_refusal(code, err, f"{flag} {value}", "finite")
    assert not out.exists()


@pytest.mark.parametrize("flag,value", [("--kappa", "1000"), ("--sigma_alpha", "1e-300"),
                                        ("--sigma_mu", "1e300"), ("--sigma_b", "1e-300"),
                                        ("--eta", "1e300"), ("--priorz", "1,nan,1"),
                                        ("--n_items", "-5")])
def test_crowd_options_beyond_their_range_are_refused(tmp_path, flag, value, capsys):
    """Finite values that overflow the arithmetic (exp(kappa), 1 / sigma^2, eta steps) were
    tracebacks or NaN posteriors."""
    answers = tmp_path / "a.csv"
    answers.write_text(answers_text())
    for mode in ([], ["--batch", "--method", "em"]):
        code, err = crowd([answers, *mode, flag, value, "-p", tmp_path / "out.csv"], capsys)
        assert_one_line_refusal(code, err, flag)


@pytest.mark.parametrize("edit,needle", [
    (lambda h, a: h["state"]["config"].update(sigma_mu=math.nan), "sigma_mu"),
    (lambda h, a: h["state"]["config"].update(eta=math.inf), "eta"),
    (lambda h, a: h["state"]["config"].update(rho=math.nan), "rho"),
    (lambda h, a: h["state"]["config"].update(kappa=-math.inf), "kappa"),
    (lambda h, a: h["state"]["config"].update(nu=math.nan), "nu"),
    (lambda h, a: h["state"]["config"].update(initial_t=math.inf), "initial_t"),
    (lambda h, a: h["state"]["config"].update(priorz=[1.0, math.nan, 1.0]), "priorz"),
    (lambda h, a: h["state"].update(t=-5), "t = -5"),
    (lambda h, a: a["stamp"].__setitem__(0, a["stamp"].max() + 10 ** 6), "stamp"),
    (lambda h, a: a["stamp"].__setitem__(1, -1), "stamp"),
    (lambda h, a: a["alpha"].__setitem__((0, 0, 1), math.nan), "alpha"),
    (lambda h, a: a["mu"].__setitem__((1, 0), math.inf), "mu"),
    (lambda h, a: a["theta"].__setitem__(2, -math.inf), "theta"),
    (lambda h, a: a["alpha"].__setitem__((0, 1, 1), 3.0), "alpha"),
    (lambda h, a: a["stats"].__setitem__((0, 1, 2), -1.0), "stats"),
    (lambda h, a: a["stats"].__setitem__((0, 1, 2), math.inf), "stats"),
    (lambda h, a: a["stats"].__setitem__((0, 1, 2), 1e300), "stats"),
    (lambda h, a: a["class_mass"].__setitem__(1, math.nan), "class_mass"),
    (lambda h, a: a["class_mass"].__setitem__(0, -2.0), "class_mass"),
])
def test_non_finite_or_negative_crowd_model_fields_are_refused(crowd_models, tmp_path, edit,
                                                               needle, capsys):
    """Issue item 10: --eta inf or a negative t through a crowd model gave NaN posteriors,
    exit 0."""
    answers, models = crowd_models

    def writable(header, arrays):
        for name in arrays:
            arrays[name] = arrays[name].copy()
        edit(header, arrays)

    evil = tmp_path / "evil.pvw"
    evil.write_bytes(edited(models["hash"], writable))
    code, err = crowd([answers, "-i", evil, "-p", tmp_path / "out.csv"], capsys)
    if "NaN in the header" in err:  # JSON's NaN: refused by the container, before any field
        assert_one_line_refusal(code, err, f"{evil}: malformed model (NaN in the header")
    else:
        assert_one_line_refusal(code, err, f"{evil}: malformed crowd model (", needle)


# ----------------------------------------------------------------- item 13: dtypes
@pytest.mark.parametrize("base,name,dtype", [
    ("hash", "alpha", np.int64), ("hash", "alpha", np.bool_), ("hash", "alpha", np.float32),
    ("hash", "mu", np.int32), ("hash", "stamp", np.float64), ("hash", "stamp", np.uint64),
    ("hash", "theta", np.float32), ("exact", "alpha", np.float32),
    ("hash", "stats", np.float32), ("hash", "class_mass", np.int64)])
def test_crowd_model_arrays_of_another_dtype_are_refused(crowd_models, tmp_path, base, name,
                                                         dtype, capsys):
    """Issue item 13: int/bool/float32 alpha, int32 mu (every posterior became 0.1) and float64
    stamps were accepted."""
    answers, models = crowd_models
    evil = tmp_path / "evil.pvw"
    evil.write_bytes(edited(models[base], lambda h, a: a.update({name: a[name].astype(dtype)})))
    code, err = crowd([answers, "-i", evil, "-p", tmp_path / "out.csv"], capsys)
    assert_one_line_refusal(code, err, f"{evil}: malformed crowd model (", name)


def test_a_worker_slot_true_is_refused(crowd_models, tmp_path, capsys):
    """Issue item 13: a worker slot ``true`` (a bool, which Python counts as an int) loaded."""
    answers, models = crowd_models
    evil = tmp_path / "evil.pvw"
    evil.write_bytes(edited(models["exact"],
                            lambda h, a: h["state"]["workers"][1].__setitem__(1, True)))
    code, err = crowd([answers, "-i", evil, "-p", tmp_path / "out.csv"], capsys)
    assert_one_line_refusal(code, err, f"{evil}: malformed crowd model (", "workers")


def test_every_model_the_crowd_command_writes_loads_back(crowd_models, tmp_path, capsys):
    """The checks refuse what a model never holds, not what it does: each saved model continues
    online, and saved again, loads to the same arrays."""
    from pyvw_lite.crowd.model import CrowdModel
    answers, models = crowd_models
    for name, path in models.items():
        again = tmp_path / f"{name}-again.pvw"
        code, err = crowd([answers, "-i", path, "-f", again, "-p", tmp_path / "out.csv"], capsys)
        assert code == 0, err
        first, second = CrowdModel.load(str(path)), CrowdModel.load(str(again))
        assert second.t == first.t + N_TASKS
        assert second.alpha.shape == first.alpha.shape


# ----------------------------------------------------------------- fuzz
def posteriors(model, answers) -> np.ndarray:
    """Online EM over ``answers`` with ``model`` (learning, then labelling as the crowd command
    does): the final posteriors."""
    from pyvw_lite.crowd.online import run_online
    from pyvw_lite.io.crowd_input import read_answers
    data = read_answers(str(answers), label_names=model.config.label_names)
    run_online(data, model)
    return run_online(data, model, test_only=True).q


def test_byte_fuzz_of_a_crowd_model_is_refused_or_changes_nothing(crowd_models, tmp_path):
    """10,000 seeded mutations (flips, overwrites, cuts, insertions) of the three kinds of crowd
    model: each is refused with a one-line ModelError or gives bit-identical posteriors."""
    from pyvw_lite.crowd.model import CrowdModel
    answers, models = crowd_models
    originals = {name: path.read_bytes() for name, path in models.items()}
    expected = {name: posteriors(CrowdModel.load(str(path)), answers)
                for name, path in models.items()}
    names = sorted(originals)
    rng = np.random.default_rng(FUZZ_SEED)
    mutated_path = tmp_path / "mutated.pvw"
    loaded_same = 0
    for trial in range(10_000):
        name = names[trial % len(names)]
        raw = originals[name]
        mutated_path.write_bytes(byte_mutation(raw, rng, (trial // len(names)) % 4))
        try:
            model = CrowdModel.load(str(mutated_path))
        except ModelError as exc:
            assert "\n" not in str(exc) and str(exc).startswith(f"{mutated_path}: ")
            continue
        np.testing.assert_array_equal(posteriors(model, answers), expected[name])
        loaded_same += 1
    assert loaded_same == 0  # the digest covers every byte: no mutation passes


def test_signed_crowd_model_fuzz_is_refused_or_runs_to_finite_posteriors(crowd_models,
                                                                         tmp_path):
    """10,000 structural mutations with the digest recomputed (short, long, wrong-dtype and
    non-finite arrays, hostile sizes and header values, settings at the edges of their ranges),
    in a child process: no signal, no traceback; each is refused with a one-line ModelError,
    or loads, learns and labels the answers with finite posteriors (or, a valid model whose
    label names or full exact worker map do not fit these answers, the run's one-line error)."""
    answers, models = crowd_models
    done = subprocess.run([sys.executable, os.path.abspath(__file__), "structural-fuzz",
                           str(answers), str(tmp_path / "hostile.pvw"),
                           *[f"{name}={path}" for name, path in sorted(models.items())]],
                          capture_output=True, text=True, env=_child_environment(), cwd=ROOT,
                          timeout=300, preexec_fn=_memory_bound)
    assert done.returncode == 0, (f"the fuzz process ended with {done.returncode}"
                                  f"{' (a signal)' if done.returncode < 0 else ''}: "
                                  f"{done.stderr[-3000:]}")
    outcomes = json.loads(done.stdout.strip().splitlines()[-1])
    assert sum(outcomes.values()) == 10_000, outcomes
    assert outcomes["refused"] > 5000 and outcomes["loaded"] > 1000, outcomes


# hostile values, and the edges of what a model may hold (1e-6, 1e6, 30, 1e100, 2^53): a value
# at an edge must load and run to finite posteriors
HOSTILE_VALUES = [None, True, False, -1, 0, 1, 2, 3, 30, 31, 64, 1024, 2.5, -2.0, -30.0, 1e-6,
                  1e6, 1e100, -1e100, 1e300, -1e300, 5e-324, math.nan, math.inf, -math.inf,
                  2 ** 53, 2 ** 53 + 1, 2 ** 63, 2 ** 70, -(2 ** 63), "x", "", "hash", "exact",
                  "crowd", [], {}, [1, 2], ["a", "b", "c"], {"a": 1}, [[1, 2]], ["0", "1", "2"],
                  [1.0, 1.0, 1.0], [1e-300, 1.0, 1e300]]
DTYPES = [np.float64, np.float32, np.int64, np.int32, np.uint8, np.bool_, np.uint16, np.uint32,
          np.uint64]
FLOATS = [math.nan, math.inf, -math.inf, 1e300, -1e300, 1e100, -1e100, 1e13, -1e13, 1e6, 0.0,
          5e-324, 700.0]


def _hostile(rng):
    return HOSTILE_VALUES[int(rng.integers(len(HOSTILE_VALUES)))]


def _mutate_array(array: np.ndarray, rng) -> np.ndarray:
    """Short, long, reshaped, of another dtype, or with hostile numbers in it."""
    choice = int(rng.integers(7))
    if choice == 0 and array.shape[0] > 0:
        return array[:int(rng.integers(array.shape[0]))]
    if choice == 1:
        extra = array[:1].repeat(int(rng.integers(1, 9)), axis=0) if array.shape[0] else array
        return np.concatenate([array, extra])
    if choice == 2:
        return array.reshape(-1) if array.ndim > 1 else array.reshape(1, -1)
    if choice == 3:
        return array.astype(DTYPES[int(rng.integers(len(DTYPES)))])
    if choice == 4 and array.ndim > 1:
        return np.ascontiguousarray(np.swapaxes(array, 0, -1))
    changed = array.copy()
    flat = changed.reshape(-1)
    if flat.size:
        for _ in range(int(rng.integers(1, 4))):
            at = int(rng.integers(flat.size))
            if changed.dtype.kind == "f":
                flat[at] = FLOATS[int(rng.integers(len(FLOATS)))]
            else:
                flat[at] = [-1, 0, 1, 2 ** 40, -(2 ** 62), 2 ** 62][int(rng.integers(6))]
    return changed


def _resize_table(header, arrays, rng):
    """A consistent change of the table's size: a legitimate model of another n_worker_bits."""
    config = header["state"]["config"]
    bits = int(rng.integers(1, 7))
    slots = 1 << bits
    if config["worker_map"] == "exact":
        workers = header["state"]["workers"]
        if len(workers) > slots:
            return
    config["n_worker_bits"] = bits
    K = config["n_labels"]
    alpha = np.broadcast_to(arrays["mu"], (slots, K, K)).copy()
    used = min(slots, arrays["alpha"].shape[0])
    alpha[:used] = arrays["alpha"][:used]
    arrays["alpha"] = alpha
    arrays["stamp"] = np.concatenate([arrays["stamp"],
                                      np.zeros(slots, dtype=np.int64)])[:slots].copy()
    stats = np.zeros((slots, K, K))
    stats[:used] = arrays["stats"][:used]
    arrays["stats"] = stats


EDGES = {"nu": [-1e6, 1e6], "kappa": [-30.0, 30.0], "sigma_alpha": [1e-6, 1e6],
         "sigma_mu": [0.0, 1e-6, 1e6], "sigma_b": [0.0, 1e-6, 1e6], "eta": [1e-6, 1e6],
         "rho": [0.0, 1e6], "initial_t": [1e-6, 2.0 ** 53], "n_items": [0, 1, 2 ** 53],
         "learn_priorz": [False, True], "symmetric": [False, True]}


def _at_the_edges(header, arrays, rng):
    """Settings, t and logits at the edges of their ranges: a valid model, which must run to
    finite posteriors (each edge is where an overflow would start)."""
    config = header["state"]["config"]
    names = sorted(EDGES)
    for at in rng.choice(len(names), size=int(rng.integers(1, 5)), replace=False):
        choices = EDGES[names[at]]
        config[names[at]] = choices[int(rng.integers(len(choices)))]
    if rng.random() < 0.3:
        header["state"]["t"] = 2 ** 53
    if rng.random() < 0.5:
        K = config["n_labels"]
        alpha = arrays["alpha"]
        for _ in range(int(rng.integers(1, 4))):
            k, l = rng.choice(K, size=2, replace=False)
            alpha[int(rng.integers(alpha.shape[0])), k, l] = (1e100, -1e100)[int(rng.integers(2))]


def mutate(header: dict, arrays: dict, rng) -> tuple[dict, dict]:
    """One structural change of a crowd model: a header field (top level, state, config, worker
    table) deleted or given a hostile value, an array made short, long, reshaped, of another
    dtype or hostile in its numbers, an array dropped or added, or the table resized
    consistently."""
    header = json.loads(json.dumps(header))
    arrays = {name: array.copy() for name, array in arrays.items()}
    state = header["state"]
    draw = rng.random()
    if draw < 0.3:
        config = state["config"]
        key = sorted(config)[int(rng.integers(len(config)))]
        if rng.random() < 0.1:
            del config[key]
        elif key in ("label_names", "priorz") and rng.random() < 0.5:
            items = list(config[key])
            if items:
                items[int(rng.integers(len(items)))] = _hostile(rng)
            config[key] = items
        else:
            config[key] = _hostile(rng)
    elif draw < 0.4:
        key = sorted(state)[int(rng.integers(len(state)))]
        if rng.random() < 0.15:
            del state[key]
        else:
            state[key] = _hostile(rng) if rng.random() < 0.7 else int(rng.integers(0, 200))
    elif draw < 0.5:
        workers = state["workers"]
        if workers and rng.random() < 0.7:
            pair = workers[int(rng.integers(len(workers)))]
            pair[int(rng.integers(2))] = _hostile(rng)
        else:
            workers.append(["w-new", _hostile(rng)] if rng.random() < 0.5
                           else list(workers[0]) if workers else _hostile(rng))
    elif draw < 0.85:
        name = sorted(arrays)[int(rng.integers(len(arrays)))]
        arrays[name] = _mutate_array(arrays[name], rng)
    elif draw < 0.9:
        if rng.random() < 0.5:
            del arrays[sorted(arrays)[int(rng.integers(len(arrays)))]]
        else:
            arrays["extra"] = np.zeros(int(rng.integers(1, 5)))
    elif draw < 0.92:
        key = ("options", "version", "format")[int(rng.integers(3))]
        header[key] = _hostile(rng)
    elif draw < 0.95:
        _resize_table(header, arrays, rng)
    else:
        _at_the_edges(header, arrays, rng)
    return header, arrays


def structural_fuzz(answers: str, hostile: str, models: dict) -> dict:
    """The child process's loop; returns the outcome counts (an assertion fails the run)."""
    from pyvw_lite.crowd.model import CrowdModel
    bases = {name: model_parts(open(path, "rb").read()) for name, path in models.items()}
    names = sorted(bases)
    rng = np.random.default_rng(FUZZ_SEED + 1)
    outcomes = {"refused": 0, "loaded": 0, "answers_refused": 0}
    for trial in range(10_000):
        header, arrays = mutate(*bases[names[trial % len(names)]], rng)
        with open(hostile, "wb") as handle:
            handle.write(signed(header, arrays))
        try:
            model = CrowdModel.load(hostile)
        except ModelError as exc:
            assert "\n" not in str(exc) and str(exc).startswith(f"{hostile}: "), str(exc)
            outcomes["refused"] += 1
            continue
        try:
            q = posteriors(model, answers)
        except ValueError as exc:  # a valid model the answers do not fit: the run's one line
            assert "\n" not in str(exc) and any(reason in str(exc) for reason in (
                "unknown label", "distinct workers with --worker_map exact")), str(exc)
            outcomes["answers_refused"] += 1
            continue
        assert np.isfinite(q).all() and q.shape == (N_TASKS, model.config.n_labels), trial
        outcomes["loaded"] += 1
    return outcomes


if __name__ == "__main__" and sys.argv[1:2] == ["structural-fuzz"]:
    answers_path, hostile_path = sys.argv[2:4]
    paths = dict(argument.split("=", 1) for argument in sys.argv[4:])
    print(json.dumps(structural_fuzz(answers_path, hostile_path, paths)))


def test_a_crowd_model_from_before_the_online_statistics_says_so(crowd_models, tmp_path, capsys):
    def without_statistics(header, arrays):
        del arrays["stats"], arrays["class_mass"]
    answers, models = crowd_models
    old = tmp_path / "old.pvw"
    old.write_bytes(edited(models["hash"], without_statistics))
    code, err = crowd([answers, "-i", old, "-p", tmp_path / "out.csv"], capsys)
    assert_one_line_refusal(code, err, f"{old}: malformed crowd model (saved by an earlier "
                                       "pyvw-lite, before online EM kept its statistics")
