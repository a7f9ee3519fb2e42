"""Experiment configs are data, never commands (docs/security.md, "Experiment configs").

A config's ``[[peer]]`` arguments go to Vowpal Wabbit, which can connect to a host
(``--sendto``, ``--span_server``), listen on a port (``--daemon``, ``--active``) and read or
write files: only options on an allow-list pass, written in full.  The only placeholder is
``{K}``; the data a config names must be a regular file; running out of memory is one line
naming the model.  Peers that pass the checks are run under a network guard: every host:port
the fuzz writes points at a loopback listener that must accept nothing, and where strace is
installed any inet socket call of the peer fails the test; a peer that hangs is killed and
fails it too.
"""
import json
import os
import shlex
import shutil
import socket
import sys
import threading

import numpy as np
import pytest

from pyvw_lite.vw_options import VW_OPTIONS
from pyvw_lite.workflow import experiment
from pyvw_lite.workflow.experiment import ConfigError, load_config, run_experiment
from pyvw_lite.workflow.peer import vw_available

FUZZ_SEED = 20261127
ANSWERS = "task,worker,label\n" + "".join(f"t{i % 40},w{i % 9},{(i * 7) % 3}\n"
                                          for i in range(240))
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

[[peer]]
name = "VW"
args = "--oaa {K}"
"""
needs_vw = pytest.mark.skipif(not vw_available(), reason="the vowpalwabbit package is not "
                                                         "installed")


def write_config(folder, text: str):
    (folder / "answers.csv").write_text(ANSWERS)
    config = folder / "c.toml"
    config.write_text(text)
    return config


def one_line_naming(exc: Exception, config) -> str:
    message = str(exc)
    assert "\n" not in message and str(config) in message, message
    return message


def files_under(root) -> set:
    return {os.path.join(folder, name) for folder, _, names in os.walk(root) for name in names}


# ---------------------------------------------------------------------------- the network guard
PEER_SECONDS = 60  # a peer still running then has hung (item 2 hung until killed)
WATCHDOG = (
    "import os, signal, subprocess, sys\n"
    "log, seconds, command = sys.argv[1], float(sys.argv[2]), sys.argv[3:]\n"
    "child = subprocess.Popen(command, start_new_session=True)\n"
    "try:\n"
    "    sys.exit(child.wait(seconds))\n"
    "except subprocess.TimeoutExpired:\n"
    "    os.killpg(child.pid, signal.SIGKILL)\n"
    "    with open(log, 'a') as handle:\n"
    "        handle.write('hung: ' + ' '.join(command) + '\\n')\n"
    "    sys.exit(124)\n"
)


class NetworkGuard:
    """Listens on a loopback port (IPv4 and IPv6) that the fuzz's host:port values name, and
    wraps each peer command: a watchdog kills it when it hangs, and strace (when installed)
    logs every socket call.  ``findings`` lists each connection accepted, each inet socket
    call and each hang."""

    def __init__(self, folder):
        self.folder = folder
        self.connections: list[str] = []
        self.listeners = [socket.create_server(("127.0.0.1", 0))]
        self.port = self.listeners[0].getsockname()[1]
        try:
            self.listeners.append(socket.create_server(("::1", self.port),
                                                       family=socket.AF_INET6))
        except OSError:
            pass  # no IPv6 loopback here
        self.stopped = threading.Event()
        self.threads = [threading.Thread(target=self._accept, args=(listener,), daemon=True)
                        for listener in self.listeners]
        for thread in self.threads:
            thread.start()
        self.strace = shutil.which("strace")
        if self.strace is None and os.environ.get("CI"):  # .ci/run installs it
            pytest.fail("strace is not installed: the guard cannot see non-loopback connects")
        self.hangs = folder / "hangs.log"
        self.runs = 0

    def _accept(self, listener):
        listener.settimeout(0.1)
        while not self.stopped.is_set():
            try:
                connection, address = listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            connection.settimeout(0.5)
            received = 0
            try:
                while chunk := connection.recv(65536):
                    received += len(chunk)
            except OSError:
                pass
            connection.close()
            self.connections.append(f"connection from {address} ({received} bytes received)")

    def wrap(self, command: list[str]) -> list[str]:
        self.runs += 1
        traced = ([self.strace, "-f", "-qq", "--seccomp-bpf", "-o",
                   str(self.folder / f"strace.{self.runs}"),
                   "-e", "trace=socket,connect,bind,listen,sendto,sendmsg"]
                  if self.strace else [])
        return [sys.executable, "-c", WATCHDOG, str(self.hangs), str(PEER_SECONDS),
                *traced, *command]

    def findings(self) -> list[str]:
        found = list(self.connections)
        for log in sorted(self.folder.glob("strace.*")):
            found += [line.strip() for line in log.read_text().splitlines()
                      if "AF_INET" in line]  # AF_INET6 too; AF_UNIX is the resolver's
        if self.hangs.exists():
            found += self.hangs.read_text().splitlines()
        return found

    def close(self):
        self.stopped.set()
        for thread in self.threads:
            thread.join()
        for listener in self.listeners:
            listener.close()


@pytest.fixture
def network_guard(tmp_path_factory, monkeypatch):
    """Every peer the experiment starts runs under a :class:`NetworkGuard`."""
    guard = NetworkGuard(tmp_path_factory.mktemp("guard"))
    plain = experiment.vw_command
    monkeypatch.setattr(experiment, "vw_command",
                        lambda *args, **keywords: guard.wrap(plain(*args, **keywords)))
    yield guard
    guard.close()


@needs_vw
def test_the_guard_sees_a_peer_that_connects(tmp_path, network_guard):
    """The guard itself: VW given --sendto (item 2 of the review, past every config check)
    connects to the listener, and the guard reports it."""
    data = tmp_path / "d.vw"
    data.write_text("".join(f"{1 + i % 3} |a x{i % 5}\n" for i in range(50)))
    try:
        experiment._run_peer(["-d", str(data), "--oaa", "3", "--quiet",
                              "--sendto", f"127.0.0.1:{network_guard.port}"])
    except Exception:  # the listener hangs up: VW may fail, or not
        pass
    found = network_guard.findings()
    assert any("connection from" in line for line in found), found
    if network_guard.strace:
        assert any(line.split(None, 1)[1].startswith("connect(") and "AF_INET" in line
                   for line in found if " " in line), found


# ---------------------------------------------------------------- item 2: peers and the network
@pytest.mark.parametrize("args,needle", [
    ("--oaa {K} --sendto 127.0.0.1:26542", "VW's --sendto may not"),
    ("--oaa {K} --sendto=127.0.0.1:26542", "VW's --sendto may not"),
    ("--oaa {K} --span_server 127.0.0.1 --total 2 --node 0 --unique_id 7",
     "VW's --span_server may not"),
    ("--oaa {K} --total 2", "VW's --total may not"),
    ("--oaa {K} --span_server_port 26543", "VW's --span_server_port may not"),
    ("--oaa {K} --daemon", "VW's --daemon may not"),
    ("--oaa {K} --port 0", "VW's --port may not"),
    ("--oaa {K} --active", "VW's --active may not"),
    ("--oaa {K} --send 127.0.0.1:26542", "--send is not on the list"),
    ("--oaa {K} --span 127.0.0.1", "--span is not on the list"),
    ("--oaa {K} --sendt=127.0.0.1:26542", "--sendt is not on the list"),
    ("--oaa {K} --Sendto 127.0.0.1:26542", "--Sendto is not on the list"),
    ("--oaa {K} --send-to 127.0.0.1:26542", "--send-to is not on the list"),
    ("--oaa {K} --bogus_option", "--bogus_option is not on the list"),
    ("--oaa {K} --audit", "--audit is not on the list"),
    ("--oaa {K} -a", "-a is not on the list"),
    ("--oaa {K} other.vw", "'other.vw' is not an option"),
    ("--oaa {K} -- --sendto 127.0.0.1:26542", "'--' is not on the list"),
    ("--oaa {K} -", "'-' is not an option"),
    ("--oaa {K} -ck", "VW's -c may not"),
    ("--oaa {K} -tf x", "-t is not on the list"),
    ("--oaa {K} -q --sendto", "its value '--sendto' looks like an option"),
    ("--oaa {K} --quiet=1", "--quiet takes no value"),
    ("--oaa", "--oaa needs a value"),
    ("--oaa {K} -f x", "VW's -f may not"),
    ("--oaa {K} --dictionary x:d.txt", "VW's --dictionary may not"),
    ("--oaa {K} --feature_mask m", "VW's --feature_mask may not"),
    ("--oaa {K} --log_output stderr", "VW's --log_output may not"),
    ("--oaa {K} --flatbuffer", "VW's --flatbuffer may not"),
])
def test_a_peer_may_use_only_options_on_the_list(tmp_path, args, needle):
    """Review item 2: `--sendto 127.0.0.1:PORT` sent the cached examples to a listener and the
    experiment hung; `--span_server` passed the checks too.  Options are checked against an
    allow-list, written in full: an abbreviation, another spelling, a positional data file
    and a value that is an option are refused, each in one line naming the token."""
    config = write_config(tmp_path, CONFIG.replace('"--oaa {K}"', json.dumps(args)))
    with pytest.raises(ConfigError) as caught:
        load_config(str(config))
    message = one_line_naming(caught.value, config)
    assert needle in message and "[[peer]] 1" in message


@pytest.mark.parametrize("common,needle", [
    ("-b 12 --active", "VW's --active may not"),
    ("-b 12 --sendto 127.0.0.1:9", "--sendto"),
])
def test_common_goes_to_the_peers_and_is_checked_as_theirs(tmp_path, common, needle):
    """`common` is given to the [[peer]] models too: with a peer, it passes both checks
    (`--active` is ours, and VW's without --simulation listens on a port)."""
    config = write_config(tmp_path, CONFIG.replace('"-b 12"', json.dumps(common)))
    with pytest.raises(ConfigError, match=needle) as caught:
        load_config(str(config))
    one_line_naming(caught.value, config)


@pytest.mark.parametrize("args", [
    "--oaa {K}", "--oaa={K} -b18 -qab --interactions ab -l 0.5 --loss_function=logistic",
    "--ect {K} --holdout_off --l2 1e-6 --power_t 0.5 --initial_t -1",
    "--oaa {K} --lrq ab2 --lrqdropout --ignore c --keep a -C -1",
    "--oaa {K} --active --simulation --mellowness 0.01",
    "--oaa {K} --named_labels 127.0.0.1:9,other.vw",
])
def test_a_peer_keeps_the_options_that_change_what_is_learned(tmp_path, args):
    config = write_config(tmp_path, CONFIG.replace('"--oaa {K}"', json.dumps(args)))
    assert load_config(str(config))["peer"][0]["args"] == args


@needs_vw
def test_a_peer_runs_under_the_guard_and_learns(tmp_path, network_guard):
    """A peer on the list runs (its table row is VW's) and touches no network."""
    config = write_config(tmp_path, CONFIG.replace(
        '"--oaa {K}"', '"--oaa {K} -q aa --holdout_off --l2 0 --hash_seed 1"'))
    result = run_experiment(str(config), str(tmp_path / "work"), plot=False,
                            out=open(os.devnull, "w"))
    assert [r.tool for r in result.results] == ["-", "VW"]
    assert network_guard.findings() == []


# ------------------------------------------------------------------- item 4: placeholders
@pytest.mark.parametrize("text", [
    "--oaa {K:>2000000000}", "--oaa {K:>99999999999999999999}", "--oaa {K!r}", "--oaa {K:d}",
    "--oaa {K!s:>3}", "--oaa {K.real}", "--oaa {K[0]}", "--oaa {0}", "--oaa {}", "--oaa {k}",
    "--oaa { K}", "--oaa {{K}}", "--oaa {K", "--oaa K}",
])
@pytest.mark.parametrize("table", ["models", "peer"])
def test_the_only_placeholder_is_K_exactly(tmp_path, text, table):
    """Review item 4: `--oaa {K:>2000000000}` built a 2 GB string while the config was checked
    (MemoryError traceback).  `{K}` exactly is the one placeholder: a conversion, a format
    spec, attribute or index access, another field or a lone brace is one line naming the
    config and the text."""
    models = CONFIG.replace('[[peer]]\nname = "VW"\nargs = "--oaa {K}"\n', "")
    models += f'\n[[{table}]]\nname = "m"\nargs = {json.dumps(text)}\n'
    config = write_config(tmp_path, models)
    with pytest.raises(ConfigError) as caught:
        load_config(str(config))
    message = one_line_naming(caught.value, config)
    assert repr(text) in message and "{K}" in message


def test_common_may_hold_no_placeholder(tmp_path):
    config = write_config(tmp_path, CONFIG.replace('"-b 12"', '"-b {K:>2000000000}"'))
    with pytest.raises(ConfigError, match="common") as caught:
        load_config(str(config))
    one_line_naming(caught.value, config)


# ------------------------------------------------------------------ item 5: data is a file
@pytest.mark.parametrize("kind", ["fifo", "directory", "/dev/zero", "/dev/null"])
@pytest.mark.parametrize("key", ["answers", "data"])
def test_a_config_reads_only_regular_files(tmp_path, kind, key):
    """Review item 5: `data = "/dev/zero"` read until memory ran out, `/dev/stdin` waited
    forever.  The data a config names must be a regular file (a FIFO, a device or a folder is
    refused in one line, before anything is opened or written)."""
    if kind == "fifo":
        path = tmp_path / "pipe"
        os.mkfifo(path)
    elif kind == "directory":
        path = tmp_path / "folder"
        path.mkdir()
    else:
        path = kind
    config = write_config(tmp_path, CONFIG.replace('answers = "answers.csv"',
                                                   f"{key} = {json.dumps(str(path))}"))
    work = tmp_path / "work"
    with pytest.raises(ConfigError, match="not a regular file") as caught:
        run_experiment(str(config), str(work), with_peer=False, plot=False,
                       out=open(os.devnull, "w"))
    assert str(path) in one_line_naming(caught.value, config)
    assert not work.exists() or not os.listdir(work)


def test_the_config_itself_must_be_a_regular_file(tmp_path):
    fifo = tmp_path / "c.toml"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match="not a regular file"):
        load_config(str(fifo))


