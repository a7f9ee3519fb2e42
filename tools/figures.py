"""Every figure README.md and the pages under docs/ print, re-run by the command that produces it.

    python tools/figures.py                 # make figures: every group, then the pages
    python tools/figures.py --fast          # the fast groups only (what CI re-runs)
    python tools/figures.py --only seed_table bench
    python tools/figures.py --render        # the pages from docs/figures.json, nothing re-run
    python tools/figures.py --check         # exit 1 if a page differs from docs/figures.json
    python tools/figures.py --list          # the groups, fast or slow, and their commands

A run writes ``docs/figures.json``: figure id -> value, the command that produced it, the date,
its group, whether the group is slow, and for a timing the machine.  A page marks each figure
where it prints it, in one of three ways, all invisible on GitHub and in the docs site:

* a number followed by its marker: ``0.4691<!--fig:seed_table.linear.loss-->``; it is checked
  (and rendered) at the precision and in the style it is printed: decimals, a sign, thousands
  commas, an exponent, a trailing ``×`` or ``%``; or by Python's ``format`` with the spec after
  a colon, ``0.11<!--fig:seed_smem_web.k1.p:.2g-->`` (for a p-value, as the experiment prints);
* text between a marker and ``<!--/fig-->``: ``<!--fig:bench.measured-->2026-11-27 ...<!--/fig-->``;
* a marker alone on a line: the fenced block or the table that starts on the next line is the
  figure (a command's printed output).

Rendering rewrites the marked figures from the JSON and leaves every other character alone; the
check (tests/test_docs_figures.py) is that rendering changes nothing, and that every other number
in a sentence or table row stands in a pattern of ``ALLOWED`` (a version, a seed, a setting, ...;
each with its reason), so a figure printed without its marker fails.  Timings are recorded with
the machine and the date, and each page that prints one prints its group's ``measured`` figure.

Some groups need more than this package: the shared data (``../shared``), crowd-kit in a Python
of its own (``CROWDKIT_PYTHON=/path/to/python``), statsmodels and palmerpenguins (the sklearn
defaults); without them a group is skipped with the reason, and its figures stay as last run.
"""
from __future__ import annotations

import argparse
import datetime
import difflib
import json
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
FIGURES = ROOT / "docs" / "figures.json"
SHARED = ROOT.parent / "shared"
CROWD = SHARED / "datasets" / "crowd"
if (SHARED / "datasets").is_dir():  # the loader (pyvw_lite.datasets) copies from this mirror
    os.environ.setdefault("PYVW_LITE_DATASETS_MIRROR", str(SHARED / "datasets"))

# ---------------------------------------------------------------------------------------------
# markers


ID = r"[A-Za-z0-9_.\-]+"
NUMBER = r"[+\-−]?\d[\d,]*(?:\.\d+)?(?:e[+\-−]?\d+)?[×%]?"
SPEC = r"(?::([.,+\w]+))?"  # a format spec for Python's format(), e.g. .2g
INLINE = re.compile(rf"({NUMBER})<!--fig:({ID}){SPEC}-->")
PAIR = re.compile(rf"<!--fig:({ID})-->((?:(?!<!--).)*?)<!--/fig-->", re.S)
BLOCK = re.compile(rf"<!--fig:({ID})-->")  # alone on its line
ANY = re.compile(rf"<!--fig:({ID}){SPEC}-->")


# Folders of docs/ whose pages are generated from the code, not written: they print no figure.
GENERATED = ("reference",)


def pages() -> list[Path]:
    """README.md and every page under docs/, its folders included, but the generated ones."""
    docs = ROOT / "docs"
    return [ROOT / "README.md"] + sorted(
        path for path in docs.rglob("*.md")
        if path.relative_to(docs).parts[0] not in GENERATED)


def fmt(value: float, like: str) -> str:
    """``value`` printed the way ``like`` is: its decimals, sign, commas, exponent and unit."""
    match = re.fullmatch(r"([+\-−]?)(\d[\d,]*)(?:\.(\d+))?(?:e([+\-−]?)(\d+))?([×%]?)", like)
    if match is None:
        raise ValueError(f"not a number: {like!r}")
    sign, whole, frac, exp_sign, exp, unit = match.groups()
    decimals = len(frac or "")
    minus = "−" if "−" in like else "-"
    if exp is not None:
        mantissa, power = f"{abs(value):.{decimals}e}".split("e")
        power = int(power)
        body = f"{mantissa}e{(minus if '−' in (exp_sign or '') else '-') if power < 0 else ''}" \
               f"{abs(power)}"
        zero = float(mantissa) == 0
    else:
        body = f"{abs(value):,.{decimals}f}" if "," in whole else f"{abs(value):.{decimals}f}"
        zero = float(body.replace(",", "")) == 0
    if zero:
        lead = "+" if sign else ""
    elif value < 0:
        lead = minus
    else:
        lead = "+" if sign else ""
    return lead + body + unit


def render_blocks(text: str, lookup: Callable) -> tuple[str, int]:
    """Blocks: a marker alone on a line, then a fenced block (its body is the figure) or a table
    (its lines are)."""
    lines = text.split("\n")
    out, at, count = [], 0, 0
    while at < len(lines):
        line = lines[at]
        out.append(line)
        at += 1
        match = BLOCK.fullmatch(line.strip())
        if match is None or at >= len(lines):
            continue
        if lines[at].startswith("```"):
            end = next((i for i in range(at + 1, len(lines)) if lines[i].startswith("```")), None)
            if end is None:
                continue
            head, tail = [lines[at]], [lines[end]]
            body, after = lines[at + 1:end], end + 1
        elif lines[at].startswith("|"):
            end = at
            while end < len(lines) and lines[end].startswith("|"):
                end += 1
            head, tail, body, after = [], [], lines[at:end], end
        else:
            continue
        count += 1
        value = lookup(match.group(1))
        if value is not None:
            body = str(value).rstrip("\n").split("\n")
        out.extend(head + body + tail)
        at = after
    return "\n".join(out), count


def render(text: str, figures: dict, used: set | None = None) -> tuple[str, list[str]]:
    """``text`` with every marked figure rewritten from ``figures``; and the problems found
    (a marker whose id is not in ``figures``, a number marker on a text value)."""
    problems: list[str] = []

    def lookup(name: str):
        if used is not None:
            used.add(name)
        if name not in figures:
            problems.append(f"no figure {name!r} in docs/figures.json")
            return None
        return figures[name]["value"]

    def pair(match: re.Match) -> str:
        value = lookup(match.group(1))
        return match.group(0) if value is None else f"<!--fig:{match.group(1)}-->{value}<!--/fig-->"

    def inline(match: re.Match) -> str:
        value = lookup(match.group(2))
        if value is None:
            return match.group(0)
        if not isinstance(value, (int, float)):
            problems.append(f"{match.group(2)!r} is text; mark it <!--fig:id-->...<!--/fig-->")
            return match.group(0)
        spec = match.group(3)
        if spec:
            return format(value, spec) + f"<!--fig:{match.group(2)}:{spec}-->"
        return fmt(value, match.group(1)) + f"<!--fig:{match.group(2)}-->"

    text, blocks = render_blocks(text, lookup)
    text = PAIR.sub(pair, text)
    text = INLINE.sub(inline, text)
    marked = len(ANY.findall(text))
    found = blocks + len(PAIR.findall(text)) + len(INLINE.findall(text))
    if marked != found:
        problems.append(f"{marked - found} marker(s) with nothing the check can read before, "
                        "between or after them")
    return text, problems


def differences(old: str, new: str) -> list[str]:
    """The lines that rendering changed: the page's (-) and docs/figures.json's (+)."""
    return [line for line in difflib.unified_diff(old.splitlines(), new.splitlines(), "page",
                                                  "figures.json", n=0, lineterm="")
            if not line.startswith(("---", "+++"))]


# ---------------------------------------------------------------------------------------------
# numbers that are not under the tool

TOKEN = re.compile(r"(?<![\w.^/])(?<![A-Za-z]-)[-−+±]?\d(?:[\d,]*\d)?(?:\.\d+)*(?:e[-−+]?\d+)?"
                   r"(?!\w)")

# Numbers a page may print without a marker, because they are not results of a run.  Each entry
# is a pattern matched against the sentence or table row the number stands in (code spans, fenced
# blocks and marked figures taken out) and the reason it is not a figure.  A number is allowed
# if a match covers it.  Keep this short: a result belongs under a marker.
ALLOWED = [
    (r"VW \d+(?:\.\d+)*|\d+(?:\.\d+){2,}|Python ≥ \d+\.\d+", "a version"),
    (r"(?:[Ii]ssues?|erratum|SPEC §[A-Z]?[\d.]*|#)\s?\d+(?:(?:,| and) #?\d+)*|\[[A-Z]\d+\]",
     "the name of an issue, a SPEC section or check, or a VW issue"),
    (r"(?:\(|ICML |AISTATS |Hinton )(?:19|20)\d\d\)?", "the year of a cited paper"),
    (r"(?<![\w.])[-−±]?[01](?!\w|[.,]\d)", "0, 1, -1: labels, bounds, flags, exit codes"),
    (r"\d+/\d+(?: : \d+/\d+)?", "a fraction: the 0/1 loss, a 15/16 : 1/16 split"),
    (r"95%", "the level of a confidence interval"),
    (r"(?:within|more than|at least|above|below) (?:0\.0*[125]|1e-\d+)(?![\d])",
     "a round threshold of a criterion (within 0.01, more than 1e-5)"),
    (r"to 1e-\d+", "the tolerance a test asserts (to 1e-5)"),
    (r"\b(?:[Ss]eeds?|[Ss]et|shape) \d+(?:(?:, | and | to |–|-)\d+)*",
     "the seed that names a generated set"),
    (r"\d+-(?:bit|core|fold|line|pass|D)\b|rank-\d+|\branks? \d+(?: and \d+)?|\d+ (?:passes|pass|seeds|"
     r"sweeps)\b|\b[kKM] ?= ?\d+(?:\.\.\d+)?|2\^\d+",
     "a setting named in prose: bits, cores, folds, passes, rank, classes, a power of two"),
    (r"\b(?:1|2|4|8|16|32|64|128|256|512) (?:KB|MB|GB|MiB|GiB|Gb/s)\b|0700",
     "a size or mode the code sets (a power of two: a chunk, a table, a limit)"),
    (r"\d{1,3}(?:,000)+ (?:[\w-]+ ){0,2}(?:lines|ratings|tasks|answers|workers|examples|items)|"
     r"\d+ shards", "a round size a command is asked for (1,000,000 lines, 2,000 workers, 4 shards)"),
    (r"asks for [\d.]+×", "the target an issue sets"),
]
_ALLOWED = [(re.compile(pattern), reason) for pattern, reason in ALLOWED]
# Pages none of whose numbers is measured, with the reason.
ALLOWED_PAGES = {"security.md": "bounds the code enforces, sizes of its tests and names of formats "
                                "(SHA-256, Format 2); it reports no run",
                 "security-checks.md": "the same bounds, check by check, with their tests; it "
                                       "reports no run"}


