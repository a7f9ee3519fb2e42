"""Entry point of ``pyvw-lite`` and ``python -m pyvw_lite``.

A first argument that names a subcommand goes to the typer app; anything else is a VW command
line, parsed from the shared option table.  A data file literally named like a subcommand
needs ``-d``.  Nothing here imports numba, so ``--help`` is instant.
"""
from __future__ import annotations

import gc
import os
import signal
import sys
import threading

from .._version import __version__
from ..options import OptionError, help_rows

SUBCOMMANDS = {
    "bench": "time pyvw-lite (and VW, when installed) on seeded rater-task data",
    "crowd": "true labels from crowd answers (online or batch EM, baselines)",
    "bench-crowd": "time crowd label extraction (and crowd-kit, when installed)",
    "bench-scale": "time sharded learning and batch EM on each executor",
    "convert": "crowd answers to rater-task VW lines, or predictions back to labels",
    "split": "seeded train/test split of lines",
    "evaluate": "0/1 loss with error bars, precision/recall, confusion matrix",
    "experiment": "run a configured rater-task experiment (configs/*.toml)",
    "compile": "fill the kernel cache ahead of time (--all, or modes)",
    "plot": "progressive loss curves of runs from their saved progress tables (PNG)",
    "datasets": "list the real crowd and rating sets, fetch them into the cache",
    "generate": "seeded synthetic data: ratings, crowd answers, rater-task lines",
}


def _help() -> str:
    lines = [f"pyvw-lite {__version__}: a Vowpal-Wabbit-style online learner for rater-task data",
             "",
             "Usage: pyvw-lite [VW options] [DATA]",
             "       pyvw-lite COMMAND [options]     (pyvw-lite COMMAND --help for details)",
             "",
             "Commands:"]
    lines += [f"  {name:<10} {text}" for name, text in SUBCOMMANDS.items()]
    group = None
    for row_group, flag, text in help_rows():
        if row_group != group:
            group = row_group
            lines += ["", f"{group}:"]
        if len(flag) > 34:  # a long flag gets its own line: the text column stays aligned
            lines += [f"  {flag}", f"  {'':<34} {text}"]
        else:
            lines.append(f"  {flag:<34} {text}")
    lines += ["", "Examples:",
              "  pyvw-lite -d train.vw --loss_function logistic -f model.pvw",
              "  pyvw-lite -d test.vw -t -i model.pvw -p predictions.txt",
              "  pyvw-lite -d train.vw -c --passes 5 -b 24 -q rt"]
    return "\n".join(lines) + "\n"


class Terminated(BaseException):
    """SIGTERM, raised where the program is, so that it stops as after Ctrl-C: temporary files
    removed, old outputs kept, one line (exit status 143, 128 + SIGTERM, as the shell reports
    a process SIGTERM ended)."""


def _terminated(signum, frame):
    raise Terminated()


def _fail(message: str, code: int = 1) -> int:
    sys.stderr.write(f"pyvw-lite: error: {message}\n")
    return code


def run_vw(argv: list[str]) -> int:
    from ..jit import skip_blas_probe
    skip_blas_probe()
    from ..io.model_io import ModelError
    from ..workspace import ParseError, Workspace
    try:
        workspace = Workspace(argv)
        return workspace.run()
    except (OptionError, ModelError, ParseError) as exc:
        return _fail(str(exc))
    except BrokenPipeError:
        raise  # the reader of our output went away: main() ends quietly
    except OSError as exc:  # missing input, unwritable output, ...
        if exc.filename:
            return _fail(f"{exc.filename}: {exc.strerror}")
        return _fail(exc.strerror or str(exc))
    except ValueError as exc:  # e.g. a truncated cache file
        return _fail(str(exc))
    except KeyboardInterrupt:
        return _fail("interrupted", 130)
    except MemoryError as exc:  # numpy names the size: -b 32 wants 64 GiB of weights
        if not str(exc):  # no size to tell: nothing says the weights were the cause
            return _fail("out of memory (an allocation failed)")
        return _fail(f"out of memory: {exc} (the weight table halves with each bit less of "
                     "-b)")


def _reader_went_away() -> int:
    """Our output's reader closed the pipe (``pyvw-lite ... | head``): stop without a message or
    a traceback at exit, with status 1 as click's commands do (a model may be left unwritten)."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return 1


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--quiet" in argv:  # nothing but errors: no word on compiling either
        os.environ["PYVW_LITE_QUIET_COMPILE"] = "1"
    previous = signal.signal(signal.SIGTERM, _terminated) \
        if threading.current_thread() is threading.main_thread() else None
    try:
        code = _dispatch(argv)
    except BrokenPipeError:
        return _reader_went_away()
    except MemoryError as exc:  # any command: one line, never a traceback
        return _fail(f"out of memory ({str(exc) or 'an allocation failed'})")
    except Terminated:
        return _fail("terminated", 128 + signal.SIGTERM)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    if "pyvw_lite.jit" in sys.modules:  # kernels were used: say how long compiling took
        sys.modules["pyvw_lite.jit"].report_compile()
    return code


def _dispatch(argv: list[str]) -> int:
    if argv and argv[0] in SUBCOMMANDS:
        from .app import app
        try:
            app(args=argv, prog_name="pyvw-lite", standalone_mode=True)
        except SystemExit as exc:
            return int(exc.code or 0)
        return 0
    if not argv and not sys.stdin.isatty():
        return run_vw(argv)  # `cat train.vw | pyvw-lite` learns from standard input, as vw does
    if not argv or argv[0] in ("-h", "--help") or "--help" in argv:
        sys.stdout.write(_help())
        return 0
    if "--version" in argv:
        sys.stdout.write(f"{__version__}\n")
        return 0
    near = _misspelt_command(argv[0])
    if near:
        return _fail(f"unknown command '{argv[0]}' (did you mean 'pyvw-lite {near}'?); "
                     "'pyvw-lite --help' lists the commands", 2)
    return run_vw(argv)


def _misspelt_command(word: str) -> str | None:
    """The subcommand ``word`` is a typo of, when it is no file and no option (``pyvw-lite
    evalute ...`` took 'evalute' for a data file)."""
    if word.startswith("-") or os.path.exists(word):
        return None
    import difflib
    near = difflib.get_close_matches(word, list(SUBCOMMANDS), n=1, cutoff=0.75)
    return near[0] if near else None


def entry() -> None:
    code = main()
    # Every output is written and closed by now.  Interpreter shutdown would still run full
    # garbage collections over the many objects numba and LLVM leave behind (0.15-0.25 s of a
    # million-line run here); frozen, they are left to the process exit.  Objects freed by
    # reference count (open files among them) still are.
    gc.freeze()
    sys.exit(code)
