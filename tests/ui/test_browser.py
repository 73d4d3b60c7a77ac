"""mdmem ui in a real headless Chromium (Debian's chromium + chromium-driver, via selenium).

Skipped with the reason where Chromium is not installed; ``.ci/run`` installs it
and sets MDMEM_REQUIRE_BROWSER=1, which turns a missing browser into a failure.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from mdmem import Vault
from mdmem.errors import MemoryNotFoundError
from mdmem.ui import UiServer
from tests.ui.conftest import PAYLOAD, Filled, fill

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
DRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


def _missing() -> str | None:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[dev]')"
    if not (os.path.exists(CHROMIUM) and os.path.exists(DRIVER)):
        return "Chromium is not installed (apt-get install chromium chromium-driver; .ci/run does)"
    return None


MISSING = _missing()
if MISSING and os.environ.get("MDMEM_REQUIRE_BROWSER") == "1":
    raise RuntimeError(f"MDMEM_REQUIRE_BROWSER=1 but {MISSING}")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(MISSING is not None, reason=MISSING or ""),
    pytest.mark.xdist_group("browser"),
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    profile = tempfile.mkdtemp(prefix="mdmem-chromium-")
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        # A name that resolves to this machine: what a DNS-rebinding page looks like.
        "--host-resolver-rules=MAP rebind.example 127.0.0.1",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture
def site(tmp_path: Path, browser: Any) -> Iterator[tuple[UiServer, Filled]]:
    repo = tmp_path / "repo"
    repo.mkdir()
    vault = Vault.init(tmp_path / "vault", agent="ada")
    filled = fill(vault, repo)
    server = UiServer(vault)
    server.start()
    browser.delete_all_cookies()
    try:
        yield server, filled
    finally:
        server.close()
        vault.close()


def no_alert(browser: Any) -> None:
    from selenium.common.exceptions import NoAlertPresentException

    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert.text  # noqa: B018 (raises when no dialog is open)


def test_the_viewer_in_a_browser(browser: Any, site: tuple[UiServer, Filled]) -> None:
    from selenium.webdriver.common.by import By

    server, filled = site
    base = f"http://127.0.0.1:{server.port}"
    # Without the printed key: refused.
    browser.get(base + "/")
    assert "open the URL" in browser.find_element(By.TAG_NAME, "body").text
    # With it: the memories, at the session's own path, and the key gone from the
    # address bar.
    home = log_in(browser, server)
    assert browser.current_url == home and server.token not in home
    assert browser.find_element(By.TAG_NAME, "h1").text == "Memories"
    # Search by meaning's words and open the memory's history.
    box = browser.find_element(By.NAME, "q")
    box.send_keys("imperial units")
    box.submit()
    assert browser.find_element(By.TAG_NAME, "h1").text == "Search: imperial units"
    browser.find_element(By.NAME, "status").find_element(
        By.CSS_SELECTOR, "option[value=superseded]"
    ).click()
    browser.find_element(By.CSS_SELECTOR, "form.filters button").click()
    browser.find_element(By.LINK_TEXT, filled.old_units).click()
    assert browser.find_element(By.ID, "memory-text").text.startswith("The user prefers imperial")
    rows = "//h2[.='History']/following-sibling::table//tbody/tr"
    history = browser.find_elements(By.XPATH, rows)
    assert len(history) == 2
    assert all(row.find_elements(By.TAG_NAME, "td")[1].text.startswith("ada") for row in history)
    assert "superseded" in history[0].text
    # The last prompt the hooks injected into, and what.
    browser.find_element(By.LINK_TEXT, "Injected").click()
    first = browser.find_element(By.CSS_SELECTOR, "tbody tr")
    assert "prompt-submit" in first.text and "fly.io" in first.text
    assert first.find_element(By.LINK_TEXT, filled.deploy)
    # Pending consolidations.
    browser.find_element(By.LINK_TEXT, "Reviews").click()
    assert browser.find_element(By.LINK_TEXT, filled.review)


def log_in(browser: Any, server: UiServer) -> str:
    """Open the printed URL; the session's home ("http://127.0.0.1:<port>/<path>/")."""
    browser.get(server.url)
    home = str(browser.current_url)
    assert re.fullmatch(rf"http://127\.0\.0\.1:{server.port}/[A-Za-z0-9_-]+/", home), home
    return home