def prose(text: str) -> list[tuple[int, str]]:
    """The page as the check reads it for unmarked numbers: each table row, and each paragraph
    joined into one line, with its first line's number; fenced blocks, marked blocks and
    tables, marked figures, code spans, link targets and comments blanked out."""
    blank = lambda match: " " * len(match.group(0))  # noqa: E731
    for pattern in (PAIR, INLINE, re.compile(r"<!--.*?-->", re.S)):
        text = pattern.sub(lambda m: m.group(0) if BLOCK.fullmatch(m.group(0)) else blank(m), text)
    lines, kept, at = text.split("\n"), [], 0
    while at < len(lines):
        line = lines[at]
        if line.lstrip().startswith("```"):
            end = next((i for i in range(at + 1, len(lines))
                        if lines[i].lstrip().startswith("```")), len(lines) - 1)
            kept.extend([""] * (end - at + 1))
            at = end + 1
            continue
        marked = BLOCK.fullmatch(line.strip())
        kept.append("" if marked else line)
        at += 1
        if marked:
            while at < len(lines) and lines[at].lstrip().startswith("|"):
                kept.append("")
                at += 1
    text = "\n".join(kept)
    for pattern in (re.compile(r"`[^`]*`"), re.compile(r"\]\([^)]*\)")):
        text = pattern.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
    blocks, start, paragraph = [], 0, []
    for number, line in enumerate(text.split("\n"), 1):
        if line.lstrip().startswith("|") or not line.strip():
            if paragraph:
                blocks.append((start, " ".join(paragraph)))
                paragraph = []
            if line.strip():
                blocks.append((number, line))
            continue
        if not paragraph:
            start = number
        paragraph.append(line.strip())
    if paragraph:
        blocks.append((start, " ".join(paragraph)))
    return blocks


def unmarked_figures(page: Path) -> list[tuple[int, str, str]]:
    """``unmarked`` for a page of README.md and docs/ (none on a page of ``ALLOWED_PAGES``)."""
    return [] if page.name in ALLOWED_PAGES else unmarked(page.read_text())


def unmarked(text: str) -> list[tuple[int, str, str]]:
    """The numbers a page prints with neither a marker nor a reason in ``ALLOWED``: (line
    number, number, the sentence or row)."""
    found = []
    for number, line in prose(text):
        covered = [m.span() for pattern, _ in _ALLOWED for m in pattern.finditer(line)]
        for token in TOKEN.finditer(line):
            if not any(a <= token.start() and token.end() <= b for a, b in covered):
                found.append((number, token.group(0), re.sub(r"\s+", " ", line).strip()))
    return found


# ---------------------------------------------------------------------------------------------
# running


def machine() -> str:
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()}-core {model}, {platform.system()}, Python {platform.python_version()}"


def environment() -> dict:
    """This tree's package first, whatever is installed."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "")
                                                        .split(os.pathsep) if p])
    return env


def run(args: list[str], cwd: Path = ROOT, timeout: float = 3600, stderr: bool = False) -> str:
    """A command's standard output (and its standard error after it with ``stderr``)."""
    done = subprocess.run(args, cwd=cwd, env=environment(), capture_output=True, text=True,
                          timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, args))} failed:\n{done.stderr[-3000:]}")
    return done.stdout + done.stderr if stderr else done.stdout


def pyvw(*args) -> list[str]:
    return [sys.executable, "-m", "pyvw_lite", *map(str, args)]


class Group:
    def __init__(self, name: str, function: Callable, slow: bool, command: str,
                 needs_shared: bool, timings: bool, needs: Callable | None = None):
        self.name, self.function, self.slow, self.command = name, function, slow, command
        self.needs_shared, self.timings, self.needs = needs_shared, timings, needs


GROUPS: dict[str, Group] = {}


def group(name: str, command: str, slow: bool = False, needs_shared: bool = False,
          timings: bool = False, needs: Callable | None = None):
    """``needs``: what else the group needs, a function that says what is missing (or None)."""
    def register(function):
        GROUPS[name] = Group(name, function, slow, command, needs_shared, timings, needs)
        return function
    return register


def missing(group_: Group) -> str | None:
    """Why the group cannot run here, or None."""
    if group_.needs_shared and not CROWD.is_dir():
        return f"{CROWD} is missing"
    return group_.needs() if group_.needs else None


def available(group_: Group) -> bool:
    return missing(group_) is None


def run_group(group_: Group, work: Path, records: bool = False) -> dict:
    """The group's figures as docs/figures.json entries."""
    started = time.perf_counter()
    values, timing = group_.function(work, records)
    today = datetime.date.today().isoformat()
    entries = {}
    for name, value in values.items():
        entry = {"value": value, "command": group_.command, "date": today,
                 "group": group_.name, "slow": group_.slow}
        if name in timing:
            entry["timing"] = True
            entry["machine"] = machine()
        entries[f"{group_.name}.{name}"] = entry
    if group_.timings:
        entries[f"{group_.name}.measured"] = {
            "value": f"{today} on a {machine()}", "command": group_.command, "date": today,
            "group": group_.name, "slow": group_.slow, "timing": True, "machine": machine()}
    print(f"{group_.name}: {len(entries)} figures in {time.perf_counter() - started:.0f} s",
          file=sys.stderr)
    return entries


# ---------------------------------------------------------------------------------------------
# the groups

SLUGS = {"best constant": "constant", "linear": "linear", "dyadic k=1": "k1", "dyadic k=2": "k2",
         "dyadic k=3": "k3", "dyadic k=8": "k8", "VW oaa lrq k=2": "vw", "VW lrq um8": "vw"}


def experiment(config: str, work: Path, records: bool, extra: list[str] = ()) -> tuple:
    """``pyvw-lite experiment CONFIG``: its printed table (a block with timings), and per
    model the test loss, interval, paired difference from the baseline, its interval, p-value
    and errors against the baseline (worse minus better)."""
    name = Path(config).stem
    out = run(pyvw("experiment", config, "--workdir", work / name, *extra))
    table = "\n".join(line for line in out.splitlines()
                      if line.strip() and not line.startswith(("record:", "plot:", "pyvw-lite:")))
    record = json.loads((work / name / "results.json").read_text())
    values = {"output": table}
    for result in record["results"]:
        slug = SLUGS[result["name"]]
        values.update({f"{slug}.loss": result["loss"], f"{slug}.low": result["low"],
                       f"{slug}.high": result["high"]})
        versus = result.get("versus")
        if versus and result["name"] != record["baseline"]:
            values.update({f"{slug}.diff": versus["difference"], f"{slug}.diff_low": versus["low"],
                           f"{slug}.diff_high": versus["high"], f"{slug}.p": versus["p_value"]})
            if "worse" in versus:
                values[f"{slug}.more_errors"] = versus["worse"] - versus["better"]
    values["dyadic_significant"] = sum(  # dyadic models whose paired interval excludes 0
        1 for r in record["results"] if r["name"].startswith("dyadic") and r.get("versus")
        and (r["versus"]["low"] > 0 or r["versus"]["high"] < 0))
    values["test_lines"] = record["split"]["test_lines"]
    values["classes"] = len(record["labels"])
    if records:
        folder = ROOT / "docs" / "seed_experiment"
        if (folder / f"{name}.json").exists():
            shutil.copy(work / name / "results.json", folder / f"{name}.json")
            if (work / name / "results.png").exists():
                shutil.copy(work / name / "results.png", folder / f"{name}.png")
    return values, {"output"}


@group("seed_table", "pyvw-lite experiment configs/seed_table.toml", timings=True)
def seed_table(work: Path, records: bool):
    values, timing = experiment("configs/seed_table.toml", work, records)
    import csv
    with open(ROOT / "datasets" / "act_MS" / "answers.csv", newline="") as handle:
        values["raters"] = len({row["worker"] for row in csv.DictReader(handle)})
    return values, timing


@group("seed_smem_web", "pyvw-lite experiment configs/seed_smem_web.toml", needs_shared=True)
def seed_smem_web(work: Path, records: bool):
    values, timing = experiment("configs/seed_smem_web.toml", work, records,
                                ["--data-root", str(CROWD)])
    # the manual commands of docs/workflow.md on the same answers, against the config's figure
    answers = CROWD / "smem_web" / "answers.csv"
    folder = work / "smem_web_manual"
    folder.mkdir()
    for args in (["convert", answers, "-o", "all.vw", "--map", "labels.json", "--shuffle", "0"],
                 ["split", "all.vw", "--train", "train.vw", "--test", "test.vw"],
                 ["-d", "train.vw", "--sft", "5", "--loss_function", "hinge", "--passes", "5",
                  "-c", "-f", "m.pvw", "--quiet"],
                 ["-d", "test.vw", "-t", "-i", "m.pvw", "-p", "p.txt", "--quiet"]):
        run(pyvw(*args), cwd=folder)
    out = run(pyvw("evaluate", "-p", "p.txt", "-d", "test.vw"), cwd=folder)
    values["manual.loss"] = float(re.search(r"0/1 loss\D*?([0-9.]+)", out).group(1))
    return values, timing


@group("seed_s4_relevance", "pyvw-lite experiment configs/seed_s4_relevance.toml",
       needs_shared=True)
def seed_s4_relevance(work: Path, records: bool):
    return experiment("configs/seed_s4_relevance.toml", work, records, ["--data-root", str(CROWD)])


@group("bluebirds_vw", "pyvw-lite and VW 9.11.9 (vowpalwabbit), each: -d datasets/bluebirds/"
       "bluebirds.vw --loss_function logistic -b 20 --passes P -c -k --holdout_off -p p.txt; "
       "|pyvw-lite - VW| over every prediction of every pass")
def bluebirds_vw(work: Path, records: bool):
    """Logistic predictions against VW's: one pass and ten cached passes on bluebirds."""
    data = ROOT / "datasets" / "bluebirds" / "bluebirds.vw"
    peer = ("import sys\nfrom vowpalwabbit import Workspace\n"
            "Workspace(arg_list=sys.argv[1:]).finish()\n")
    values = {}
    for passes in (1, 10):
        common = ["-d", str(data), "--loss_function", "logistic", "-b", "20", "--passes",
                  str(passes), "-c", "-k", "--holdout_off", "--quiet"]
        run(pyvw(*common, "--cache_file", work / f"ours{passes}.cache", "-p",
                 work / f"ours{passes}.txt"))
        run([sys.executable, "-c", peer, *common, "--cache_file", str(work / f"vw{passes}.cache"),
             "-p", str(work / f"vw{passes}.txt")])
        ours = [float(line.split()[0]) for line in open(work / f"ours{passes}.txt")]
        theirs = [float(line.split()[0]) for line in open(work / f"vw{passes}.txt")]
        if len(ours) != len(theirs):
            raise RuntimeError(f"{len(ours)} predictions against VW's {len(theirs)}")
        gaps = [abs(a - b) for a, b in zip(ours, theirs)]
        values[f"passes{passes}.max_diff"] = max(gaps)
        values[f"passes{passes}.above_1e-5"] = sum(gap > 1e-5 + 1e-12 for gap in gaps)
        values[f"passes{passes}.predictions"] = len(gaps)
    return values, set()


@group("soft_labels", "pyvw-lite and VW 9.11.9, each: -d soft.vw --loss_function logistic "
       "(soft.vw: pyvw_lite.synthetic.rater_task(3000, 50, 400, classes=2, seed=7) as binary "
       "lines, tests/conftest.py's rater_task_file, with each -1 written as 0); the average loss")
