"""``mdmem ui``: a local web viewer of one vault, on 127.0.0.1 only.

Who may look, and who may act:

* The server binds 127.0.0.1 and answers only requests whose ``Host`` is
  ``127.0.0.1:<port>``: a page on another site that points its own name at
  127.0.0.1 (DNS rebinding) is refused before anything else is read, and so is
  ``localhost``, which a browser may send to ``[::1]``, where another user can
  listen on the same port.
* The credential is a random token made per run and printed in the URL
  (``/login?token=…``). Opening it starts a session and redirects at once to
  the session's own path, ``/<session path>/``, so the token leaves the address
  bar. Every page of the session is under that path, and needs it *and* the
  session cookie (HttpOnly, SameSite=Strict), which is set for that path only.
* Why both: a browser sends a cookie of 127.0.0.1 to every port of
  127.0.0.1 (cookies ignore ports), so a page another local user serves there
  would be sent a cookie set for ``/`` and could replay it. The browser sends
  this one only with a URL under the session's random path, which no other
  page knows; and the path alone (it is in the address bar) opens nothing
  without the cookie.
* An action (a POST) needs both, the session's CSRF token in the form, and an
  ``Origin`` of this server (``Sec-Fetch-Site``, when sent, must be
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


@dataclass(frozen=True)
class _Session:
    path: str  # the first segment of every URL of the session
    cookie: str  # the cookie's value, sent only under that path
    csrf: str  # the token every form of the session carries

    @property
    def base(self) -> str:
        return f"/{self.path}"


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
        self._sessions: list[_Session] = []
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
        self.host = f"127.0.0.1:{self.port}"
        self.origin = f"http://{self.host}"

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
        if headers.get("host", "") != self.host:
            return self._refuse(HTTPStatus.FORBIDDEN, "this server answers only its own address")
        url = urlsplit(target)
        params = dict(parse_qsl(url.query, keep_blank_values=True))
        if method == "GET" and url.path == "/login":
            return self._login(params.get("token", ""))
        if url.path == "/favicon.ico":  # asked by every browser at the root, outside a session
            return _Answer(HTTPStatus.NOT_FOUND, b"", "text/plain; charset=utf-8")
        # The session's path segment comes first, as it came (quoted or not, it
        # must be the very one the login redirected to).
        first, _, rest = url.path[1:].partition("/")
        session = self._session(first, headers.get("cookie", ""))
        if session is None:
            return self._refuse(
                HTTPStatus.UNAUTHORIZED, "open the URL `mdmem ui` printed (it carries the key)"
            )
        path = "/" + unquote(rest)
        if method == "POST":
            return self._act(path, headers, body, session)
        if method != "GET":
            return self._refuse(HTTPStatus.METHOD_NOT_ALLOWED, "only GET and POST")
        if path == "/style.css":
            return _Answer(200, CSS.encode("utf-8"), "text/css; charset=utf-8")
        view = views.View(
            params, session.csrf, self.vault.root.name, params.get("done", ""), session.base
        )
        route = self._route(path)
        if route is None:
            return self._page(session, HTTPStatus.NOT_FOUND, "Not found", "There is no such page.")
        with self._lock:
            try:
                html = route(view)
            except MemoryNotFoundError as exc:
                return self._page(session, HTTPStatus.NOT_FOUND, "Not found", str(exc))
            except MdmemError as exc:
                return self._page(session, HTTPStatus.BAD_REQUEST, "Could not show this", str(exc))
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
        session = _Session(
            secrets.token_urlsafe(24), secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        )
        with self._lock:
            self._sessions.append(session)
        # Path-scoped: the browser sends it with this session's URLs only, on any
        # port of 127.0.0.1 (so never to a page that does not know the path).
        cookie = f"{self.cookie}={session.cookie}; HttpOnly; SameSite=Strict; Path={session.base}/"
        return _Answer(
            HTTPStatus.SEE_OTHER,
            b"",
            headers=(("Set-Cookie", cookie), ("Location", local_url("/", base=session.base))),
        )

    def _session(self, path: str, cookie_header: str) -> _Session | None:
        """The session whose path is ``path`` when the request carries its cookie too."""
        found = None
        for session in list(self._sessions):  # every one compared: no timing of which
            if hmac.compare_digest(path.encode("utf-8"), session.path.encode("utf-8")):
                found = session
        if found is None:
            return None
        for part in cookie_header.split(";"):
            name, _, value = part.strip().partition("=")
            if name == self.cookie and hmac.compare_digest(
                value.encode("utf-8"), found.cookie.encode("utf-8")
            ):
                return found
        return None

    def _act(
        self, path: str, headers: Mapping[str, str], body: bytes, session: _Session
    ) -> _Answer:
        origin = headers.get("origin", "")
        fetch_site = headers.get("sec-fetch-site", "")
        if origin != self.origin or fetch_site not in ("", "same-origin"):
            return self._refuse(HTTPStatus.FORBIDDEN, "actions come only from this page")
        if path != "/action":
            return self._page(session, HTTPStatus.NOT_FOUND, "Not found", "No such action.")
        form = dict(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))
        sent = form.get("csrf", "").encode("utf-8")
        if not hmac.compare_digest(sent, session.csrf.encode("utf-8")):
            return self._refuse(HTTPStatus.FORBIDDEN, "the form is stale: reload the page")
        action = views.ACTIONS.get(form.get("verb", ""))
        if action is None:
            return self._page(session, HTTPStatus.BAD_REQUEST, "Unknown action", "No such verb.")
        with self._lock:
            try:
                done = action.run(self.vault, form)
            except MdmemError as exc:
                return self._page(session, HTTPStatus.BAD_REQUEST, "The action failed", str(exc))
        location = local_url(action.back(form), {"done": done}, base=session.base)
        return _Answer(HTTPStatus.SEE_OTHER, b"", headers=(("Location", location),))

    def _refuse(self, status: HTTPStatus, why: str) -> _Answer:
        self.refused += 1
        return _Answer(status, f"mdmem ui: {why}\n".encode(), "text/plain; charset=utf-8")

    def _page(self, session: _Session, status: HTTPStatus, title: str, text: str) -> _Answer:
        body = f'<div class="error">{esc(text)}</div>'
        html = page(title, body, vault_name=self.vault.root.name, base=session.base)
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
