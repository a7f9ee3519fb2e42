"""The docs site in a real browser: mkdocs builds it (strict), a local HTTP server serves it, and
headless Chromium (Debian's ``chromium`` and ``chromium-driver``, driven by selenium) opens every
page 1280 pixels wide.  Every page renders without a browser error, no table (nor anything else)
reaches past the page's content column or makes the page scroll sideways, and every link, image
and stylesheet that points into the site resolves: HTTP 200, and the anchor of a ``#fragment``
exists on its page.

CI installs Chromium (.ci/run); elsewhere the check is skipped, with the reason, where Chromium,
its driver or selenium is missing.  ``SITE_SCREENSHOTS=DIR`` also saves a screenshot of each
page there (never into git: .gitignore).
"""
from __future__ import annotations

import functools
import http.server
import os
import shutil
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urldefrag, urlparse

import pytest

ROOT = Path(__file__).resolve().parent.parent
WIDTH, HEIGHT = 1280, 900
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")


def _browser_missing() -> str | None:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[docs]')"
    for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            return f"{path} is missing (apt-get install {package})"
    return None


def _need_browser() -> None:
    missing = _browser_missing()
    if missing and os.environ.get("CI"):  # CI installs them: missing there is a failure
        pytest.fail(f"the browser check cannot run in CI: {missing}")
    if missing:
        pytest.skip(f"the browser check needs Chromium: {missing}")


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def built_site(tmp_path_factory) -> Path:
    site = tmp_path_factory.mktemp("site") / "site"
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                           str(site)], cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr
    return site