def soft_labels(work: Path, records: bool):
    """0/1 data under the default --logistic_min -1: a 0 is a soft label (q = 1/2)."""
    code = ("import re, sys\nfrom pyvw_lite.synthetic import rater_task, write_vw\n"
            "write_vw(sys.argv[1], rater_task(n_ratings=3000, n_raters=50, n_tasks=400, "
            "classes=2, seed=7), binary=True)\n"
            "text = open(sys.argv[1]).read()\n"
            "open(sys.argv[1], 'w').write(re.sub(r'(?m)^-1 ', '0 ', text))\n")
    data = work / "soft.vw"
    run([sys.executable, "-c", code, str(data)])
    peer = ("import sys\nfrom vowpalwabbit import Workspace\n"
            "Workspace(arg_list=sys.argv[1:]).finish()\n")
    common = ["-d", str(data), "--loss_function", "logistic"]
    values = {"ours": average_loss(run(pyvw(*common), stderr=True)),
              "vw": average_loss(run([sys.executable, "-c", peer, *common], stderr=True)),
              "lines": sum(1 for _ in open(data))}
    return values, set()


@group("sklearn", "python tests/accuracy/sklearn_raw.py (VWClassifier()/VWRegressor() against "
       "LogisticRegression()/LinearRegression() on raw features, the same shuffled 3 folds; the "
       "log loss against StandardScaler() + LogisticRegression())")
def sklearn_defaults(work: Path, records: bool):
    accuracy, log_loss = run([sys.executable, str(ROOT / "tests" / "accuracy" /
                                                  "sklearn_raw.py")]).strip().split("\n\n")
    return {"raw_table": accuracy.strip(), "log_loss_table": log_loss.strip()}, set()


@group("sklearn_proba", "cd tests/accuracy && python sklearn_proba.py (predict_proba "
       "candidates on sklearn_defaults.py's classification sets, with statsmodels and "
       "palmerpenguins installed)", slow=True, timings=True,
       needs=lambda: needs_packaged_sets())
def sklearn_proba(work: Path, records: bool):
    out = run([sys.executable, "sklearn_proba.py"], cwd=ROOT / "tests" / "accuracy",
              timeout=7200).strip().splitlines()
    shipped = next(line for line in out if "(shipped)" in line)
    return {"sets": int(out[0].split()[0]), "table": "\n".join(out[1:]),
            "shipped_fit_time": float(shipped.split("|")[-2].strip().rstrip("x"))}, \
        {"table", "shipped_fit_time"}  # the fit-time column is a timing


def needs_packaged_sets() -> str | None:
    done = subprocess.run([sys.executable, "-c", "import statsmodels, palmerpenguins"],
                          env=environment(), capture_output=True)
    return None if done.returncode == 0 else "statsmodels and palmerpenguins are not installed"


SKLEARN_CANDIDATES = {
    "clf": (("VW's raw behaviour: no scaling, no shuffle",
             {"scale_features": False, "shuffle": False}),
            ("shuffle only", {"scale_features": False}), ("scale only", {"shuffle": False}),
            ("**scale and shuffle (shipped)**", {}), ("`reduction=\"oaa\"`", {"reduction": "oaa"}),
            ("`passes=20`", {"passes": 20}), ("`learning_rate=2`", {"learning_rate": 2.0})),
    "reg": (("no feature scaling (rows shuffled, target scaled)", {"scale_features": False}),
            ("**scale and shuffle (shipped)**", {}), ("`passes=20`", {"passes": 20}),
            ("`learning_rate=2`", {"learning_rate": 2.0}))}


@group("sklearn_defaults", "python tests/accuracy/sklearn_defaults.py clf|reg CANDIDATE, for "
       "each candidate of the two tables (with statsmodels and palmerpenguins installed)",
       slow=True, needs=needs_packaged_sets)
def sklearn_candidates(work: Path, records: bool):
    values = {}
    for kind, candidates in SKLEARN_CANDIDATES.items():
        head = ("| VWClassifier candidate | mean gap | median | sets within 0.03 | worst |"
                if kind == "clf" else
                "| VWRegressor candidate | mean gap (R²) | median | sets within 0.03 | worst |")
        table = [head, "|---|---|---|---|---|"]
        for label, params in candidates:
            grid = json.dumps({k: [v] for k, v in params.items()})
            row = json.loads(run([sys.executable, str(ROOT / "tests" / "accuracy" /
                                                      "sklearn_defaults.py"), kind, grid],
                                 timeout=7200).strip().splitlines()[-1])
            key = f"{kind}.{'shipped' if not params else '_'.join(f'{k}' for k in params)}"
            if params.get("scale_features") is False and "shuffle" in params:
                key = f"{kind}.raw"
            values.update({f"{key}.mean": row["mean_gap"], f"{key}.median": row["median_gap"],
                           f"{key}.within": row["within_0.03"]})
            values[f"{kind}.sets"] = row["sets"]
            if not params:  # where the shipped defaults fall short (docs/python.md)
                worst = {"clf": "modechoice", "reg": "macrodata"}[kind]
                values[f"{kind}.{worst}_below"] = -row["gaps"][worst]
            cells = [signed(row["mean_gap"], 4), signed(row["median_gap"], 4),
                     str(row["within_0.03"]), f"{row['worst'][0]} {signed(row['worst'][1], 4)}"]
            if not params:
                cells = [f"**{c}**" for c in cells]
            table.append(f"| {label} | " + " | ".join(cells) + " |")
        values[f"{kind}.table"] = "\n".join(table)
    values["clf.rate2_gain"] = values["clf.learning_rate.mean"] - values["clf.shipped.mean"]
    values["reg.rate2_loss"] = values["reg.shipped.mean"] - values["reg.learning_rate.mean"]
    code = ("import warnings\nwarnings.simplefilter('ignore')\n"
            "from sklearn.datasets import load_iris\n"
            "from sklearn.model_selection import StratifiedKFold, cross_val_score\n"
            "from pyvw_lite.api.sklearn import VWClassifier\nX, y = load_iris(return_X_y=True)\n"
            "print(cross_val_score(VWClassifier(scale_features=False), X, y, cv=StratifiedKFold("
            "3, shuffle=True, random_state=0)).mean())\n")
    values["iris_unscaled"] = float(run([sys.executable, "-c", code]).split()[-1])
    return values, set()


@group("multiclass_vw", "pyvw-lite and VW 9.11.9, each: -d rt5_20k.vw (tests/golden/multiclass, "
       "gunzipped) --oaa 5 | --ect 5 -b 24 -p p.txt [--vw_layout]; the share of equal predictions")
def multiclass_vw(work: Path, records: bool):
    import gzip
    data = work / "rt5.vw"
    data.write_bytes(gzip.decompress(
        (ROOT / "tests" / "golden" / "multiclass" / "rt5_20k.vw.gz").read_bytes()))
    peer = ("import sys\nfrom vowpalwabbit import Workspace\n"
            "Workspace(arg_list=sys.argv[1:]).finish()\n")
    values = {}
    for reduction in ("oaa", "ect"):
        common = ["-d", str(data), f"--{reduction}", "5", "-b", "24", "--quiet", "-p"]
        run([sys.executable, "-c", peer, *common, str(work / "vw.txt")])
        theirs = (work / "vw.txt").read_text().split()
        for name, extra in (("default", []), ("vw_layout", ["--vw_layout"])):
            run(pyvw(*common, work / "ours.txt", *extra))
            ours = (work / "ours.txt").read_text().split()
            if len(ours) != len(theirs):
                raise RuntimeError(f"{len(ours)} predictions against VW's {len(theirs)}")
            values[f"{reduction}.{name}.equal_percent"] = 100 * sum(
                a == b for a, b in zip(ours, theirs)) / len(ours)
        values["lines"] = len(theirs)
    return values, set()


@group("defaults", "python -c 'from pyvw_lite.crowd.defaults import *; ...; "
       "pyvw_lite.reductions.dyad.dyad_settings(options_from(ARGS))' (the crowd and EM "
       "defaults, and the dyadic learner's settings under squared, quantile and --sft)")
def defaults(work: Path, records: bool):
    """Defaults the pages state, read from the code (a changed default moves the page)."""
    code = ("import json\n"
            "from pyvw_lite.crowd.defaults import AUTO_DEFAULTS, DEFAULTS, EBCC_DEFAULTS\n"
            "from pyvw_lite.options import options_from\n"
            "from pyvw_lite.learners.gd import L2_REFERENCE_USES\n"
            "from pyvw_lite.reductions import dyad\n"
            "values = {**{f'crowd.{k}': v for k, v in AUTO_DEFAULTS.items()},\n"
            "          **{f'ebcc.{k}': v for k, v in EBCC_DEFAULTS.items()},\n"
            "          **{f'em.{k}': v for k, v in DEFAULTS.items()}}\n"
            "for name, args in (('dyad', '--dyad um --rank 8'),\n"
            "                   ('dyad_quantile', '--dyad um --rank 8 --loss_function quantile'),\n"
            "                   ('dyad_sft', '--sft 5 --dyad rt --rank 2'),\n"
            "                   ('dyad_shifted', '--dyad um --rank 8 --dyad_shifted')):\n"
            "    for k, v in dyad.dyad_settings(options_from(args)).items():\n"
            "        values[f'{name}.{k}'] = v\n"
            "values['dyad.reference_uses'] = L2_REFERENCE_USES\n"
            "values['dyad.count_cap'] = dyad.COUNT_CAP\n"
            "print(json.dumps(values))\n")
    values = json.loads(run([sys.executable, "-c", code]).strip().splitlines()[-1])
    return {k: v for k, v in values.items() if isinstance(v, (int, float))
            and not isinstance(v, bool)}, set()


@group("dyadic_ratings", "python -c 'from pyvw_lite.synthetic import *; write_ratings(\"ratings.vw\", "
       "*user_item_ratings(60_000, 900, 1_600, seed=5))'; pyvw-lite experiment "
       "configs/dyadic_ratings.toml --data-root .")
def dyadic_ratings(work: Path, records: bool):
    code = ("import sys\nfrom pyvw_lite.synthetic import user_item_ratings, write_ratings\n"
            "data = user_item_ratings(60_000, 900, 1_600, seed=5)\n"
            "write_ratings(sys.argv[1], *data)\nprint(data[0].size)\n")
    ratings = int(run([sys.executable, "-c", code, str(work / "ratings.vw")]).split()[-1])
    values, timing = experiment(str(ROOT / "configs" / "dyadic_ratings.toml"), work, False,
                                ["--data-root", str(work)])
    values["ratings"] = ratings
    return values, timing


@group("dyadic_crowd", "python tests/accuracy/dyadic_crowd.py -b B (B = 18, 22, 24)", slow=True,
       needs_shared=True)
def dyadic_crowd(work: Path, records: bool):
    values, gaps = {}, []
    for bits in (18, 22, 24):
        out = run([sys.executable, str(ROOT / "tests" / "accuracy" / "dyadic_crowd.py"), "-b",
                   str(bits)], cwd=ROOT / "tests" / "accuracy")
        for line in out.splitlines():
            fields = line.split()
            if fields and fields[0] in ("s4_Relevance", "smem_web"):
                linear, dyad, rate1, peer = map(float, fields[2:6])
                key = f"{fields[0]}.b{bits}"
                values.update({f"{key}.sft": linear, f"{key}.dyad": dyad,
                               f"{key}.dyad_rate1": rate1, f"{key}.vw": peer})
                gaps.append(dyad - linear)
    values["dyad_minus_linear.min"], values["dyad_minus_linear.max"] = min(gaps), max(gaps)
    return values, set()


