"""``mdmem ui``: a local web viewer of one vault, on 127.0.0.1 only.

Who may look, and who may act:

* The server binds 127.0.0.1 and answers only requests whose ``Host`` is
  ``127.0.0.1:<port>`` or ``localhost:<port>``: a page on another site that
  points its own name at 127.0.0.1 (DNS rebinding) is refused before anything
  else is read.
* The credential is a random token made per run and printed in the URL
  (``/login?token=…``). Opening it sets a session cookie (HttpOnly,
  SameSite=Strict, named for the port) and redirects at once, so the token
  leaves the address bar; every other page needs that cookie.
* An action (a POST) needs the cookie, the session's CSRF token in the form,
  and an ``Origin`` of this server (``Sec-Fetch-Site``, when sent, must be
  same-origin): no other site's page can act, even with the person's cookie.
* Pages carry no script; the Content-Security-Policy forbids any, and every
  value a page shows is escaped (:mod:`mdmem.ui.html`).

One request runs at a time against the vault (a lock): the viewer is for one
person, and the Vault's writers expect one caller per process.
"""

from __future__ import annotations

import hmac
import logging
import secrets
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, unquote, urlsplit

from mdmem.errors import MdmemError, MemoryNotFoundError
from mdmem.ui import views
from mdmem.ui.html import CSS, esc, local_url, page

if TYPE_CHECKING:
    from mdmem.vault import Vault

__all__ = ["HEADERS", "UiServer"]

log = logging.getLogger("mdmem.ui")

#: Sent with every answer: no script, no framing, no referrer, no caching.
HEADERS: dict[str, str] = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    # not no-referrer: Chromium then sends "Origin: null" with the page's own forms
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}
_MAX_FORM_BYTES = 64 * 1024


@dataclass
class _Answer:
    status: int
    body: bytes
    content_type: str = "text/html; charset=utf-8"
    headers: tuple[tuple[str, str], ...] = ()


