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
from tests.ui.conftest import PAYLOAD, Filled, login, request


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found, "the page has no action form"
    return found.group(1)


def test_every_page_needs_the_printed_credential(ui: UiServer) -> None:
    for path in ("/", "/hooks", "/reviews", "/m/m-0000000000"):
        reply = request(ui, "GET", path)
        assert reply.status == 401 and "open the URL" in reply.body
    assert request(ui, "GET", "/login?token=not-it").status == 401
    assert request(ui, "GET", "/login").status == 401
    # A cookie that is not a session the server made is refused too.
    forged = request(ui, "GET", "/", headers={"Cookie": f"{ui.cookie}=guess"})
    assert forged.status == 401


def test_the_login_sets_a_strict_http_only_cookie_and_leaves_the_url(ui: UiServer) -> None:
    path = ui.url.split(f":{ui.port}", 1)[1]
    reply = request(ui, "GET", path)
    assert reply.status == 303 and reply.headers["location"] == "/"
    cookie = reply.headers["set-cookie"]
    assert cookie.startswith(f"{ui.cookie}=") and ui.token not in cookie
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    page = request(ui, "GET", "/", headers={"Cookie": cookie.split(";")[0]})
    assert page.status == 200 and "<h1>Memories</h1>" in page.body


def test_a_foreign_host_header_is_refused_even_with_the_cookie(ui: UiServer) -> None:
    cookie = login(ui)
    for host in (f"evil.example:{ui.port}", "127.0.0.1", f"127.0.0.1.nip.io:{ui.port}", ""):
        reply = request(ui, "GET", "/", headers={"Host": host, "Cookie": cookie})
        assert reply.status == 403, host
    login_path = ui.url.split(f":{ui.port}", 1)[1]
    rebound = request(ui, "GET", login_path, headers={"Host": f"evil.example:{ui.port}"})
    assert rebound.status == 403 and "set-cookie" not in rebound.headers
    ok = request(ui, "GET", "/", headers={"Host": f"localhost:{ui.port}", "Cookie": cookie})
    assert ok.status == 200


def test_pages_forbid_script_and_show_memory_text_as_text(ui: UiServer, filled: Filled) -> None:
    cookie = login(ui)
    for path in ("/", f"/m/{filled.payload}", "/?" + urlencode({"q": "click me link"})):
        reply = request(ui, "GET", path, headers={"Cookie": cookie})
        assert reply.status == 200
        csp = reply.headers["content-security-policy"]
        assert "default-src 'none'" in csp and "script-src" not in csp  # none at all
        assert reply.headers["x-frame-options"] == "DENY"
        assert "<script" not in reply.body and "<img" not in reply.body
        assert 'href="javascript' not in reply.body
        assert "&lt;script&gt;document.title=&quot;pwned&quot;&lt;/script&gt;" in reply.body
    shown = request(ui, "GET", f"/m/{filled.payload}", headers={"Cookie": cookie}).body
    text = re.search(r'<div class="text" id="memory-text">(.*?)</div>', shown)
    assert text is not None
    import html

    assert html.unescape(text.group(1)) == PAYLOAD


def test_href_refuses_anything_but_a_local_path() -> None:
    for bad in ("javascript:alert(1)", "//evil.example/", "http://evil.example/"):
        with pytest.raises(ValueError):
            href(bad)
    assert href("/m/a b", {"q": '"><x'}) == "/m/a%20b?q=%22%3E%3Cx"


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
    cookie = login(ui)
    seen: list[str] = []
    link: str | None = "/?kind=fact"
    pages = 0
    while link is not None:
        body = request(ui, "GET", link, headers={"Cookie": cookie}).body
        rows = re.findall(r'<td><a href="/m/([^"]+)">', body)
        assert len(rows) <= PAGE_SIZE
        seen += rows
        pages += 1
        link = older_link(body)
        assert pages <= 5
    for junk in ("x", "2026-01-01~m-1", "not-a-date~m-1~3", "2026-01-01T00:00~m-1~-5"):
        odd = request(
            ui,
            "GET",
            "/?" + urlencode({"kind": "fact", "before": junk}),
            headers={"Cookie": cookie},
        )
        assert odd.status == 200 and "<h1>Memories</h1>" in odd.body
    expected = [m.id for m in vault.library.list(kinds="fact")]
    assert seen == expected and len(seen) == 2 * PAGE_SIZE + 20 + 1 and pages == 3
    prefs = request(ui, "GET", "/?kind=preference&file=USER.md", headers={"Cookie": cookie}).body
    assert filled.units in prefs and "Batch note" not in prefs
    superseded = request(ui, "GET", "/?status=superseded", headers={"Cookie": cookie}).body
    assert filled.old_units in superseded and filled.units not in superseded
    by_author = request(ui, "GET", "/?author=nobody-here", headers={"Cookie": cookie}).body
    assert "No memory matches." in by_author


