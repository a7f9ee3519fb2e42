"""The documentation site builds with every warning an error (broken links, pages missing from
the navigation, files the navigation names that do not exist)."""
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