class UiServer:
    """The viewer of ``vault`` on 127.0.0.1:``port`` (0: a free port)."""

    def __init__(self, vault: Vault, *, port: int = 0) -> None:
        self.vault = vault
        self.token = secrets.token_urlsafe(32)
        self._sessions: dict[str, str] = {}  # session cookie -> its CSRF token
        self._lock = threading.Lock()
        self.refused = 0
        try:
            server = ThreadingHTTPServer(("127.0.0.1", port), _handler_for(self))
        except OSError as exc:
            raise MdmemError(f"cannot listen on 127.0.0.1:{port}: {exc.strerror}") from None
        server.daemon_threads = True
        self._server = server
        self.port = int(server.server_address[1])
        self.cookie = f"mdmem_ui_{self.port}"
        self.hosts = {f"127.0.0.1:{self.port}", f"localhost:{self.port}"}
        self.origins = {f"http://{h}" for h in self.hosts}

    @property
    def url(self) -> str:
        """The URL to print: it carries the credential."""
        return f"http://127.0.0.1:{self.port}/login?token={self.token}"

    def serve_forever(self) -> None:
        self._server.serve_forever(poll_interval=0.2)

    def start(self) -> threading.Thread:
        """Serve on a background thread (tests, embedding); :meth:`close` stops it."""
        thread = threading.Thread(target=self.serve_forever, name="mdmem-ui", daemon=True)
        thread.start()
        return thread

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    # ------------------------------------------------------------ requests --

    def answer(self, method: str, target: str, headers: Mapping[str, str], body: bytes) -> _Answer:
        """The whole decision for one request (no socket involved, so it is testable)."""
        if headers.get("host", "") not in self.hosts:
            return self._refuse(HTTPStatus.FORBIDDEN, "this server answers only its own address")
        url = urlsplit(target)
        path = unquote(url.path)
        params = dict(parse_qsl(url.query, keep_blank_values=True))
        if method == "GET" and path == "/style.css":
            return _Answer(200, CSS.encode("utf-8"), "text/css; charset=utf-8")
        if method == "GET" and path == "/login":
            return self._login(params.get("token", ""))
        session = self._session(headers.get("cookie", ""))
        if session is None:
            return self._refuse(
                HTTPStatus.UNAUTHORIZED, "open the URL `mdmem ui` printed (it carries the key)"
            )
        if method == "POST":
            return self._act(path, headers, body, session)
        if method != "GET":
            return self._refuse(HTTPStatus.METHOD_NOT_ALLOWED, "only GET and POST")
        view = views.View(params, session, self.vault.root.name, params.get("done", ""))
        route = self._route(path)
        if route is None:
            return self._page(HTTPStatus.NOT_FOUND, "Not found", "There is no such page.")
        with self._lock:
            try:
                html = route(view)
            except MemoryNotFoundError as exc:
                return self._page(HTTPStatus.NOT_FOUND, "Not found", str(exc))
            except MdmemError as exc:
                return self._page(HTTPStatus.BAD_REQUEST, "Could not show this", str(exc))
        return _Answer(200, html.encode("utf-8"))

    def _route(self, path: str) -> Callable[[views.View], str] | None:
        vault = self.vault
        if path == "/":
            return lambda view: views.browse(vault, view)
        if path == "/hooks":
            return lambda view: views.hooks(vault, view)
        if path == "/reviews":
            return lambda view: views.reviews(vault, view)
        if path.startswith("/m/") and len(path) > 3 and "/" not in path[3:]:
            memory_id = path[3:]
            return lambda view: views.memory(vault, view, memory_id)
        return None

    def _login(self, given: str) -> _Answer:
        if not hmac.compare_digest(given.encode("utf-8"), self.token.encode("utf-8")):
            return self._refuse(HTTPStatus.UNAUTHORIZED, "wrong or missing key")
        session = secrets.token_urlsafe(32)
        with self._lock:
            self._sessions[session] = secrets.token_urlsafe(32)
        cookie = f"{self.cookie}={session}; HttpOnly; SameSite=Strict; Path=/"
        return _Answer(
            HTTPStatus.SEE_OTHER, b"", headers=(("Set-Cookie", cookie), ("Location", "/"))
        )

    def _session(self, cookie_header: str) -> str | None:
        """The CSRF token of the session the cookie names (None: no valid session)."""
        for part in cookie_header.split(";"):
            name, _, value = part.strip().partition("=")
            if name == self.cookie:
                for session, csrf in list(self._sessions.items()):
                    if hmac.compare_digest(value.encode("utf-8"), session.encode("utf-8")):
                        return csrf
        return None

    def _act(self, path: str, headers: Mapping[str, str], body: bytes, csrf: str) -> _Answer:
        origin = headers.get("origin", "")
        fetch_site = headers.get("sec-fetch-site", "")
        if origin not in self.origins or fetch_site not in ("", "same-origin"):
            return self._refuse(HTTPStatus.FORBIDDEN, "actions come only from this page")
        if path != "/action":
            return self._page(HTTPStatus.NOT_FOUND, "Not found", "There is no such action.")
        form = dict(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))
        if not hmac.compare_digest(form.get("csrf", "").encode("utf-8"), csrf.encode("utf-8")):
            return self._refuse(HTTPStatus.FORBIDDEN, "the form is stale: reload the page")
        action = views.ACTIONS.get(form.get("verb", ""))
        if action is None:
            return self._page(HTTPStatus.BAD_REQUEST, "Unknown action", "No such verb.")
        with self._lock:
            try:
                done = action.run(self.vault, form)
            except MdmemError as exc:
                return self._page(HTTPStatus.BAD_REQUEST, "The action failed", str(exc))
        back = action.back(form)
        location = local_url(back, {"done": done})
        return _Answer(HTTPStatus.SEE_OTHER, b"", headers=(("Location", location),))

    def _refuse(self, status: HTTPStatus, why: str) -> _Answer:
        self.refused += 1
        return _Answer(status, f"mdmem ui: {why}\n".encode(), "text/plain; charset=utf-8")

    def _page(self, status: HTTPStatus, title: str, text: str) -> _Answer:
        html = page(title, f'<div class="error">{esc(text)}</div>', vault_name=self.vault.root.name)
        return _Answer(status, html.encode("utf-8"))


def _handler_for(ui: UiServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "mdmem-ui"
        sys_version = ""

        def _run(self, method: str) -> None:
            body = b""
            if method == "POST":
                try:
                    length = int(self.headers.get("Content-Length") or 0)
                except ValueError:
                    length = -1
                if not 0 <= length <= _MAX_FORM_BYTES:
                    self.send_error(HTTPStatus.REQUEST_ENTITY_TOO_LARGE)
                    return
                body = self.rfile.read(length)
            lowered = {k.lower(): v for k, v in self.headers.items()}
            try:
                answer = ui.answer(method, self.path, lowered, body)
            except Exception:  # the viewer survives any single request
                log.exception("mdmem ui: a request failed")
                answer = _Answer(500, b"mdmem ui: internal error (see the terminal)\n")
            self.send_response(answer.status)
            for name, value in (*HEADERS.items(), *answer.headers):
                self.send_header(name, value)
            self.send_header("Content-Type", answer.content_type)
            self.send_header("Content-Length", str(len(answer.body)))
            self.end_headers()
            if method != "HEAD":
                self.wfile.write(answer.body)

        def do_GET(self) -> None:
            self._run("GET")

        def do_POST(self) -> None:
            self._run("POST")

        def do_PUT(self) -> None:
            self._run("PUT")

        def do_DELETE(self) -> None:
            self._run("DELETE")

        def log_message(self, format: str, *args: object) -> None:
            log.debug("mdmem ui: " + format, *args)

    return Handler