# ------------------------------------------------------------------- item 9: out of memory
def test_a_model_out_of_memory_is_one_line_naming_it(tmp_path, capsys):
    """Review item 9: `common = "-b 32"` ended in a MemoryError traceback; the plain command
    line prints one line.  The experiment says which model ran out of memory."""
    from pyvw_lite.cli.main import main
    linear = '[[models]]\nname = "linear"\nargs = "--sft {K}"\n'
    config = write_config(tmp_path, CONFIG.replace('"-b 12"', '"-b 32"') + linear)
    code = main(["experiment", str(config), "--workdir", str(tmp_path / "w"), "--no-peer"])
    err = capsys.readouterr().err
    assert code == 1
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert "out of memory" in err and "'linear'" in err and str(config) in err


@needs_vw
def test_a_peer_that_fails_is_one_line_naming_it(tmp_path, capsys, network_guard):
    """VW's own failure (here: no room for -b 32's weights) is its last line, naming the peer."""
    from pyvw_lite.cli.main import main
    text = CONFIG.replace('common = "-b 12"\n', "").replace('"--oaa {K}"', '"--oaa {K} -b 32"')
    config = write_config(tmp_path, text)
    code = main(["experiment", str(config), "--workdir", str(tmp_path / "w")])
    err = capsys.readouterr().err
    assert code == 1
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert "'VW'" in err and "allocat" in err and str(config) in err
    assert network_guard.findings() == []


