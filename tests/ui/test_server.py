"""mdmem ui over real HTTP: the credential, the Host and Origin checks, escaping, actions."""

from __future__ import annotations

import re
import subprocess
from urllib.parse import urlencode

import pytest

from mdmem.errors import MemoryNotFoundError
from mdmem.hookkit.log import HookLog
from mdmem.ui import UiServer
from mdmem.ui.html import href
from mdmem.ui.views import PAGE_SIZE
from tests.ui.conftest import PAYLOAD, Filled, Reply, Session, login, request


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found, "the page has no action form"
    return found.group(1)


def test_every_page_needs_the_printed_credential(ui: UiServer) -> None:
    for path in ("/", "/hooks", "/reviews", "/m/m-0000000000", "/style.css"):
        reply = request(ui, "GET", path)
        assert reply.status == 401 and "open the URL" in reply.body
    assert request(ui, "GET", "/login?token=not-it").status == 401
    assert request(ui, "GET", "/login").status == 401
    # A cookie that is not a session the server made is refused too.
    forged = request(ui, "GET", "/", headers={"Cookie": f"{ui.cookie}=guess"})
    assert forged.status == 401


def test_the_login_sets_a_strict_http_only_cookie_for_the_sessions_path(ui: UiServer) -> None:
    path = ui.url.split(f":{ui.port}", 1)[1]
    reply = request(ui, "GET", path)
    assert reply.status == 303
    base = reply.headers["location"].rstrip("/")
    assert re.fullmatch(r"/[A-Za-z0-9_-]{32}", base) and ui.token not in base
    cookie = reply.headers["set-cookie"]
    assert cookie.startswith(f"{ui.cookie}=") and ui.token not in cookie
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    # Sent by a browser with this session's URLs only: never to "/" of another port.
    assert f"Path={base}/" in cookie and "Domain" not in cookie
    page = request(ui, "GET", base + "/", headers={"Cookie": cookie.split(";")[0]})
    assert page.status == 200 and "<h1>Memories</h1>" in page.body
    assert f'href="{base}/style.css"' in page.body and f'href="{base}/hooks"' in page.body


def test_a_page_needs_both_the_sessions_path_and_its_cookie(ui: UiServer) -> None:
    one, two = login(ui), login(ui)
    assert one.base != two.base and one.cookie != two.cookie
    assert one.get("/").status == two.get("/").status == 200
    refused = [
        request(ui, "GET", "/", headers={"Cookie": one.cookie}),  # the cookie alone
        request(ui, "GET", one.base + "/"),  # the path alone (it is in the address bar)
        request(ui, "GET", one.base + "/", headers={"Cookie": two.cookie}),  # another's
        request(ui, "GET", one.base[:-1] + "/", headers={"Cookie": one.cookie}),
        request(ui, "GET", "/x" + one.base + "/", headers={"Cookie": one.cookie}),
        request(ui, "GET", one.base + "/style.css"),
    ]
    assert [r.status for r in refused] == [401] * len(refused)
    assert len({r.body for r in refused}) == 1  # nothing says which part was wrong


def test_a_foreign_host_header_is_refused_even_with_the_cookie(ui: UiServer) -> None:
    session = login(ui)
    hosts = (
        f"evil.example:{ui.port}",
        "127.0.0.1",
        f"127.0.0.1.nip.io:{ui.port}",
        "",
        # A browser may send a localhost URL to [::1], where another user can listen
        # on this port: the viewer answers its one address only.
        f"localhost:{ui.port}",
        f"[::1]:{ui.port}",
    )
    for host in hosts:
        assert session.get("/", headers={"Host": host}).status == 403, host
    login_path = ui.url.split(f":{ui.port}", 1)[1]
    rebound = request(ui, "GET", login_path, headers={"Host": f"evil.example:{ui.port}"})
    assert rebound.status == 403 and "set-cookie" not in rebound.headers
    assert session.get("/").status == 200


