"""Vowpal Wabbit as the peer: the PyPI ``vowpalwabbit`` package has no ``vw`` executable, so a
child Python runs its ``Workspace`` the way the command line would (``-d`` makes the workspace
run the driver; ``finish`` prints the summary)."""
from __future__ import annotations

import subprocess
import sys

VW_RUNNER = (
    "import sys\n"
    "from vowpalwabbit import Workspace\n"
    "workspace = Workspace(arg_list=sys.argv[1:])\n"
    "workspace.finish()\n"
)


def vw_available(python: str = sys.executable) -> bool:
    return subprocess.run([python, "-c", "import vowpalwabbit"], capture_output=True).returncode == 0


def vw_command(args: list[str]) -> list[str]:
    """The argv that runs VW with ``args`` (VW's own command-line options)."""
    return [sys.executable, "-c", VW_RUNNER, *args]