@needs_vw
def test_a_peer_runs_in_bounded_memory(tmp_path, monkeypatch):
    """A peer's address space is capped (half the machine's memory): a config asking for more
    fails in VW, in one line, instead of exhausting a shared machine.  Here the cap is 1 GiB
    and -b 28 asks for 4 GiB of weights."""
    monkeypatch.setattr(experiment, "peer_memory", lambda: 1 << 30)
    text = CONFIG.replace('common = "-b 12"\n', "").replace('"--oaa {K}"', '"--oaa {K} -b 28"')
    config = write_config(tmp_path, text)
    with pytest.raises(ConfigError, match="model 'VW': out of memory in VW: .*28 bits") as caught:
        run_experiment(str(config), str(tmp_path / "w"), plot=False, out=open(os.devnull, "w"))
    one_line_naming(caught.value, config)


# ---------------------------------------------------------------------------------- the fuzz
RISKY = ("sendto", "span_server", "span_server_port", "unique_id", "total", "node", "daemon",
         "port", "port_file", "pid_file", "num_children", "foreground", "active", "data",
         "final_regressor", "initial_regressor", "predictions", "raw_predictions", "cache_file",
         "readable_model", "invert_hash", "dictionary", "dictionary_path", "feature_mask",
         "input_feature_regularizer", "output_feature_regularizer_text",
         "output_feature_regularizer_binary", "dump_json_weights_experimental",
         "audit_regressor", "extra_metrics", "save_per_pass", "log_output")
