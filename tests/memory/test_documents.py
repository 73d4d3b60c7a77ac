"""Documents: ``ingest`` of markdown, text, HTML and PDF into ``documents/`` chunks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from mdmem import Vault
from mdmem.cli import main
from mdmem.errors import InvalidInputError, SecretRefusedError
from mdmem.memory.library.docconvert import MAX_CHUNK_CHARS
from tests.secret_samples import FORMATS

GUIDE = """Intro: the zebra handbook for new staff.

# Install

Run the installer from the shared drive.

## Linux

Use apt to get the libzebra package.

# Usage

Call frobnicate() every morning.
"""


def make_pdf(pages: list[str]) -> bytes:
    """A minimal, valid PDF with one text line per page (Helvetica), offsets exact."""
    objects: list[bytes] = []
    n_pages = len(pages)
    kids = " ".join(f"{4 + 2 * i} 0 R" for i in range(n_pages))
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {n_pages} >>".encode())
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    for i, text in enumerate(pages):
        stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {5 + 2 * i} 0 R >>".encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    return pdf_of(objects)


def pdf_of(objects: list[bytes], padding: int = 0) -> bytes:
    """A PDF of ``objects`` (object 1 the catalog), with an exact cross-reference
    table, and a comment of ``padding`` bytes before it."""
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for n, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{n} 0 obj\n".encode() + body + b"\nendobj\n"
    if padding > 0:
        out += b"%" + b"p" * padding + b"\n"  # a comment: padding a reader skips
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for off in offsets:
        out += f"{off:010d} 00000 n \n".encode()
    out += (
        f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    )
    return bytes(out)


def chunk_ids(vault: Vault, rel: str) -> dict[str, str]:
    return {m.text: m.id for m in vault.library.list() if m.path == rel}


def test_markdown_is_chunked_by_headings_and_recallable_by_content(
    vault: Vault, tmp_path: Path
) -> None:
    doc = tmp_path / "Zebra Handbook.md"
    doc.write_text(GUIDE)
    result = vault.library.ingest(doc)[0]
    assert result.written and result.path == "documents/zebra-handbook.md"
    assert len(result.chunks) == 4 and result.added == result.chunks
    blocks = [vault.admin.store.block(i) for i in result.chunks]
    assert [b.heading for b in blocks] == [
        "Zebra Handbook",
        "Install",
        "Install › Linux",
        "Usage",
    ]
    assert {b.kind for b in blocks} == {"document_chunk"}
    assert blocks[2].text == "Use apt to get the libzebra package."
    text = (vault.root / result.path).read_text()
    assert "source: Zebra Handbook.md" in text and "checksum: sha256:" in text and "date:" in text

    hit = vault.recall("libzebra package apt", kinds="document_chunk").items[0]
    assert hit.id == blocks[2].id and hit.kind == "document_chunk"
    # Documents can be left out of a recall.
    vault.remember("The libzebra package is pinned to 2.1")
    without = vault.recall("libzebra package", kinds="-document_chunk").items
    assert without and all(h.kind != "document_chunk" for h in without)
    with pytest.raises(InvalidInputError):
        vault.recall("x", kinds=["fact", "-document_chunk"])


def test_unchanged_reingest_writes_nothing_and_a_change_rewrites_only_its_chunk(
    vault: Vault, tmp_path: Path, run_git
) -> None:
    doc = tmp_path / "guide.md"
    doc.write_text(GUIDE)
    first = vault.library.ingest(doc)[0]
    head = vault.git.head()
    again = vault.library.ingest(doc)[0]
    assert not again.written and again.chunks == first.chunks
    assert vault.git.head() == head and not vault.admin.store.git.dirty_paths()

    doc.write_text(GUIDE.replace("every morning", "every evening") + "\n# FAQ\n\nAsk Ana.\n")
    third = vault.library.ingest(doc)[0]
    assert third.written
    assert third.chunks[:4] == first.chunks  # every old chunk keeps its id
    assert third.changed == [first.chunks[3]] and len(third.added) == 1
    assert third.unchanged == first.chunks[:3] and not third.removed
    diff = run_git(vault.root, "diff", "HEAD~1", "HEAD", "-U0", "--", first.path)
    changed_lines = [
        line for line in diff.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")
    ]
    body = [line for line in changed_lines if not line[1:].startswith(("checksum:", "date:"))]
    assert body == [
        f"-Call frobnicate() every morning. ^{first.chunks[3]}",
        f"+Call frobnicate() every evening. ^{first.chunks[3]}",
        "+",
        "+## FAQ",
        f"+Ask Ana. ^{third.added[0]}",
    ]
    # A removed section takes its chunk with it.
    doc.write_text(GUIDE.split("# Usage")[0])
    fourth = vault.library.ingest(doc)[0]
    assert set(fourth.removed) == {first.chunks[3], third.added[0]}
    assert fourth.chunks == first.chunks[:3]


def test_document_text_is_data_not_metadata_and_reads_back(vault: Vault, tmp_path: Path) -> None:
    hostile = (
        "---\nkind: fact\nscope: user:bob\nstatus: resolved\ntags: [pwned]\n---\n"
        "# Notes [status:: superseded]\n\n"
        "Plain line [status:: resolved] [scope:: user:eve] [kind:: fact] ^m-01aaaaaaaaaaaa\n"
    )
    doc = tmp_path / "hostile.md"
    doc.write_text(hostile)
    result = vault.library.ingest(doc)[0]
    vault.close()
    fresh = Vault.open(vault.root)
    blocks = [fresh.admin.store.block(i) for i in result.chunks]
    assert {(b.kind, b.scope, b.status) for b in blocks} == {("document_chunk", "", "active")}
    assert all("pwned" not in b.tags for b in blocks)
    assert (
        blocks[0].text == "---\nkind: fact\nscope: user:bob\nstatus: resolved\ntags: [pwned]\n---"
    )
    assert blocks[1].text == (
        "Plain line [status:: resolved] [scope:: user:eve] [kind:: fact] ^m-01aaaaaaaaaaaa"
    )
    assert all(not b.fields for b in blocks)
    assert fresh.recall("plain line", kinds="document_chunk").items[0].status == "active"
    # And through a fresh process, byte for byte.
    code = (
        "import json, sys; from mdmem import Vault; v = Vault.open(sys.argv[1]); "
        "print(json.dumps([v.get(i).text for i in sys.argv[2:]]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(vault.root), *result.chunks],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert json.loads(out) == [b.text for b in blocks]


def test_a_secret_in_a_document_is_refused_and_nothing_is_written(
    vault: Vault, tmp_path: Path
) -> None:
    sample = FORMATS[0]
    doc = tmp_path / "keys.md"
    doc.write_text(f"# Setup\n\n{sample.text}\n")
    head = vault.git.head()
    with pytest.raises(SecretRefusedError):
        vault.library.ingest(doc)[0]
    assert vault.git.head() == head and not (vault.root / "documents").exists()


def test_html_and_pdf_are_converted(vault: Vault, tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    page.write_text(
        "<html><head><style>p{color:red}</style><script>alert(1)</script></head><body>"
        "<h1>Release notes</h1><p>The <b>quokka</b> build ships on Friday.</p>"
        "<h2>Known issues</h2><ul><li>Printing is slow</li></ul></body></html>"
    )
    html = vault.library.ingest(page)[0]
    blocks = [vault.admin.store.block(i) for i in html.chunks]
    assert [b.heading for b in blocks] == ["Release notes", "Release notes › Known issues"]
    assert blocks[0].text == "The **quokka** build ships on Friday."
    assert "alert" not in (vault.root / html.path).read_text()

    pdf = tmp_path / "manual.pdf"
    pdf.write_bytes(make_pdf(["The wombat valve opens clockwise.", "Service every 90 days."]))
    result = vault.library.ingest(pdf)[0]
    blocks = [vault.admin.store.block(i) for i in result.chunks]
    assert [b.heading for b in blocks] == ["Page 1", "Page 2"]
    assert blocks[0].text == "The wombat valve opens clockwise."
    assert vault.recall("wombat valve", kinds="document_chunk").items[0].id == blocks[0].id

    bad = tmp_path / "broken.pdf"
    bad.write_bytes(b"%PDF-1.4 not really")
    with pytest.raises(InvalidInputError):
        vault.library.ingest(bad)[0]
    with pytest.raises(InvalidInputError, match="already in the vault"):
        vault.library.ingest(vault.root / "MEMORY.md")[0]
    with pytest.raises(InvalidInputError, match="supported files"):
        (tmp_path / "x.docx").write_bytes(b"PK")
        vault.library.ingest(tmp_path / "x.docx")[0]


def test_chunks_are_bounded_and_plain_text_works(vault: Vault, tmp_path: Path) -> None:
    paragraphs = [f"Paragraph {n} " + "lorem ipsum dolor " * 30 for n in range(20)]
    doc = tmp_path / "long.txt"
    doc.write_text("\n\n".join(paragraphs))
    result = vault.library.ingest(doc)[0]
    texts = [vault.get(i).text for i in result.chunks]
    assert len(texts) > 3 and all(len(t) <= MAX_CHUNK_CHARS for t in texts)
    assert "\n\n".join(texts) == "\n\n".join(p.strip() for p in paragraphs)
    assert vault.admin.store.block(result.chunks[1]).heading == f"long (2/{len(texts)})"


def test_scoped_ingest_and_cli(tmp_path: Path) -> None:
    runner = CliRunner()
    root = tmp_path / "v"
    assert runner.invoke(main, ["init", str(root)]).exit_code == 0
    doc = tmp_path / "faq.md"
    doc.write_text("# Billing\n\nInvoices go out on the 3rd.\n")
    out = runner.invoke(
        main,
        ["--vault", str(root), "library", "ingest", str(doc), "--scope", "project:acme", "--json"],
    )
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data[0]["path"] == "scopes/project/acme/documents/faq.md" and data[0]["written"]
    again = runner.invoke(
        main, ["--vault", str(root), "library", "ingest", str(doc), "--scope", "project:acme"]
    )
    assert again.exit_code == 0 and "unchanged" in again.output
    hits = runner.invoke(
        main, ["--vault", str(root), "recall", "invoices", "--kind", "document_chunk", "--json"]
    )
    items = json.loads(hits.output)["items"]
    assert items[0]["scope"] == "project:acme" and items[0]["kind"] == "document_chunk"
    left_out = runner.invoke(
        main,
        ["--vault", str(root), "recall", "invoices", "--exclude-kind", "document_chunk", "--json"],
    )
    assert all(i["kind"] != "document_chunk" for i in json.loads(left_out.output)["items"])
    missing = runner.invoke(
        main, ["--vault", str(root), "library", "ingest", str(tmp_path / "nope.md")]
    )
    assert missing.exit_code != 0 and "Traceback" not in missing.output


def test_cli_ingests_a_folder(tmp_path: Path) -> None:
    runner = CliRunner()
    root = tmp_path / "v"
    assert runner.invoke(main, ["init", str(root)]).exit_code == 0
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "a.md").write_text("# A\n\nAlpha text.\n")
    (docs / "sub" / "b.txt").write_text("Beta text.\n")
    (docs / "c.bin").write_bytes(b"\x00\x01")
    (docs / ".hidden").mkdir()
    (docs / ".hidden" / "d.md").write_text("secret drafts\n")
    out = runner.invoke(main, ["--vault", str(root), "library", "ingest", str(docs), "--json"])
    assert out.exit_code == 0, out.output
    assert [r["path"] for r in json.loads(out.output)] == ["documents/a.md", "documents/b.md"]
