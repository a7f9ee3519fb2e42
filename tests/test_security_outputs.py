"""Outputs, caches, signals and messages (docs/security.md): one output check for every entry
point, caches bound to their text, bench arguments, messages that name their file, crowd gold
that must match, SIGTERM handled as Ctrl-C."""
import os
import shutil

import numpy as np
import pytest

from conftest import run_workspace
from pyvw_lite.cli.main import main
from pyvw_lite.workspace import Workspace

LINES = "".join(f"{1 if i % 3 else -1} |a x{i % 7} y{i % 5} |b z{i % 4}\n" for i in range(60))


@pytest.fixture
def model(tmp_path):
    data = tmp_path / "d.vw"
    data.write_text(LINES)
    model = tmp_path / "m.pvw"
    _, _, code = run_workspace(["-d", str(data), "-b", "10", "-f", str(model), "--quiet"])
    assert code == 0
    return data, model


def _names(tmp_path, model):
    """The -i model named as a path, ./relative, a symlink, a hard link and /dev/fd/N."""
    os.symlink(model, tmp_path / "link.pvw")
    os.link(model, tmp_path / "hard.pvw")
    fd = os.open(model, os.O_RDONLY)
    return [str(model), os.path.relpath(model), str(tmp_path / "link.pvw"),
            str(tmp_path / "hard.pvw"), f"/dev/fd/{fd}"], fd


@pytest.mark.parametrize("flag", ["--readable_model", "--invert_hash", "-p", "-r",
                                  "--cache_file"])
def test_the_python_api_never_writes_over_the_model_it_loaded(model, tmp_path, flag,
                                                              monkeypatch):
    """Python API replaced the -i model with a text dump
    (``Workspace("-i m.pvw --readable_model m.pvw").finish()``); the check ran on run() only."""
    data, path = model
    monkeypatch.chdir(tmp_path)
    before = path.read_bytes()
    names, fd = _names(tmp_path, path)
    try:
        for name in names:
            with pytest.raises(ValueError, match="is the -i file"):
                Workspace(["-i", str(path), "--quiet", flag, name]).finish()
    finally:
        os.close(fd)
    assert path.read_bytes() == before


def test_every_python_write_passes_the_same_check(model, tmp_path):
    """write_readable_model, save and finish refuse an input however it is named; -f may
    replace the -i model (continue and save back), the data never."""
    data, path = model
    before = path.read_bytes()
    ws = Workspace(["-i", str(path), "-d", str(data), "--quiet"])
    names, fd = _names(tmp_path, path)
    try:
        for name in names:
            with pytest.raises(ValueError, match="is the -i file"):
                ws.write_readable_model(name)
        assert path.read_bytes() == before
        with pytest.raises(ValueError, match="is the -d file"):
            ws.save(str(data))
        with pytest.raises(ValueError, match="is the -d file"):
            Workspace(["-d", str(data), "--quiet", "-p", str(data)])
        per_pass = tmp_path / "n.pvw.2"  # what -f n.pvw --save_per_pass writes after pass 2
        per_pass.write_text(LINES)
        with pytest.raises(ValueError, match="--save_per_pass .* is the -d file"):
            Workspace(["-d", str(per_pass), "--quiet", "-f", str(tmp_path / "n.pvw"),
                       "--save_per_pass", "-c", "--passes", "2"])
    finally:
        os.close(fd)
    assert data.read_text() == LINES
    ws.save(str(path))  # continue the model and save it back, as -f may
    Workspace(["-i", str(path), "-f", str(path), "--quiet"]).finish()
    assert Workspace(["-i", str(path), "--quiet"]).predict("|a x1") == pytest.approx(
        Workspace(["-i", str(tmp_path / "hard.pvw"), "--quiet"]).predict("|a x1"))


def test_the_estimators_and_online_learner_share_the_check(model, tmp_path):
    """The scikit-learn estimators and the online learner build their learner through the
    same Workspace: an output over the model they read is refused there too."""
    from pyvw_lite.api.online import OnlineLearner
    _, path = model
    before = path.read_bytes()
    with pytest.raises(ValueError, match="is the -i file"):
        OnlineLearner(f"-i {path} --readable_model {path}")
    learner = OnlineLearner(f"-i {path}")
    learner.save(str(path))  # a model back over the model: allowed
    assert path.read_bytes()[:4] == before[:4]