@pytest.fixture(scope="module")
def server(built_site):
    """The built site, served on a free port of 127.0.0.1: (root URL, site folder)."""
    _need_browser()
    site = built_site
    handler = functools.partial(_Quiet, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/", site
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


@pytest.fixture(scope="module")
def browser(server):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                     "--disable-gpu", f"--window-size={WIDTH},{HEIGHT}",
                     "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


class _Anchors(HTMLParser):
    """The ids (and old-style ``<a name>``) a page defines."""

    def __init__(self):
        super().__init__()
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        for key, value in attrs:
            if value and (key == "id" or (tag == "a" and key == "name")):
                self.ids.add(value)


class Links:
    """Fetches each page of the site once: its HTTP status and the anchors it defines."""

    def __init__(self):
        self.pages: dict[str, tuple[int, set[str]]] = {}

    def get(self, url: str) -> tuple[int, set[str]]:
        if url not in self.pages:
            try:
                with urllib.request.urlopen(url, timeout=30) as response:
                    status, body = response.status, response.read()
                    kind = response.headers.get_content_type()
            except urllib.error.HTTPError as error:
                status, body, kind = error.code, b"", ""
            anchors = _Anchors()
            if kind == "text/html":
                anchors.feed(body.decode("utf-8", "replace"))
            self.pages[url] = (status, anchors.ids)
        return self.pages[url]


# what the browser reports of a page: its size, what sticks out of the content column, its links
PAGE_FACTS = """
const width = window.innerWidth;
const column = document.querySelector('.md-content') || document.querySelector('[role=main]')
               || document.body;
const columnBox = column.getBoundingClientRect();
const wide = [];
for (const table of column.querySelectorAll('table')) {
  const box = (table.closest('.md-typeset__scrollwrap') || table).getBoundingClientRect();
  if (box.left < columnBox.left - 1 || box.right > columnBox.right + 1) {
    const head = table.querySelector('th, td');
    wide.push(Math.round(box.width) + 'px table starting "' +
              (head ? head.textContent.trim().slice(0, 40) : '') + '"');
  }
}
const links = [];
for (const a of document.querySelectorAll('a[href]')) links.push(a.href);
for (const e of document.querySelectorAll('img[src], script[src]')) links.push(e.src);
for (const e of document.querySelectorAll('link[rel=stylesheet][href]')) links.push(e.href);
return {
  title: document.title,
  h1: (column.querySelector('h1') || {}).textContent || '',
  article: column.innerText.trim().length,
  scrollWidth: document.documentElement.scrollWidth,
  width: width,
  wide: wide,
  links: links,
};
"""


def page_problems(driver, url: str, links: Links, origin: str) -> list[str]:
    """What is wrong with one page as the browser shows it (an empty list when nothing)."""
    status, _ = links.get(url)
    if status != 200:
        return [f"{url}: HTTP {status}"]
    driver.get_log("browser")  # drop what earlier pages logged
    driver.get(url)
    facts = driver.execute_script(PAGE_FACTS)
    problems = []
    if not facts["h1"].strip() or facts["article"] < 20:
        problems.append(f"{url}: no heading or no content rendered")
    if facts["scrollWidth"] > facts["width"]:
        problems.append(f"{url}: the page is {facts['scrollWidth']}px wide in a "
                        f"{facts['width']}px window")
    problems += [f"{url}: {what} reaches past the content column" for what in facts["wide"]]
    for entry in driver.get_log("browser"):
        if entry["level"] == "SEVERE":
            problems.append(f"{url}: browser error: {entry['message']}")
    for link in sorted(set(facts["links"])):
        if not link.startswith(origin):
            continue
        target, fragment = urldefrag(link)
        status, anchors = links.get(target)
        if status != 200:
            problems.append(f"{url}: link to {link}: HTTP {status}")
        elif fragment and unquote(fragment) not in anchors:
            problems.append(f"{url}: link to {link}: no anchor #{fragment} on that page")
    shots = os.environ.get("SITE_SCREENSHOTS")
    if shots:
        Path(shots).mkdir(parents=True, exist_ok=True)
        name = urlparse(url).path.strip("/").replace("/", "_") or "index"
        driver.save_screenshot(str(Path(shots) / f"{name}.png"))
    return problems


def site_pages(site: Path, root: str) -> list[str]:
    """The URL of every page mkdocs built (each ``index.html``; not the 404 page)."""
    urls = []
    for path in sorted(site.rglob("index.html")):
        folder = path.parent.relative_to(site).as_posix()
        urls.append(root if folder == "." else f"{root}{folder}/")
    return urls


def test_every_page_renders_fits_and_links_resolve(server, browser):
    root, site = server
    pages = site_pages(site, root)
    nav_pages = sorted((ROOT / "docs").rglob("*.md"))
    assert len(pages) >= len(nav_pages), (pages, nav_pages)
    links = Links()
    problems = []
    for url in pages:
        problems += page_problems(browser, url, links, root)
    assert not problems, "\n".join(problems)
    assert browser.execute_script("return window.innerWidth") == WIDTH


def test_the_check_sees_a_wide_table_a_broken_link_and_a_missing_anchor(server, browser):
    """The check above can fail: a page with a table that cannot wrap, a link to a page that does
    not exist and one to an anchor that does not, each is reported."""
    root, site = server
    template = (site / "index.html").read_text()
    start = template.index('<article class="md-content__inner md-typeset">')
    end = template.index("</article>", start)
    wide_cell = "x" * 400  # one unbreakable word: the table cannot be narrower than it
    body = ('<article class="md-content__inner md-typeset"><h1>Broken</h1>'
            '<p>A page made wrong on purpose, to see the check fail.</p>'
            f'<table class="plain" style="display:table"><tr><td>{wide_cell}</td></tr></table>'
            '<p><a href="../no-such-page/">gone</a> <a href="../#no-such-anchor">here</a></p>')
    (site / "broken").mkdir()
    (site / "broken" / "index.html").write_text(template[:start] + body + template[end:])
    try:
        problems = page_problems(browser, root + "broken/", Links(), root)
    finally:
        shutil.rmtree(site / "broken")
    text = "\n".join(problems)
    assert "reaches past the content column" in text, text
    assert "no-such-page/: HTTP 404" in text, text
    assert "no anchor #no-such-anchor" in text, text


def test_the_api_reference_renders_every_name_of_all(built_site):
    """mkdocstrings renders each name of each module's ``__all__`` (it leaves out, without a
    warning, a name it cannot find in the source, as the package's lazily imported Workspace
    was)."""
    import importlib
    from test_reference import api_modules
    anchors = _Anchors()
    anchors.feed((built_site / "reference" / "python" / "index.html").read_text())
    missing = [f"{name}.{public}" for name in api_modules()
               for public in importlib.import_module(name).__all__
               if f"{name}.{public}" not in anchors.ids]
    assert not missing, f"not rendered in the API reference: {missing}"