VW_SHORT = "abcdfhiklpqrtBCP"
FORMATS = ("{K}", "{K:>9}", "{K!r}", "{K:d}", "{K.real}", "{K[0]}", "{0}", "{}", "{{K}}", "{k}")


def _fuzz_value(rng, port: int, outside: str) -> str:
    values = (str(int(rng.integers(-3, 40))), f"{rng.normal():.3g}", "ab", "rt", "::", "a",
              f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", "127.0.0.1",
              "localhost", str(port), f"192.0.2.1:{port}", f"{outside}/file", "../escape",
              f"x:{outside}/dictionary", "0", "2000000000", "-1")
    return values[int(rng.integers(len(values)))]


def _fuzz_token(rng, names: list[str], port: int, outside: str) -> str:
    """One token, or an option with its value: VW's whole option list (a third of the time one
    that names a file, a host or a port), abbreviated, with '=', as short flags and clusters,
    positional values and format specs."""
    name = (RISKY[int(rng.integers(len(RISKY)))] if rng.random() < 0.35
            else names[int(rng.integers(len(names)))])
    value = _fuzz_value(rng, port, outside)
    choice = rng.random()
    if choice < 0.35:
        return f"--{name} {shlex.quote(value)}" if rng.random() < 0.6 else f"--{name}"
    if choice < 0.5:
        return f"--{name}={shlex.quote(value)}"
    if choice < 0.6:
        return f"--{name[:int(rng.integers(1, len(name) + 1))]} {shlex.quote(value)}"
    letter = VW_SHORT[int(rng.integers(len(VW_SHORT)))]
    if choice < 0.7:
        return f"-{letter} {shlex.quote(value)}"
    if choice < 0.78:
        return f"-{letter}{shlex.quote(value)}"
    if choice < 0.85:
        return "-" + "".join(VW_SHORT[int(k)] for k in rng.integers(len(VW_SHORT), size=2))
    if choice < 0.93:
        return FORMATS[int(rng.integers(len(FORMATS)))]
    return shlex.quote(value)


