"""The figures README.md and docs/*.md print are docs/figures.json's, at their printed precision,
and the fast figures are what the commands behind them print today (tools/figures.py).

The slow groups (minutes, or timings) are re-run by ``make figures``; the last test warns which
were not re-run here and when they last were."""
import importlib.util
import json
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("docs_figures", ROOT / "tools" / "figures.py")
figures_tool = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(figures_tool)
FIGURES = json.loads((ROOT / "docs" / "figures.json").read_text())


@pytest.mark.parametrize("page", figures_tool.pages(), ids=lambda path: path.name)
def test_every_marked_figure_is_the_recorded_one(page):
    text = page.read_text()
    rendered, problems = figures_tool.render(text, FIGURES)
    assert not problems, problems
    assert rendered == text, "\n".join(figures_tool.differences(text, rendered))


def test_every_recorded_figure_is_printed_and_every_timing_is_dated():
    used = set()
    for page in figures_tool.pages():
        figures_tool.render(page.read_text(), FIGURES, used)
    groups = {entry["group"] for entry in FIGURES.values()}
    for name, entry in FIGURES.items():
        assert {"value", "command", "date", "group"} <= set(entry), name
        if entry.get("timing"):
            assert entry.get("machine"), f"{name}: a timing without its machine"
    for group in groups:
        timed = [n for n, e in FIGURES.items() if e["group"] == group and e.get("timing")
                 and not n.endswith(".measured")]
        shown = [n for n in timed if n in used]
        if shown:  # a page printing a timing prints when and where it was measured
            assert f"{group}.measured" in used, f"{shown} printed without {group}.measured"
    assert used, "no page marks a figure"


def test_the_check_reads_the_printed_precision_and_style():
    fmt = figures_tool.fmt
    assert fmt(0.469072, "0.4845") == "0.4691"
    assert fmt(0.3608, "+0.3454") == "+0.3608" and fmt(-0.0063, "+0.0042") == "-0.0063"
    assert fmt(-0.054, "−0.040") == "−0.054" and fmt(-1e-9, "-0.0012") == "+0.0000"
    assert fmt(9.1e-13, "1.4e-11") == "9.1e-13" and fmt(1.0e-4, "3.1e-5") == "1.0e-4"
    assert fmt(25220, "42,120") == "25,220" and fmt(1.357, "1.24×") == "1.36×"
    figures = {"a": {"value": 0.46907}, "b": {"value": "2026-11-27 on a machine"},
               "c": {"value": "x  1\ny  2"}, "p": {"value": 0.0521}}
    page = ("loss 0.4691<!--fig:a-->, p 0.052<!--fig:p:.2g-->, "
            "<!--fig:b-->2026-11-27 on a machine<!--/fig-->\n\n<!--fig:c-->\n```\nx  1\ny  2\n```\n")
    assert figures_tool.render(page, figures) == (page, [])
    for stale in (page.replace("0.4691", "0.4690"), page.replace("0.052", "0.05"),
                  page.replace("a machine<", "another<"), page.replace("y  2", "y  3")):
        rendered, problems = figures_tool.render(stale, figures)
        assert rendered == page and not problems
    _, problems = figures_tool.render("0.1<!--fig:missing-->", figures)
    assert problems and "missing" in problems[0]
    _, problems = figures_tool.render("no number <!--fig:a--> here", figures)
    assert problems  # a marker the check cannot read is an error, not a pass


@pytest.mark.parametrize("page", figures_tool.pages(), ids=lambda path: path.name)
def test_every_number_a_page_prints_is_marked_or_allowed(page):
    """A number in a sentence or table row is a marked figure, or it stands in a pattern of
    tools/figures.py's ALLOWED, which says why it is no result; so a new figure without its
    marker fails here."""
    found = figures_tool.unmarked_figures(page)
    assert not found, "\n".join(f"{page.name}:{number}: {token} in: {line[:160]}"
                                 for number, token, line in found)


def test_the_unmarked_check_catches_a_new_figure():
    unmarked = figures_tool.unmarked
    text = ("Test MSE 0.7804 on seed 7 at `-b 18`, within 0.01 of VW 9.11.9's (95% interval).\n"
            "\n| set | 1,234 | 0.5<!--fig:a--> |\n")
    assert [token for _, token, _ in unmarked(text)] == ["0.7804", "1,234"]
    assert unmarked("A figure 0.7804<!--fig:a--> and <!--fig:b-->3 of 4<!--/fig-->.\n") == []
    assert unmarked("<!--fig:c-->\n| 0.25 | 12 |\n\n```\nvw -b 18 --passes 20\n```\n") == []
    assert all(reason for _, reason in figures_tool.ALLOWED)
    assert all(reason for reason in figures_tool.ALLOWED_PAGES.values())


def _merged(fresh: dict) -> dict:
    """docs/figures.json with the fresh values of every figure that is not a timing."""
    merged = dict(FIGURES)
    for name, entry in fresh.items():
        if not entry.get("timing"):
            merged[name] = entry
    return merged


@pytest.fixture(scope="module")
def fast_figures(tmp_path_factory):
    fresh, missing = {}, []
    for group in figures_tool.GROUPS.values():
        if group.slow:
            continue
        if not figures_tool.available(group):
            missing.append(group.name)
            continue
        work = tmp_path_factory.mktemp(group.name)
        fresh.update(figures_tool.run_group(group, work, records=False))
    return fresh, missing


def test_the_fast_figures_are_what_their_commands_print_today(fast_figures):
    """A changed default, a changed kernel or a changed dataset moves a figure: the page is
    stale and this fails with the lines; ``make figures`` (or ``python tools/figures.py
    --fast``) brings the pages up to date."""
    fresh, missing = fast_figures
    assert fresh
    merged = _merged(fresh)
    stale = []
    for page in figures_tool.pages():
        text = page.read_text()
        rendered, _ = figures_tool.render(text, merged)
        if rendered != text:
            stale.append(f"{page.relative_to(ROOT)}:\n"
                         + "\n".join(figures_tool.differences(text, rendered)))
    assert not stale, "re-run with `make figures`:\n" + "\n".join(stale)
    if missing:
        warnings.warn(f"fast figure groups not re-run ({figures_tool.CROWD} is missing): "
                      + ", ".join(missing))


def test_which_figures_were_not_re_run_here():
    """Not a skip: the slow groups are listed, with the date they were last run, as a warning
    in the test summary."""
    slow = sorted({(entry["group"], entry["date"]) for entry in FIGURES.values()
                   if entry.get("slow")})
    if slow:
        warnings.warn("slow figures not re-run by the tests (make figures re-runs them): "
                      + "; ".join(f"{group} (last run {date})" for group, date in slow))
    assert all(name in figures_tool.GROUPS for name, _ in slow)
