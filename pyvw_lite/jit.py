"""numba set-up shared by every kernel module.

Kernels are compiled with ``cache=True`` so a warm start only loads machine code.  Three traps
are handled here, once: a read-only install (numba cannot write ``__pycache__`` next to the
source, and ``cache=True`` would then make *import* fail), a stale cache (numba keys a cached
kernel on its own source file, but ours inline helpers from other files) and the cold first
compile, which takes seconds and deserves a word on a terminal.
"""
from __future__ import annotations

import hashlib
import os
import stat
import sys
import tempfile
import time


def _private_dir(path: str, uid: int) -> bool:
    """Whether ``path`` is a directory (not a link) that ``uid`` owns and nobody else may write
    into: numba's index files are pickles, so a planted one would run code when loaded."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == uid and not info.st_mode & 0o022


def _make_private(path: str, uid: int) -> bool:
    """Create ``path`` (mode 0700) if missing; then whether it is private to ``uid``."""
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return False
    return _private_dir(path, uid)


def choose_cache_dir(package_dir: str, environ, uid: int, home: str, temp: str) -> str | None:
    """Where numba should cache kernels: "" for beside the sources (a writable install), a
    per-user directory when the install is read-only, None for no cache at all.

    The per-user directory is ``$XDG_CACHE_HOME/pyvw_lite/numba`` or ``~/.cache/...``, else
    ``$TMPDIR/pyvw_lite-UID/numba``; it is used only when this user owns it and no one else can
    write into it (created 0700; a directory another user made first is never used)."""
    if environ.get("NUMBA_CACHE_DIR"):
        return environ["NUMBA_CACHE_DIR"]  # the user's own choice (the environment is trusted)
    pycache = os.path.join(package_dir, "__pycache__")
    if os.path.isdir(pycache):
        if os.access(pycache, os.W_OK) and _private_dir(pycache, uid):
            return ""
    elif os.access(package_dir, os.W_OK) and _private_dir(package_dir, uid):
        return ""
    candidates = [os.path.join(base, "pyvw_lite", "numba")
                  for base in (environ.get("XDG_CACHE_HOME"), os.path.join(home, ".cache"))
                  if base and os.path.isabs(base)]
    candidates.append(os.path.join(temp, f"pyvw_lite-{uid}", "numba"))
    for candidate in candidates:
        if _make_private(os.path.dirname(candidate), uid) and _make_private(candidate, uid):
            return candidate
    return None


def _choose_cache_dir() -> None:
    """Point numba at a private cache directory, or switch caching off (with a note)."""
    global CACHE
    choice = choose_cache_dir(os.path.dirname(os.path.abspath(__file__)), os.environ,
                              os.getuid(), os.path.expanduser("~"), tempfile.gettempdir())
    if choice is None:
        CACHE = False
        sys.stderr.write("pyvw-lite: note: no private directory for compiled kernels (the "
                         "install is read-only and no per-user cache directory could be made): "
                         "kernels are compiled on every run\n")
    elif choice:
        os.environ["NUMBA_CACHE_DIR"] = choice


CACHE = True  # whether kernels are cached on disk (False: no private directory was found)
_choose_cache_dir()

import numba  # noqa: E402  (must follow the cache-directory choice)


def _kernel_sources_digest(package_dir: str) -> bytes:
    """SHA-256 over every module of the package that defines kernels (path and content)."""
    digest = hashlib.sha256()
    for root, dirs, files in os.walk(package_dir):
        dirs.sort()
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            path = os.path.join(root, name)
            with open(path, "rb") as handle:
                data = handle.read()
            if b"@kernel" in data or name == "jit.py":
                digest.update(os.path.relpath(path, package_dir).encode() + b"\0" + data)
    return digest.digest()


def _stamp_kernels_with_the_package() -> None:
    """Make every cached kernel of this package depend on all its kernel sources.

    numba validates a cache entry against the stamp of the function's own file only.  Our
    kernels inline helpers from other modules (``sft_examples`` from ``learners/gd.py``, the
    dyadic loops from ``reductions/dyad.py`` ...), so after an edit to a helper's file a cached
    caller would silently keep the old helper.  The locators below, tried before numba's own
    for files inside the package, add the digest of all kernel sources to the stamp.
    """
    from numba.core import caching

    package_dir = os.path.dirname(os.path.abspath(__file__))
    package_stamp = _kernel_sources_digest(package_dir)

    writable_dirs: set[str] = set()

    def stamped(base):
        class PackageLocator(base):
            def get_source_stamp(self):
                return super().get_source_stamp(), package_stamp

            def ensure_cache_path(self):
                # numba proves a directory writable by creating a temporary file in it, once
                # per kernel (about 150 at import); once per directory and process is enough
                path = self.get_cache_path()
                if path not in writable_dirs:
                    super().ensure_cache_path()
                    writable_dirs.add(path)

            @classmethod
            def from_function(cls, py_func, py_file):
                if not os.path.abspath(py_file).startswith(package_dir + os.sep):
                    return None
                return super().from_function(py_func, py_file)

        PackageLocator.__name__ = "Package" + base.__name__
        return PackageLocator

    def public_or_private(name):  # numba 0.68 made these names public
        return getattr(caching, name, None) or getattr(caching, "_" + name, None)

    impl = public_or_private("CacheImpl")
    bases = [public_or_private(name) for name in ("UserProvidedCacheLocator",
                                                  "InTreeCacheLocator", "UserWideCacheLocator")]
    if impl is None or None in bases:  # an unknown numba: its own (per-file) stamps only
        return
    impl._locator_classes[:0] = [stamped(base) for base in bases]


_stamp_kernels_with_the_package()


def _lean_loading(cache_class):
    """A subclass of numba's function cache that loads machine code without numba's registries.

    Before every cache load numba refreshes its target context: it imports and installs every
    typing and lowering registry (numpy, cpython, random, typed containers, ...), 0.4-0.5 s of a
    warm start that a cached kernel never uses; only compiling needs them, and numba's compiler
    refreshes on its own.  A load needs numba's runtime (its allocator's symbols), so that is
    initialised; should a load still fail, the full refresh runs and the load is retried.
    """

    class LeanCache(cache_class):
        def load_overload(self, sig, target_context):
            from numba.core.runtime import rtsys
            try:
                rtsys.initialize(target_context)
                with self._guard_against_spurious_io_errors():
                    return self._load_overload(sig, target_context)
            except Exception:  # noqa: BLE001  (numba's full path decides)
                return super().load_overload(sig, target_context)

    LeanCache.__name__ = "Lean" + cache_class.__name__
    return LeanCache


_lean_classes: dict[type, type] = {}


def _load_lean(dispatcher):
    cache = getattr(dispatcher, "_cache", None)
    if cache is None or not hasattr(cache, "_load_overload") \
            or not hasattr(cache, "_guard_against_spurious_io_errors"):
        return dispatcher  # no cache, or an unknown numba: its own loading
    base = type(cache)
    if base not in _lean_classes:
        _lean_classes[base] = _lean_loading(base)
    cache.__class__ = _lean_classes[base]
    return dispatcher


def kernel(function=None, **options):
    """``numba.njit(cache=True, nogil=True)`` that degrades to no cache instead of failing, and
    loads cached machine code without numba's registries (:func:`_lean_loading`).

    The dyadic learning loops pass ``error_model="numpy"``: a float division by zero then gives
    IEEE inf/nan instead of raising, so numba emits no zero test and exception path per
    division.  Their divisions are all guarded (or meant to give inf, as ``p⁻¹`` bounds), so
    results are unchanged; the ``--sft 5 --dyad rt --rank 2`` loop ran 10-14% faster on the
    1M-line bench file.  Elsewhere numba's default keeps a stray zero division loud."""

    def decorate(func):
        if not CACHE:
            return numba.njit(cache=False, nogil=True, **options)(func)
        try:
            return _load_lean(numba.njit(cache=True, nogil=True, **options)(func))
        except RuntimeError:  # "cannot cache function ...: no locator available"
            return numba.njit(cache=False, nogil=True, **options)(func)

    if function is not None:
        return decorate(function)
    return decorate