def test_search_history_hooks_and_reviews_pages(ui: UiServer, filled: Filled) -> None:
    cookie = login(ui)
    found = request(ui, "GET", "/?q=metric+units", headers={"Cookie": cookie}).body
    assert f'href="/m/{filled.units}"' in found
    words = request(ui, "GET", "/?q=metric+units&mode=keyword", headers={"Cookie": cookie}).body
    assert f'href="/m/{filled.units}"' in words and '<option value="keyword" selected>' in words
    memory = request(ui, "GET", f"/m/{filled.old_units}", headers={"Cookie": cookie}).body
    history = memory.split("<h2>History</h2>", 1)[1]
    assert history.count("<tr>") == 3  # heading, the write and the supersede
    assert history.count("ada <span") == 2 and "superseded" in history
    logged = HookLog(filled.vault.admin.state_dir).entries()[-1]
    assert logged["event"] == "prompt-submit" and filled.deploy in logged["ids"]
    hooks = request(ui, "GET", "/hooks", headers={"Cookie": cookie}).body
    assert "prompt-submit" in hooks and f'href="/m/{filled.deploy}"' in hooks
    assert "fly.io" in hooks and logged["session"] in hooks
    reviews = request(ui, "GET", "/reviews", headers={"Cookie": cookie}).body
    assert filled.review in reviews
    one = request(
        ui, "GET", "/reviews?" + urlencode({"branch": filled.review}), headers={"Cookie": cookie}
    ).body
    assert "dark mode" in one and 'value="merge"' in one
    missing = request(ui, "GET", "/m/m-0000000000", headers={"Cookie": cookie})
    assert missing.status == 404


def post(ui: UiServer, cookie: str, form: dict[str, str], **headers: str):  # type: ignore[no-untyped-def]
    return request(
        ui, "POST", "/action", headers={"Cookie": cookie, **headers}, body=urlencode(form)
    )


def test_actions_need_the_page_origin_and_its_csrf_token(ui: UiServer, filled: Filled) -> None:
    cookie = login(ui)
    page = request(ui, "GET", f"/m/{filled.deploy}", headers={"Cookie": cookie}).body
    form = {"csrf": csrf_of(page), "verb": "forget", "id": filled.deploy}
    own = f"http://127.0.0.1:{ui.port}"
    refused = [
        post(ui, cookie, form),  # no Origin
        post(ui, cookie, form, Origin="http://evil.example"),
        post(ui, cookie, form, Origin=f"http://127.0.0.1:{ui.port + 1}"),  # same site, not origin
        post(ui, cookie, form, Origin=own, **{"Sec-Fetch-Site": "same-site"}),
        post(ui, cookie, {**form, "csrf": "stale"}, Origin=own),
        post(ui, "", form, Origin=own),  # no session
        post(ui, cookie, form, Origin=own, Host=f"evil.example:{ui.port}"),
    ]
    assert [r.status for r in refused] == [403, 403, 403, 403, 403, 401, 403]
    assert filled.vault.get(filled.deploy).text.startswith("We deploy")
    done = post(ui, cookie, form, Origin=own, **{"Sec-Fetch-Site": "same-origin"})
    assert done.status == 303 and done.headers["location"].startswith("/?done=forgot")
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
    cookie = login(ui)
    own = {"Origin": f"http://127.0.0.1:{ui.port}"}
    page = request(
        ui, "GET", "/reviews?" + urlencode({"branch": filled.review}), headers={"Cookie": cookie}
    ).body
    merged = post(
        ui, cookie, {"csrf": csrf_of(page), "verb": "merge", "branch": filled.review}, **own
    )
    assert merged.status == 303
    assert filled.vault.git.reviews() == []
    resolved = post(
        ui, cookie, {"csrf": csrf_of(page), "verb": "resolve", "id": filled.units}, **own
    )
    assert resolved.status == 303 and filled.vault.get(filled.units).status == "resolved"
    failed = post(
        ui, cookie, {"csrf": csrf_of(page), "verb": "resolve", "id": "m-0000000000"}, **own
    )
    assert failed.status == 400 and "The action failed" in failed.body
    unknown = post(ui, cookie, {"csrf": csrf_of(page), "verb": "purge", "id": filled.units}, **own)
    assert unknown.status == 400
