"""Files written atomically: into a temporary file beside the target, renamed when complete.

A reader never sees a half-written model or predictions file, and a failed run leaves the old
file in place.  Targets that are not regular files (``/dev/stdout``, a pipe) are written directly.
Inside :func:`published_together` the files are renamed together at the end, so an interrupted
run leaves all of its new outputs or none.  A write that fails (a full disk) names its file.
"""
from __future__ import annotations

import contextlib
import os
import signal
import socket
import stat
import sys
import tempfile
import threading


def _is_special(path: str) -> bool:
    """Descriptor and process paths (``-``, ``/dev/stdout``, ``/dev/fd/N``, ``/proc/...``) and
    anything that exists and is not a regular file (``/dev/null``, a pipe) are written in
    place: renaming onto them would replace the device link.  A regular file under ``/dev``
    (``/dev/shm/x``, a tmpfs) is an ordinary output."""
    if path == "-" or _named_descriptor(path, "output") is not None \
            or os.path.abspath(path).startswith("/proc/"):
        return True
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode)


def _inherited_descriptor(path: str) -> int | None:
    """The open descriptor a path names: ``-`` and ``/dev/stdout`` are 1, ``/dev/stderr`` 2,
    ``/dev/fd/N`` and ``/proc/self/fd/N`` are N; None for any other path."""
    if path == "-":
        return 1
    path = os.path.abspath(path)
    named = {"/dev/stdout": 1, "/dev/stderr": 2}
    if path in named:
        return named[path]
    for prefix in ("/dev/fd/", "/proc/self/fd/"):
        if path.startswith(prefix) and path[len(prefix):].isdigit():
            return int(path[len(prefix):])
    return None


def same_stream(first: str, second: str) -> bool:
    """Whether two output paths write to one open descriptor (``-p /dev/stdout -r -``)."""
    descriptor = _inherited_descriptor(first)
    return descriptor is not None and descriptor == _inherited_descriptor(second)


def _identity(path: str):
    """What makes two paths one file: device and inode when it exists, else the resolved path."""
    try:
        status = os.stat(path)
    except OSError:
        return ("path", os.path.realpath(path))
    return ("file", status.st_dev, status.st_ino)


def _named_descriptor(path: str, role: str) -> int | None:
    """The descriptor a path stands for: ``-`` is standard input for an input and standard
    output for an output; ``/dev/stdin``, ``/dev/stdout``, ``/dev/stderr``, ``/dev/fd/N`` and
    ``/proc/self/fd/N`` name theirs.  None for any other path."""
    if path == "-":
        return 0 if role == "input" else 1
    if os.path.abspath(path) == "/dev/stdin":
        return 0
    return _inherited_descriptor(path)


def _special_identity(path: str, role: str):
    """The regular file behind a descriptor or device path (``-d - < d.vw``, ``/dev/fd/3``,
    ``/proc/self/fd/0``), told by ``fstat``/``stat``: its device and inode.  None for what is
    no regular file (a pipe, a terminal, ``/dev/null``): those may repeat, and a pipe cannot
    be traced to the file its writer reads (``cat d.vw | pyvw-lite -p d.vw``)."""
    descriptor = _named_descriptor(path, role)
    try:
        status = os.fstat(descriptor) if descriptor is not None else os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(status.st_mode):
        return None
    return ("file", status.st_dev, status.st_ino)


def _refuse_unwritable(flag: str, path: str) -> None:
    """An output whose directory is missing or read-only fails now, not after the whole run
    has been spent on it."""
    if path.endswith(("/", os.sep)):  # never the name of a file, whatever is there
        raise ValueError(f"{flag} {path}: cannot write there (a file name cannot end in "
                         f"{path[-1]!r})")
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise ValueError(f"{flag} {path}: cannot write there (no directory {directory})")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise ValueError(f"{flag} {path}: cannot write there (directory {directory} is not "
                         "writable)")


def check_paths(inputs, outputs, reusable: tuple[str, ...] = (),
                may_replace: tuple[tuple[str, str], ...] = ()) -> None:
    """Refuse a run whose output cannot be written, or that would write over one of its inputs
    or write two outputs to one file.  An existing output whose flag is in ``reusable`` (a
    cache, read when current) is not checked for writability.

    ``inputs``, ``outputs``: ``(flag, path)`` pairs (None paths are skipped).  An input or
    output named by a descriptor (``-``, ``/dev/stdin``, ``/dev/fd/N``, ``/proc/self/fd/N``)
    stands for the regular file open there, if any; pipes, terminals and devices may repeat.
    ``may_replace`` holds the ``(output flag, input flag)`` pairs that may name one file: a
    model read with ``-i`` and saved with ``-f`` is read whole before the run, and the atomic
    write replaces it only at the end (VW's way of continuing a model).  Every other output
    over any input is refused."""
    seen: dict = {}
    for role, pairs in (("input", inputs), ("output", outputs)):
        for flag, path in pairs:
            if role == "output" and path and os.path.isdir(path):
                raise ValueError(f"{flag} {path} is a directory, not a file")
            if not path:
                continue
            if path == "-" or _is_special(path):
                # a descriptor or device: the file behind it, when it is one, counts as an
                # input, and an output through one may not reach an input
                key = _special_identity(path, role)
                if key is None:
                    continue
                if role == "output":
                    if key in seen and seen[key][1] == "input":
                        raise ValueError(f"{flag} {path} is the {seen[key][0]} file: the run "
                                         "would write over its input")
                    continue
            else:
                if role == "output" and not (flag in reusable and os.path.isfile(path)):
                    _refuse_unwritable(flag, path)
                key = _identity(path)
            if key in seen:
                first_flag, first_role = seen[key]
                if role == "input":
                    continue  # one file read twice
                if first_role == "input" and (flag, first_flag) in may_replace:
                    continue
                if first_role == "input":
                    raise ValueError(f"{flag} {path} is the {first_flag} file: the run would "
                                     "write over its input")
                raise ValueError(f"{flag} {path} is the {first_flag} file too: two outputs "
                                 "cannot share a file")
            seen[key] = (flag, role)