# ---------------------------------------------------------------------------------- caches
def _same_size_other_text(tmp_path):
    """a.vw and b.vw: lines of one width (so shards cut both alike), other examples, b given
    a's time (``cp -p``, ``tar x``, ``rsync -t``)."""
    rng = np.random.default_rng(5)
    a = "".join(f"{rng.integers(2)} |a x{rng.integers(9)} y{rng.integers(9)}\n"
                for _ in range(400))
    b = "".join(f"{i % 2} |a x{(i * 7) % 9} y{(i * 3) % 9}\n" for i in range(400))
    (tmp_path / "a.vw").write_text(a)
    (tmp_path / "b.vw").write_text(b)
    assert len(a) == len(b) and a != b
    stat = os.stat(tmp_path / "a.vw")
    os.utime(tmp_path / "b.vw", ns=(stat.st_atime_ns, stat.st_mtime_ns))
    return tmp_path / "a.vw", tmp_path / "b.vw"


def test_a_cache_is_never_reused_for_other_text_of_the_same_size_and_time(tmp_path, capsys):
    """A cache's signature was {size, mtime_ns}: a same-size file copied with its time made a
    run learn the other file's examples (its -p byte-identical to the other's)."""
    a, b = _same_size_other_text(tmp_path)
    cache = tmp_path / "c.pvwcache"
    assert main(["-d", str(a), "--cache_file", str(cache), "-p", str(tmp_path / "pa"),
                 "--quiet"]) == 0
    assert main(["-d", str(b), "--cache_file", str(cache), "-p", str(tmp_path / "pb")]) == 0
    out = capsys.readouterr().out
    assert "was made from other data or options; rebuilding it" in out
    assert main(["-d", str(b), "-p", str(tmp_path / "pb_text"), "--quiet"]) == 0
    assert (tmp_path / "pb").read_text() == (tmp_path / "pb_text").read_text()
    assert (tmp_path / "pb").read_text() != (tmp_path / "pa").read_text()
    # the -c cache copied with the data (cp -p of both) is refused the same way
    shutil.copy2(cache, tmp_path / "b.vw.pvwcache")
    assert main(["-d", str(b), "-c", "-p", str(tmp_path / "pb_c")]) == 0
    assert (tmp_path / "pb_c").read_text() == (tmp_path / "pb_text").read_text()
    # and a cache of the same text is still read
    assert main(["-d", str(b), "-c", "-p", str(tmp_path / "pb_c2")]) == 0
    assert "ignoring text input in favor of cache input" in capsys.readouterr().err
    assert (tmp_path / "pb_c2").read_text() == (tmp_path / "pb_text").read_text()


def test_a_shard_cache_is_bound_to_its_shards_text(tmp_path):
    """Under --executor each shard's cache holds its lines' digest: the same-size file with
    the same time is read from its text."""
    a, b = _same_size_other_text(tmp_path)
    argv = ["--executor", "serial", "--shards", "2", "--quiet"]
    data = tmp_path / "d.vw"
    shutil.copy2(a, data)
    assert main(["-d", str(data), "-c", "-p", str(tmp_path / "p1")] + argv) == 0
    shutil.copy2(b, data)
    os.utime(data, ns=(os.stat(a).st_atime_ns, os.stat(a).st_mtime_ns))
    assert main(["-d", str(data), "-c", "-p", str(tmp_path / "p2")] + argv) == 0
    assert main(["-d", str(data), "-p", str(tmp_path / "p3")] + argv) == 0
    assert (tmp_path / "p2").read_text() == (tmp_path / "p3").read_text()
    assert (tmp_path / "p2").read_text() != (tmp_path / "p1").read_text()


# ---------------------------------------------------------------------------------- signals
def _long_run(tmp_path, extra=()):
    """A learning run long enough to be stopped in its middle (a cache and -p being written)."""
    import subprocess
    import sys
    data = tmp_path / "big.vw"
    rng = np.random.default_rng(3)
    data.write_text("".join(f"{1 if r[0] % 2 else -1} |a f{r[0]} g{r[1]} |b h{r[2]}\n"
                            for r in rng.integers(0, 3000, size=(50_000, 3))))
    return subprocess.Popen([sys.executable, "-m", "pyvw_lite", "-d", str(data), "-c",
                             "--passes", "100000", "--holdout_off", "-p", str(tmp_path / "p.txt"),
                             "-f", str(tmp_path / "m.pvw"), "--quiet", *extra],
                            stderr=subprocess.PIPE, text=True)