def _fuzz_config(rng, names, port: int, outside: str) -> str:
    """CONFIG with 1 to 3 fuzz tokens added to the peer's args, to common, or to both."""
    def tokens():
        return " ".join(_fuzz_token(rng, names, port, outside)
                        for _ in range(int(rng.integers(1, 4))))
    where = rng.random()
    text = CONFIG
    if where < 0.7:
        text = text.replace('"--oaa {K}"', json.dumps("--oaa {K} " + tokens()))
    if where > 0.5:
        text = text.replace('"-b 12"', json.dumps("-b 12 " + tokens()))
    return text


def _names_given(argv: list[str]) -> set[str]:
    """The VW option names that the tokens of ``argv`` begin, spelt out or abbreviated: the
    test's own reading, independent of the experiment's."""
    shorts = {"a": "audit", "c": "cache", "d": "data", "f": "final_regressor", "h": "help",
              "i": "initial_regressor", "k": "kill_cache", "p": "predictions",
              "r": "raw_predictions", "t": "testonly", "P": "progress"}
    named = set()
    for token in argv:
        if token.startswith("--"):
            stem = token[2:].split("=", 1)[0]
            named |= {name for name in VW_OPTIONS if stem and name.startswith(stem)}
        elif token.startswith("-") and len(token) > 1 and token[1] in shorts:
            named.add(shorts[token[1]])
    return named