@group("sft_crowd", "python tests/accuracy/multiclass_crowd.py", slow=True, needs_shared=True)
def sft_crowd(work: Path, records: bool):
    out = run([sys.executable, str(ROOT / "tests" / "accuracy" / "multiclass_crowd.py")],
              cwd=ROOT / "tests" / "accuracy")
    rows = [line.split() for line in out.splitlines()[1:] if line.strip()]
    mean = rows.pop()
    assert mean[0] == "mean", mean
    return {"sets": len(rows), "mean.sft": float(mean[1]), "mean.vw_ect": float(mean[2]),
            "mean.vw_oaa": float(mean[3])}, set()


@group("crowd_lodo", "python tests/accuracy/crowd_lodo.py --from_json (the fits: without "
       "--from_json)", slow=True, needs_shared=True)
def crowd_lodo(work: Path, records: bool):
    """The tables from the committed record, over the 21 sets the default was chosen on."""
    record = ROOT / "tests" / "accuracy" / "crowd_lodo.json"
    out = subprocess.run([sys.executable, str(ROOT / "tests" / "accuracy" / "crowd_lodo.py"),
                          "--json", str(record), "--from_json"], cwd=ROOT, env=environment(),
                         capture_output=True, text=True, timeout=7200)
    if out.returncode not in (0, 1):  # 1: a criterion of issue 38 failed, and the table says so
        raise RuntimeError(out.stderr[-3000:])
    table = out.stdout.split("\n\n")[0].strip()
    table = "\n".join(line for line in table.splitlines() if line.startswith("|"))
    data = json.loads(record.read_text())
    rows, summary = data["rows"], data["summary"]
    values = {"table": table, "lodo_mean": summary["lodo_mean"], "failed": out.returncode}
    for method in ("majority", "ebcc", "bcc", "one_coin", "em"):
        values[f"mean.{method}"] = sum(r["accuracy"][method] for r in rows.values()) / len(rows)
    below = [r["accuracy"]["majority"] - r["accuracy"]["bcc"] for r in rows.values()
             if r["density"] >= 20]
    values["dense.bcc_above_majority"] = sum(b < 0 for b in below)
    values["dense.bcc_level_with_majority"] = sum(b == 0 for b in below)
    values["dense.bcc_below_majority"] = sum(b > 0 for b in below)
    values["dense.bcc_worst_below_majority"] = max(below)
    values["default_worst_below_majority"] = max(below + [0.0])
    for method in ("bcc", "ebcc"):  # the guarded rules: majority vote below density 20
        values[f"rule.{method}"] = sum(r["accuracy"]["majority" if r["density"] < 20 else method]
                                       for r in rows.values()) / len(rows)
    values["rule.bcc_lead"] = values["rule.bcc"] - values["rule.ebcc"]
    web = rows["smem_web"]["accuracy"]
    values["smem_web.ebcc_below_majority"] = web["majority"] - web["ebcc"]
    values["smem_web.bcc_below_majority"] = web["majority"] - web["bcc"]
    values["sets"] = len(rows)
    sparse = {n: r for n, r in rows.items() if r["density"] < 20}
    dense = [r["density"] for r in rows.values() if r["density"] >= 20]
    values["sparse_sets"] = len(sparse)
    values.update({f"density.{n}": r["density"] for n, r in sparse.items()})
    below = [r["accuracy"]["majority"] - r["accuracy"][m] for r in sparse.values()
             for m in ("bcc", "ebcc", "em", "one_coin")]
    values["sparse.below_majority.min"] = min(below)
    values["sparse.below_majority.max"] = max(below)
    values["dense.density_min"] = min(dense)
    values["separating.low"] = max(r["density"] for r in sparse.values()) + 1
    values["chosen_on_all"] = summary["chosen_on_all"]
    values["folds_choosing_it"] = sum(choice == summary["chosen_on_all"]
                                      for choice, _ in summary["lodo"].values())
    return values, set()


@group("crowd_ties", "python tests/accuracy/crowd_ties.py", slow=True, needs_shared=True)
def crowd_ties(work: Path, records: bool):
    record = (ROOT / "tests" / "accuracy" / "crowd_ties.json") if records else work / "ties.json"
    out = run([sys.executable, str(ROOT / "tests" / "accuracy" / "crowd_ties.py"), "--json",
               str(record)])
    tables = [block for block in out.split("\n\n") if block.startswith("|")]
    rows = json.loads(record.read_text())
    cifar = rows["cifar10n"]
    values = {"table": tables[1].strip(), "sets": len(rows), "cifar10n.ties": cifar["ties"],
              "cifar10n.tasks": cifar["tasks"], "cifar10n.lowest": cifar["lowest"],
              "cifar10n.confusion": cifar["confusion"],
              "cifar10n.lowest_on_ties": cifar["lowest_on_ties"],
              "cifar10n.confusion_on_ties": cifar["confusion_on_ties"],
              "worst_loss": max(r["lowest"] - r["confusion"] for r in rows.values())}
    return values, set()


@group("crowd_diagnosis", "python tests/accuracy/crowd_diagnosis.py", slow=True,
       needs_shared=True)
def crowd_diagnosis(work: Path, records: bool):
    record = (ROOT / "tests" / "accuracy" / "crowd_diagnosis.json") if records \
        else work / "diagnosis.json"
    markdown = (ROOT / "tests" / "accuracy" / "crowd_diagnosis.md") if records \
        else work / "diagnosis.md"
    out = run([sys.executable, str(ROOT / "tests" / "accuracy" / "crowd_diagnosis.py"),
               "--json", str(record), "--out", str(markdown)])
    table = out.rstrip().split("### Summary")[-1].strip()
    values = {"summary": table}
    for name, r in json.loads(record.read_text()).items():
        for key in ("truth_share", "answer_share", "vote_share", "bcc_prior"):
            values[f"{name}.{key}"] = r[key]
        values[f"{name}.flips_wrong"] = r["flips_wrong"]
        values[f"{name}.flips_right"] = r["flips_right"]
    return values, set()


@group("crowd_loso", "python tests/accuracy/crowd_loso.py --from_json (the fits: without "
       "--from_json)", slow=True, needs_shared=True)
def crowd_loso(work: Path, records: bool):
    """The tables from the committed record: the fits take an hour on a loaded machine."""
    record = ROOT / "tests" / "accuracy" / "crowd_loso.json"
    out = run([sys.executable, str(ROOT / "tests" / "accuracy" / "crowd_loso.py"), "--json",
               str(record), "--from_json"])
    tables = [block.strip() for block in out.split("\n\n") if block.startswith("|")]
    values = {"sets": tables[0], "sources": tables[1], "loso": tables[2], "verdicts": tables[3]}
    values["loso_mean"] = float(re.search(r"\*\*LOSO mean\*\* \| \| \*\*([0-9.]+)\*\*",
                                          tables[2]).group(1))
    for line in tables[3].splitlines()[2:]:  # each fixed candidate's mean and worst source
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        slug = re.sub(r"[^a-z0-9]+", "_", cells[0]).strip("_")
        values[f"{slug}.mean"], values[f"{slug}.worst"] = float(cells[1]), float(cells[2])
    rows = json.loads(record.read_text())  # the five-model vote's cost: its members' fits
    members = ("majority", "bcc", "ebcc", "glad", "shrunk")
    values["vote5_seconds_max"] = max(sum(r["seconds"][m] for m in members) for r in rows.values())
    return values, set()


@group("crowd_worlds", "python tests/accuracy/crowd_worlds.py", slow=True, needs_shared=True)
def crowd_worlds(work: Path, records: bool):
    record = (ROOT / "tests" / "accuracy" / "crowd_worlds.json") if records else work / "w.json"
    out = run([sys.executable, str(ROOT / "tests" / "accuracy" / "crowd_worlds.py"), "--json",
               str(record)])
    tables = [part.strip() for part in out.split("\n\n") if part.lstrip().startswith("|")]
    rows = json.loads(record.read_text())["worlds"]

    def mean(values) -> float:
        values = list(values)
        return sum(values) / len(values)

    def kind(name: str) -> list[dict]:
        return [r for r in rows if r["kind"] == name]

    sent = [r for r in rows if r["default"] == "majority"]
    kept = [r for r in rows if r["default"] != "majority"]
    gaps = [r["accuracy"]["default"] - r["accuracy"]["majority"] for r in rows]
    below = [(g, r) for g, r in zip(gaps, rows) if g < -0.01]
    values = {"own_table": tables[0], "gen_table": tables[1], "worlds": len(rows),
              "sent": len(sent), "sent.density_min": min(r["density"] for r in sent),
              "sent.density_max": max(r["density"] for r in sent), "kept": len(kept),
              "kept.density_min": min(r["density"] for r in kept),
              "below": len(below), "below.correlated": sum(r["kind"] == "correlated"
                                                             for _, r in below),
              "below.worst": min(g for g, _ in below), "below.least": max(g for g, _ in below),
              "correlated.ebcc": mean(r["accuracy"]["ebcc"] for r in kind("correlated")),
              "hard.one_coin": mean(r["accuracy"]["one_coin"] for r in kind("gen: hard items")),
              "hard.default": mean(r["accuracy"]["default"] for r in kind("gen: hard items"))}
    for name, key in (("gen: one answer each", "one"), ("gen: sparse workers", "sparse"),
                      ("gen: a few answers each", "few")):
        values[f"bcc_gain.{key}"] = mean(r["accuracy"]["bcc"] - r["accuracy"]["majority"]
                                         for r in kind(name))
        values[f"density.{key}.min"] = min(r["density"] for r in kind(name))
        values[f"density.{key}.max"] = max(r["density"] for r in kind(name))
    return values, set()


@group("crowd_duplicates", "pyvw-lite crowd ../shared/datasets/crowd/s4_Relevance/answers.csv "
       "--batch --duplicates P [--method ebcc] --truth .../truth.csv -p labels.csv", slow=True,
       needs_shared=True)
def crowd_duplicates(work: Path, records: bool):
    folder = CROWD / "s4_Relevance"
    values = {}
    for policy in ("keep", "first", "last", "vote"):
        for name, extra in (("default", []), ("ebcc", ["--method", "ebcc"])):
            out = run(pyvw("crowd", folder / "answers.csv", "--batch", "--duplicates", policy,
                           *extra, "--truth", folder / "truth.csv", "-p", work / "labels.csv"), stderr=True)
            values[f"{policy}.{name}"] = float(
                re.search(r"^accuracy on \d+ truth items = ([0-9.]+)", out, re.M).group(1))
    import csv
    repeating = 0
    for answers in sorted(CROWD.glob("*/answers.csv")):
        with open(answers, newline="") as handle:
            pairs = [(row["task"], row["worker"]) for row in csv.DictReader(handle)]
        repeats = len(pairs) - len(set(pairs))
        repeating += repeats > 0
        values[f"repeats.{answers.parent.name}"] = repeats
    values["repeating_sets"] = repeating
    return values, set()


@group("active", "python tests/accuracy/active_rater_task.py --curve d_jn-product", slow=True,
       needs_shared=True)
