"""Hostile inputs made at test time: zip bombs, PDFs that inflate, deep JSON."""

from __future__ import annotations

import json
import zipfile
import zlib
from pathlib import Path

from tests.memory.test_documents import pdf_of


def zip_bomb(path: Path, inner_bytes: int = 1024**3, name: str = "conversations.json") -> Path:
    """A zip whose ``name`` inflates to ``inner_bytes`` (a JSON list of one
    conversation padded with spaces): about 1 MB on disk for 1 GiB inside."""
    head = b'[{"title": "bomb", "mapping": {}, "pad": "'
    tail = b'"}]'
    block = b" " * (1024 * 1024)
    with (
        zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as zf,
        zf.open(name, "w", force_zip64=True) as out,
    ):
        out.write(head)
        left = inner_bytes - len(head) - len(tail)
        while left > 0:
            piece = block[: min(left, len(block))]
            out.write(piece)
            left -= len(piece)
        out.write(tail)
    return path


def lying_zip(path: Path, real_bytes: int = 64 * 1024**2) -> Path:
    """A zip whose member's header claims 1 KB but whose data inflates to ``real_bytes``."""
    zip_bomb(path, real_bytes)
    data = bytearray(path.read_bytes())
    # Patch the uncompressed size in the central directory and the local
    # header (zip64 extras hold it as well: patch every copy of the value).
    for size_bytes in (real_bytes.to_bytes(8, "little"), real_bytes.to_bytes(4, "little")):
        at = data.find(size_bytes)
        while at != -1:
            data[at : at + len(size_bytes)] = (1024).to_bytes(len(size_bytes), "little")
            at = data.find(size_bytes, at + 1)
    path.write_bytes(bytes(data))
    return path


def deep_json(depth: int) -> str:
    return "[" * depth + "]" * depth


def deep_conversation(depth: int) -> dict[str, object]:
    inner: object = "x"
    for _ in range(depth):
        inner = {"nested": inner}
    return {"title": "deep", "mapping": {"n": {"id": "n", "message": inner}}}


def inflating_pdf(
    text_bytes: int = 2_400_000, file_bytes: int = 64 * 1024, pages: int = 1
) -> bytes:
    """A PDF whose compressed content stream shows ``text_bytes`` of text (varied
    words, so chunks differ) on each of ``pages`` pages (all share the stream),
    padded to ``file_bytes``."""
    words = [f"w{n:03d}" for n in range(97)]  # a short cycle: deflate folds it
    ops: list[bytes] = [b"BT /F1 10 Tf 72 760 Td 12 TL"]
    size = 0
    n = 0
    while size < text_bytes:
        line = " ".join(words[(n * 7 + k) % len(words)] for k in range(12))
        ops.append(f"({line}) '".encode())
        size += len(line) + 1
        n += 1
        if n % 40 == 0:
            ops.append(b"T*")  # blank line: a paragraph break
    ops.append(b"ET")
    stream = zlib.compress(b"\n".join(ops), 9)
    kids = " ".join(f"{5 + n} 0 R" for n in range(pages))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {pages} >>".encode(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream",
    ]
    objects += [
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
        b"/Resources << /Font << /F1 3 0 R >> >> /Contents 4 0 R >>"
    ] * pages
    size = len(pdf_of(objects))
    return pdf_of(objects, padding=file_bytes - size - 2)


def chatgpt_conversation(conv_id: str, title: str, messages: list[dict[str, object]]) -> dict:
    """A ChatGPT export conversation: a mapping chain root → messages, in order."""
    mapping: dict[str, dict[str, object]] = {
        "root": {"id": "root", "message": None, "parent": None, "children": []}
    }
    parent = "root"
    for n, message in enumerate(messages):
        node_id = str(message.get("id") or f"{conv_id}-m{n}")
        mapping[node_id] = {
            "id": node_id,
            "message": {"id": node_id, **message},
            "parent": parent,
            "children": [],
        }
        mapping[parent]["children"] = [node_id]
        parent = node_id
    return {
        "title": title,
        "create_time": 1700000000.0,
        "update_time": 1700000900.0,
        "mapping": mapping,
        "current_node": parent,
        "conversation_id": conv_id,
        "id": conv_id,
    }


def dump(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data))
    return path