def test_config_fuzz_refuses_or_loads_only_listed_options(tmp_path, monkeypatch):
    """4,000 seeded configs with fuzzed peer and common arguments: each is refused in one line
    naming the config, or loads, and then no token of the arguments a peer gets begins the
    name of an option that reaches the network, names a file or shows the data, and every
    brace is a plain {K}."""
    names = sorted(VW_OPTIONS)
    outside = tmp_path / "outside"
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(FUZZ_SEED)
    loaded = 0
    for k in range(4000):
        config = write_config(tmp_path, _fuzz_config(rng, names, 26542, str(outside)))
        try:
            parsed = load_config(str(config))
        except ConfigError as exc:
            one_line_naming(exc, config)
            continue
        loaded += 1
        args = parsed["experiment"].get("common", "") + " " + parsed["peer"][0]["args"]
        assert "{" not in args.replace("{K}", "") and "}" not in args.replace("{K}", "")
        given = _names_given(shlex.split(args.replace("{K}", "3")))
        refused = set(RISKY) - {"active"} | {"audit", "cache", "kill_cache", "help"}
        assert not given & refused, args
        assert "active" not in given or "simulation" in given, args
    assert 50 < loaded < 3800


@needs_vw
def test_config_fuzz_peers_reach_no_network_and_write_only_their_work_directory(
        tmp_path, monkeypatch, network_guard):
    """Seeded fuzzed configs that load are run, peers included, under the network guard (the
    host:port values name its listener): none connects, listens, sends or hangs, and every
    file written is in the run's work directory.  The sample runs first the configs whose
    arguments name a host, a port or a path."""
    names = sorted(VW_OPTIONS)
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    monkeypatch.chdir(sandbox)
    rng = np.random.default_rng(FUZZ_SEED + 1)
    loaded = []
    for _ in range(3000):
        text = _fuzz_config(rng, names, network_guard.port, str(outside))
        config = write_config(sandbox, text)
        try:
            load_config(str(config))
        except ConfigError:
            continue
        loaded.append(text)
    marks = (str(network_guard.port), "localhost", "127.0.0.1", "::1", "192.0.2.1",
             str(outside), "escape")
    loaded.sort(key=lambda text: not any(mark in text for mark in marks))
    before = files_under(tmp_path)
    ran = 0
    for k, text in enumerate(loaded[:40]):
        config = write_config(sandbox, text)
        work = sandbox / f"work{k}"
        try:
            run_experiment(str(config), str(work), plot=False, out=open(os.devnull, "w"))
            ran += 1
        except ConfigError as exc:
            one_line_naming(exc, config)  # a peer on the list may still fail (a bad value)
        assert network_guard.findings() == [], text
        written = files_under(tmp_path) - before
        assert all(path.startswith(str(work) + os.sep) or path == str(config)
                   for path in written), (text, sorted(written))
        before |= written
    assert ran >= 8 and network_guard.runs >= 40
    assert not os.listdir(outside)