def active(work: Path, records: bool):
    """The script's two tables as markdown; a cell within 0.005 of the passive test loss is
    bold, and per set the smallest share of labels that gets there."""
    out = run([sys.executable, str(ROOT / "tests" / "accuracy" / "active_rater_task.py"),
               "--curve", "d_jn-product"], cwd=ROOT / "tests" / "accuracy")
    head, curve = out.split("\nquery curve")
    table = ["| dataset | train lines | passive | mellowness 1e-3 | 1e-4 | 1e-5 | 1e-6 |",
             "|---|---|---|---|---|---|---|"]
    values = {}
    for line in head.splitlines()[2:]:
        name, n, *rest = line.split()
        cells = [(int(rest[i]), float(rest[i + 2])) for i in range(0, len(rest), 3)]
        passive = cells[0][1]
        shown, shares = [], []
        for at, (used, loss) in enumerate(cells):
            text = f"{used:,} / {loss:.4f}"
            if at and loss <= passive + 0.005:
                text = f"{used:,} / **{loss:.4f}**"
                shares.append(100 * used / int(n))
            shown.append(text)
        table.append(f"| {name} | {int(n):,} | " + " | ".join(shown) + " |")
        if shares:
            values[f"{name}.labels_percent"] = min(shares)
    rows = ["| examples seen | labels asked | active test loss | passive test loss |",
            "|---|---|---|---|"]
    for line in curve.splitlines()[2:]:
        if line.strip():
            seen, asked, active_loss, passive_loss = line.split()
            rows.append(f"| {int(seen):,} | {int(asked):,} | {active_loss} | {passive_loss} |")
    values["table"], values["curve"] = "\n".join(table), "\n".join(rows)
    return values, set()


@group("active_multiclass", "pyvw-lite convert ../shared/datasets/crowd/smem_web/answers.csv "
       "-o all.vw --map labels.json --shuffle 0; pyvw-lite split all.vw --train train.vw --test "
       "test.vw --test_fraction 0.25; pyvw-lite -d train.vw --sft 5 [--dyad rt --rank 2] "
       "[--active --simulation --mellowness M] -f m.pvw; -t on test.vw; pyvw-lite evaluate",
       slow=True, needs_shared=True)
def active_multiclass(work: Path, records: bool):
    run(pyvw("convert", CROWD / "smem_web" / "answers.csv", "-o", "all.vw", "--map",
             "labels.json", "--shuffle", "0"), cwd=work)
    run(pyvw("split", "all.vw", "--train", "train.vw", "--test", "test.vw", "--test_fraction",
             "0.25"), cwd=work)
    train_lines = sum(1 for _ in open(work / "train.vw"))
    values = {}
    for learner, extra in (("linear", []), ("dyad", ["--dyad", "rt", "--rank", "2"])):
        for name, sampler in (("passive", []), ("m1e-5", ["--mellowness", "1e-5"]),
                              ("m1e-6", ["--mellowness", "1e-6"])):
            if sampler:
                sampler = ["--active", "--simulation"] + sampler
            out = run(pyvw("-d", "train.vw", "--sft", "5", *extra, *sampler, "-f", "m.pvw"),
                      cwd=work, stderr=True)
            queries = re.search(r"^total queries = (\d+)", out, re.M)
            run(pyvw("-d", "test.vw", "-t", "-i", "m.pvw", "-p", "p.txt", "--quiet"), cwd=work)
            shown = run(pyvw("evaluate", "-p", "p.txt", "-d", "test.vw"), cwd=work)
            values[f"{learner}.{name}.loss"] = float(
                re.search(r"0/1 loss\D*?([0-9.]+)", shown).group(1))
            values[f"{learner}.{name}.labels"] = int(queries.group(1)) if queries else train_lines
    return values, set()


@group("dyadic_movielens", "pyvw-lite generate ratings --seed 7 --users 943 --items 1682 "
       "--ratings 100000 --train train.vw --test test.vw; pyvw-lite -d train.vw [--dyad um "
       "--rank 8 [--dyad_seed S]] --passes 20 -c -f m.pvw; pyvw-lite -d test.vw -t -i m.pvw "
       "-p p.txt; pyvw-lite evaluate -p p.txt -d test.vw (MSE)", slow=True)
def dyadic_movielens(work: Path, records: bool):
    """README's dyadic headline: the defaults (-b 22 under --dyad, holdout on) on the package's seeded
    MovieLens-100k-shaped ratings (seed 7)."""
    out = run(pyvw("generate", "ratings", "--seed", "7", "--users", "943", "--items", "1682",
                   "--ratings", "100000", "--train", "train.vw", "--test", "test.vw"), cwd=work)
    values = {"oracle": float(re.search(r"^generating model:\s+test MSE ([0-9.]+)", out, re.M)
                               .group(1)),
              "ratings": int(re.search(r"^ratings (\d+)", out, re.M).group(1))}

    def mse(*args) -> float:
        run(pyvw("-d", "train.vw", *args, "--passes", "20", "-c", "-f", "m.pvw", "--quiet"),
            cwd=work)
        run(pyvw("-d", "test.vw", "-t", "-i", "m.pvw", "-p", "p.txt", "--quiet"), cwd=work)
        shown = run(pyvw("evaluate", "-p", "p.txt", "-d", "test.vw"), cwd=work)
        return float(re.search(r"^MSE = ([0-9.]+)", shown, re.M).group(1))

    values["linear"] = mse()
    seeds = [mse("--dyad", "um", "--rank", "8")] + [
        mse("--dyad", "um", "--rank", "8", "--dyad_seed", str(seed)) for seed in (1, 2, 3)]
    values.update({"dyad": seeds[0], "dyad.min": min(seeds), "dyad.max": max(seeds)})
    return values, set()


def crowdkit_python() -> str | None:
    """A Python with crowd-kit: ``$CROWDKIT_PYTHON``, or this one if it has crowd-kit (crowd-kit
    pins its own dependencies, so it usually lives in a virtual environment of its own)."""
    for python in (os.environ.get("CROWDKIT_PYTHON"), sys.executable):
        if python and subprocess.run([python, "-c", "import crowdkit"],
                                     capture_output=True).returncode == 0:
            return python
    return None


def needs_crowdkit() -> str | None:
    return None if crowdkit_python() else "no Python with crowd-kit (set CROWDKIT_PYTHON)"


def signed(value: float, digits: int = 3) -> str:
    return f"{value:+.{digits}f}".replace("-", "−")


@group("dyad_real", "python tests/accuracy/dyad_real.py folds|final (runs recorded in "
       "tests/accuracy/dyad_real.json; this group reads the record and counts the rating sets' "
       "repeated pairs and out-of-scale labels)", slow=True, needs_shared=True)
def dyad_real(work: Path, records: bool):
    """docs/evidence/dyadic-real-ratings.md: folds of the real train halves, the test halves scored once."""
    record = json.loads((ROOT / "tests" / "accuracy" / "dyad_real.json").read_text())

    def fold(name, f, line):
        found = [v for k, v in record.items() if k.startswith(f"{name}/fold{f}of3/{line}/")]
        return f"{found[0]['mse']:.4f}" if found else "–"

    rows = [("linear", "linear (`--passes 20`, no `--dyad`)"),
            ("judged", "judged line at -b 18 (VW's -b, the default before)"),
            ("bits20", "judged line, -b 20"), ("bits22", "**judged line, -b 22 (the default now)**"),
            ("bits22_r15", "-b 22 `--dyad_row_l2 15`"),
            ("bits22_r25", "-b 22 `--dyad_row_l2 25`"),
            ("bits22_r1000", "-b 22 `--dyad_row_l2 1000` (latent part held near 0)"),
            ("bits22_ho", "-b 22 `--holdout_off`"), ("bits20_ho", "-b 20 `--holdout_off`")]
    table = ["| line (`--dyad um --rank 8 --passes 20 -c` + ...) | Ciao fold 0 | Ciao fold 1 "
             "| FilmTrust fold 0 | FilmTrust fold 1 |", "|---|---|---|---|---|"]
    for line, label in rows:
        table.append(f"| {label} | " + " | ".join(fold(name, f, line) for name in
                                                 ("ciao", "filmtrust") for f in (0, 1)) + " |")
    for label, pick in (("ALS with biases, best of its grid on fold 0 (rank / λ / bias λ)",
                         lambda key: True), ("ALS biases only (rank 0)",
                                             lambda key: key.startswith("0/"))):
        cells = []
        for name in ("ciao", "filmtrust"):
            grid = {k: v for k, v in (record[f"{name}/als/3/1"]
                                      | record.get(f"{name}/als_biases/3/1", {})).items()
                    if pick(k)}
            chosen = min(grid, key=grid.get)
            cells += [f"{grid[chosen]:.4f} ({chosen.replace('/', ' / ')})", "–"]
        table.append(f"| {label} | " + " | ".join(cells) + " |")
    final = ["| set | judged line, -b 22 (default now) | judged line, -b 18 (before) | linear "
             "| ALS tuned by CV on the train half |", "|---|---|---|---|---|"]
    for name, title in (("filmtrust", "FilmTrust"), ("ciao", "Ciao")):
        def test(line):
            found = next(v for k, v in record.items() if k.startswith(f"{name}/test/{line}/"))
            return f"{found['rmse']:.4f} / {found['mse']:.4f}"
        als = next(k for k in record if k.startswith(f"{name}/test/als/"))
        final.append(f"| {title} | {test('judged_newdefault')} | {test('judged')} | "
                     f"{test('linear')} | {test('als')} (rank / λ / bias λ "
                     f"{als.split('/', 3)[3].replace('/', ' / ')}) |")
    values = {"folds": "\n".join(table), "final": "\n".join(final)}
    shapes = {"s601": "seed 601: 500 users × 1,000 items, 50,000 ratings",
              "s603": "seed 603: weak structure (`--latent-sd 0.4 --noise-sd 0.85`)",
              "s606": "seed 606: 671 users × 9,066 items (ml-latest-small's shape)"}
    generated = ["| generated set (none chose a default) | judged line, -b 22 | linear | ALS "
                 "tuned by CV | judged − ALS |", "|---|---|---|---|---|"]
    for name, label in shapes.items():
        found = record[f"generated/{name}"]
        generated.append(f"| {label} | {found['judged']:.4f} | {found['linear']:.4f} | "
                         f"{found['als']:.4f} | {found['judged'] - found['als']:+.4f} |")
    values["generated"] = "\n".join(generated)

    def mse(name, f, line):
        return next(v["mse"] for k, v in record.items()
                    if k.startswith(f"{name}/fold{f}of3/{line}/"))
    for name in ("ciao", "filmtrust"):
        facts = json.loads((SHARED / "datasets" / "ratings" / f"{name}.json").read_text())
        for field in ("n_ratings", "n_users", "n_items", "ratings_per_item_median"):
            values[f"{name}.{field}"] = facts[field]
        features = facts["n_users"] + facts["n_items"]
        values[f"{name}.features"] = features
        values[f"{name}.shared18"] = features - (1 << 18) * -math.expm1(-features / (1 << 18))
        for f in (0, 1):
            values[f"{name}.f{f}.gain20"] = mse(name, f, "judged") - mse(name, f, "bits20")
            values[f"{name}.f{f}.gain22"] = mse(name, f, "bits20") - mse(name, f, "bits22")
            values[f"{name}.f{f}.r15"] = mse(name, f, "bits22") - mse(name, f, "bits22_r15")
        spread = [mse(name, f, line) for f in (0, 1) for line in ("judged", "bits20", "bits22")]
        values[f"{name}.bits_spread"] = max(
            max(spread[:3]) - min(spread[:3]), max(spread[3:]) - min(spread[3:]))
        grid = record[f"{name}/als/3/1"]
        values[f"{name}.als_lambda"] = float(min(grid, key=grid.get).split("/")[1])
    biases = {k: v for k, v in (record["ciao/als/3/1"] | record["ciao/als_biases/3/1"]).items()
              if k.startswith("0/")}
    values["ciao.bias_gap"] = mse("ciao", 0, "bits22_r1000") - min(biases.values())
    column = (1 << 22) * 4 / 1e6
    # VW's stride of four columns (the weight, its adaptive and normalizing sums, one unused)
    # and the --rank latent ones; a byte per row counts its first-pass uses
    row = (1 << 22) / 1e6
    values.update({"mb_column": column, "mb_rank8": column * 12 + row,
                   "mb_rank16": column * 20 + row, "mb_rank8_b18": (column * 12 + row) / 16})
    for name in ("ciao", "filmtrust"):
        pairs, labels = {}, {}
        for line in (SHARED / "datasets" / "ratings" / f"{name}.train.vw").read_text().split("\n"):
            if line:
                pair = (line.split("|u ")[1].split()[0], line.split("|m ")[1].split()[0])
                pairs[pair] = pairs.get(pair, 0) + 1
                labels[line.split(" ", 1)[0]] = labels.get(line.split(" ", 1)[0], 0) + 1
        values[f"{name}.repeated_examples"] = sum(n - 1 for n in pairs.values() if n > 1)
        values[f"{name}.repeated_pairs"] = sum(1 for n in pairs.values() if n > 1)
        values[f"{name}.zeros"] = labels.get("0", 0)
    return values, set()


