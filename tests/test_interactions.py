"""Interaction terms as VW 9.11.9 builds them: wildcards, terms that repeat a namespace,
duplicates and their order (golden files from VW in golden/interactions/, made by
../shared/tools/run_vw.py with ``-b 14`` so that a wrong hash shows up as a wrong prediction)."""
from pathlib import Path

import numpy as np
import pytest

from conftest import run_workspace
from pyvw_lite.options import parse_argv
from pyvw_lite.reductions.interactions import setup

HERE = Path(__file__).parent / "golden" / "interactions"
CONFIGS = {
    "all3": "--interactions :::",
    "all3_leave": "--interactions ::: --leave_duplicate_interactions",
    "all2_leave": "-q :: --leave_duplicate_interactions",
    "a_wild2": "--interactions a::",
    "wild_a_wild": "--interactions :a:",
    "ab_wild": "--interactions ab:",
    "cubic_aba": "--cubic aba",
    "cubic_baa_leave": "--cubic baa --leave_duplicate_interactions",
    "mixed": "-q :: -q ab --cubic ::: --cubic aab",
    "twins": "--interactions ab: --interactions :ab",
    "size_order": "--interactions cba --interactions ab",
}


def predictions(path: Path) -> np.ndarray:
    return np.array([float(line.split()[0]) for line in path.read_text().splitlines()])


@pytest.mark.parametrize("name", list(CONFIGS))
def test_predictions_and_messages_match_vw(name, tmp_path):
    """Before, ':::' crossed abc where VW crosses cba, 'aba' was not sorted to 'aab', 'a::'
    crossed a with every ordered pair, and of 'ab:' and ':ab' the first was kept."""
    ours = tmp_path / "p.txt"
    out, err, code = run_workspace(["-d", str(HERE / "data.vw"), "-b", "14",
                                    *CONFIGS[name].split(), "-p", str(ours)])
    assert code == 0
    expected = predictions(HERE / f"vw.{name}.predict")
    np.testing.assert_allclose(predictions(ours), expected, atol=2e-3, rtol=1e-4)
    assert out == (HERE / f"vw.{name}.stdout").read_text()  # notes on duplicates and order
    vw_err = (HERE / f"vw.{name}.stderr").read_text().splitlines()
    creating = [line for line in vw_err if line.startswith("creating ")]
    assert err.splitlines()[:len(creating)] == creating


def test_wildcard_crossings_in_vw_order():
    """The audit of ':::' names VW's tuples in VW's order (cba, not abc)."""
    vw = [line for line in (HERE / "vw.all3.audit").read_text().splitlines()
          if line.startswith("\t")]
    out, _, _ = run_workspace(["-d", str(HERE / "three.vw"), "--interactions", ":::", "--audit"])
    ours = [line for line in out.splitlines() if line.startswith("\t")]

    def crossings(line):
        return [field.split(":")[0] for field in line.split("\t") if field.count("*") == 2]
    assert [crossings(line) for line in ours] == [crossings(line) for line in vw]


@pytest.mark.parametrize("given,terms", [
    ("--cubic aba", ["aab"]),
    ("--interactions a::", ["::a"]),
    ("--interactions ab: --interactions :ab", [":ab"]),
    ("--interactions cba --interactions ab", ["ab", "cba"]),
    ("-q ba -q ab --leave_duplicate_interactions", ["ab", "ba"]),
])
def test_terms_as_vw_parses_them(given, terms):
    assert setup(parse_argv(given.split())).terms == terms


@pytest.mark.parametrize("name,given", [("wide_all3", "--interactions :::"),
                                        ("wide_mixed", "-q :: --cubic a::")])
def test_many_namespaces_as_vw(name, given, tmp_path):
    """Lines of about 30 namespaces: ':::' crosses thousands of namespace triples per example,
    which the duplicate filter must handle without comparing every pair."""
    ours = tmp_path / "p.txt"
    _, _, code = run_workspace(["-d", str(HERE / "wide.vw"), *given.split(), "-p", str(ours),
                                "--quiet"])
    assert code == 0
    np.testing.assert_allclose(predictions(ours), predictions(HERE / f"vw.{name}.predict"),
                               atol=1e-4)
