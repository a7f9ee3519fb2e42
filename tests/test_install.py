"""numba never makes import fail: a read-only install caches elsewhere, or not at all."""
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