def test_sigterm_stops_a_run_like_ctrl_c(tmp_path):
    """SIGTERM left .tmp-* files behind and printed nothing (docs said only SIGKILL does)."""
    import signal
    import time
    process = _long_run(tmp_path)
    deadline = time.monotonic() + 120
    while not any(name.startswith(".tmp-p.txt") for name in os.listdir(tmp_path)):
        assert process.poll() is None and time.monotonic() < deadline, process.stderr.read()
        time.sleep(0.2)
    time.sleep(1.0)  # into the passes over the cache
    process.send_signal(signal.SIGTERM)
    err = process.communicate(timeout=60)[1]
    assert process.returncode == 143, err
    assert err.strip() == "pyvw-lite: error: terminated"
    assert not [name for name in os.listdir(tmp_path) if name.startswith(".tmp-")]
    assert not (tmp_path / "p.txt").exists() and not (tmp_path / "m.pvw").exists()


def test_a_runs_outputs_are_published_together(tmp_path, monkeypatch):
    """SIGINT between -p's rename and -f's left a new -p beside the old -f: the end of a run
    now renames its outputs together, and a failure before then publishes none of them."""
    from pyvw_lite.learner import persist
    data = tmp_path / "d.vw"
    data.write_text(LINES)
    p, f, r = tmp_path / "p.txt", tmp_path / "m.pvw", tmp_path / "r.txt"
    for path in (p, f, r):
        path.write_text("old\n")

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(persist, "write_readable_model", interrupted)
    assert main(["-d", str(data), "-p", str(p), "-f", str(f), "--readable_model", str(r),
                 "--quiet"]) == 130
    assert [path.read_text() for path in (p, f, r)] == ["old\n"] * 3
    assert not [name for name in os.listdir(tmp_path) if name.startswith(".tmp-")]
    monkeypatch.undo()
    assert main(["-d", str(data), "-p", str(p), "-f", str(f), "--readable_model", str(r),
                 "--quiet"]) == 0
    assert all(path.read_text() != "old\n" for path in (p, r)) and f.read_bytes()[:4] == b"PYVW"


def test_a_failed_cache_write_leaves_no_temporary_file_and_names_the_cache(tmp_path,
                                                                           monkeypatch, capsys):
    """A cache write that failed (a full disk) left a 0-byte .tmp- file, and the message named
    no file."""
    import errno
    from pyvw_lite.io import cache as cache_io
    data = tmp_path / "d.vw"
    data.write_text(LINES)
    real = cache_io.CacheWriter._write_block

    class Full:
        """A file on a full disk: writing (and closing, which flushes) fails."""
        def write(self, data=None):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        close = write

    def full(self, head, body):
        self._handle.close()
        self._handle = Full()
        return real(self, head, body)
    monkeypatch.setattr(cache_io.CacheWriter, "_write_block", full)
    assert main(["-d", str(data), "-c", "--quiet"]) == 1
    assert capsys.readouterr().err.strip() == \
        f"pyvw-lite: error: {data}.pvwcache: No space left on device"
    assert sorted(os.listdir(tmp_path)) == ["d.vw"]
    monkeypatch.setattr(cache_io.CacheWriter, "_write_block", real)
    assert main(["-d", str(data), "-c", "--quiet"]) == 0


def test_a_full_disk_names_the_output(tmp_path, capsys):
    """"No space left on device" named no file; /dev/full is a full disk."""
    data = tmp_path / "d.vw"
    data.write_text(LINES)
    assert main(["-d", str(data), "-p", "/dev/full", "--quiet"]) == 1
    assert capsys.readouterr().err.strip() == \
        "pyvw-lite: error: /dev/full: No space left on device"


# ---------------------------------------------------------------------------------- bench
@pytest.mark.parametrize("command", ["bench", "bench-crowd", "bench-scale"])
def test_bench_arguments_are_one_line_errors(tmp_path, command, capsys):
    """bench printed tracebacks for --workdir FILE and --seed -5."""
    afile = tmp_path / "f.txt"
    afile.write_text("x\n")
    for extra, needle in ((["--workdir", str(afile)], "exists and is not a directory"),
                          (["--seed", "-5"], "greater than or equal to 0")):
        code = main([command, *extra])
        err = capsys.readouterr().err
        assert code == 2 and needle in err and "Traceback" not in err, err