def _host() -> str:
    return "".join(c if c.isalnum() else "_" for c in socket.gethostname())[:40] or "host"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


def remove_stale_temporaries(path: str) -> None:
    """Remove the temporary files a killed run left beside ``path`` (``.tmp-NAME.HOST-PID.*``
    of this host whose process is gone); another live run's are left alone."""
    directory = os.path.dirname(os.path.abspath(path))
    prefix = ".tmp-" + os.path.basename(path) + "." + _host() + "-"
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        if not name.startswith(prefix):
            continue
        pid = name[len(prefix):].split(".", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(directory, name))


def temporary_beside(path: str) -> tuple[int, str]:
    """A new temporary file in ``path``'s directory, named after the target, this host and
    this process (so the next run can tell a killed run's leftovers): (descriptor, path)."""
    remove_stale_temporaries(path)
    directory = os.path.dirname(os.path.abspath(path))
    try:
        fd, temporary = tempfile.mkstemp(
            prefix=f".tmp-{os.path.basename(path)}.{_host()}-{os.getpid()}.", dir=directory)
    except OSError as exc:
        raise OSError(exc.errno, f"cannot write {path} ({exc.strerror})") from None
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(temporary, 0o666 & ~umask)  # mkstemp makes 0600; a normal file respects the umask
    return fd, temporary


def named_error(exc: OSError, path: str) -> OSError:
    """``exc`` naming ``path`` when it names no file (a full disk says "No space left on
    device" and nothing more)."""
    if exc.filename is not None or exc.errno is None:
        return exc
    return type(exc)(exc.errno, exc.strerror, path)


class NamedWriter:
    """A file being written whose write errors name its target (the rest is the file's)."""

    def __init__(self, handle, path: str):
        self._handle = handle
        self._path = path

    def write(self, data):
        try:
            return self._handle.write(data)
        except OSError as exc:
            raise named_error(exc, self._path) from None

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        try:
            self._handle.flush()
        except OSError as exc:
            raise named_error(exc, self._path) from None

    def __getattr__(self, name):
        return getattr(self._handle, name)

    def __iter__(self):
        return iter(self._handle)


# (temporary, target) pairs written inside published_together(), renamed at its end
_pending: list[tuple[str, str]] | None = None


@contextlib.contextmanager
def _signals_held():
    """Ctrl-C and SIGTERM wait until the block is done (then they act as they would have);
    only the main thread can hold them, so elsewhere nothing is held."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = {number: signal.signal(number, lambda n, _frame: caught.append(n))
                for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        if caught:
            signal.raise_signal(caught[0])


@contextlib.contextmanager
def published_together():
    """The atomic writes inside the block are renamed into place together when it ends, with
    Ctrl-C and SIGTERM held for those few renames: a run stopped before then leaves its old
    outputs, never a new ``-f`` beside an old ``-p``.  An exception discards them all.  Nested
    blocks publish with the outermost."""
    global _pending
    if _pending is not None:
        yield
        return
    _pending = []
    try:
        yield
    except BaseException:
        pending, _pending = _pending, None
        for temporary, _ in pending:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
        raise
    pending, _pending = _pending, None
    with _signals_held():
        for k, (temporary, path) in enumerate(pending):
            try:
                os.replace(temporary, path)
            except OSError as exc:
                for left, _ in pending[k:]:
                    with contextlib.suppress(OSError):
                        os.unlink(left)
                raise named_error(exc, path) from None


def _publish(temporary: str, path: str) -> None:
    """Rename a complete temporary file onto its target, now or with its group."""
    if _pending is None:
        os.replace(temporary, path)
        return
    for k, (earlier, target) in enumerate(_pending):
        if target == path:  # written twice in one group: the last one counts
            with contextlib.suppress(OSError):
                os.unlink(earlier)
            del _pending[k]
            break
    _pending.append((temporary, path))


@contextlib.contextmanager
def atomic_write(path: str, binary: bool = True):
    """A handle on a temporary file beside ``path``, renamed onto it when the block ends (or
    with the group of :func:`published_together`); removed if the block fails."""
    if path == "-" or _is_special(path):
        inherited = _inherited_descriptor(path)
        mode = "wb" if binary else "w"
        if inherited is not None:
            # the descriptor itself, not a new open of its path: a new open of a redirected
            # stdout truncates the file or writes at an offset of its own, over the shell's
            sys.stdout.flush()
            sys.stderr.flush()
            handle = os.fdopen(os.dup(inherited), mode)
        else:
            handle = open(path, mode)
        try:
            yield NamedWriter(handle, path)
        except BaseException:
            with contextlib.suppress(OSError):
                handle.close()
            raise
        try:
            handle.close()
        except OSError as exc:
            raise named_error(exc, path) from None
        return
    fd, temporary = temporary_beside(path)
    handle = os.fdopen(fd, "wb" if binary else "w")
    try:
        yield NamedWriter(handle, path)  # its write errors name the file already
        try:
            handle.flush()
            os.fsync(handle.fileno())
            handle.close()
            _publish(temporary, path)
        except OSError as exc:
            raise named_error(exc, path) from None
    except BaseException:
        with contextlib.suppress(OSError):
            handle.close()
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