def test_a_script_payload_shows_as_text(browser: Any, site: tuple[UiServer, Filled]) -> None:
    from selenium.webdriver.common.by import By

    server, filled = site
    home = log_in(browser, server)
    for path in ("", f"m/{filled.payload}", "?q=click+me+link"):
        browser.get(home + path)
        no_alert(browser)
        assert browser.title.endswith("· mdmem")  # the payload would set "pwned" or "img"
        assert browser.find_elements(By.TAG_NAME, "script") == []
        assert browser.find_elements(By.TAG_NAME, "img") == []
        links = [a.get_attribute("href") or "" for a in browser.find_elements(By.TAG_NAME, "a")]
        assert links and all(h.startswith(home) for h in links)
    assert "[click me](javascript:alert(1))" in browser.find_element(By.TAG_NAME, "body").text
    browser.get(f"{home}m/{filled.payload}")
    assert browser.find_element(By.ID, "memory-text").text == PAYLOAD


class _Attacker(BaseHTTPRequestHandler):
    """Another origin on this machine whose page posts to the viewer when opened; it
    keeps the Cookie header of every request the browser sends it."""

    page = b""
    cookies: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        _Attacker.cookies.append(self.headers.get("Cookie", ""))
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(self.page)

    def log_message(self, *args: object) -> None:
        pass


def test_a_cross_site_post_and_a_foreign_host_are_refused(
    browser: Any, site: tuple[UiServer, Filled]
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    server, filled = site
    home = log_in(browser, server)
    browser.get(f"{home}m/{filled.deploy}")
    csrf = browser.find_element(By.NAME, "csrf").get_attribute("value")
    # Even knowing the session's path and the CSRF token, a page of another origin
    # (same site: 127.0.0.1, another port, so the SameSite cookie goes along) cannot act.
    _Attacker.page = (
        f'<form id="f" method="post" action="{home}action">'
        f'<input name="csrf" value="{csrf}"><input name="verb" value="forget">'
        f'<input name="id" value="{filled.deploy}"></form>'
        "<script>document.getElementById('f').submit()</script>"
    ).encode()
    attacker = ThreadingHTTPServer(("127.0.0.1", 0), _Attacker)
    threading.Thread(target=attacker.serve_forever, daemon=True).start()
    try:
        refused_before = server.refused
        browser.get(f"http://127.0.0.1:{attacker.server_address[1]}/")
        # The attacker's page submits itself once loaded: wait for the answer.
        WebDriverWait(browser, 30).until(
            lambda b: "actions come only" in b.find_element(By.TAG_NAME, "body").text
        )
        assert server.refused == refused_before + 1
    finally:
        attacker.shutdown()
        attacker.server_close()
    assert filled.vault.get(filled.deploy).text.startswith("We deploy")
    # DNS rebinding: the same server reached by a foreign name is refused, and so
    # is localhost (which may reach [::1], where another user can take this port).
    path = home.split(str(server.port), 1)[1]
    for other in ("rebind.example", "localhost"):
        browser.get(f"http://{other}:{server.port}{path}")
        assert "answers only its own address" in browser.find_element(By.TAG_NAME, "body").text
    # The page's own button works.
    browser.get(f"{home}m/{filled.deploy}")
    browser.find_element(By.XPATH, "//button[.='Forget']").click()
    WebDriverWait(browser, 30).until(lambda b: b.find_elements(By.CLASS_NAME, "notice"))
    assert "forgot" in browser.find_element(By.CLASS_NAME, "notice").text
    with pytest.raises(MemoryNotFoundError):
        filled.vault.get(filled.deploy)


def test_a_page_on_another_port_gets_no_cookie(
    browser: Any, site: tuple[UiServer, Filled]
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    server, filled = site
    home = log_in(browser, server)
    # A page another local user serves on 127.0.0.1 (cookies ignore ports): it does
    # not know the session's path, so it posts to the viewer's root.
    base = f"http://127.0.0.1:{server.port}"
    _Attacker.cookies = []
    _Attacker.page = (
        f'<img src="{base}/"><form id="f" method="post" action="{base}/action">'
        f'<input name="verb" value="forget"><input name="id" value="{filled.deploy}"></form>'
        "<script>document.getElementById('f').submit()</script>"
    ).encode()
    attacker = ThreadingHTTPServer(("127.0.0.1", 0), _Attacker)
    threading.Thread(target=attacker.serve_forever, daemon=True).start()
    try:
        browser.get(f"http://127.0.0.1:{attacker.server_address[1]}/steal")
        WebDriverWait(browser, 30).until(
            lambda b: "open the URL" in b.find_element(By.TAG_NAME, "body").text
        )
    finally:
        attacker.shutdown()
        attacker.server_close()
    assert _Attacker.cookies and all(server.cookie not in c for c in _Attacker.cookies)
    assert filled.vault.get(filled.deploy).status == "active"
    # The person's own session is untouched.
    browser.get(home)
    assert browser.find_element(By.TAG_NAME, "h1").text == "Memories"
