"""Run VW-suite cases with pyvw-lite in-process and compare with VW 9.11.9's outputs."""
from __future__ import annotations

import io
import json
import math
import os
import re
import shutil
from pathlib import Path

SUITE = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "vw-suite"
NUMBER = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")


def suite_cases() -> dict[int, dict]:
    return {case["id"]: case for case in json.loads((SUITE / "tests.json").read_text())}


def prepare(workdir: Path) -> None:
    (workdir / "train-sets").mkdir(parents=True, exist_ok=True)
    (workdir / "models").mkdir(exist_ok=True)
    for item in (SUITE / "data").iterdir():
        shutil.copy(item, workdir / "train-sets" / item.name)


def run_case(case: dict, workdir: Path) -> tuple[str, str, int]:
    from pyvw_lite.workspace import Workspace
    out, err = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    os.chdir(workdir)
    try:
        code = Workspace(case["pip_args"], stdout=out, stderr=err).run()
    finally:
        os.chdir(cwd)
    return out.getvalue(), err.getvalue(), code


def compare_text(ours: str, theirs: str, tolerance: float) -> list[str]:
    """Differences between two outputs: numbers within ``tolerance``, everything else exact."""
    problems = []
    a_lines, b_lines = ours.splitlines(), theirs.splitlines()
    if len(a_lines) != len(b_lines):
        problems.append(f"{len(a_lines)} lines, expected {len(b_lines)}")
    for k, (a, b) in enumerate(zip(a_lines, b_lines)):
        if a == b:
            continue
        ta, tb = re.split(r"([\s:@^=]+)", a), re.split(r"([\s:@^=]+)", b)
        same = len(ta) == len(tb)
        if same:
            for x, y in zip(ta, tb):
                if x == y:
                    continue
                if NUMBER.match(x) and NUMBER.match(y) and math.isclose(
                        float(x), float(y), rel_tol=tolerance, abs_tol=tolerance):
                    continue
                if x.strip() == y.strip() == "" and NUMBER.match(x or "0"):
                    continue
                same = False
                break
        if not same:
            problems.append(f"line {k + 1}: got {a!r}, expected {b!r}")
    return problems