@group("crowd_summary", "pyvw-lite crowd datasets/act_MS/answers.csv --batch -p labels.csv")
def crowd_summary(work: Path, records: bool):
    """The default's summary line on the bundled act_MS answers."""
    out = run(pyvw("crowd", ROOT / "datasets" / "act_MS" / "answers.csv", "--batch", "-p",
                   work / "labels.csv"), stderr=True)
    return {"auto_line": next(line for line in out.splitlines()
                              if line.startswith("method = auto:"))}, set()


@group("crowd_em", "python tests/accuracy/crowd_vs_crowdkit.py --peer-python none "
       "--passes 1,2,3,10 --spec", slow=True, needs_shared=True)
def crowd_em(work: Path, records: bool):
    """Online EM against batch EM on every shared set, and batch EM under SPEC's settings."""
    passes = (1, 2, 3, 10)
    run([sys.executable, str(ROOT / "tests" / "accuracy" / "crowd_vs_crowdkit.py"),
         "--peer-python", "none", "--passes", ",".join(map(str, passes)), "--spec",
         "--json", str(work / "em.json")], timeout=7200)
    rows = {r["dataset"]: {k: x["accuracy"] for k, x in r["ours"].items()}
            for r in json.loads((work / "em.json").read_text())}
    names = sorted(rows)
    gap = {p: {n: rows[n][f"online EM x{p}"] - rows[n]["batch EM"] for n in names}
           for p in passes}
    values = {"sets": len(names), "mean.batch": statistics.mean(rows[n]["batch EM"]
                                                               for n in names)}
    for p in passes:
        values[f"mean.online{p}"] = statistics.mean(rows[n][f"online EM x{p}"] for n in names)
        values[f"far{p}"] = sum(abs(g) > 0.01 for g in gap[p].values())
        values[f"near{p}"] = len(names) - values[f"far{p}"]
        values[f"mean_gap{p}"] = statistics.mean(abs(g) for g in gap[p].values())
        far = [n for n in names if abs(gap[p][n]) > 0.01]
        values[f"far{p}.sets"] = ", ".join(f"{n} {signed(gap[p][n])}" for n in far)
    # leave-one-dataset-out: the pass count with the smallest mean |online - batch| on the others
    chosen = [min(passes, key=lambda p: statistics.mean(abs(gap[p][m]) for m in names
                                                        if m != n)) for n in names]
    values["lodo.folds_choosing_10"] = chosen.count(10)
    for spec in ("SPEC worker prior", "fixed class prior", "difficulty model"):
        key = spec.split()[0].lower()
        values[f"spec.{key}.mean"] = statistics.mean(rows[n][spec] for n in names)
    values["spec.fixed.d_jn-product"] = rows["d_jn-product"]["fixed class prior"]
    values["d_jn-product.batch"] = rows["d_jn-product"]["batch EM"]
    table = ["| set | batch EM | online EM: 1 pass | 3 passes | 10 passes |", "|---|---|---|---|---|"]
    for n in names:
        table.append(f"| {n} | " + " | ".join(f"{rows[n][k]:.4f}" for k in (
            "batch EM", "online EM x1", "online EM x3", "online EM x10")) + " |")
    table.append("| **mean** | " + " | ".join(f"{values[k]:.4f}" for k in (
        "mean.batch", "mean.online1", "mean.online3", "mean.online10")) + " |")
    table.append("| sets more than 0.01 from batch EM | — | " + " | ".join(
        str(values[f"far{p}"]) for p in (1, 3, 10)) + " |")
    values["table"] = "\n".join(table)
    return values, set()


@group("crowd_online_schedule", "python tests/accuracy/crowd_online_schedule.py "
       "--fractions 0,0.25,1 --passes 3,10", slow=True, needs_shared=True)
def crowd_online_schedule(work: Path, records: bool):
    """Online EM's M-step after every item or once per block of the file, by leave one source
    out over every shared set."""
    out = run([sys.executable, str(ROOT / "tests" / "accuracy" / "crowd_online_schedule.py"),
               "--fractions", "0,0.25,1", "--passes", "3,10", "--cache",
               str(work / "schedule.json")], timeout=7200)
    blocks = out.strip().split("\n\n")
    lines = blocks[1].splitlines()
    values = {"loso": blocks[0]}
    tail = [line for line in lines if line.startswith(("fraction", "chosen"))]
    values["sets"] = sum(1 for line in lines if line.startswith("| ") and "batch EM" not in line)
    for line in tail:
        if line.startswith("fraction"):
            fraction = line.split()[1].rstrip(":")
            values[f"far10.{fraction}"] = int(line.split(" on ")[1].split()[0])
            values[f"far10.{fraction}.sets"] = line.split("(")[1].rstrip(")") \
                if "(" in line else ""
        else:
            counts = dict(part.split(": ") for part in line.split(": ", 1)[1].split(", "))
            values["folds_choosing_0"] = int(counts["0"])
    values["folds"] = values["loso"].count("\n") - 1
    return values, set()


@group("crowd_vs_crowdkit", "python tests/accuracy/crowd_vs_crowdkit.py --peer-python "
       "$CROWDKIT_PYTHON --passes 1", slow=True, needs_shared=True, needs=needs_crowdkit)
def crowd_vs_crowdkit(work: Path, records: bool):
    """Batch EM and the baselines against crowd-kit 1.4.2's, every shared set."""
    record = (ROOT / "tests" / "accuracy" / "crowd_vs_crowdkit.json") if records \
        else work / "ck.json"
    run([sys.executable, str(ROOT / "tests" / "accuracy" / "crowd_vs_crowdkit.py"),
         "--peer-python", crowdkit_python(), "--passes", "1", "--json", str(record)],
        timeout=7200)
    data = json.loads(record.read_text())
    columns = (("batch EM", "ours", "batch EM"), ("crowd-kit DawidSkene", "crowdkit", "DS"),
               ("majority vote", "ours", "MV"), ("crowd-kit MajorityVote", "crowdkit", "MV"),
               ("one-coin", "ours", "one-coin"), ("crowd-kit OneCoinDawidSkene", "crowdkit",
                                                 "OneCoinDS"))
    table = ["| set | " + " | ".join(c[0] for c in columns) + " |", "|---" * 7 + "|"]
    for r in data:
        table.append(f"| {r['dataset']} | " + " | ".join(
            f"{r[side][key]['accuracy']:.4f}" for _, side, key in columns) + " |")
    means = [statistics.mean(r[side][key]["accuracy"] for r in data) for _, side, key in columns]
    table.append("| **mean** | " + " | ".join(f"{m:.4f}" for m in means) + " |")
    values = {"table": "\n".join(table), "sets": len(data),
              "batch_at_or_above_ds": sum(r["ours"]["batch EM"]["accuracy"]
                                          >= r["crowdkit"]["DS"]["accuracy"] - 1e-12
                                          for r in data),
              "mean.batch": means[0], "mean.ds": means[1]}
    return values, set()


@group("crowd_speed", "for each shared set: pyvw-lite crowd answers.csv --batch -p labels.csv, "
       "and the same with --method majority; whole processes, the best of two each",
       slow=True, needs_shared=True, timings=True)
def crowd_speed(work: Path, records: bool):
    """The default against majority vote, whole process (start to exit), per shared set."""
    def best(*extra) -> float:
        times = []
        for _ in range(2):
            started = time.perf_counter()
            run(pyvw("crowd", answers, "--batch", *extra, "-p", work / "labels.csv"))
            times.append(time.perf_counter() - started)
        return min(times)

    ratios = {}
    seconds = {}
    for folder in sorted(path for path in CROWD.iterdir() if (path / "answers.csv").exists()):
        answers = folder / "answers.csv"
        seconds[folder.name] = (best(), best("--method", "majority"))
        ratios[folder.name] = seconds[folder.name][0] / seconds[folder.name][1]
    largest = max(ratios, key=ratios.get)
    slowest = max(seconds, key=lambda n: seconds[n][0])
    values = {"sets": len(ratios), "ratio.min": min(ratios.values()),
              "ratio.max": max(ratios.values()), "largest": largest,
              "largest.default": seconds[largest][0], "largest.majority": seconds[largest][1],
              "slowest": slowest, "slowest.default": seconds[slowest][0],
              "slowest.majority": seconds[slowest][1],
              "default.min": min(s[0] for s in seconds.values()),
              "default.median": statistics.median(s[0] for s in seconds.values())}
    return values, {k for k in values if k not in ("sets", "largest", "slowest")}


def reference_ebcc() -> dict[str, tuple[float, float]]:
    """The EBCC authors' code as CROWD_FACTS.md quotes it: set -> (accuracy, seconds)."""
    text = (SHARED / "reference" / "CROWD_FACTS.md").read_text()
    section = text.split("## EBCC on the shared sets", 1)[1].split("\n## ", 1)[0]
    return {name: (float(acc), float(sec)) for name, acc, sec in
            re.findall(r"\| (\S+) \| ([0-9.]+) \(([0-9.]+) s\)", section)}


def reference_ebcc_date() -> str:
    text = (SHARED / "reference" / "CROWD_FACTS.md").read_text()
    return re.search(r"## EBCC on the shared sets \(measured (\S+)\)", text).group(1)


@group("ebcc_speed", "EBCC's fit, 10 restarts, best of two, on the sets ../shared/reference/"
       "CROWD_FACTS.md times the authors' code on (pyvw_lite.crowd.bayes.bayes_fit); the "
       "reference's figures are CROWD_FACTS.md's", slow=True, needs_shared=True, timings=True)
