"""Documents under attack and bad luck: odd files, hostile HTML, hand edits, paths that leak."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from mdmem import Vault
from mdmem.cli import main
from mdmem.errors import InvalidInputError, MdmemError
from mdmem.memory.library.docconvert import safe_link

GUIDE = (
    "# Install\n\nRun the installer.\n\n# Usage\n\nCall frobnicate() daily.\n\n# FAQ\n\nAsk Ana.\n"
)


def test_the_source_path_does_not_carry_the_users_directory_layout(
    vault: Vault, tmp_path: Path
) -> None:
    home = tmp_path / "home" / "alice" / "clients" / "acme-secret"
    home.mkdir(parents=True)
    doc = home / "contract.md"
    doc.write_text("# Terms\n\nNet 30.\n")
    result = vault.library.ingest(doc)[0]
    text = (vault.root / result.path).read_text()
    assert "acme-secret" not in text and str(tmp_path) not in text
    assert "source: contract.md" in text
    # The commit message does not carry it either.
    assert "acme-secret" not in vault.admin.store.git.run("log", "-1", "--format=%B")
    assert result.source == "contract.md"
    # Re-ingest still finds the document (by a hash of the path, not the path).
    doc.write_text("# Terms\n\nNet 45.\n")
    again = vault.library.ingest(doc)[0]
    assert again.path == result.path and again.changed == result.chunks


def test_two_files_with_one_name_stay_two_documents(vault: Vault, tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "guide.md").write_text("# A\n\nalpha\n")
    (tmp_path / "b" / "guide.md").write_text("# B\n\nbeta\n")
    first = vault.library.ingest(tmp_path / "a" / "guide.md")[0]
    second = vault.library.ingest(tmp_path / "b" / "guide.md")[0]
    assert first.path != second.path
    (tmp_path / "b" / "guide.md").write_text("# B\n\nbeta two\n")
    third = vault.library.ingest(tmp_path / "b" / "guide.md")[0]
    assert third.path == second.path
    assert vault.get(first.chunks[0]).text == "alpha"


def test_a_legacy_absolute_source_is_found_again_and_rewritten(
    vault: Vault, tmp_path: Path
) -> None:
    doc = tmp_path / "old.md"
    doc.write_text("# A\n\nalpha\n")
    first = vault.library.ingest(doc)[0]
    full = vault.root / first.path
    # What the first release wrote: the absolute path as source, no origin.
    lines = [
        f"source: {doc.resolve()}" if line.startswith("source:") else line
        for line in full.read_text().splitlines()
        if not line.startswith("origin:")
    ]
    full.write_text("\n".join(lines) + "\n")
    vault.admin.refresh()
    doc.write_text("# A\n\nalpha two\n")
    again = vault.library.ingest(doc)[0]
    assert again.path == first.path and again.changed == first.chunks
    assert str(doc.resolve()) not in full.read_text()


def test_files_that_are_not_documents_are_refused_without_reading_them(
    vault: Vault, tmp_path: Path
) -> None:
    fifo = tmp_path / "pipe.txt"
    os.mkfifo(fifo)
    done: list[BaseException | None] = []

    def run() -> None:
        try:
            vault.library.ingest(fifo)
            done.append(None)
        except BaseException as exc:
            done.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(5)
    if worker.is_alive():  # reading a FIFO blocks forever: unblock it, then fail
        with open(fifo, "wb"):
            pass
        worker.join(5)
        pytest.fail("ingest blocked reading a FIFO")
    assert isinstance(done[0], InvalidInputError) and "not a regular file" in str(done[0])
    # A folder is ingested file by file (library.ingest takes folders): an empty one is nothing.
    (tmp_path / "empty").mkdir()
    assert vault.library.ingest(tmp_path / "empty") == []
    big = tmp_path / "big.txt"
    with open(big, "wb") as fh:
        fh.truncate(21 * 1024 * 1024)  # sparse: the size is checked before reading
    with pytest.raises(InvalidInputError, match="larger than"):
        vault.library.ingest(big)


def test_html_keeps_text_and_drops_active_content(vault: Vault, tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    page.write_text(
        '<h1>Notes</h1><p>See <img src="data:image/png;base64,' + "A" * 400 + '" alt="chart">'
        ' and <a href="javascript:alert(1)">this link</a> and '
        '<a href="https://example.com/doc">the doc</a>.</p>'
        '<iframe src="https://evil.example/"><p>iframe fallback</p></iframe>'
        '<object data="x.swf"><p>plugin fallback</p></object>'
        "<svg><text>vector text</text></svg>"
    )
    result = vault.library.ingest(page)[0]
    text = (vault.root / result.path).read_text()
    assert "data:" not in text and "javascript:" not in text and "AAAA" not in text
    assert "chart" in text and "this link" in text and "https://example.com/doc" in text
    assert "evil.example" not in text and "fallback" not in text and "vector text" not in text


_DISGUISED = [
    "java&#x09;script:alert(1)",  # an entity for a tab: browsers drop tabs
    "java&#9;script:alert(1)",
    "java&Tab;script:alert(1)",
    "jav&#x0A;ascript:alert(1)",
    "javascript&colon;alert(1)",
    "&#x6A;avascript:alert(1)",
    "java&amp;#x09;script:alert(1)",  # reaches markdown as &#x09;, which a viewer decodes
    " \x01javascript:alert(1)",
    "JaVaScRiPt:alert(1)",
    "java\u200bscript:alert(1)",
    "vbscript:msgbox(1)",
    "data:text/html;base64,PHNjcmlwdD4=",
    "file:///etc/passwd",
    "custom-app:open?x=1",
]


@pytest.mark.parametrize("href", _DISGUISED)
def test_a_disguised_scheme_loses_its_link_and_keeps_its_words(
    vault: Vault, tmp_path: Path, href: str
) -> None:
    page = tmp_path / "page.html"
    page.write_text(f'<p>Open <a href="{href}">the report</a> now.</p>', encoding="utf-8")
    text = (vault.root / vault.library.ingest(page)[0].path).read_text(encoding="utf-8")
    assert "the report" in text
    assert "alert" not in text and "msgbox" not in text and "passwd" not in text, text
    assert "](" not in text  # no link at all


@pytest.mark.parametrize(
    "href",
    [
        "https://example.com/a?b=c#d",
        "HTTP://EXAMPLE.COM",
        "mailto:ada@example.org",
        "notes/a:b.md",
        "#section",
        "../up.md",
        "obsidian://open?vault=v",
    ],
)
def test_links_that_point_somewhere_stay(href: str) -> None:
    assert safe_link(href)


def test_a_folder_ingest_skips_symlinks_and_the_vault(tmp_path: Path) -> None:
    vault = Vault.init(tmp_path / "v")
    outside = tmp_path / "private"
    outside.mkdir()
    (outside / "diary.md").write_text("# Diary\n\nprivate thoughts\n")
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "a.md").write_text("# A\n\nAlpha text.\n")
    (docs / "diary.md").symlink_to(outside / "diary.md")
    (docs / "linked").symlink_to(outside, target_is_directory=True)
    (docs / "sub" / "loop").symlink_to(docs, target_is_directory=True)
    (docs / "memory.md").symlink_to(vault.root / "MEMORY.md")
    results = vault.library.ingest([docs])
    assert [r.source for r in results] == ["docs/a.md"]
    assert "private thoughts" not in "".join(
        p.read_text() for p in (vault.root / "documents").glob("*.md")
    )
    # A vault folder inside the folder ingested is left out, not a failure.
    inner = Vault.init(docs / "inner-vault")
    inner.close()
    assert [r.source for r in vault.library.ingest([docs])] == ["docs/a.md"]
    out = CliRunner().invoke(
        main, ["--vault", str(vault.root), "library", "ingest", str(docs), "--json"]
    )
    assert out.exit_code == 0, out.output
    assert [r["source"] for r in json.loads(out.stdout)] == ["docs/a.md"]


def _edit_chunk(vault: Vault, rel: str, old: str, new: str) -> None:
    full = vault.root / rel
    full.write_text(full.read_text().replace(old, new))
    vault.admin.refresh()


def test_a_hand_edited_chunk_survives_a_reingest_that_does_not_touch_it(
    vault: Vault, tmp_path: Path
) -> None:
    doc = tmp_path / "guide.md"
    doc.write_text(GUIDE)
    first = vault.library.ingest(doc)[0]
    _edit_chunk(vault, first.path, "Run the installer.", "Run the installer (as admin!).")
    doc.write_text(GUIDE.replace("Ask Ana.", "Ask Ben."))
    again = vault.library.ingest(doc)[0]
    assert again.changed == [first.chunks[2]]
    assert vault.get(first.chunks[0]).text == "Run the installer (as admin!)."
    assert vault.get(first.chunks[2]).text == "Ask Ben."
    assert first.chunks[0] in again.kept_edits


def test_a_reingest_that_would_overwrite_a_hand_edit_is_refused_unless_forced(
    vault: Vault, tmp_path: Path
) -> None:
    doc = tmp_path / "guide.md"
    doc.write_text(GUIDE)
    first = vault.library.ingest(doc)[0]
    _edit_chunk(vault, first.path, "Call frobnicate() daily.", "Call frobnicate() hourly.")
    head = vault.git.head()
    doc.write_text(GUIDE.replace("daily", "weekly"))
    with pytest.raises(InvalidInputError, match=rf"{first.chunks[1]}.*force"):
        vault.library.ingest(doc)[0]
    assert vault.git.head() == head
    assert vault.get(first.chunks[1]).text == "Call frobnicate() hourly."
    forced = vault.library.ingest(doc, force=True)[0]
    assert forced.changed == [first.chunks[1]]
    assert vault.get(first.chunks[1]).text == "Call frobnicate() weekly."
    out = CliRunner().invoke(main, ["--vault", str(vault.root), "library", "ingest", "--help"])
    assert "--force" in out.output


def test_an_uncommitted_hand_edit_counts_too(vault: Vault, tmp_path: Path) -> None:
    doc = tmp_path / "guide.md"
    doc.write_text(GUIDE)
    first = vault.library.ingest(doc)[0]
    full = vault.root / first.path
    full.write_text(full.read_text().replace("Ask Ana.", "Ask Ana or Ben."))
    doc.write_text(GUIDE.replace("Ask Ana.", "Ask Carol."))
    with pytest.raises(InvalidInputError, match="by hand"):
        vault.library.ingest(doc)[0]
    assert "Ask Ana or Ben." in full.read_text()


def test_the_title_is_unicode_normalised(vault: Vault, tmp_path: Path) -> None:
    doc = tmp_path / "Cafe\u0301 notes.md"
    doc.write_text("# Menu\n\nEspresso.\n")
    result = vault.library.ingest(doc)[0]
    text = (vault.root / result.path).read_text()
    assert "title: Caf\u00e9 notes" in text


def test_a_hand_edit_saved_while_a_reingest_writes_is_not_overwritten(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import mdmem.store.writer as writer_module

    doc = tmp_path / "guide.md"
    doc.write_text(GUIDE)
    first = vault.library.ingest(doc)[0]
    full = vault.root / first.path
    real = writer_module.swap
    saved: list[str] = []

    def person_saves_first(target: Path, *args: object, **kwargs: object) -> object:
        # A person's editor saves the document just before mdmem's write lands.
        if Path(target) == full and not saved:
            saved.append("x")
            full.write_text(full.read_text().replace("Ask Ana.", "Ask Ana (she is back)."))
        return real(target, *args, **kwargs)

    monkeypatch.setattr(writer_module, "swap", person_saves_first)
    doc.write_text(GUIDE.replace("Run the installer.", "Run the new installer."))
    with pytest.raises(MdmemError, match="changed while"):
        vault.library.ingest(doc)[0]
    assert "Ask Ana (she is back)." in full.read_text()
    monkeypatch.setattr(writer_module, "swap", real)
    again = vault.library.ingest(doc)[0]  # the re-run keeps the person's edit, takes the new source
    text = full.read_text()
    assert "Ask Ana (she is back)." in text and "Run the new installer." in text
    assert again.kept_edits == [first.chunks[2]]


def test_damaged_pdfs_and_deep_html_are_one_line_refusals(vault: Vault, tmp_path: Path) -> None:
    import io
    import random

    from pypdf import PdfReader, PdfWriter

    from mdmem.memory.library.docconvert import to_markdown
    from tests.memory.test_documents import make_pdf

    good = make_pdf(["The wombat valve opens clockwise.", "Service every 90 days."])
    rng = random.Random(7)  # this seed's damage made pypdf raise AttributeError
    for n in range(400):
        damaged = bytearray(good)
        for _ in range(rng.randint(1, 6)):
            damaged[rng.randrange(len(damaged))] = rng.randrange(256)
        if n % 3 == 0:
            damaged = damaged[: rng.randrange(len(damaged))]
        try:
            to_markdown(Path("x.pdf"), bytes(damaged))
        except InvalidInputError:
            pass
    deep = tmp_path / "deep.html"
    deep.write_text("<div>" * 3000 + "deep" + "</div>" * 3000)
    with pytest.raises(InvalidInputError, match="too deeply"):
        vault.library.ingest(deep)[0]

    writer = PdfWriter()
    writer.append(PdfReader(io.BytesIO(good)))
    writer.encrypt(user_password="", owner_password="owner")  # restrictions only: readable
    open_pdf = tmp_path / "restricted.pdf"
    buf = io.BytesIO()
    writer.write(buf)
    open_pdf.write_bytes(buf.getvalue())
    assert vault.get(vault.library.ingest(open_pdf)[0].chunks[0]).text.startswith(
        "The wombat valve"
    )
    locked = PdfWriter()
    locked.append(PdfReader(io.BytesIO(good)))
    locked.encrypt(user_password="secret")
    buf = io.BytesIO()
    locked.write(buf)
    (tmp_path / "locked.pdf").write_bytes(buf.getvalue())
    with pytest.raises(InvalidInputError, match="password-protected"):
        vault.library.ingest(tmp_path / "locked.pdf")[0]


def test_a_fifo_or_a_bad_file_does_not_stop_a_folder_ingest(tmp_path: Path) -> None:
    vault = Vault.init(tmp_path / "v")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nAlpha text.\n")
    os.mkfifo(docs / "b.md")  # would block a reader forever
    (docs / "c.txt").write_bytes(b"\xff\xfe not utf-8 \xff")
    (docs / "d.md").write_text("# D\n\nDelta text.\n")
    results = vault.library.ingest([docs])
    assert [(r.source, r.error is None) for r in results] == [
        ("docs/a.md", True),
        ("docs/c.txt", False),
        ("docs/d.md", True),
    ]
    assert "UTF-8" in (results[1].error or "")
    out = CliRunner().invoke(main, ["--vault", str(vault.root), "library", "ingest", str(docs)])
    assert out.exit_code == 1
    assert "skipped" in out.stderr and "b.md (not a regular file)" in out.stderr
    assert "not ingested docs/c.txt" in out.stderr and "unchanged documents/d.md" in out.stdout


def test_a_hostile_pdf_makes_a_bounded_number_of_chunks_quickly(
    vault: Vault, tmp_path: Path
) -> None:
    import time

    from mdmem.memory.library import docconvert
    from tests.memory.hostile import inflating_pdf

    # 64 KB whose one page inflates to 2.4 MB of text (it made 1,200 chunks in 69 s).
    bomb = tmp_path / "bomb.pdf"
    bomb.write_bytes(inflating_pdf())
    assert bomb.stat().st_size <= 64 * 1024
    started = time.monotonic()
    with pytest.raises(InvalidInputError, match="past the PDF reader's limits"):
        vault.library.ingest(bomb)
    assert time.monotonic() - started < 10
    # Under the stream limit, the text is still bounded by the file's size.
    dense = tmp_path / "dense.pdf"
    dense.write_bytes(inflating_pdf(text_bytes=900_000, file_bytes=20 * 1024))
    budget = docconvert.PDF_BASE_CHARS + docconvert.PDF_CHARS_PER_BYTE * dense.stat().st_size
    (result,) = vault.library.ingest(dense)
    assert result.cut and "keeps at most" in result.cut
    assert len(result.chunks) <= budget // 1000  # chunks of ~2,000 characters
    text = (vault.root / result.path).read_text()
    assert "cut: " in text.split("---")[1]  # the file says it is not whole
    # A thousand pages sharing one stream: cut at a page.
    pages = tmp_path / "pages.pdf"
    pages.write_bytes(inflating_pdf(text_bytes=2000, pages=1000))
    started = time.monotonic()
    (result,) = vault.library.ingest(pages)
    assert result.cut and "cut at page" in result.cut
    assert time.monotonic() - started < 60
    assert len(result.chunks) <= docconvert.MAX_CHUNKS