def test_pages_forbid_script_and_show_memory_text_as_text(ui: UiServer, filled: Filled) -> None:
    session = login(ui)
    for path in ("/", f"/m/{filled.payload}", "/?" + urlencode({"q": "click me link"})):
        reply = session.get(path)
        assert reply.status == 200
        csp = reply.headers["content-security-policy"]
        assert "default-src 'none'" in csp and "script-src" not in csp  # none at all
        assert reply.headers["x-frame-options"] == "DENY"
        assert "<script" not in reply.body and "<img" not in reply.body
        assert 'href="javascript' not in reply.body
        assert "&lt;script&gt;document.title=&quot;pwned&quot;&lt;/script&gt;" in reply.body
    shown = session.get(f"/m/{filled.payload}").body
    text = re.search(r'<div class="text" id="memory-text">(.*?)</div>', shown)
    assert text is not None
    import html

    assert html.unescape(text.group(1)) == PAYLOAD


def test_href_refuses_anything_but_a_local_path() -> None:
    for bad in ("javascript:alert(1)", "//evil.example/", "http://evil.example/"):
        with pytest.raises(ValueError):
            href(bad)
        with pytest.raises(ValueError):
            href("/", base=bad)
    assert href("/m/a b", {"q": '"><x'}) == "/m/a%20b?q=%22%3E%3Cx"
    assert href("/m/a b", base="/s-1_x") == "/s-1_x/m/a%20b"


def older_link(html_text: str) -> str | None:
    import html

    found = re.search(r'<a href="([^"]+)">older →</a>', html_text)
    return html.unescape(found.group(1)) if found else None


def test_browse_filters_and_pages_without_listing_everything(ui: UiServer, filled: Filled) -> None:
    vault = filled.vault
    # One batch: most of these share a created second, which the pages must not lose.
    with vault.batch():
        for i in range(2 * PAGE_SIZE + 20):
            vault.remember(f"Batch note number {i} about the archive shelf.", tags=("shelf",))
    session = login(ui)
    seen: list[str] = []
    link: str | None = session.base + "/?kind=fact"
    pages = 0
    while link is not None:
        body = request(ui, "GET", link, headers={"Cookie": session.cookie}).body
        rows = re.findall(rf'<td><a href="{session.base}/m/([^"]+)">', body)
        assert len(rows) <= PAGE_SIZE
        seen += rows
        pages += 1
        link = older_link(body)
        assert pages <= 5
    for junk in ("x", "2026-01-01~m-1", "not-a-date~m-1~3", "2026-01-01T00:00~m-1~-5"):
        odd = session.get("/?" + urlencode({"kind": "fact", "before": junk}))
        assert odd.status == 200 and "<h1>Memories</h1>" in odd.body
    expected = [m.id for m in vault.library.list(kinds="fact")]
    assert seen == expected and len(seen) == 2 * PAGE_SIZE + 20 + 1 and pages == 3
    prefs = session.get("/?kind=preference&file=USER.md").body
    assert filled.units in prefs and "Batch note" not in prefs
    superseded = session.get("/?status=superseded").body
    assert filled.old_units in superseded and filled.units not in superseded
    by_author = session.get("/?author=nobody-here").body
    assert "No memory matches." in by_author


def test_search_history_hooks_and_reviews_pages(ui: UiServer, filled: Filled) -> None:
    session = login(ui)
    link = f'href="{session.base}/m/{filled.units}"'
    found = session.get("/?q=metric+units").body
    assert link in found
    words = session.get("/?q=metric+units&mode=keyword").body
    assert link in words and '<option value="keyword" selected>' in words
    memory = session.get(f"/m/{filled.old_units}").body
    history = memory.split("<h2>History</h2>", 1)[1]
    assert history.count("<tr>") == 3  # heading, the write and the supersede
    assert history.count("ada <span") == 2 and "superseded" in history
    logged = HookLog(filled.vault.admin.state_dir).entries()[-1]
    assert logged["event"] == "prompt-submit" and filled.deploy in logged["ids"]
    hooks = session.get("/hooks").body
    assert "prompt-submit" in hooks and f'href="{session.base}/m/{filled.deploy}"' in hooks
    assert "fly.io" in hooks and logged["session"] in hooks
    reviews = session.get("/reviews").body
    assert filled.review in reviews
    one = session.get("/reviews?" + urlencode({"branch": filled.review})).body
    assert "dark mode" in one and 'value="merge"' in one
    assert f'action="{session.base}/action"' in one
    missing = session.get("/m/m-0000000000")
    assert missing.status == 404