def ebcc_speed(work: Path, records: bool):
    code = r"""
import json, sys, time
from pyvw_lite.crowd.bayes import bayes_fit
from pyvw_lite.io.crowd_input import known_labels, read_answers, read_gold
out = {}
for folder in sys.argv[1:]:
    data = read_answers(folder + "/answers.csv")
    known = known_labels(data, read_gold(folder + "/truth.csv"), "truth")
    bayes_fit(data, restarts=1, max_iters=2)  # compiled and warm
    times = []
    for _ in range(2):
        started = time.perf_counter()
        fit = bayes_fit(data, restarts=10)
        times.append(time.perf_counter() - started)
    seen = known >= 0
    out[folder.rsplit("/", 1)[1]] = dict(
        seconds=min(times), accuracy=float((fit.q.argmax(1)[seen] == known[seen]).mean()))
print(json.dumps(out))
"""
    reference = reference_ebcc()
    measured = json.loads(run([sys.executable, "-c", code] + [str(CROWD / name) for name in
                                                               reference]).splitlines()[-1])
    table = ["| set | EBCC accuracy (ours / reference) | ours s | reference s | reference ÷ ours |",
             "|---|---|---|---|---|"]
    values = {}
    for name, (accuracy, seconds) in sorted(reference.items()):
        ours = measured[name]
        table.append(f"| {name} | {ours['accuracy']:.4f} / {accuracy:.4f} | "
                     f"{ours['seconds']:.2f} | {seconds:.1f} | "
                     + (f"{seconds / ours['seconds']:.1f}× |" if seconds else "— |"))
        values[f"{name}.seconds"] = ours["seconds"]
    total = sum(m["seconds"] for m in measured.values())
    total_reference = sum(seconds for _, seconds in reference.values())
    table.append(f"| **total** | | **{total:.2f}** | **{total_reference:.1f}** | "
                 f"**{total_reference / total:.1f}×** |")
    values.update({"table": "\n".join(table), "total": total, "reference_total": total_reference,
                   "ratio": total_reference / total,
                   "s4_Relevance.ratio": reference["s4_Relevance"][1]
                   / measured["s4_Relevance"]["seconds"],
                   "s4_Relevance.reference": reference["s4_Relevance"][1],
                   "reference_date": reference_ebcc_date()})
    return values, {"table", "total", "ratio", "s4_Relevance.ratio", "s4_Relevance.seconds"} | {
        k for k in values if k.endswith(".seconds")}


def needs_ebcc_reference() -> str | None:
    path = os.environ.get("EBCC_REFERENCE")
    return None if path and Path(path).is_file() else (
        "the authors' EBCC code is not bundled (set EBCC_REFERENCE to its ebcc.py)")


@group("ebcc_vs_reference", "python tests/accuracy/ebcc_speed.py --reference $EBCC_REFERENCE",
       slow=True, needs_shared=True, timings=True, needs=needs_ebcc_reference)
def ebcc_vs_reference(work: Path, records: bool):
    """The authors' ebcc_vb and ours side by side in one process, set by set: CPU and wall."""
    out = run([sys.executable, "tests/accuracy/ebcc_speed.py", "--reference",
               os.environ["EBCC_REFERENCE"], "--json", str(work / "ebcc.json")])
    rows = json.loads((work / "ebcc.json").read_text())
    table = "\n".join(line for line in out.splitlines() if line.startswith("|"))
    total = {k: sum(r[k] for r in rows) for k in ("reference_cpu", "plain_cpu", "cpu",
                                                  "reference_wall", "wall")}
    load = float(re.search(r"load average at the end: ([0-9.]+)", out).group(1))
    by_set = {r["set"]: r for r in rows}
    values = {"table": table, "load": load, **{f"total.{k}": v for k, v in total.items()},
              "cpu_ratio": total["reference_cpu"] / total["cpu"],
              "plain_cpu_ratio": total["reference_cpu"] / total["plain_cpu"],
              "wall_ratio": total["reference_wall"] / total["wall"],
              "wall_over_cpu": total["wall"] / total["cpu"],
              "d_jn_product.cpu_ratio": by_set["d_jn-product"]["reference_cpu"]
              / by_set["d_jn-product"]["cpu"]}
    return values, set(values)


@group("bench_crowd", "pyvw-lite bench-crowd --repeat 3 --peer-python $CROWDKIT_PYTHON",
       slow=True, timings=True, needs=needs_crowdkit)
def bench_crowd(work: Path, records: bool):
    run(pyvw("bench-crowd", "--repeat", "3", "--peer-python", crowdkit_python(), "--workdir",
             work, "--json", work / "bench.json"), timeout=7200)
    rows = json.loads((work / "bench.json").read_text())
    peer = next(r for r in rows if r["method"] == "crowd-kit DawidSkene")
    table = ["| tasks × 5 answers | method | seconds | answers/s | accuracy | iterations | "
             "crowd-kit's time ÷ ours | worker table | max RSS |", "|---" * 9 + "|"]
    values = {}
    for r in rows:
        comparable = r is not peer and "workers" not in r["method"] and r["tasks"] == peer["tasks"]
        table.append(
            f"| {r['tasks']:,} | {r['method']} | {r['seconds']:.2f} | "
            f"{r['ratings'] / r['seconds']:,.0f} | {r['accuracy']:.4f} | "
            f"{r.get('iterations') or '—'} | "
            + (f"{peer['seconds'] / r['seconds']:.1f}× | " if comparable else "— | ")
            + (f"{r['table_bytes'] / 2**20:.1f} MB | " if r.get("table_bytes") else "— | ")
            + (f"{r['max_rss_mb']:.0f} MB |" if r.get("max_rss_mb") else "— |"))
        key = f"{r['tasks']}.{r['method'].split(',')[0].split()[0]}"
        if "workers" in r["method"]:
            key = f"{r['tasks']}.many_workers"
        values[f"{key}.seconds"], values[f"{key}.accuracy"] = r["seconds"], r["accuracy"]
    values["table"] = "\n".join(table)
    default = next(r for r in rows if r["method"].startswith("default"))
    values["default_over_peer"] = default["seconds"] / peer["seconds"]
    timing = {k for k in values if k.endswith(".seconds")} | {"table", "default_over_peer"}
    return values, timing


def rater_file(work: Path, lines: int) -> Path:
    """``pyvw-lite bench``'s seeded binary rater-task lines (seed 12345)."""
    path = work / f"rt2_{lines}.vw"
    if not path.exists():
        run([sys.executable, "-c", "import sys\nfrom pyvw_lite.synthetic import rater_task, "
             "write_vw\nwrite_vw(sys.argv[1], rater_task(n_ratings=int(sys.argv[2]), classes=2, "
             "seed=12345), binary=True)\n", str(path), str(lines)])
    return path


def average_loss(printed: str) -> float:
    return float(re.search(r"^average loss = ([0-9.]+)", printed, re.M).group(1))


def percent(value: float) -> str:
    return f"{value:+.1f}%".replace("-", "−")


@group("scale_loss", "pyvw-lite -d rt2.vw --loss_function logistic --passes 5 -c [--executor "
       "serial --shards N --averaging A], on pyvw-lite bench's seeded binary rater-task lines "
       "(1,000,000; 200,000 for two shards); the holdout loss", slow=True)
def scale_loss(work: Path, records: bool):
    values = {}
    for key, lines, counts, modes in (("k200", 200_000, (2,), ("adaptive",)),
                                      ("m1", 1_000_000, (2, 4, 8, 16), ("adaptive", "mean"))):
        common = ["-d", rater_file(work, lines), "--loss_function", "logistic", "--passes", "5",
                  "-k", "--cache_file", work / "c.cache"]
        one = average_loss(run(pyvw(*common), stderr=True))
        values[f"{key}.one"] = one
        for mode in modes:
            for n in counts:
                loss = average_loss(run(pyvw(*common, "--executor", "serial", "--shards", n,
                                             "--averaging", mode), stderr=True))
                values[f"{key}.{mode}.{n}"] = loss
                values[f"{key}.{mode}.{n}.percent"] = 100 * (loss / one - 1)
    table = ["| shards | 1 | 2 | 4 | 8 | 16 |", "|---|---|---|---|---|---|"]
    for mode, label in (("adaptive", "adaptive averaging"), ("mean", "mean")):
        table.append(f"| {label} | {values['m1.one']:.6f} | " + " | ".join(
            f"{values[f'm1.{mode}.{n}']:.6f} ({percent(values[f'm1.{mode}.{n}.percent'])})"
            for n in (2, 4, 8, 16)) + " |")
    values["table"] = "\n".join(table)
    values["m1.adaptive.up_to_4.percent"] = max(abs(values[f"m1.adaptive.{n}.percent"])
                                                for n in (2, 4))
    return values, set()


TIMINGS = re.compile(
    r"timings: pass (\d+): wall ([0-9.]+) s = shards [0-9.]+ s \(per shard, slowest/fastest: "
    r"start [0-9./]+, parse ([0-9.]+)/([0-9.]+), learn ([0-9.]+)/([0-9.]+) \(progress totals "
    r"included\), changed rows ([0-9.]+)/([0-9.]+); shipping and waiting ([0-9.]+)\) \+ "
    r"averaging and the table ([0-9.]+) s; workers' peak memory (\d+)/(\d+) MB")


def pass_timings(printed: str) -> list[dict]:
    keys = ("pass", "wall", "parse", "parse_min", "learn", "learn_min", "changed", "changed_min",
            "shipping", "averaging", "memory", "memory_min")
    return [dict(zip(keys, (float(x) for x in m.groups()))) for m in TIMINGS.finditer(printed)]


@group("scale_timings", "pyvw-lite -d rt2_10000000.vw --loss_function logistic --passes 3 "
       "--holdout_off --executor processes:2 --timings [-c]; one and two one-process runs "
       "from a cache at once; --executor serial --shards W (W = 1..16) on 1,000,000 lines; "
       "pyvw-lite bench's seeded binary rater-task lines", slow=True, timings=True)
def scale_timings(work: Path, records: bool):
    big, small = rater_file(work, 10_000_000), rater_file(work, 1_000_000)
    common = ["-d", big, "--loss_function", "logistic", "--holdout_off"]
    passes = pass_timings(run(pyvw(*common, "--passes", "3", "--executor", "processes:2",
                                   "--timings"), stderr=True, timeout=7200))
    cached = pass_timings(run(pyvw(*common, "--passes", "3", "--executor", "processes:2",
                                   "--timings", "--cache_file", work / "shards.cache", "-k"),
                              stderr=True, timeout=7200))
    table = ["| pass | wall | per shard (slowest / fastest): parse | learn | changed rows | "
             "shipping and waiting | averaging and the table |", "|---|---|---|---|---|---|---|"]
    values = {}
    for p in passes:
        n = int(p["pass"])
        parse = f"{p['parse']:.2f} / {p['parse_min']:.2f} s" if p["parse"] >= 0.005 else "—"
        table.append(f"| {n} | {p['wall']:.2f} s | {parse} | {p['learn']:.2f} / "
                     f"{p['learn_min']:.2f} s | {p['changed']:.2f} s | {p['shipping']:.2f} s | "
                     f"{p['averaging']:.2f} s |")
        values.update({f"pass{n}.{k}": v for k, v in p.items() if k != "pass"})
    values["table"] = "\n".join(table)
    shard_lines = 5_000_000
    text_mb = big.stat().st_size / 2 / 2**20  # a shard's text
    values.update({"memory": passes[-1]["memory"], "memory.cached": cached[-1]["memory"],
                   "memory.times_text": passes[-1]["memory"] / text_mb,
                   "shard_lines": shard_lines})
    # two one-process runs at once against one alone, each one cached pass over all the lines
    one = ["-d", big, "--loss_function", "logistic", "--holdout_off", "--passes", "1",
           "--cache_file", work / "one.cache", "--quiet"]
    run(pyvw(*one, "-k"), timeout=7200)

    def timed(count: int) -> list[float]:
        """Each run's seconds, ``count`` runs started together."""
        started = time.perf_counter()
        children = {subprocess.Popen(pyvw(*one), cwd=ROOT, env=environment(),
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).pid
                    for _ in range(count)}
        ends = []
        while children:  # in the order they end
            pid, _ = os.wait()
            if pid in children:
                children.discard(pid)
                ends.append(time.perf_counter() - started)
        return ends

    alone = min(timed(1)[0] for _ in range(2))
    together = timed(2)
    values.update({"alone": alone, "together.min": min(together),
                   "together.max": max(together)})
    # the averaging cost per shard: --executor serial --shards W on 1,000,000 lines, pass 2
    averaging = {}
    for w in (1, 2, 4, 8, 16):
        timed_passes = pass_timings(run(pyvw("-d", small, "--loss_function", "logistic",
                                             "--holdout_off", "--passes", "2", "--executor",
                                             "serial", "--shards", w, "--timings"), stderr=True))
        averaging[w] = timed_passes[-1]["averaging"]
        values[f"averaging.{w}"] = averaging[w]
    e, a = statistics.linear_regression(list(averaging), list(averaging.values()))
    c = alone / 10_000_000  # seconds per line learning from a cache, one process (start included)
    network = 2 ** 18 * 4 * 4 / 125e6  # the -b 18 table out over 1 Gb/s, per worker
    e_net, n = e + network, 1e9
    values.update({"c_us": 1e6 * c, "parse_us": 1e6 * passes[0]["parse"] / shard_lines,
                   "e": e, "a": a, "network": network, "e_net": e_net,
                   "one_pass_1e9": n * c, "cap": math.sqrt(n * c / e_net),
                   "cap_b24": math.sqrt(n * c / (16 * e_net))})
    rows = ["| workers | time per pass | speed-up |", "|---|---|---|"]
    for w in (8, 32, 128):
        t = n / w * c + w * e_net + a
        values[f"predicted.{w}"], values[f"speedup.{w}"] = t, n * c / t
        rows.append(f"| {w} | {t:.3g} s | {n * c / t:.2g}× |")
    values["predicted"] = "\n".join(rows)
    return values, set(values) - {"shard_lines"}


