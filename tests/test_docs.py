"""The documentation site builds with every warning an error (broken links, pages missing from
the navigation, files the navigation names that do not exist)."""
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_docs_build_without_warnings(tmp_path):
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                           str(tmp_path / "site")], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "site" / "dyadic" / "index.html").exists()


def test_every_page_is_in_the_navigation():
    nav = (ROOT / "mkdocs.yml").read_text()
    pages = {str(path.relative_to(ROOT / "docs")) for path in (ROOT / "docs").rglob("*.md")}
    assert pages == {name for name in pages if f": {name}" in nav}


def test_a_broken_link_fails_the_build(tmp_path):
    """The check above is real: a page linking to a page that does not exist stops the build."""
    import shutil
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    shutil.copytree(ROOT / "tools", tmp_path / "tools")  # the docstrings' extension
    with open(tmp_path / "docs" / "active.md", "a") as handle:
        handle.write("\n[missing](no-such-page.md)\n")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                           str(tmp_path / "site")], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode != 0 and "no-such-page.md" in done.stderr


# What a page must not say: it points outside the repository, or tells history instead of what
# is true now.  Figure markers (<!--fig:...-->) are ids for tools/figures.py, not text.
FORBIDDEN = [
    (re.compile(r"\.\./shared"), "a path outside the repository"),
    (re.compile(r"\bspec\b", re.I), "a document users do not have"),
    (re.compile(r"\berratum\b|\berrata\b", re.I), "a document users do not have"),
    (re.compile(r"(?<!VW )\bissues? #?\d+", re.I), "an issue number (VW's own are public)"),
    (re.compile(r"\bmaintainers?\b", re.I), "the team, not the reader"),
]


def forbidden(text: str) -> list[str]:
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    return [f"{number}: {why}: {line.strip()[:120]}"
            for number, line in enumerate(text.splitlines(), 1)
            for pattern, why in FORBIDDEN if pattern.search(line)]


def test_the_pages_say_what_is_true_now_from_the_repository_alone():
    pages = [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))
    found = [f"{page.relative_to(ROOT)}:{hit}" for page in pages
             for hit in forbidden(page.read_text())]
    assert not found, "\n".join(found)


def test_the_check_finds_what_it_forbids():
    for line in ("run ../shared/tools/gen_dyadic.py", "see SPEC §B", "as the spec says",
                 "erratum 5", "(issue 38)", "Issue 41 asked", "the maintainers hold"):
        assert forbidden(line), line
    assert not forbidden("a specification, a spectrum, issued by <!--fig:crowd_em.spec.mean-->")
    assert not forbidden("what VW users asked for (VW issues #1852 and #2255)")