def _prefetch_intrinsic():
    from llvmlite import ir
    from numba.core import cgutils, types
    from numba.extending import intrinsic

    @intrinsic
    def prefetch_row(typingctx, array, row):
        """Ask the CPU to start loading row ``row`` of a 2-D array (element ``row`` of a 1-D
        one) into its caches (``llvm.prefetch``: a hint; it never faults and changes nothing)."""
        if not (isinstance(array, types.Array) and array.ndim in (1, 2)
                and isinstance(row, types.Integer)):
            return None

        def codegen(context, builder, signature, args):
            aryty = signature.args[0]
            ary = context.make_array(aryty)(context, builder, args[0])
            index = [args[1]] + [context.get_constant(types.intp, 0)] * (aryty.ndim - 1)
            ptr = cgutils.get_item_pointer(context, builder, aryty, ary, index,
                                           wraparound=False)
            byte_ptr = ir.IntType(8).as_pointer()
            i32 = ir.IntType(32)
            hint = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(ir.VoidType(), [byte_ptr, i32, i32, i32]),
                "llvm.prefetch.p0")
            # read, high temporal locality, data cache
            builder.call(hint, [builder.bitcast(ptr, byte_ptr), ir.Constant(i32, 0),
                                ir.Constant(i32, 3), ir.Constant(i32, 1)])
            return context.get_dummy_value()

        return types.none(array, row), codegen

    return prefetch_row