SCALE_SLUGS = {"one process": "one", "serial": "serial", "processes:2": "processes",
               "processes:2 -c": "processes_cached", "dask-local:2": "dask"}


@group("bench_scale", "pyvw-lite bench-scale --lines 10000000 --tasks 1000000 --repeat 3",
       slow=True, timings=True)
def bench_scale(work: Path, records: bool):
    run(pyvw("bench-scale", "--lines", "10000000", "--tasks", "1000000", "--repeat", "3",
             "--workdir", work, "--json", work / "scale.json"), timeout=7200)
    rows = json.loads((work / "scale.json").read_text())
    seconds = {(r["job"], r["executor"]): r["seconds"] for r in rows}
    columns = ("one process", "serial", "processes:2", "processes:2 -c", "dask-local:2")
    table = ["| job | one process | serial, 2 shards | `processes:2` | `processes:2 -c` | "
             "`dask-local:2` |", "|---|---|---|---|---|---|"]
    values = {}
    for job, label in (("learning", "learning, logistic, 3 passes, 10,000,000 lines"),
                       ("batch EM", "batch EM, 1,000,000 tasks × 5 answers")):
        one = seconds[(job, "one process")]
        cells = []
        for column in columns:
            if (job, column) not in seconds:
                cells.append("—")
                continue
            s = seconds[(job, column)]
            key = f"{job.split()[-1].lower()}.{SCALE_SLUGS[column]}"
            values[key], values[f"{key}.speedup"] = s, one / s
            cells.append(f"{s:.2f} s" if column in ("one process", "serial")
                         else f"{s:.2f} s ({one / s:.2f}×)")
        table.append(f"| {label} | " + " | ".join(cells) + " |")
    values["table"] = "\n".join(table)
    return values, set(values)


def dyad_table(table: str) -> Callable:
    """A section of docs/evidence/dyadic-defaults.md: ``tests/accuracy/dyad_sets.py TABLE``'s
    figures."""
    def figures(work: Path, records: bool):
        run([sys.executable, str(ROOT / "tests" / "accuracy" / "dyad_sets.py"), table,
             "--workdir", str(work), "--json", str(work / "figures.json")], timeout=7200)
        values = json.loads((work / "figures.json").read_text())
        return {name.split(".", 1)[1]: value for name, value in values.items()}, set()
    return figures


for _table in ("seed7", "million", "penalties", "size_rule", "shapes", "clipping", "numbers",
               "order", "dropout", "quantile", "decay", "gap302", "criterion", "schedule"):
    group(f"dyad_{_table}", f"python tests/accuracy/dyad_sets.py {_table}", slow=True,
          needs_shared=True)(dyad_table(_table))


@group("startup", "a one-line --sft 5 run of pyvw-lite and of VW 9.11.9 (vowpalwabbit), five "
       "whole processes each, and python -c 'import numpy, numba'; wall seconds and peak RSS",
       slow=True, timings=True)
def startup(work: Path, records: bool):
    data = work / "one.vw"
    data.write_text("1 |rater r_1 |task t_1\n")
    peer = ("import sys\nfrom vowpalwabbit import Workspace\n"
            "Workspace(arg_list=sys.argv[1:]).finish()\n")
    commands = {"ours": pyvw("-d", data, "--sft", "5", "--quiet"),
                "vw": [sys.executable, "-c", peer, "-d", str(data), "--ect", "5", "--quiet"],
                "imports": [sys.executable, "-c", "import numpy, numba"]}
    run(commands["ours"])  # kernels compiled and cached before the timing

    def once(command: list[str]) -> tuple[float, float]:
        started = time.perf_counter()
        child = subprocess.Popen(command, cwd=ROOT, env=environment(),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(child.pid, 0)
        if status != 0:
            raise RuntimeError(f"{' '.join(command)} failed")
        return time.perf_counter() - started, usage.ru_maxrss / 1024

    values = {}
    for name, command in commands.items():
        runs = [once(command) for _ in range(5)]
        values[f"{name}.min"] = min(s for s, _ in runs)
        values[f"{name}.max"] = max(s for s, _ in runs)
        values[f"{name}.rss"] = max(m for _, m in runs)
    return values, set(values)


@group("cold_start", "each from an empty NUMBA_CACHE_DIR: pyvw-lite -d two.vw [--sft 5 [--dyad rt "
       "--rank 2]], pyvw-lite crowd answers.csv --batch, pyvw-lite compile --all -j 2; then a "
       "warm binary run", slow=True, timings=True)
def cold_start(work: Path, records: bool):
    two = work / "two.vw"
    two.write_text("1 |rater r_1 |task t_1\n2 |rater r_2 |task t_1\n")
    binary = work / "binary.vw"
    binary.write_text("1 |rater r_1 |task t_1\n-1 |rater r_2 |task t_1\n")
    answers = work / "answers.csv"  # three workers with 30 answers each: the default fits BCC
    answers.write_text("task,worker,label\n" + "".join(
        f"t{t},w{w},{'ab'[(t + w) % 3 == 0]}\n" for t in range(30) for w in range(3)))
    runs = {"binary": pyvw("-d", binary, "--quiet"),
            "sft": pyvw("-d", two, "--sft", "5", "--quiet"),
            "sft_dyad": pyvw("-d", two, "--sft", "5", "--dyad", "rt", "--rank", "2", "--quiet"),
            "crowd": pyvw("crowd", answers, "--batch", "-p", work / "labels.csv", "--quiet"),
            "compile_all": pyvw("compile", "--all", "-j", "2")}
    values = {}
    for name, command in runs.items():
        cache = work / f"cache_{name}"
        cache.mkdir()
        env = environment() | {"NUMBA_CACHE_DIR": str(cache)}
        started = time.perf_counter()
        done = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True,
                              timeout=3600)
        if done.returncode != 0:
            raise RuntimeError(f"{name}: {done.stderr[-2000:]}")
        values[name] = time.perf_counter() - started
        if name == "binary":  # warm: the same run again from the cache it filled
            warm = []
            for _ in range(3):
                started = time.perf_counter()
                subprocess.run(command, cwd=work, env=env, capture_output=True, check=True)
                warm.append(time.perf_counter() - started)
            values["warm.min"], values["warm.max"] = min(warm), max(warm)
    return values, set(values)


@group("bench", "pyvw-lite bench --repeat 5", slow=True, timings=True)
def bench(work: Path, records: bool):
    run(pyvw("bench", "--repeat", "5", "--json", work / "bench.json", "--workdir", work))
    results = json.loads((work / "bench.json").read_text())
    busy = [f"{r['scenario']} (load {r['load'][0]:.2f} before, {r['load'][1]:.2f} after)"
            for r in results if r["busy"]]
    if busy:  # figures are measured on a quiet machine only: nothing is recorded
        raise SystemExit("bench: the machine was busy, no figure recorded: " + "; ".join(busy))
    values = {f"ratio.{r['key']}": r["ratio"] for r in results if r["ratio"] is not None}
    values["load"] = max(max(r["load"]) for r in results)
    table = ["| scenario | pyvw-lite | VW 9.11.9 | ratio (ex/s ÷ VW's) | average loss (ours / VW) |",
             "|---|---|---|---|---|"]
    for r in results:
        ours, peer = statistics.median(r["ours_seconds"]), statistics.median(r["peer_seconds"] or [0])
        table.append(f"| {r['scenario']} | {ours:.2f} s | "
                     f"{peer:.2f} s | {r['ratio'] or float('nan'):.2f} | "
                     f"{r['ours_loss']} / {r['peer_loss']} |")
    values["table"] = "\n".join(table)
    return values, set(values)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", action="store_true", help="only the fast groups")
    parser.add_argument("--only", nargs="+", choices=sorted(GROUPS), metavar="GROUP")
    parser.add_argument("--render", action="store_true", help="only render the pages")
    parser.add_argument("--check", action="store_true", help="only check the pages")
    parser.add_argument("--list", action="store_true", help="list the groups")
    options = parser.parse_args(argv)
    figures = json.loads(FIGURES.read_text()) if FIGURES.exists() else {}
    if options.list:
        for g in GROUPS.values():
            print(f"{g.name:<20} {'slow' if g.slow else 'fast'}  {g.command}")
        return 0
    if not (options.render or options.check):
        chosen = [GROUPS[name] for name in options.only] if options.only else [
            g for g in GROUPS.values() if not (options.fast and g.slow)]
        for g in chosen:
            if not available(g):
                print(f"{g.name}: skipped, {missing(g)}", file=sys.stderr)
                continue
            with tempfile.TemporaryDirectory() as work:
                fresh = run_group(g, Path(work), records=True)
            if FIGURES.exists():  # another run may have written its groups meanwhile
                figures = json.loads(FIGURES.read_text())
            figures = {k: v for k, v in figures.items() if v["group"] != g.name} | fresh
            FIGURES.write_text(json.dumps(dict(sorted(figures.items())), indent=1,
                                          ensure_ascii=False) + "\n")
    failed = False
    for page in pages():
        text = page.read_text()
        new, problems = render(text, figures)
        problems += [f"line {number}: {token} is neither marked nor allowed (tools/figures.py: "
                     f"ALLOWED): {line[:120]}" for number, token, line in unmarked_figures(page)]
        for problem in problems:
            print(f"{page.relative_to(ROOT)}: {problem}", file=sys.stderr)
            failed = True
        if new != text:
            if options.check:
                print(f"{page.relative_to(ROOT)} differs from docs/figures.json:", file=sys.stderr)
                print("\n".join(differences(text, new)), file=sys.stderr)
                failed = True
            else:
                page.write_text(new)
                print(f"rendered {page.relative_to(ROOT)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
