"""Files from elsewhere are data, never commands (docs/security.md).

Models, caches and configs someone else wrote may not run code, reach the network, write a file
the command line did not name, or change a result without a word: every damaged file is refused
with one clean line, every file a model or config may not set is refused by name.  The fuzz
tests mutate real files (seeded) and check exactly that.
"""
import contextlib
import hashlib
import json
import os
import struct
import subprocess
import shutil
import sys
import tempfile

import numpy as np
import pytest

from conftest import byte_mutation, run_workspace
from pyvw_lite.cli.main import main
from pyvw_lite.io.model_io import MAGIC, ModelError, load_model

LINES = "".join(f"{1 if i % 3 else -1} |a x{i % 7} y{i % 5} |b z{i % 4}\n" for i in range(60))
FUZZ_SEED = 20261126


@pytest.fixture
def small_model(tmp_path):
    """A -b 10 logistic model (with its data file and its predictions on that file)."""
    data = tmp_path / "d.vw"
    data.write_text(LINES)
    model = tmp_path / "m.pvw"
    _, _, code = run_workspace(["-d", str(data), "-b", "10", "--loss_function", "logistic",
                                "-q", "ab", "-f", str(model), "--quiet"])
    assert code == 0
    return data, model, predictions(data, model)


def predictions(data, model):
    from pyvw_lite.workspace import Workspace
    ws = Workspace(["-t", "-i", str(model), "--quiet"])
    return ws.predict(data.read_text().splitlines())


def split_model(raw: bytes):
    (size,) = struct.unpack_from("<I", raw, len(MAGIC))
    start = len(MAGIC) + 4
    return json.loads(raw[start:start + size]), raw[start + size:-32]


def signed_model(header, payload: bytes) -> bytes:
    """A model file with a valid digest around any header: what a hostile author can write."""
    text = json.dumps(header).encode()
    body = MAGIC + struct.pack("<I", len(text)) + text + payload
    return body + hashlib.sha256(body).digest()


def with_array(header, payload: bytes, name: str, array: np.ndarray) -> bytes:
    """A signed model whose array ``name`` is replaced by ``array`` (any dtype and size), the
    directory and payload laid out again: what a hostile author can write."""
    arrays, chunks, offset = [], [], 0
    for entry in header["arrays"]:
        if entry["name"] == name:
            raw, dtype, shape = array.tobytes(), array.dtype.str, list(array.shape)
        else:
            raw = payload[entry["offset"]:entry["offset"] + entry["nbytes"]]
            dtype, shape = entry["dtype"], entry["shape"]
        arrays.append(dict(entry, offset=offset, nbytes=len(raw), dtype=dtype, shape=shape))
        chunks.append(raw)
        offset += len(raw)
    return signed_model(dict(header, arrays=arrays, payload_bytes=offset), b"".join(chunks))


def small_answers(folder):
    """answers.csv of 180 answers (30 tasks, 7 workers, 3 labels) in ``folder``."""
    path = folder / "answers.csv"
    path.write_text("task,worker,label\n" + "".join(f"t{i % 30},w{i % 7},{i % 3}\n"
                                                    for i in range(180)))
    return path


def files_under(root) -> set:
    return {os.path.join(folder, name) for folder, _, names in os.walk(root) for name in names}


# ---------------------------------------------------------------------------------- models
@pytest.mark.parametrize("option", [["--executor", "dask:tcp://127.0.0.1:9"],
                                    ["--readable_model", "{victim}"], ["-f", "{victim}"],
                                    ["-p", "{victim}"], ["--cache_file", "{victim}"],
                                    ["--invert_hash", "{victim}"], ["{victim}"]])