def test_bench_json_never_replaces_the_benchmarks_own_files(tmp_path, capsys):
    """bench --json could name the generated data in --workdir and replace it (the next bench
    printed n.a.); a full disk for --json was a traceback."""
    workdir = tmp_path / "w"
    workdir.mkdir()
    (workdir / "rt2_100_7.vw").write_text("1 |a b\n")
    os.symlink(workdir / "rt2_100_7.vw", tmp_path / "link.json")
    for target in (workdir / "rt2_100_7.vw", tmp_path / "link.json", workdir / "ours.cache"):
        code = main(["bench", "-n", "100", "--seed", "7", "--repeat", "1", "--no-peer",
                     "--scenario", "text", "--workdir", str(workdir), "--json", str(target)])
        err = capsys.readouterr().err
        assert code == 2 and "benchmark's own" in err and "Traceback" not in err, err
    assert (workdir / "rt2_100_7.vw").read_text() == "1 |a b\n"
    import subprocess
    import sys
    done = subprocess.run([sys.executable, "-m", "pyvw_lite", "bench", "-n", "100", "--seed",
                           "7", "--repeat", "1", "--no-peer", "--scenario", "text", "--workdir",
                           str(workdir), "--json", "/dev/full"], capture_output=True, text=True)
    assert done.returncode == 1 and done.stderr.strip().endswith(
        "pyvw-lite: error: /dev/full: No space left on device"), done.stderr
    assert "Traceback" not in done.stderr


# ---------------------------------------------------------------------------------- messages
def test_messages_name_their_file_and_key(tmp_path, capsys):
    """seed = -1 said "expected non-negative integer" (no key, no file); a UTF-16 CSV gave
    "'utf-8' codec can't decode" (no file, no line); processes:99999999999 blamed -b with an
    empty reason."""
    answers = tmp_path / "a.csv"
    answers.write_text("task,worker,label\n" + "".join(f"t{i % 9},w{i % 4},{i % 2}\n"
                                                       for i in range(60)))
    config = tmp_path / "c.toml"
    config.write_text(f'[experiment]\nanswers = "{answers}"\nseed = -1\n'
                      '[[models]]\nname = "m"\nargs = "--oaa {K}"\n')
    assert main(["experiment", str(config), "--workdir", str(tmp_path / "w"), "--no-peer"]) == 1
    err = capsys.readouterr().err
    assert f"{config}: [experiment] seed = -1 must be 0 or more" in err, err
    utf16 = tmp_path / "u.csv"
    utf16.write_bytes("task,worker,label\nt1,w1,a\n".encode("utf-16"))
    for argv in (["convert", str(utf16), "-o", str(tmp_path / "u.vw")], ["crowd", str(utf16)]):
        assert main(argv) == 1
        err = capsys.readouterr().err
        assert f"{utf16}:1: UTF-16 text, not UTF-8" in err and "codec" not in err, err
    data = tmp_path / "d.vw"
    data.write_text(LINES)
    assert main(["-d", str(data), "--executor", "processes:99999999999", "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "processes:N needs a whole number N of at least 1 and at most 1024" in err and "-b" not in err, err


# ---------------------------------------------------------------------------------- gold
def test_gold_that_matches_no_task_is_refused_and_matches_are_counted(tmp_path, capsys):
    """--gold naming no task of the answers was ignored in silence; through the API, int task
    ids against string gold keys dropped all gold."""
    import pandas as pd
    from pyvw_lite.api.crowd import DawidSkene
    answers = tmp_path / "a.csv"
    answers.write_text("task,worker,label\n" + "".join(f"t{i % 9},w{i % 4},{i % 2}\n"
                                                       for i in range(60)))
    gold = tmp_path / "g.csv"
    gold.write_text("task,label\nx1,0\nx2,1\n")
    assert main(["crowd", str(answers), "--gold", str(gold)]) == 1
    err = capsys.readouterr().err
    assert f"{gold}: none of its 2 gold tasks is a task of the answers" in err, err
    gold.write_text("task,label\nt1,1\nx2,1\n")
    assert main(["crowd", str(answers), "--gold", str(gold)]) == 0
    assert "1 gold (1 gold tasks in no answer)" in capsys.readouterr().err
    frame = pd.DataFrame({"task": [1, 1, 2, 2, 3], "worker": ["a", "b", "a", "b", "a"],
                          "label": ["x", "x", "y", "y", "x"]})
    with pytest.raises(ValueError, match=r"its tasks are str \('1', ...\), the answers' int"):
        DawidSkene().fit(frame, true_labels={"1": "x"})
    assert DawidSkene().fit(frame, true_labels={1: "x", 9: "y"}).n_gold_ == 1