prefetch_row = _prefetch_intrinsic()


class _NoScipyLinalgForTheProbe:
    """Import hook that hides scipy.linalg from numba's BLAS probe, and only from it.

    When numba first loads its array registry (to compile, or for a full refresh) it imports
    ``numba.np.arraymath``, which imports ``scipy.linalg`` (0.25 s) only to learn whether
    ``np.dot`` can use BLAS; our kernels never do.  The probe runs while ``numba.np.arraymath``
    is half-imported (no ``_HAVE_BLAS`` yet): that is the one import refused.
    """

    def find_spec(self, name, path=None, target=None):
        if name == "scipy.linalg" or name.startswith("scipy.linalg."):
            probing = sys.modules.get("numba.np.arraymath")
            if probing is not None and not hasattr(probing, "_HAVE_BLAS"):
                raise ImportError("scipy.linalg hidden from numba's BLAS probe")
        return None


def skip_blas_probe() -> None:
    """For the command line only: numba's array registry, if it is ever loaded, is loaded
    without importing scipy.  (Loading cached kernels does not load it: :func:`_lean_loading`.)"""
    if "numba.np.arraymath" in sys.modules or "scipy.linalg" in sys.modules:
        return
    if not any(isinstance(hook, _NoScipyLinalgForTheProbe) for hook in sys.meta_path):
        sys.meta_path.insert(0, _NoScipyLinalgForTheProbe())


_announced = False


class _CompileClock:
    """Wall time numba spends compiling in this process (outermost compilations only: a kernel
    compiles the helpers it inlines inside its own compilation)."""

    def __init__(self):
        self.seconds = 0.0
        self._depth = 0
        self._started = 0.0

    def on_start(self, event) -> None:
        if self._depth == 0:
            self._started = time.perf_counter()
        self._depth += 1

    def on_end(self, event) -> None:
        self._depth -= 1
        if self._depth == 0:
            self.seconds += time.perf_counter() - self._started


_clock = _CompileClock()


def _install_clock() -> None:
    try:
        from numba.core import event
    except ImportError:  # an unknown numba: no timing, the notice still shows
        return

    class Listener(event.Listener):
        def on_start(self, ev):
            _clock.on_start(ev)

        def on_end(self, ev):
            _clock.on_end(ev)

    event.register("numba:compile", Listener())


_install_clock()


def compile_seconds() -> float:
    """Seconds this process has spent compiling kernels so far (0 on a warm start)."""
    return _clock.seconds


def _quiet_compile() -> bool:
    return os.environ.get("PYVW_LITE_QUIET_COMPILE", "") not in ("", "0")


def is_cached(dispatcher) -> bool:
    """Whether a kernel has machine code loaded or an index in the on-disk cache."""
    if dispatcher.signatures:
        return True
    cache = getattr(dispatcher, "_cache", None)
    cache_file = getattr(cache, "_cache_file", None)
    index_path = getattr(cache_file, "_index_path", None)
    return index_path is not None and os.path.exists(index_path)


def announce_compile(*dispatchers) -> None:
    """One line on stderr (a terminal or not) when a kernel this run needs has no cached
    machine code yet; :func:`report_compile` says at the end how long compiling took.
    ``PYVW_LITE_QUIET_COMPILE=1`` silences both (the test suite sets it)."""
    global _announced
    if _announced or _quiet_compile():
        return
    for dispatcher in dispatchers:
        if not is_cached(dispatcher):
            _announced = True
            sys.stderr.write("pyvw-lite: compiling kernels for this mode (once: later runs load "
                             "them from the cache; `pyvw-lite compile` does it ahead) ...\n")
            sys.stderr.flush()
            return


def report_compile() -> None:
    """After an announced compilation: one line with the seconds it took."""
    if _announced and not _quiet_compile() and compile_seconds() > 0.0:
        sys.stderr.write(f"pyvw-lite: compiled in {compile_seconds():.1f} s (not counted in the "
                         "figures above)\n")
        sys.stderr.flush()