def test_a_model_header_may_not_set_run_options(small_model, tmp_path, option, capsys):
    """Issue 25 item 1: a header carrying --executor made -t -i connect and unpickle; one
    carrying an output path overwrote that file with exit 0."""
    data, model, _ = small_model
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    header, payload = split_model(model.read_bytes())
    header["options"] = header["options"] + [token.format(victim=victim) for token in option]
    hostile = tmp_path / "hostile.pvw"
    hostile.write_bytes(signed_model(header, payload))
    assert main(["-d", str(data), "-t", "-i", str(hostile), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "which a model may not set" in err and str(hostile) in err
    assert "Traceback" not in err
    assert victim.read_text() == "precious\n"


def test_one_changed_header_byte_is_refused(small_model, capsys):
    """Issue 25 item 1: bit_precision 10 -> 11 in the header changed every prediction, exit 0."""
    data, model, _ = small_model
    raw = model.read_bytes()
    changed = raw.replace(b'"bit_precision": 10', b'"bit_precision": 11')
    assert changed != raw
    model.write_bytes(changed)
    assert main(["-d", str(data), "-t", "-i", str(model), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "checksum mismatch" in err and "Traceback" not in err


@pytest.mark.parametrize("edit,needle", [
    (lambda h: h.pop("arrays"), "header field 'arrays'"),
    (lambda h: h.update(arrays=[{"name": "rows", "dtype": "|O", "shape": [1], "offset": 0,
                                  "nbytes": 8}]), "array directory entry"),
    (lambda h: h["state"].pop("learner"), "malformed model (learner"),
    (lambda h: h["state"].update(kept={"bit_precision": "18; rm -rf"}), "not a valid integer"),
    (lambda h: h["state"].update(kept={"data": "x"}), "sets --data"),
    (lambda h: h["state"].update(class_stride=7), "class stride"),
    (lambda h: h["state"].update(slot_multiplier=-3), "slot_multiplier"),
    (lambda h: h["state"].update(slot_multiplier="7; rm -rf"), "slot_multiplier"),
    (lambda h: h.update(options=["--rank"]), "malformed model header"),
    (lambda h: h.update(format=99), "model format 99 is newer"),
])
def test_malformed_headers_are_one_line_errors(small_model, tmp_path, edit, needle, capsys):
    data, model, _ = small_model
    header, payload = split_model(model.read_bytes())
    edit(header)
    model.write_bytes(signed_model(header, payload))
    assert main(["-d", str(data), "-t", "-i", str(model), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err and err.count("\n") == 1, err


def test_a_text_dump_is_named_as_one(small_model, tmp_path, capsys):
    """Issue 29 item 6: -i on a --readable_model dump said 'export with --readable_model'."""
    data, model, _ = small_model
    text = tmp_path / "m.txt"
    run_workspace(["-i", str(model), "-t", "-d", str(data), "--readable_model", str(text),
                   "--quiet"])
    assert main(["-d", str(data), "-i", str(text), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "a text dump" in err and "export with --readable_model" not in err


def test_byte_fuzz_of_a_model_is_refused_or_changes_nothing(small_model):
    """10,000 seeded mutations (flips, overwrites, cuts, insertions) anywhere in the file:
    each is refused with a ModelError or loads to bit-identical predictions."""
    data, model, expected = small_model
    raw = model.read_bytes()
    rng = np.random.default_rng(FUZZ_SEED)
    loaded_same = 0
    for trial in range(10_000):
        model.write_bytes(byte_mutation(raw, rng, trial % 4))
        try:
            load_model(str(model))
        except ModelError:
            continue
        np.testing.assert_array_equal(predictions(data, model), expected)
        loaded_same += 1
    assert loaded_same == 0  # the digest covers every byte: no mutation passes


HOSTILE_VALUES = [None, True, -1, 0, 3, 2.5, "x", "--executor", [], {}, ["--executor", "x"],
                  float("inf"), 1 << 40, "../../etc/passwd", [1, 2], {"a": 1}]
HOSTILE_TOKENS = ["--executor", "dask:tcp://127.0.0.1:9", "-f", "--readable_model", "-p",
                  "--cache_file", "--invert_hash", "--save_per_pass", "-b", "12", "--oaa", "3",
                  "--dyad", "ab", "--rank", "2", "-l", "0.1", "--sgd", "--hash", "all", "-q",
                  "ab", "-d", "{out}", "{out}", "--quiet", "--audit"]


def _mutate_header(header, rng, out: str):
    """One structural change of a header: a field deleted, replaced by a hostile value, or
    options spliced with hostile tokens (paths pointing into ``out``)."""
    header = json.loads(json.dumps(header))
    target = header if rng.random() < 0.4 else header["state"]
    if rng.random() < 0.3:
        tokens = [HOSTILE_TOKENS[int(i)].format(out=out)
                  for i in rng.integers(len(HOSTILE_TOKENS), size=int(rng.integers(1, 5)))]
        header["options"] = header["options"] + tokens
        return header
    keys = sorted(target)
    if not keys:
        return header
    key = keys[int(rng.integers(len(keys)))]
    if rng.random() < 0.2:
        del target[key]
    elif key == "kept" and isinstance(target[key], dict) and target[key]:
        names = sorted(target[key])
        target[key][names[int(rng.integers(len(names)))]] = \
            HOSTILE_VALUES[int(rng.integers(len(HOSTILE_VALUES)))]
    else:
        target[key] = HOSTILE_VALUES[int(rng.integers(len(HOSTILE_VALUES)))]
    return header


def test_signed_header_fuzz_raises_no_traceback_and_writes_nothing(small_model, tmp_path):
    """10,000 structural header mutations, digest recomputed (what a hostile author can do):
    each is refused with a one-line error or loads; none writes a file, none sets a run
    option."""
    from pyvw_lite.options import OptionError
    from pyvw_lite.workspace import Workspace
    data, model, _ = small_model
    header, payload = split_model(model.read_bytes())
    out = tmp_path / "must-stay-empty"
    out.mkdir()
    before = files_under(tmp_path)
    rng = np.random.default_rng(FUZZ_SEED + 1)
    hostile = tmp_path / "hostile.pvw"
    outcomes = {"refused": 0, "loaded": 0}
    for _ in range(10_000):
        hostile.write_bytes(signed_model(_mutate_header(header, rng, str(out / "x")), payload))
        try:
            ws = Workspace(["-t", "-i", str(hostile), "--quiet"])
        except (ModelError, OptionError) as exc:
            assert "\n" not in str(exc)
            outcomes["refused"] += 1
            continue
        assert ws.options.executor is None and ws.options.data is None
        assert not any([ws.options.final_regressor, ws.options.predictions,
                        ws.options.readable_model, ws.options.cache_file,
                        ws.options.invert_hash])
        ws.predict(LINES.splitlines()[:5])
        outcomes["loaded"] += 1
    assert files_under(tmp_path) == before | {str(hostile)}
    assert outcomes["refused"] > 5000 and outcomes["loaded"] > 250, outcomes


# ---------------------------------------------------------------------------------- caches
def _cache_of(tmp_path, lines=LINES, extra=()):
    data, cache = tmp_path / "c.vw", tmp_path / "c.cache"
    data.write_text(lines)
    _, _, code = run_workspace(["-d", str(data), "--cache_file", str(cache), "--quiet", *extra])
    assert code == 0
    return data, cache


def _batches(path):
    from pyvw_lite.io.cache import CacheReader
    reader = CacheReader(str(path))
    try:
        return [(b.ex_int.copy(), b.ex_float.copy(), b.seg.copy(), b.feat_hash.copy(),
                 b.feat_value.copy(), b.buf.copy()) for b in reader]
    finally:
        reader.close()


def test_a_flipped_cache_bit_is_a_clean_error(tmp_path, capsys):
    """Issue 25 item 7: a flipped bit at 1/4 of a cache changed 1,978 of 2,000 predictions."""
    lines = "".join(f"{i % 2} 'tag{i} |a x{i % 13}:{i % 5} |b y{i % 11}\n" for i in range(3000))
    data, cache = _cache_of(tmp_path, lines)
    raw = bytearray(cache.read_bytes())
    for where in (len(raw) // 4, len(raw) // 2):
        damaged = bytearray(raw)
        damaged[where] ^= 0x10
        cache.write_bytes(bytes(damaged))
        assert main(["-d", str(data), "--cache_file", str(cache), "--passes", "2",
                     "--quiet"]) == 1
        err = capsys.readouterr().err
        assert f"{cache}: damaged cache" in err and "rebuild it with -k" in err
        assert "Traceback" not in err


def test_cache_fuzz_is_refused_or_reads_the_same_examples(tmp_path):
    """10,000 seeded mutations of a three-block cache (tags, values, weights, label text):
    each is refused with a CacheError or reads exactly the cached examples."""
    from pyvw_lite.io.cache import CacheError
    lines = "".join(f"{1 + i % 3} {1 + i % 2} 'g{i} |a x{i % 13}:{i % 5} |b y{i % 11}\n"
                    for i in range(40))
    data, cache = _cache_of(tmp_path, lines, ["--oaa", "3", "--named_labels", "1,2,3"])
    raw = cache.read_bytes()
    expected = _batches(cache)
    rng = np.random.default_rng(FUZZ_SEED + 2)
    same = 0
    for trial in range(10_000):
        mutated = bytearray(raw)
        at = int(rng.integers(len(raw)))
        if trial % 3 == 0:
            mutated[at] ^= 1 << int(rng.integers(8))
        elif trial % 3 == 1:
            mutated[at:at + 8] = rng.integers(256, size=8, dtype=np.uint8).tobytes()
        else:
            del mutated[at:]
        cache.write_bytes(bytes(mutated))
        try:
            got = _batches(cache)
        except CacheError as exc:
            assert str(cache) in str(exc) and "\n" not in str(exc)
            continue
        for mine, theirs in zip(got, expected, strict=True):
            for a, b in zip(mine, theirs):
                np.testing.assert_array_equal(a, b)
        same += 1
    assert same < 10  # only mutations that change nothing (an overwrite with equal bytes)


def test_cache_file_never_overwrites_a_file_that_is_no_cache(tmp_path, capsys):
    """Issue 25 item 6: --cache_file naming a data file or a model replaced it, exit 0."""
    data = tmp_path / "d.vw"
    data.write_text(LINES)
    other = tmp_path / "notes.txt"
    other.write_text("not a cache\n")
    for extra in ([], ["-k"]):
        assert main(["-d", str(data), "--cache_file", str(other), "--quiet", *extra]) == 1
        err = capsys.readouterr().err
        assert "exists and is not a pyvw-lite cache" in err
        assert other.read_text() == "not a cache\n"


def test_the_cache_only_form_reads_the_cache(tmp_path, monkeypatch):
    """Issue 25 item 6: `--cache_file c --passes 2` with empty stdin rebuilt the cache empty."""
    import io
    import sys
    data, cache = _cache_of(tmp_path)
    before = cache.read_bytes()
    first, again = tmp_path / "a.pvw", tmp_path / "b.pvw"
    run_workspace(["-d", str(data), "--cache_file", str(cache), "--passes", "2", "-f",
                   str(first), "--quiet"])
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))
    out, err, code = run_workspace(["--cache_file", str(cache), "--passes", "2", "-f",
                                    str(again)])
    assert code == 0 and "using cache_file" in err and "number of examples per pass = 54" in err
    assert cache.read_bytes() == before
    np.testing.assert_array_equal(load_model(str(first)).arrays["values"],
                                  load_model(str(again)).arrays["values"])


def test_two_learners_on_one_cache_path_each_learn_their_own_data(tmp_path):
    """Issue 25 item 4: runs sharing a --cache_file read each other's examples in passes 2+
    (1,358,959 of 6M predictions differed, 'examples per pass = 1025000' of 2M lines)."""
    import subprocess
    import sys
    rng = np.random.default_rng(5)
    words = rng.integers(0, 5000, size=(40_000, 6))
    data = tmp_path / "d.vw"
    data.write_text("".join(f"{(row[0] % 2) * 2 - 1} |a " + " ".join(f"f{w}" for w in row)
                            + "\n" for row in words))
    runs = {"s1": ["--hash_seed", "1"], "s2": ["--hash_seed", "2", "--loss_function",
                                                "logistic"]}

    def argv(name, cache):
        return [sys.executable, "-m", "pyvw_lite", "-d", str(data), "--passes", "4",
                "--holdout_off", "-b", "16", "--cache_file", str(cache), "-f",
                str(tmp_path / f"{name}.pvw"), "--quiet", *runs[name]]

    for name in runs:
        subprocess.run(argv(name, tmp_path / f"{name}.cache"), check=True)
    solo = {name: load_model(str(tmp_path / f"{name}.pvw")).arrays["values"] for name in runs}
    for attempt in range(3):
        shared = tmp_path / "shared.cache"
        running = [subprocess.Popen(argv(name, shared) + ["-k"], stderr=subprocess.PIPE)
                   for name in runs]
        for name, process in zip(runs, running):
            assert process.wait() == 0, process.stderr.read()
            np.testing.assert_array_equal(
                load_model(str(tmp_path / f"{name}.pvw")).arrays["values"], solo[name])


# ---------------------------------------------------------------------------------- configs
CONFIG = """[experiment]
name = "small"
answers = "answers.csv"
test_fraction = 0.25
seed = 1
passes = 2
common = "-b 12"

[[models]]
name = "best constant"
constant = true

[[models]]
name = "linear"
args = "--sft {K}"

[[peer]]
name = "VW"
args = "--oaa {K}"
"""


@pytest.mark.parametrize("edit,needle", [
    (('common = "-b 12"', 'common = "--executor dask:tcp://127.0.0.1:9"'), "--executor may not"),
    (('args = "--sft {K}"', 'args = "--sft {K} -p ../somefile"'), "--predictions may not"),
    (('args = "--sft {K}"', 'args = "--sft {K} --readable_model /tmp/x"'), "--readable_model"),
    (('args = "--sft {K}"', 'args = "--sft {K} other.vw"'), "a data file may not"),
    (('args = "--sft {K}"', 'args = "--sft {K} -i m.pvw"'), "--initial_regressor may not"),
    (('args = "--oaa {K}"', 'args = "--oaa {K} --daemon --port 26542"'), "VW's --daemon"),
    (('args = "--oaa {K}"', 'args = "--oaa {K} -f /tmp/x"'), "VW's -f may not"),
    (('args = "--oaa {K}"', 'args = "--oaa {K} --pid_file=/tmp/x"'), "VW's --pid_file"),
    (('name = "small"', 'name = "../../dir"'), "must be a plain name"),
    (('name = "small"', 'name = ".."'), "must be a plain name"),
])
def test_a_config_may_not_name_files_or_an_executor(tmp_path, edit, needle):
    """Issue 25 item 2: `common = "--executor dask:..."` connected; `name = "../../dir"` wrote
    outside the work directory; `-p ../somefile` in args overwrote any file."""
    from pyvw_lite.workflow.experiment import ConfigError, load_config
    config = tmp_path / "c.toml"
    config.write_text(CONFIG.replace(*edit))
    with pytest.raises(ConfigError, match=needle.replace("(", r"\(")):
        load_config(str(config))


def test_an_experiment_never_writes_over_its_data(tmp_path):
    from pyvw_lite.workflow.experiment import ConfigError, run_experiment
    work = tmp_path / "work"
    work.mkdir()
    (work / "train.vw").write_text("1 |a x\n2 |a y\n")
    config = tmp_path / "c.toml"
    config.write_text(CONFIG.replace('answers = "answers.csv"', f'data = "{work / "train.vw"}"'))
    with pytest.raises(ConfigError, match="would write over its input"):
        run_experiment(str(config), str(work), with_peer=False, plot=False)
    assert (work / "train.vw").read_text() == "1 |a x\n2 |a y\n"


def _mutate_config(text: str, rng) -> str:
    """A byte flip, a cut, a hostile token spliced into a string, or a key's value replaced."""
    choice = rng.random()
    if choice < 0.25:
        raw = bytearray(text.encode())
        raw[int(rng.integers(len(raw)))] ^= 1 << int(rng.integers(7))
        return raw.decode("utf-8", "replace")
    if choice < 0.4:
        return text[:int(rng.integers(len(text)))]
    lines = text.splitlines()
    k = int(rng.integers(len(lines)))
    token = HOSTILE_TOKENS[int(rng.integers(len(HOSTILE_TOKENS)))].format(out="../escape")
    if choice < 0.75 and lines[k].endswith('"'):
        lines[k] = lines[k][:-1] + " " + token + '"'
    elif "=" in lines[k]:
        key = lines[k].split("=", 1)[0]
        lines[k] = key + "= " + json.dumps(HOSTILE_VALUES[int(rng.integers(len(HOSTILE_VALUES)))]
                                          if rng.random() < 0.5 else token)
    return "\n".join(lines) + "\n"


def test_config_fuzz_is_refused_or_stays_in_its_work_directory(tmp_path, monkeypatch):
    """10,000 seeded config mutations: each is refused with a ConfigError or is a config whose
    every option is one a config may give; a sample of those that load is run, and writes
    only into its work directory."""
    from pyvw_lite.options import parse_argv
    from pyvw_lite.workflow.experiment import (CONFIG_REFUSED, ConfigError, load_config,
                                               run_experiment)
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    answers = "task,worker,label\n" + "".join(f"t{i % 40},w{i % 9},{(i * 7) % 3}\n"
                                              for i in range(240))
    (sandbox / "answers.csv").write_text(answers)
    monkeypatch.chdir(sandbox)
    config = sandbox / "c.toml"
    rng = np.random.default_rng(FUZZ_SEED + 3)
    loaded = []
    for _ in range(10_000):
        text = _mutate_config(CONFIG, rng)
        config.write_text(text)
        try:
            parsed = load_config(str(config))
        except ConfigError as exc:
            assert str(config) in str(exc)
            continue
        setup = parsed["experiment"]
        assert "/" not in setup.get("name", "") and setup.get("name") not in ("..", ".")
        for model in parsed["models"]:
            if "args" in model:
                given = parse_argv((setup.get("common", "") + " " + model["args"].format(K=2))
                                   .split()).given
                assert not given & set(CONFIG_REFUSED), model
        loaded.append(text)
    assert 100 < len(loaded) < 9000
    before = files_under(tmp_path)
    ran = 0
    for k, text in enumerate(loaded[:12]):
        config.write_text(text)
        work = sandbox / f"work{k}"
        try:
            run_experiment(str(config), str(work), with_peer=False, plot=False,
                           out=open(os.devnull, "w"))
            ran += 1
        except (ConfigError, ValueError, RuntimeError):
            pass  # a config that loads may still fail to run (say, a constant-only model)
        written = files_under(tmp_path) - before
        assert all(path.startswith(str(work) + os.sep) or path == str(config)
                   for path in written), sorted(written)
        before |= written
    assert ran >= 6


# ---------------------------------------------------------------------------------- numba cache
@pytest.mark.skipif(os.getuid() != 0, reason="needs root to make files of another uid")
def test_kernels_are_cached_only_in_a_private_directory(tmp_path):
    """Issue 25 item 3: with a read-only install, kernels were cached in a $TMPDIR directory
    used if merely writable, whoever owned it; numba's index files are pickles, so another
    local user could plant code there."""
    from pyvw_lite.jit import choose_cache_dir
    me, other = os.getuid(), 4343
    install = tmp_path / "site" / "pyvw_lite"
    (install / "__pycache__").mkdir(parents=True)
    os.chown(install / "__pycache__", other, other)  # another user's install
    home = tmp_path / "home"
    home.mkdir()
    temp = tmp_path / "tmp"
    temp.mkdir(mode=0o777)
    # another user made the temporary directory first, world-writable: never used
    planted = temp / f"pyvw_lite-{me}" / "numba"
    planted.mkdir(parents=True)
    for folder in (planted, planted.parent):
        os.chmod(folder, 0o777)
        os.chown(folder, other, other)
    nowhere = str(tmp_path / "a-file")
    open(nowhere, "w").close()
    assert choose_cache_dir(str(install), {}, me, nowhere, str(temp)) is None
    # the per-user directory under ~/.cache is made 0700 and used
    chosen = choose_cache_dir(str(install), {}, me, str(home), str(temp))
    assert chosen == str(home / ".cache" / "pyvw_lite" / "numba")
    assert (os.stat(chosen).st_mode & 0o777) == 0o700
    # one that exists but is open to others is refused
    os.chmod(chosen, 0o777)
    assert choose_cache_dir(str(install), {"XDG_CACHE_HOME": nowhere}, me, str(home),
                            str(temp)) is None
    # a writable install of this user's own keeps its in-tree cache
    os.chown(install / "__pycache__", me, me)
    assert choose_cache_dir(str(install), {}, me, nowhere, str(temp)) == ""
    # NUMBA_CACHE_DIR is the user's own choice
    assert choose_cache_dir(str(install), {"NUMBA_CACHE_DIR": "/x"}, me, nowhere, "/t") == "/x"


def test_without_a_private_directory_kernels_run_uncached_with_a_note(tmp_path):
    import subprocess
    import sys
    code = ("import pyvw_lite.jit as j, sys; j.choose_cache_dir = lambda *a: None; "
            "j._choose_cache_dir(); print(j.CACHE)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.strip() == "False" and "kernels are compiled on every run" in done.stderr


# ---------------------------------------------------------------------------------- outputs
@pytest.mark.parametrize("flag", ["-p", "-r", "--readable_model", "--invert_hash",
                                  "--cache_file"])
def test_no_output_replaces_the_model_read_with_i(small_model, flag, capsys):
    """Issue 25 item 5: only -f may name the -i model (VW's way to continue a model)."""
    data, model, _ = small_model
    before = model.read_bytes()
    assert main(["-d", str(data), "-i", str(model), flag, str(model), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert f"{flag} {model} is the -i file: the run would write over its input" in err
    assert model.read_bytes() == before
    assert main(["-d", str(data), "-i", str(model), "-f", str(model), "--quiet"]) == 0


@pytest.mark.parametrize("flag", ["-p", "--workers"])
def test_crowd_outputs_never_replace_the_crowd_model(tmp_path, flag, capsys):
    answers = tmp_path / "a.csv"
    answers.write_text("task,worker,label\n" + "".join(f"t{i % 9},w{i % 4},{i % 2}\n"
                                                       for i in range(60)))
    model = tmp_path / "crowd.pvw"
    assert main(["crowd", str(answers), "-f", str(model), "--quiet"]) == 0
    before = model.read_bytes()
    assert main(["crowd", str(answers), "-i", str(model), flag, str(model), "--quiet"]) == 1
    assert "is the -i file: the run would write over its input" in capsys.readouterr().err
    assert model.read_bytes() == before
    assert main(["crowd", str(answers), "-i", str(model), "-f", str(model), "--quiet"]) == 0


# ---------------------------------------------------------------------------------- crowd input
def _crowd(tmp_path, content: bytes, capsys, *extra):
    answers = tmp_path / "a.csv"
    answers.write_bytes(content)
    labels = tmp_path / "labels.csv"
    code = main(["crowd", str(answers), "--batch", "-p", str(labels), "--quiet", *extra])
    return code, capsys.readouterr().err, answers, labels


def test_a_quoted_header_is_read(tmp_path, capsys):
    """Issue 25 item 10: pandas.to_csv(quoting=QUOTE_ALL) headers were 'missing column'."""
    rows = "".join(f'"t{i % 5}","w{i % 3}","{i % 2}"\n' for i in range(30))
    code, err, _, labels = _crowd(tmp_path, ('"task","worker","label"\n' + rows).encode(),
                                  capsys)
    assert code == 0, err
    assert len(labels.read_text().splitlines()) == 6


def test_a_latin1_byte_names_its_file_and_line(tmp_path, capsys):
    rows = "task,worker,label\nt1,w1,a\nt2,w2,b\n".encode() + "t3,w\xe9,a\n".encode("latin-1")
    code, err, answers, _ = _crowd(tmp_path, rows, capsys)
    assert code == 1 and "Traceback" not in err
    assert f"{answers}:4: not UTF-8 text (byte 0xe9 at column 5" in err


def test_a_header_naming_a_column_twice_is_refused(tmp_path, capsys):
    code, err, answers, _ = _crowd(tmp_path, b"task,worker,label,label\nt1,w1,a,b\n", capsys)
    assert code == 1 and f"{answers}:1: the header names column 'label' twice" in err


def test_one_label_however_its_accent_is_composed(tmp_path, capsys):
    """Precomposed 'é' and 'e' + combining acute became two labels printed alike."""
    composed, combining = "caf\u00e9", "cafe\u0301"
    rows = "".join(f"t{i % 6},w{i % 4},{(composed, combining, 'tea')[i % 3]}\n"
                   for i in range(48))
    code, err, _, labels = _crowd(tmp_path, ("task,worker,label\n" + rows).encode(), capsys)
    assert code == 0, err
    header = labels.read_text().splitlines()[0]
    assert header.count("caf") == 1, header


# ---------------------------------------------------------------------------------- scale-out
def _exit_always(shard):
    os._exit(3)


def _stop_once(shard, marker):
    if not os.path.exists(marker):
        open(marker, "w").close()
        os.kill(os.getpid(), 19)  # SIGSTOP: the process hangs, alive and silent
    return shard * 2


def _stop_always(shard):
    os.kill(os.getpid(), 19)


def test_a_worker_that_keeps_dying_is_a_clean_error_naming_the_shard():
    """Issue 25 item 9: it ended in a raw RuntimeError traceback."""
    from pyvw_lite.distributed.executor import ProcessExecutor, WorkerError
    executor = ProcessExecutor(2, timeout=5)
    try:
        handles = [executor.put(k) for k in range(2)]
        with pytest.raises(WorkerError, match=r"processes:2: the worker running shard 1 of 2 "
                                              r"died 3 times \(last exit code 3\)"):
            executor.map(_exit_always, handles[:1], [()])
    finally:
        executor.close()


def test_a_stopped_worker_is_restarted_and_one_that_stays_silent_is_named(tmp_path):
    """Issue 25 item 9: a worker stopped with SIGSTOP hung the run forever."""
    import time
    from pyvw_lite.distributed.executor import ProcessExecutor, WorkerError
    executor = ProcessExecutor(2, timeout=1.5)
    try:
        handles = [executor.put(k) for k in (10, 20)]
        started = time.monotonic()
        assert executor.map(_stop_once, handles, [(str(tmp_path / "m0"),),
                                                  (str(tmp_path / "m1"),)]) == [20, 40]
        assert time.monotonic() - started < 30
        with pytest.raises(WorkerError, match="shard 2 of 2 sent nothing for 1.5 s 3 times"):
            executor.map(_stop_always, handles[1:], [()])
    finally:
        executor.close()


@pytest.mark.parametrize("executor,start", [("processes:2", 5), ("dask-local:2", 12)])
def test_ctrl_c_stops_a_sharded_run_without_worker_tracebacks(tmp_path, executor, start):
    import signal
    import subprocess
    import sys
    import time
    data = tmp_path / "d.vw"
    rng = np.random.default_rng(3)
    data.write_text("".join(f"{1 if r[0] % 2 else -1} |a f{r[0]} g{r[1]} |b h{r[2]}\n"
                            for r in rng.integers(0, 3000, size=(50_000, 3))))
    process = subprocess.Popen([sys.executable, "-m", "pyvw_lite", "-d", str(data), "--passes",
                                "100000", "--holdout_off", "--executor", executor,
                                "--quiet"], stderr=subprocess.PIPE, text=True,
                               start_new_session=True,
                               # as a shell starts it: Ctrl-C not ignored, whatever an earlier
                               # test left in this process (an ignored SIGINT is inherited)
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        time.sleep(start)  # the workers are up and learning
        assert process.poll() is None
        os.killpg(process.pid, signal.SIGINT)  # as Ctrl-C on a terminal: the whole process group
        err = process.communicate(timeout=60)[1]
    finally:  # a run that did not stop would learn 100,000 passes after the test
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert err.strip().endswith("pyvw-lite: error: interrupted")


def test_a_killed_runs_temporary_files_are_removed_by_the_next_run(small_model, tmp_path):
    """Issue 25 item 9: SIGKILL left .tmp-* files nobody removed."""
    import socket
    from pyvw_lite.io.atomic import _host
    data, _, _ = small_model
    target = tmp_path / "out.pvw"
    dead = 2 ** 22 + 17  # above any pid_max default: no such process
    stale = tmp_path / f".tmp-out.pvw.{_host()}-{dead}.abc123"
    live = tmp_path / f".tmp-out.pvw.{_host()}-{os.getpid()}.def456"
    other_host = tmp_path / f".tmp-out.pvw.elsewhere-{dead}.ghi789"
    for leftover in (stale, live, other_host):
        leftover.write_bytes(b"half a model")
    assert socket.gethostname()
    _, _, code = run_workspace(["-d", str(data), "-f", str(target), "--quiet"])
    assert code == 0 and target.exists()
    assert not stale.exists() and live.exists() and other_host.exists()


# ---------------------------------------------------------------------------------- .gz
def test_strict_parse_learns_nothing_from_a_damaged_gzip(tmp_path):
    """Issue 25 item 8: ~10,000 garbled lines of a .gz damaged mid-file were learned before the
    damage was found; under --strict_parse the file is now checked whole first."""
    import gzip
    import random
    from pyvw_lite.workspace import ParseError, Workspace
    lines = [f"{k % 2} |a x{random.Random(k).random()}" for k in range(20000)]
    data = bytearray(gzip.compress(("\n".join(lines) + "\n").encode()))
    data[len(data) // 2] ^= 0xFF
    path = tmp_path / "d.vw.gz"
    path.write_bytes(bytes(data))
    preds, model = tmp_path / "p.txt", tmp_path / "m.pvw"
    ws = Workspace(["-d", str(path), "--strict_parse", "-p", str(preds), "-f", str(model),
                    "--quiet"])
    with pytest.raises(ParseError, match=r"corrupt compressed data \(.*\); nothing was learned"):
        ws.run()
    assert not ws.weights.any() and not preds.exists() and not model.exists()


def test_a_cache_is_written_with_the_users_umask(tmp_path):
    """Written through a temporary file (mkstemp makes 0600), a cache ends with the mode any
    file of the user's gets, as models and predictions do."""
    umask = os.umask(0o022)
    try:
        _, cache = _cache_of(tmp_path)
        model = tmp_path / "m.pvw"
        run_workspace(["-d", str(tmp_path / "c.vw"), "-f", str(model), "--quiet"])
    finally:
        os.umask(umask)
    assert os.stat(cache).st_mode & 0o777 == 0o644 == os.stat(model).st_mode & 0o777


# ------------------------------------------------------------- inputs named by a descriptor
@contextlib.contextmanager
def descriptor_reading(path, fd=None):
    """``path`` opened for reading on descriptor ``fd`` (0 for standard input, as ``< path``
    does; None: a new one), restored afterwards; yields the descriptor's number."""
    handle = os.open(path, os.O_RDONLY)
    if fd is None:
        yield handle
        os.close(handle)
        return
    saved = os.dup(fd)
    os.dup2(handle, fd)
    os.close(handle)
    try:
        yield fd
    finally:
        os.dup2(saved, fd)
        os.close(saved)


@pytest.mark.parametrize("form", ["-", "/dev/stdin", "/proc/self/fd/0", "/dev/fd/N",
                                  "/proc/self/fd/N"])
def test_an_output_never_replaces_data_named_by_a_descriptor(tmp_path, form, capsys):
    """Issue 37 item 3: `-d - -p d.vw < d.vw` (and /dev/stdin, /proc/self/fd/0, /dev/fd/3)
    replaced d.vw with predictions."""
    data = tmp_path / "d.vw"
    data.write_text(LINES)
    with descriptor_reading(data, None if form.endswith("N") else 0) as fd:
        name = form.replace("N", str(fd))
        assert main(["-d", name, "-p", str(data), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert f"-p {data} is the -d file: the run would write over its input" in err, err
    assert data.read_text() == LINES


def test_no_data_option_reads_standard_input_which_is_checked_too(tmp_path, capsys):
    data = tmp_path / "d.vw"
    data.write_text(LINES)
    with descriptor_reading(data, 0):
        assert main(["-p", str(data), "--quiet"]) == 1
    assert "would write over its input" in capsys.readouterr().err
    assert data.read_text() == LINES


def test_a_readable_model_never_replaces_the_model_read_from_stdin(small_model, capsys):
    _, model, _ = small_model
    before = model.read_bytes()
    with descriptor_reading(model, 0):
        assert main(["-i", "/dev/stdin", "--readable_model", str(model), "--quiet"]) == 1
    assert "would write over its input" in capsys.readouterr().err
    assert model.read_bytes() == before


def test_the_commands_never_write_over_an_input_named_by_a_descriptor(tmp_path, capsys):
    """crowd, convert and split: `crowd - -p a.csv < a.csv` and the like replaced a.csv."""
    answers = tmp_path / "a.csv"
    text = "task,worker,label\n" + "".join(f"t{i % 9},w{i % 4},{i % 2}\n" for i in range(60))
    answers.write_text(text)
    lines = tmp_path / "train.vw"
    lines.write_text(LINES)
    runs = [(answers, ["crowd", "-", "-p", str(answers), "--quiet"]),
            (answers, ["crowd", "/dev/stdin", "--batch", "--workers", str(answers)]),
            (answers, ["convert", "/dev/stdin", "-o", str(answers)]),
            (lines, ["split", "-", "--train", str(lines), "--test", str(tmp_path / "t.vw")]),
            (lines, ["split", "/proc/self/fd/0", "--train", str(tmp_path / "x.vw"),
                     "--test", str(lines)])]
    for source, argv in runs:
        before = source.read_bytes()
        with descriptor_reading(source, 0):
            assert main(argv) != 0, argv
        err = capsys.readouterr().err
        assert "would write over its input" in err and "Traceback" not in err, (argv, err)
        assert source.read_bytes() == before, argv


def test_a_redirected_input_is_refused_from_a_real_shell(tmp_path):
    data = tmp_path / "d.vw"
    data.write_text(LINES)
    done = subprocess.run([sys.executable, "-m", "pyvw_lite", "-d", "-", "-p", str(data)],
                          stdin=open(data, "rb"), capture_output=True, text=True)
    assert done.returncode == 1 and "would write over its input" in done.stderr
    assert data.read_text() == LINES
    # a pipe cannot be traced to the file its writer reads: docs/security.md says so; here a
    # pipe from another file is read and the output written
    out = tmp_path / "p.txt"
    done = subprocess.run([sys.executable, "-m", "pyvw_lite", "-d", "-", "-p", str(out),
                           "--quiet"], input=LINES, capture_output=True, text=True)
    assert done.returncode == 0 and len(out.read_text().splitlines()) == 60


# ---------------------------------------------------------------------- out of memory
@pytest.mark.parametrize("argv,target", [
    (["split", "{data}", "--train", "{out}", "--test", "{out2}"], "pyvw_lite.workflow.split.split_file"),
    (["evaluate", "-p", "{data}", "-d", "{data}"], "pyvw_lite.workflow.evaluate.evaluate_predictions"),
    (["convert", "{answers}", "-o", "{out}"], "pyvw_lite.workflow.convert.crowd_to_vw"),
    (["crowd", "{answers}", "--batch", "-p", "{out}"], "pyvw_lite.io.crowd_input.read_table"),
    (["crowd", "{answers}", "-p", "{out}"], "pyvw_lite.io.crowd_input.read_table"),
])
def test_every_command_turns_out_of_memory_into_one_line(tmp_path, argv, target, monkeypatch,
                                                         capsys):
    """Issue 37 item 9: a MemoryError outside the VW command was a traceback."""
    import importlib
    data = tmp_path / "d.vw"
    data.write_text(LINES)
    answers = tmp_path / "a.csv"
    answers.write_text("task,worker,label\nt1,w1,a\nt2,w1,b\n")
    module, name = target.rsplit(".", 1)

    def exhausted(*args, **kwargs):
        raise MemoryError("Unable to allocate 3.00 GiB for an array")

    monkeypatch.setattr(importlib.import_module(module), name, exhausted)
    paths = {"data": data, "answers": answers, "out": tmp_path / "o", "out2": tmp_path / "o2"}
    assert main([token.format(**paths) for token in argv]) == 1
    err = capsys.readouterr().err
    assert err == "pyvw-lite: error: out of memory (Unable to allocate 3.00 GiB for an array)\n"


# ------------------------------------------------------------------- non-finite model fields
def _signed_text(header_text: str, payload: bytes) -> bytes:
    body = MAGIC + struct.pack("<I", len(header_text)) + header_text.encode() + payload
    return body + hashlib.sha256(body).digest()


@pytest.mark.parametrize("edit", ["power_t", "learner", "values", "sampler"])
def test_a_model_with_a_nan_is_refused(small_model, tmp_path, edit, capsys):
    """Issue 37 item 10: `"power_t": NaN` (JSON's NaN literal) or a learner state of NaN loaded
    and never learned."""
    data, model, _ = small_model
    header, payload = split_model(model.read_bytes())
    if edit == "values":  # the weights themselves: one float32 NaN in the payload
        entry = next(e for e in header["arrays"] if e["name"] == "values")
        payload = bytearray(payload)
        payload[entry["offset"]:entry["offset"] + 4] = np.float32("nan").tobytes()
        payload = bytes(payload)
    elif edit == "learner":
        header["state"]["learner"] = [float("nan")] * len(header["state"]["learner"])
    else:
        header["state"][edit] = float("nan") if edit == "power_t" else [float("nan")]
    hostile = tmp_path / "nan.pvw"
    hostile.write_bytes(_signed_text(json.dumps(header), payload))  # json writes NaN literals
    assert main(["-d", str(data), "-i", str(hostile), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(hostile) in err and "malformed model" in err, err


def test_an_unbounded_label_range_still_loads(tmp_path):
    data = tmp_path / "d.vw"
    data.write_text(LINES)
    model = tmp_path / "m.pvw"
    assert main(["-d", str(data), "--min_prediction", "-inf", "--max_prediction", "inf",
                 "-f", str(model), "--quiet"]) == 0
    assert main(["-d", str(data), "-t", "-i", str(model), "--quiet"]) == 0


def test_a_uint64_row_index_beyond_int64_is_refused(small_model, tmp_path, capsys):
    """Issue 37 item 12: rows of 2^63 and more wrapped to negative int64 after the cast, passed
    `rows.max() > mask` and landed in the top rows."""
    data, model, _ = small_model
    header, payload = split_model(model.read_bytes())
    entries = {e["name"]: e for e in header["arrays"]}
    rows = np.frombuffer(payload, "<u4", count=entries["rows"]["shape"][0],
                         offset=entries["rows"]["offset"]).astype("<u8")
    rows[0] = (1 << 64) - 1  # -1 as int64
    hostile = tmp_path / "wrap.pvw"
    hostile.write_bytes(with_array(header, payload, "rows", rows))
    assert main(["-d", str(data), "-t", "-i", str(hostile), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "malformed model (rows not as a model writes them)" in err and "Traceback" not in err


@pytest.mark.parametrize("field,value", [("label", "nan"), ("label", "inf"),
                                         ("weight", "-1"), ("value", "nan")])
def test_a_forged_cache_holds_only_what_text_can(tmp_path, field, value, capsys):
    """Issue 37 item 11: a cache with a NaN label (its CRC recomputed) was read: weighted label
    sum = nan, best constant = nan.  Examples read from a cache pass the checks of text."""
    import zlib
    from pyvw_lite.io.cache import CacheReader
    lines = "".join(f"{i % 2} {1 + i % 3} |a x{i % 7}:{1 + i % 4} y{i % 5}\n" for i in range(40))
    data, cache = _cache_of(tmp_path, lines)
    raw = bytearray(cache.read_bytes())
    reader = CacheReader(str(cache))
    start = reader._data_start
    reader.close()
    head = struct.Struct("<5q")
    n, n_seg, n_feat, flags, size = head.unpack_from(raw, start)
    body_at = start + head.size
    # body: label f4[n], nlabel u1[n], weight f4[n] (some importance is not 1), ...; feature
    # values are the last f4[n_feat] before the tag/label spans (none here)
    at = {"label": body_at, "weight": body_at + 5 * n,
          "value": body_at + size - 4 * n_feat}[field]
    struct.pack_into("<f", raw, at, float(value))
    crc = zlib.crc32(bytes(raw[body_at:body_at + size]), zlib.crc32(bytes(raw[start:body_at])))
    struct.pack_into("<I", raw, body_at + size, crc)
    cache.write_bytes(bytes(raw))
    assert main(["-d", str(data), "--cache_file", str(cache), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert f"{cache}: damaged cache (block 1)" in err and "Traceback" not in err, err


# ----------------------------------------------------------------------------- gzip bombs
@pytest.fixture(scope="module")
def gzip_bomb(tmp_path_factory):
    """400 MiB of newlines in about 400 KiB of gzip (a real bomb is 3 MB -> 3 GB)."""
    import zlib
    path = tmp_path_factory.mktemp("bomb") / "bomb.csv.gz"
    squeeze = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = b"\n" * (4 << 20)
    with open(path, "wb") as out:
        for _ in range(100):
            out.write(squeeze.compress(block))
        out.write(squeeze.flush())
    return path


def _limited(data_limit):
    def limit():
        import resource
        resource.setrlimit(resource.RLIMIT_DATA, (data_limit, data_limit))
    return limit


@pytest.mark.parametrize("command", ["crowd", "evaluate", "split"])
def test_a_gzip_bomb_is_refused_or_streamed_in_flat_memory(gzip_bomb, tmp_path, command):
    """Issue 37 item 6: crowd, split and evaluate decompressed a whole .gz (3 MB -> 3 GB of
    newlines: 3.5 GB resident, a MemoryError traceback).  Now crowd and evaluate, which keep
    every line, refuse one past 100x its size; split streams it.  Under a 1.5 GB data limit."""
    argv = {"crowd": ["crowd", str(gzip_bomb), "--batch", "-p", str(tmp_path / "l.csv")],
            "evaluate": ["evaluate", "-p", str(gzip_bomb), "-d", str(gzip_bomb)],
            "split": ["split", str(gzip_bomb), "--train", str(tmp_path / "tr.vw"),
                      "--test", str(tmp_path / "te.vw")]}[command]
    done = subprocess.run([sys.executable, "-m", "pyvw_lite", *argv], capture_output=True,
                          text=True, preexec_fn=_limited(1536 << 20), timeout=300)
    assert "Traceback" not in done.stderr and done.returncode in (0, 1), done.stderr[-2000:]
    if command == "split":
        assert done.returncode == 0, done.stderr
        assert (tmp_path / "tr.vw").read_bytes() == b"" == (tmp_path / "te.vw").read_bytes()
    else:
        assert done.returncode == 1
        assert f"error: {gzip_bomb}: gzip data decompresses to more than 100 times its " \
            "size" in done.stderr, done.stderr
        assert done.stderr.count("\n") == 1, done.stderr


def test_honest_gzip_still_reads_whole(tmp_path):
    import gzip
    answers = tmp_path / "a.csv.gz"
    answers.write_bytes(gzip.compress(("task,worker,label\n" + "".join(
        f"t{i % 9},w{i % 4},{i % 2}\n" for i in range(60))).encode()))
    assert main(["crowd", str(answers), "--batch", "-p", str(tmp_path / "l.csv"),
                 "--quiet"]) == 0
    assert len((tmp_path / "l.csv").read_text().splitlines()) == 10


def test_non_finite_numbers_of_the_workflow_tools_are_refused(tmp_path, capsys):
    """Issue 37 item 10, the tools' side: `evaluate --threshold nan` scored every prediction
    as negative without a word."""
    data = tmp_path / "d.vw"
    data.write_text(LINES)
    predictions = tmp_path / "p.txt"
    predictions.write_text("".join(f"{0.9 if i % 3 else -0.9}\n" for i in range(60)))
    for value in ("nan", "inf"):
        assert main(["evaluate", "-p", str(predictions), "-d", str(data), "--threshold",
                     value]) == 1
        assert f"--threshold {value}: must be a finite number" in capsys.readouterr().err
    assert main(["split", str(data), "--train", str(tmp_path / "a"), "--test",
                 str(tmp_path / "b"), "--test_fraction", "nan"]) == 1
    assert "--test_fraction must lie strictly between 0 and 1" in capsys.readouterr().err


# ------------------------------------------------ issue 37: the independent attack's findings
def _one_line(err: str) -> bool:
    return err.count("\n") == 1 and "Traceback" not in err


def test_convert_back_refuses_crafted_predictions_and_maps_in_one_line(tmp_path, capsys):
    answers = tmp_path / "a.csv"
    answers.write_text("task,worker,label\nt1,w1,a\nt2,w1,b\n")
    label_map = tmp_path / "map.json"
    assert main(["convert", str(answers), "-o", str(tmp_path / "all.vw"), "--map",
                 str(label_map)]) == 0
    capsys.readouterr()
    cases = [("1 t1\ninf t2\n", None), ("1 t1\n1e400 t2\n", None),
             ("1 t1\n", '{"format": "pyvw-lite label map 1", "labels": 5}'),
             ("1 t1\n", '{"format": "pyvw-lite label map 1"}'),
             ("1 t1\n", "[" * 100_000 + "]" * 100_000)]
    for predictions, crafted in cases:
        (tmp_path / "p.txt").write_text(predictions)
        if crafted is not None:
            (tmp_path / "evil.json").write_text(crafted)
        chosen = tmp_path / "evil.json" if crafted is not None else label_map
        assert main(["convert", "--back", str(tmp_path / "p.txt"), "-o", str(tmp_path / "b.csv"),
                     "--map", str(chosen)]) == 1
        assert _one_line(capsys.readouterr().err)


def test_a_csv_field_past_the_csv_limit_is_one_line(tmp_path, capsys):
    answers = tmp_path / "big.csv"
    answers.write_text("task,worker,label\nt1,w1,a\nt1,w2,b,EXTRA\nt2,w1," + "b" * 200_000
                       + "\nt2,w2,a\n")
    for argv in (["crowd", str(answers), "--batch"], ["convert", str(answers), "-o",
                                                      str(tmp_path / "x.vw")]):
        assert main(argv) == 1
        err = capsys.readouterr().err
        assert "Traceback" not in err and err.splitlines()[-1].endswith(
            "not a usable CSV row (field larger than field limit (131072))") \
            and f"{answers}:4: not a usable CSV row" in err, err


def test_a_deeply_nested_cache_header_or_config_is_no_traceback(tmp_path, capsys):
    import zlib
    data = tmp_path / "d.vw"
    data.write_text(LINES)
    text = b"[" * 100_000 + b"]" * 100_000
    (tmp_path / "d.vw.pvwcache").write_bytes(b"PYVW-LITE CACHE\n" + struct.pack("<I", len(text))
                                          + text + struct.pack("<I", zlib.crc32(text)))
    code = main(["-d", str(data), "-c", "--quiet"])
    err = capsys.readouterr().err
    assert "Traceback" not in err and code in (0, 1), err
    config = tmp_path / "deep.toml"
    config.write_text("x = " + "[" * 5000 + "]" * 5000 + "\n")
    assert main(["experiment", str(config)]) == 1
    err = capsys.readouterr().err
    assert _one_line(err) and "nested too deeply" in err


def test_names_and_labels_are_never_parsed_as_math_text(tmp_path, capsys):
    """A model name or crowd label `$\\frac{...$` or 3,000 nested braces crashed matplotlib's
    math text parser while results.png or --workers_plot was drawn."""
    pytest.importorskip("matplotlib")
    deep = "$" + "{" * 3000 + "x" + "}" * 3000 + "$"
    answers = tmp_path / "answers.csv"
    labels = ("a", deep, "$\\frac{1}{2$")
    answers.write_text("task,worker,label\n" + "".join(
        f"t{i},w{j},{labels[(i + j) % 3]}\n" for i in range(30) for j in range(3)))
    assert main(["crowd", str(answers), "--batch", "--workers_plot", str(tmp_path / "w.png"),
                 "--quiet"]) == 0, capsys.readouterr().err
    config = tmp_path / "mt.toml"
    config.write_text(f'[experiment]\nname = "mt"\nanswers = "answers.csv"\n[[models]]\n'
                      f"name = '{deep}'\nconstant = true\n")
    assert main(["experiment", str(config), "--workdir", str(tmp_path / "w")]) == 0
    assert (tmp_path / "w" / "results.png").read_bytes()[:4] == b"\x89PNG"


def test_a_forged_cache_tag_cannot_add_prediction_lines(tmp_path, capsys):
    import zlib
    lines = "".join(f"{1 if i % 2 else -1} 'QQ{i:02d} |a x{i} y\n" for i in range(50))
    data, cache = _cache_of(tmp_path, lines)
    raw = cache.read_bytes()
    (size,) = struct.unpack_from("<I", raw, 16)
    at = 20 + size + 4
    out = bytearray(raw[:at])
    while True:
        head = raw[at:at + 40]
        n, _, _, _, length = struct.unpack("<5q", head)
        if n == -1:
            out += raw[at:]
            break
        body = raw[at + 40:at + 40 + length].replace(b"QQ07", b"Q\n7Q")
        out += head + body + struct.pack("<I", zlib.crc32(body, zlib.crc32(head)))
        at += 40 + length + 4
    cache.write_bytes(bytes(out))
    predictions = tmp_path / "p.txt"
    assert main(["-d", str(data), "--cache_file", str(cache), "-p", str(predictions),
                 "--quiet"]) == 1
    assert "damaged cache (block 1)" in capsys.readouterr().err
    assert not predictions.exists()


def test_weights_beyond_float32_in_a_signed_model_are_refused(small_model, tmp_path, capsys):
    data, model, _ = small_model
    header, payload = split_model(model.read_bytes())
    entries = {e["name"]: e for e in header["arrays"]}
    values = np.frombuffer(payload, entries["values"]["dtype"],
                           offset=entries["values"]["offset"],
                           count=int(np.prod(entries["values"]["shape"]))).astype("<f8")
    values[:3] = 1e200  # finite, but inf once in the float32 weight table
    hostile = tmp_path / "big.pvw"
    hostile.write_bytes(with_array(header, payload, "values",
                                   values.reshape(entries["values"]["shape"])))
    assert main(["-d", str(data), "-i", str(hostile), "--quiet"]) == 1
    assert "malformed model (values not as a model writes them)" in capsys.readouterr().err


def test_an_experiment_writes_nothing_through_planted_symlinks_or_over_its_config(tmp_path,
                                                                                  capsys):
    small_answers(tmp_path)
    config = tmp_path / "small.toml"
    config.write_text('[experiment]\nname = "small"\nanswers = "answers.csv"\n'
                      '[[models]]\nname = "c"\nconstant = true\n')
    work = tmp_path / "work"
    work.mkdir()
    for name in ("results.json", "results.png"):
        (tmp_path / f"victim-{name}").write_text("precious\n")
        (work / name).symlink_to(tmp_path / f"victim-{name}")
    assert main(["experiment", str(config), "--workdir", str(work)]) == 0
    for name in ("results.json", "results.png"):
        assert (tmp_path / f"victim-{name}").read_text() == "precious\n"
    assert not (work / "results.json").is_symlink()  # replaced, never written through
    capsys.readouterr()
    named = tmp_path / "self" / "train.vw"
    named.parent.mkdir()
    named.write_text(config.read_text().replace("answers.csv", "../answers.csv"))
    before = named.read_text()
    assert main(["experiment", str(named), "--workdir", str(named.parent)]) == 1
    assert "write over its input" in capsys.readouterr().err
    assert named.read_text() == before


@pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="no /dev/shm here")
def test_a_regular_file_under_dev_is_an_ordinary_output(tmp_path, capsys):
    """/dev/shm is a tmpfs: its files were taken for devices, so two outputs could share one
    and a failed run emptied it instead of leaving it."""
    data = tmp_path / "d.vw"
    data.write_text(LINES)
    folder = tempfile.mkdtemp(dir="/dev/shm")
    try:
        target = os.path.join(folder, "x.txt")
        assert main(["-d", str(data), "-p", target, "-r", target, "--quiet"]) == 1
        assert "two outputs cannot share a file" in capsys.readouterr().err
        with open(target, "w") as handle:
            handle.write("KEEP\n")
        bad = tmp_path / "bad.vw"
        bad.write_text(LINES + "bad ::: |\n")
        assert main(["-d", str(bad), "--strict_parse", "-p", target, "--quiet"]) == 1
        with open(target) as handle:
            assert handle.read() == "KEEP\n"
    finally:
        shutil.rmtree(folder)


def test_a_line_without_end_is_refused_in_bounded_memory(tmp_path):
    import zlib
    packed = tmp_path / "one.gz"
    squeeze = zlib.compressobj(9, zlib.DEFLATED, 31)
    with open(packed, "wb") as out:
        for _ in range(256):
            out.write(squeeze.compress(b"a" * (1 << 20)))
        out.write(squeeze.flush())
    done = subprocess.run([sys.executable, "-m", "pyvw_lite", "split", str(packed), "--train",
                           str(tmp_path / "tr.vw"), "--test", str(tmp_path / "te.vw")],
                          capture_output=True, text=True, preexec_fn=_limited(1024 << 20),
                          timeout=300)
    assert done.returncode == 1 and _one_line(done.stderr), done.stderr[-2000:]
    assert "a line longer than 64 MiB" in done.stderr


def test_kernel_files_and_bad_weights_are_refused(tmp_path, capsys):
    config = tmp_path / "pm.toml"
    config.write_text('[experiment]\nname = "pm"\ndata = "/proc/self/pagemap"\n[[models]]\n'
                      'name = "linear"\nargs = "--sft {K}"\n')
    assert main(["experiment", str(config)]) == 1
    assert "is a kernel file (/proc, /sys), not data" in capsys.readouterr().err
    data = tmp_path / "w.vw"
    data.write_text("1 -1 |a x\n1 2 |a y\n")
    predictions = tmp_path / "w.txt"
    predictions.write_text("-1\n1\n")
    assert main(["evaluate", "-p", str(predictions), "-d", str(data)]) == 1
    assert f"{data}:1: importance weight '-1' is negative" in capsys.readouterr().err


def test_an_array_with_absurd_axes_is_a_corrupt_model_named(small_model, tmp_path, capsys):
    data, model, _ = small_model
    header, payload = split_model(model.read_bytes())
    header["arrays"] = header["arrays"] + [{"name": "x", "dtype": "<f4", "shape": [0, 2 ** 70],
                                            "offset": 0, "nbytes": 0}]
    hostile = tmp_path / "axes.pvw"
    hostile.write_bytes(signed_model(header, payload))
    assert main(["-d", str(data), "-t", "-i", str(hostile), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert _one_line(err) and f"{hostile}: corrupt model file (array directory entry" in err


# ------------------------------------------------ issue 37: the second attack's findings
def test_a_cache_is_rebuilt_when_the_lines_it_skipped_would_differ(tmp_path, capsys):
    """A cache built under --oaa 3 (labels are classes: '2.5' skipped) was reused by a plain
    run, and one built without --strict_parse by a run with it: other examples, no word."""
    data = tmp_path / "d.vw"
    data.write_text("1 |x a\n2 |x b\n3 |x c\n2.5 |x c d\n1 |x e\n")
    assert main(["-d", str(data), "-c", "--oaa", "3", "--quiet"]) == 0
    _, err, code = run_workspace(["-d", str(data), "-c"])
    assert code == 0 and "number of examples = 5" in err, err  # the cache had 4
    bad = tmp_path / "sp.vw"
    bad.write_text("1 |x a\n1 label |x b\n")
    assert main(["-d", str(bad), "-c", "--quiet"]) == 0
    assert main(["-d", str(bad), "-c", "--strict_parse", "--quiet"]) == 1
    assert "importance weight 'label' is not a number" in capsys.readouterr().err


def test_a_cache_file_that_is_no_regular_file_is_refused(tmp_path, capsys):
    """`--cache_file /dev/null --passes 2` as root replaced /dev/null with a regular file; a
    FIFO as the cache hung the run."""
    data = tmp_path / "d.vw"
    data.write_text(LINES)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert main(["-d", str(data), "--cache_file", str(fifo), "--passes", "2", "--quiet"]) == 1
    assert "exists and is not a regular file" in capsys.readouterr().err
    assert stat_is_fifo(fifo)
    os.mkfifo(tmp_path / "d.vw.pvwcache")
    assert main(["-d", str(data), "-c", "--passes", "2", "--quiet"]) == 1
    assert "exists and is not a regular file" in capsys.readouterr().err


def stat_is_fifo(path) -> bool:
    import stat
    return stat.S_ISFIFO(os.stat(path).st_mode)


def test_a_negative_normalizer_sum_in_a_signed_model_is_refused(small_model, tmp_path, capsys):
    """A normalizer sum set negative loaded and ended in ZeroDivisionError in the kernel."""
    data, model, _ = small_model
    header, payload = split_model(model.read_bytes())
    for index in (4, 5):
        state = list(header["state"]["learner"])
        state[index] = -3.0
        hostile = tmp_path / f"neg{index}.pvw"
        hostile.write_bytes(signed_model(dict(header, state=dict(header["state"], learner=state)),
                                         payload))
        assert main(["-d", str(data), "-i", str(hostile), "--quiet"]) == 1
        err = capsys.readouterr().err
        assert _one_line(err) and "malformed model (learner not as a model writes them)" in err


def test_split_reads_a_line_of_repeated_namespaces_in_linear_time(tmp_path):
    """`|rater:` repeated: the namespace pattern backtracked quadratically (112 KB: 20 s)."""
    data = tmp_path / "r.vw"
    data.write_text("1 " + "|rater:" * 60_000 + "\n")  # 420 KB: minutes before, instant now
    done = subprocess.run([sys.executable, "-m", "pyvw_lite", "split", str(data), "--train",
                           str(tmp_path / "a.vw"), "--test", str(tmp_path / "b.vw")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_an_experiment_never_follows_a_planted_link_to_a_model_output(tmp_path, capsys):
    small_answers(tmp_path)
    config = tmp_path / "c.toml"
    config.write_text('[experiment]\nname = "c"\nanswers = "answers.csv"\n[[models]]\n'
                      'name = "linear"\nargs = "--oaa {K}"\n')
    work = tmp_path / "work"
    work.mkdir()
    names = ("model0.pred", "model0.model", "model0.cache")
    for name in names:
        (tmp_path / f"victim-{name}").write_text("precious\n")
        (work / name).symlink_to(tmp_path / f"victim-{name}")
    assert main(["experiment", str(config), "--workdir", str(work)]) == 0, \
        capsys.readouterr().err
    assert all((tmp_path / f"victim-{name}").read_text() == "precious\n" for name in names)


def test_long_labels_and_many_classes_stay_bounded(tmp_path, capsys):
    """A crowd label of 150,000 characters padded every cell of the printed matrix to it
    (2 GB, 634 MB of stderr); evaluate printed an 8,000 x 8,000 confusion matrix."""
    long = "x" * 150_000
    answers = tmp_path / "a.csv"
    answers.write_text("task,worker,label\n" + "".join(f"t{i},w{i % 5},{(long, 'b', 'c')[i % 3]}\n"
                                                       for i in range(60)))
    assert main(["crowd", str(answers), "-p", str(tmp_path / "l.csv")]) == 0
    assert len(capsys.readouterr().err) < 4 * len(long)
    data = tmp_path / "many.vw"
    data.write_text("".join(f"c{i} |a x\n" for i in range(5000)))
    predictions = tmp_path / "many.txt"
    predictions.write_text("".join(f"c{(i + 1) % 5000}\n" for i in range(5000)))
    assert main(["evaluate", "-p", str(predictions), "-d", str(data)]) == 1
    assert "more classes than evaluate scores (4096)" in capsys.readouterr().err
    data.write_text("".join(f"c{i % 40} |a x\n" for i in range(400)))
    predictions.write_text("".join(f"c{i % 41}\n" for i in range(400)))
    assert main(["evaluate", "-p", str(predictions), "-d", str(data)]) == 0
    assert "confusion matrix: not printed for 41 classes (more than 32)" in \
        capsys.readouterr().out


def test_convert_back_refuses_a_prediction_that_is_no_class(tmp_path, capsys):
    answers = tmp_path / "a.csv"
    answers.write_text("task,worker,label\nt1,w1,a\nt2,w1,b\n")
    label_map = tmp_path / "map.json"
    assert main(["convert", str(answers), "-o", str(tmp_path / "all.vw"), "--map",
                 str(label_map)]) == 0
    (tmp_path / "p.txt").write_text("2.9 t1\n1.5 t2\n")
    assert main(["convert", "--back", str(tmp_path / "p.txt"), "-o", str(tmp_path / "b.csv"),
                 "--map", str(label_map)]) == 1
    assert "prediction '2.9' is not a class number" in capsys.readouterr().err


def test_plot_text_is_drawn_verbatim():
    from pyvw_lite.io.plotting import plain_text
    assert plain_text("$\\frac{1}{2$") == "\\$\\frac{1}{2\\$"
    assert plain_text("_run").startswith("\u200b") and plain_text("_run").endswith("_run")


# ------------------------------------------------ issue 37: the third attack's findings
def test_shard_caches_are_checked_like_the_cache(tmp_path, capsys):
    """A FIFO at DATA.cache.shard1of2 blocked a worker forever (its heartbeats kept it alive);
    -f could name a shard's cache."""
    data = tmp_path / "d.vw"
    data.write_text(LINES)
    os.mkfifo(tmp_path / "d.vw.pvwcache.shard1of2")
    assert main(["-d", str(data), "-c", "--executor", "processes:2", "--passes", "2",
                 "-f", str(tmp_path / "m.pvw"), "--quiet"]) == 1
    assert "d.vw.pvwcache.shard1of2 exists and is not a regular file" in capsys.readouterr().err
    os.unlink(tmp_path / "d.vw.pvwcache.shard1of2")
    target = tmp_path / "d.vw.pvwcache.shard1of2"
    assert main(["-d", str(data), "-c", "--executor", "processes:2", "--passes", "2",
                 "-f", str(target), "--quiet"]) == 1
    assert "is the -f file too: two outputs cannot share a file" in capsys.readouterr().err


def test_convert_writes_one_line_per_answer_whatever_a_number_cell_holds(tmp_path, capsys):
    answers = tmp_path / "f.csv"
    answers.write_text('task,worker,label,c\nt1,w1,a,"1\n"\nt1,w2,b,"\n\n2"\nt2,w1,a,3\n')
    out = tmp_path / "f.vw"
    assert main(["convert", str(answers), "-o", str(out), "--features", "c"]) == 0
    assert len(out.read_text().splitlines()) == 3
    assert "|c c:2" in out.read_text()


def test_a_model_cannot_name_labels_that_break_prediction_lines(tmp_path, capsys):
    data = tmp_path / "n.vw"
    model = tmp_path / "n.pvw"
    data.write_text("a |a x\nb |a y\n")
    assert main(["-d", str(data), "--oaa", "2", "--named_labels", "a,b", "-f", str(model),
                 "--quiet"]) == 0
    header, payload = split_model(model.read_bytes())
    forged = "a\n1 forged-line\n2 forged-line,b"
    header["options"] = [forged if token == "a,b" else token for token in header["options"]]
    header["state"]["kept"] = {k: (forged if v == "a,b" else v)
                               for k, v in header["state"]["kept"].items()}
    hostile = tmp_path / "evil.pvw"
    hostile.write_bytes(signed_model(header, payload))
    predictions = tmp_path / "p.txt"
    assert main(["-d", str(data), "-t", "-i", str(hostile), "-p", str(predictions),
                 "--quiet"]) == 1
    assert "a label name holds no space, tab, line break or '|'" in capsys.readouterr().err
    assert not predictions.exists()


def test_an_experiment_on_too_little_data_is_one_line(tmp_path, capsys):
    (tmp_path / "one.vw").write_text("1 |a x\n")
    for seed in (0, 1):
        config = tmp_path / f"c{seed}.toml"
        config.write_text(f'[experiment]\nname = "c{seed}"\ndata = "one.vw"\nseed = {seed}\n'
                          '[[models]]\nname = "c"\nconstant = true\n')
        assert main(["experiment", str(config), "--workdir", str(tmp_path / f"w{seed}")]) == 1
        err = capsys.readouterr().err
        assert _one_line(err) and "the split left" in err, err


# ------------------------------------------------ issue 37: the fourth attack's findings
def test_task_ids_with_unicode_white_space_survive_the_round_trip(tmp_path):
    from pyvw_lite.workflow.convert import from_vw_token, vw_token
    for text in ("q\u00a00", "x\u2028y", "a\x1cb", "c\u0085d", "a b", "plain"):
        token = vw_token(text)
        assert len(token.split()) == 1 and from_vw_token(token) == text, (text, token)


def test_digits_vw_cannot_read_as_a_number_are_left_out(tmp_path, capsys):
    answers = tmp_path / "u.csv"
    answers.write_text("task,worker,label,c\nt1,w1,a,\u0661\u0662\nt1,w2,b,3\nt2,w1,a,4\n",
                       encoding="utf-8")
    out = tmp_path / "u.vw"
    assert main(["convert", str(answers), "-o", str(out), "--features", "c"]) == 0
    assert "\u0661" not in out.read_text(encoding="utf-8")


def test_evaluate_refuses_numbers_beyond_float32(tmp_path, capsys):
    data = tmp_path / "d.vw"
    data.write_text("1.5 |a x\n1e308 |a y\n")
    predictions = tmp_path / "p.txt"
    predictions.write_text("2\n-1e308\n")
    assert main(["evaluate", "-p", str(predictions), "-d", str(data)]) == 1
    assert _one_line(capsys.readouterr().err)


def test_an_experiment_keeps_its_own_name(tmp_path, capsys):
    small_answers(tmp_path)
    config = tmp_path / "c.toml"
    config.write_text('[experiment]\nname = "seedrun"\nanswers = "answers.csv"\n[[models]]\n'
                      'name = "c"\nconstant = true\n')
    assert main(["experiment", str(config), "--workdir", str(tmp_path / "w")]) == 0
    assert json.loads((tmp_path / "w" / "results.json").read_text())["name"] == "seedrun"
