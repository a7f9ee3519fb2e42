"""numba never makes import fail: a read-only install caches elsewhere, or not at all."""
import io
import os
import subprocess
import sys
import textwrap


def run(code: str, env_extra: dict) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env.update(env_extra)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, env=env)


def test_read_only_package_directory_falls_back_to_a_writable_cache(tmp_path):
    code = """
        import os, pyvw_lite
        package = os.path.dirname(pyvw_lite.__file__)
        real_access = os.access
        os.access = lambda path, mode: False if path.startswith(package) else real_access(path, mode)
        import pyvw_lite.jit
        os.access = real_access
        print(os.environ["NUMBA_CACHE_DIR"])
        from pyvw_lite import Workspace
        print(Workspace("--quiet").learn("1 |a x")[0])
    """
    done = run(code, {"XDG_CACHE_HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    cache_dir, prediction = done.stdout.split()
    assert cache_dir == str(tmp_path / "pyvw_lite" / "numba")
    assert float(prediction) == 0.0


def test_uncachable_kernels_still_compile():
    code = """
        import numba
        real = numba.njit
        def refusing(*args, **kwargs):
            if kwargs.get("cache"):
                def fail(func):
                    raise RuntimeError("cannot cache function: no locator available")
                return fail
            return real(*args, **kwargs)
        numba.njit = refusing
        from pyvw_lite.jit import kernel
        @kernel
        def twice(x):
            return 2 * x
        print(twice(21))
    """
    done = run(code, {})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "42"


def test_a_cached_kernel_depends_on_every_kernel_source(tmp_path):
    """numba stamps a cache entry with its own file only; ours also carry the digest of all
    kernel sources, so an edit to a helper's file (inlined elsewhere) invalidates its callers."""
    from pyvw_lite import jit
    from pyvw_lite.reductions.sft import sft_examples

    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "jit.py").write_text("x = 1\n")
    (package / "sub" / "k.py").write_text("@kernel\ndef f():\n    pass\n")
    (package / "notes.py").write_text("print('no kernels here')\n")
    before = jit._kernel_sources_digest(str(package))
    (package / "notes.py").write_text("print('still none')\n")
    assert jit._kernel_sources_digest(str(package)) == before
    (package / "sub" / "k.py").write_text("@kernel\ndef f():\n    return 1\n")
    assert jit._kernel_sources_digest(str(package)) != before

    stamp = sft_examples._cache._impl.locator.get_source_stamp()
    assert stamp[1] == jit._kernel_sources_digest(os.path.dirname(jit.__file__))


def test_a_warm_start_loads_cached_kernels_without_numbas_registries(tmp_path):
    """Loading cached machine code skips numba's registry refresh (0.4-0.5 s): a warm command
    line run never imports numba's array registry nor scipy.linalg, and learns the same."""
    data = tmp_path / "d.vw"
    data.write_text("".join(f"{1 + i % 3} |rater r{i % 7} |task t{i % 11}\n" for i in range(300)))
    code = f"""
        import sys
        from pyvw_lite.cli.main import main
        main(["-d", {str(data)!r}, "--sft", "3", "--quiet", "-p", "/dev/stdout"])
        print("arraymath" if "numba.np.arraymath" in sys.modules else "lean",
              "scipy.linalg" in sys.modules)
    """
    first = run(code, {})  # compiles if the cache is cold (then numba refreshes, as it must)
    assert first.returncode == 0, first.stderr
    warm = run(code, {})
    assert warm.returncode == 0, warm.stderr
    assert warm.stdout.splitlines()[-1] == "lean False"
    assert warm.stdout.splitlines()[:-1] == first.stdout.splitlines()[:-1]


def test_a_failing_lean_load_falls_back_to_numbas_own(tmp_path):
    code = """
        from numba.core.runtime import rtsys
        real = rtsys.initialize
        calls = []
        def failing_once(ctx):
            calls.append(1)
            if len(calls) == 1:
                raise RuntimeError("simulated")
            return real(ctx)
        rtsys.initialize = failing_once
        from pyvw_lite import Workspace
        print(Workspace("--quiet").learn("1 |a x")[0], len(calls) > 1)
    """
    warm = run(code, {})
    warm = run(code, {})
    assert warm.returncode == 0, warm.stderr
    assert warm.stdout.split() == ["0.0", "True"]


class _Uncached:
    """A dispatcher as :func:`announce_compile` sees it: nothing compiled, no cache index."""

    def __init__(self, index_path):
        self.signatures = []
        self._cache = type("Cache", (), {})()
        self._cache._cache_file = type("CacheFile", (), {"_index_path": str(index_path)})()


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_the_compile_notice_names_the_first_run_of_any_kernel_a_run_needs(tmp_path, monkeypatch):
    """A user is told once that a run compiles first, when any kernel of the run has no cached
    machine code: on a terminal and, since issue 28, on a pipe or file too (a script or CI
    waited in silence); PYVW_LITE_QUIET_COMPILE (the suite's, or --quiet's) silences it."""
    from pyvw_lite import jit
    cached = tmp_path / "cached.nbi"
    cached.write_bytes(b"")
    monkeypatch.delenv("PYVW_LITE_QUIET_COMPILE", raising=False)
    for stderr, kernels, told in ((_Terminal(), [cached], False),
                                  (_Terminal(), [cached, tmp_path / "missing.nbi"], True),
                                  (io.StringIO(), [tmp_path / "missing.nbi"], True)):
        monkeypatch.setattr(jit, "_announced", False)
        monkeypatch.setattr(sys, "stderr", stderr)
        jit.announce_compile(*(_Uncached(path) for path in kernels))
        jit.announce_compile(*(_Uncached(path) for path in kernels))
        assert stderr.getvalue().count("compiling kernels for this mode (once") == told
    monkeypatch.setenv("PYVW_LITE_QUIET_COMPILE", "1")
    monkeypatch.setattr(jit, "_announced", False)
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    jit.announce_compile(_Uncached(tmp_path / "missing.nbi"))
    assert sys.stderr.getvalue() == ""


def test_a_run_checks_the_kernels_of_its_own_learner():
    """The compile notice looks at the example loop the configuration runs, not the linear
    learner's."""
    from pyvw_lite import Workspace
    from pyvw_lite.learners import gd
    from pyvw_lite.reductions import dyad, ect, oaa, sft
    for args, loop in (("", gd.learn_passive), ("--active --simulation", gd.learn_examples),
                       ("--dyad rt", dyad.dyadic_examples),
                       ("--sft 3", sft.sft_examples),
                       ("--sft 3 --dyad rt", sft.sft_dyadic_examples),
                       ("--oaa 3", oaa.oaa_examples),
                       ("--oaa 3 --dyad rt", oaa.oaa_dyadic_examples),
                       ("--ect 3", ect.ect_examples)):
        assert Workspace(f"{args} --quiet").learning_kernels() == (gd.expand_linear, loop), args
        assert Workspace(f"{args} -q ab --quiet").learning_kernels() == \
            (gd.expand_features, loop), args


def test_a_cold_start_compiles_the_learner_beside_the_parser(tmp_path):
    """Issue 28: with an empty cache a run starts a helper process that compiles the learning
    kernels while it compiles the parser, and loads them when the helper is done.  Checked
    here: the notices, every kernel in the cache afterwards, and a result equal to a warm
    run's (the time saved, 18.6 s -> ~10 s for the default learner, is a measurement, not a
    test)."""
    import subprocess
    import sys
    cache = tmp_path / "numba"
    cache.mkdir()
    data = tmp_path / "d.vw"
    data.write_text("".join(f"{1 if i % 2 else -1} |a x{i % 5} |b y{i % 3}\n" for i in range(50)))
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache))
    env.pop("PYVW_LITE_QUIET_COMPILE", None)
    done = subprocess.run([sys.executable, "-m", "pyvw_lite", "-d", str(data), "--loss_function",
                           "logistic"], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "compiling kernels for this mode" in done.stderr
    assert "compiled in" in done.stderr and "not counted in the figures above" in done.stderr
    names = {path.name.split(".")[1].rsplit("-", 1)[0] for path in cache.rglob("*.nbi")}
    assert {"learn_passive", "expand_linear", "parse_lines"} <= names
    warm = subprocess.run([sys.executable, "-m", "pyvw_lite", "-d", str(data), "--loss_function",
                           "logistic"], env=env, capture_output=True, text=True, timeout=600)
    assert "compiling" not in warm.stderr
    tail = [line for line in done.stderr.splitlines() if line.startswith("average loss")]
    assert tail == [line for line in warm.stderr.splitlines() if line.startswith("average loss")]


def test_compile_fills_the_cache_a_later_run_loads(tmp_path):
    """Issue 28 item 4: `pyvw-lite compile MODE` fills the kernel cache ahead of time; the first
    real run of that mode then compiles nothing (no new cache file appears)."""
    import subprocess
    import sys
    cache = tmp_path / "numba"
    cache.mkdir()
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache))
    done = subprocess.run([sys.executable, "-m", "pyvw_lite", "compile", "binary"], env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "[1/1] binary ..." in done.stderr and "compiled 1 mode in" in done.stderr
    before = sorted(p.name for p in cache.rglob("*") if p.is_file())
    assert any(name.endswith(".nbc") for name in before)
    data = tmp_path / "d.vw"
    data.write_text("".join(f"{1 if i % 2 else -1} |a x{i % 5} |b y{i % 3}\n" for i in range(50)))
    run = subprocess.run([sys.executable, "-m", "pyvw_lite", "-d", str(data), "--loss_function",
                          "logistic", "--quiet"], env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert sorted(p.name for p in cache.rglob("*") if p.is_file()) == before
    bad = subprocess.run([sys.executable, "-m", "pyvw_lite", "compile", "nope"], env=env,
                         capture_output=True, text=True)
    assert bad.returncode == 1 and "unknown mode 'nope'" in bad.stderr


def test_a_run_that_compiles_says_so_and_how_long_it_took(tmp_path):
    """Issue 28 item 3: with stderr redirected (a script, CI) nothing explained the wait. Now one
    line says what is compiled, then how long it took, terminal or not; --quiet keeps quiet;
    crowd's fit seconds leave the compile time out."""
    import subprocess
    import sys
    env = {k: v for k, v in os.environ.items() if k != "PYVW_LITE_QUIET_COMPILE"}
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "numba")
    answers = tmp_path / "a.csv"
    answers.write_text("task,worker,label\n" + "".join(f"t{i % 30},w{i % 7},{i % 2}\n"
                                                       for i in range(150)))
    done = subprocess.run([sys.executable, "-m", "pyvw_lite", "crowd", str(answers), "--batch",
                           "--method", "em"], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    err = done.stderr
    assert "pyvw-lite: compiling kernels for this mode (once" in err
    compiled = float(err.split("pyvw-lite: compiled in ")[1].split(" s")[0])
    fit = float(err.split("fit seconds = ")[1].split()[0])
    assert compiled > 1.0 and fit < compiled  # the compile time is reported apart
    assert "compile seconds = " in err
    again = subprocess.run([sys.executable, "-m", "pyvw_lite", "crowd", str(answers), "--batch",
                            "--method", "em"], env=env, capture_output=True, text=True)
    assert "compiling" not in again.stderr and "compile seconds" not in again.stderr