def post(session: Session, form: dict[str, str], **headers: str) -> Reply:
    return session.post("/action", urlencode(form), headers=headers)


def test_actions_need_the_page_origin_and_its_csrf_token(ui: UiServer, filled: Filled) -> None:
    session = login(ui)
    page = session.get(f"/m/{filled.deploy}").body
    form = {"csrf": csrf_of(page), "verb": "forget", "id": filled.deploy}
    own = f"http://127.0.0.1:{ui.port}"
    no_cookie = Session(ui, "", session.base)
    refused = [
        post(session, form),  # no Origin
        post(session, form, Origin="http://evil.example"),
        post(session, form, Origin=f"http://127.0.0.1:{ui.port + 1}"),  # same site, not origin
        post(session, form, Origin=f"http://localhost:{ui.port}"),
        post(session, form, Origin=own, **{"Sec-Fetch-Site": "same-site"}),
        post(session, {**form, "csrf": "stale"}, Origin=own),
        post(no_cookie, form, Origin=own),  # no session
        post(session, form, Origin=own, Host=f"evil.example:{ui.port}"),
    ]
    assert [r.status for r in refused] == [403, 403, 403, 403, 403, 403, 401, 403]
    assert filled.vault.get(filled.deploy).text.startswith("We deploy")
    done = post(session, form, Origin=own, **{"Sec-Fetch-Site": "same-origin"})
    assert done.status == 303
    assert done.headers["location"].startswith(f"{session.base}/?done=forgot")
    with pytest.raises(MemoryNotFoundError):
        filled.vault.get(filled.deploy)
    author = subprocess.run(
        ["git", "log", "-1", "--format=%an %s"],
        cwd=filled.vault.root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert author.startswith("ada forget")  # the same verb as `mdmem forget`, as the person


def test_merge_and_resolve_from_the_page(ui: UiServer, filled: Filled) -> None:
    session = login(ui)
    own = {"Origin": f"http://127.0.0.1:{ui.port}"}
    page = session.get("/reviews?" + urlencode({"branch": filled.review})).body
    merged = post(session, {"csrf": csrf_of(page), "verb": "merge", "branch": filled.review}, **own)
    assert merged.status == 303
    assert filled.vault.git.reviews() == []
    resolved = post(session, {"csrf": csrf_of(page), "verb": "resolve", "id": filled.units}, **own)
    assert resolved.status == 303 and filled.vault.get(filled.units).status == "resolved"
    back = f"{session.base}/m/{filled.units}?done=resolved+{filled.units}"
    assert resolved.headers["location"] == back
    failed = post(
        session, {"csrf": csrf_of(page), "verb": "resolve", "id": "m-0000000000"}, **own
    )
    assert failed.status == 400 and "The action failed" in failed.body
    unknown = post(session, {"csrf": csrf_of(page), "verb": "purge", "id": filled.units}, **own)
    assert unknown.status == 400
    # A session's forms carry its own token: another session's is refused.
    other = login(ui)
    theirs = csrf_of(other.get(f"/m/{filled.deploy}").body)
    assert theirs != csrf_of(page)
    crossed = post(other, {"csrf": csrf_of(page), "verb": "forget", "id": filled.deploy}, **own)
    assert crossed.status == 403 and filled.vault.get(filled.deploy).status == "active"
