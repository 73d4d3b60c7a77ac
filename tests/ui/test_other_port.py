"""A page another local user serves on another port of 127.0.0.1 gets nothing of the viewer.

Browsers scope cookies by host, not port: a cookie the viewer set for
127.0.0.1 went along to every 127.0.0.1 page, and that page's server replayed
it, reading every scope and forgetting a memory as the person. Here the
browser is a real cookie jar (``http.cookiejar``, which matches hosts and
paths and ignores ports as browsers do, and knows no SameSite at all) that
opens the printed URL and then the other user's page, whose real HTTP server
keeps whatever the browser sends it and replays it at the viewer.
"""

from __future__ import annotations

import http.cookiejar
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlencode

import pytest

from mdmem.ui import UiServer
from tests.ui.conftest import Filled, request


class Stranger(ThreadingHTTPServer):
    """Another user's server on 127.0.0.1: it keeps the Cookie header of every request."""

    def __init__(self, viewer_port: int) -> None:
        self.viewer_port = viewer_port
        self.seen: list[tuple[str, str]] = []  # (path, Cookie header)
        super().__init__(("127.0.0.1", 0), _StrangerPage)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _StrangerPage(BaseHTTPRequestHandler):
    server: Stranger

    def do_GET(self) -> None:
        self.server.seen.append((self.path, self.headers.get("Cookie", "")))
        if self.path == "/go":  # send the browser on to the viewer, cookies and all
            self.send_response(302)
            self.send_header("Location", f"http://127.0.0.1:{self.server.viewer_port}/")
            self.end_headers()
            return
        body = b"<html><body>a page like any other</body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def stranger(ui: UiServer) -> Iterator[Stranger]:
    server = Stranger(ui.port)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def open_page(browser: urllib.request.OpenerDirector, url: str) -> tuple[int, str, str]:
    """(status, final URL, body) of what the browser shows for ``url``."""
    try:
        with browser.open(url, timeout=60) as answer:
            return answer.status, answer.geturl(), answer.read().decode("utf-8")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.geturl(), exc.read().decode("utf-8")


def test_a_page_on_another_port_gets_no_cookie_and_can_replay_nothing(
    ui: UiServer, filled: Filled, stranger: Stranger
) -> None:
    jar = http.cookiejar.CookieJar()
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    # The person opens the printed URL: the viewer's pages, in the browser.
    status, where, body = open_page(browser, ui.url)
    assert status == 200 and "<h1>Memories</h1>" in body and ui.token not in where
    assert open_page(browser, where + f"m/{filled.deploy}")[0] == 200
    assert [c.name for c in jar] == [ui.cookie]
    # Then the other user's page, which sends the browser back to the viewer.
    shown = {path: open_page(browser, stranger.base + path) for path in ("/", "/steal/me", "/go")}
    assert len(stranger.seen) == 3
    assert all(ui.cookie not in cookie for _, cookie in stranger.seen), stranger.seen
    assert shown["/"][0] == shown["/steal/me"][0] == 200
    # Sent on to the viewer's "/" the browser has no cookie for it either (and if it
    # had, the person's own browser would be all that read the page).
    assert shown["/go"][0] == 401
    # Whatever it kept, replayed from its own process with any headers it likes.
    own = f"http://127.0.0.1:{ui.port}"
    kept = {cookie for _, cookie in stranger.seen} | {f"{ui.cookie}=guess"}
    for cookie in kept:
        for path in ("/", "/hooks", f"/m/{filled.deploy}", "/?q=deploy"):
            read = request(ui, "GET", path, headers={"Cookie": cookie})
            assert read.status == 401 and "fly.io" not in read.body, (path, cookie)
        form = urlencode({"csrf": "x", "verb": "forget", "id": filled.deploy})
        acted = request(
            ui,
            "POST",
            "/action",
            headers={"Cookie": cookie, "Origin": own, "Sec-Fetch-Site": "same-origin"},
            body=form,
        )
        assert acted.status == 401
    assert filled.vault.get(filled.deploy).status == "active"
