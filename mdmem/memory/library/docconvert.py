"""Turn a document file into markdown, and markdown into heading-delimited chunks.

Pure functions, no vault: :mod:`mdmem.memory.library.documents` stores what they make.
Supported inputs: markdown, plain text, HTML (``markdownify``) and PDF
(``pypdf``: text only, one section per page, since a PDF has no headings).

Bounded (a document is untrusted input): a file is at most
:data:`MAX_DOCUMENT_BYTES`; its text at most :data:`MAX_DOCUMENT_CHARS`, and a
PDF's at most :data:`PDF_BASE_CHARS` plus :data:`PDF_CHARS_PER_BYTE` per byte of
the file, since a few kilobytes of compressed content stream can hold
megabytes of text (or a thousand pages can share one stream). pypdf runs
with tighter limits on inflating and parsing a content stream. Text past a
bound is cut at a page or line and the cut is reported
(:class:`Converted`), never silent; a document makes at most
:data:`MAX_CHUNKS` chunks.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from pathlib import Path

from mdmem.errors import InvalidInputError
from mdmem.models import one_line

__all__ = [
    "MAX_CHUNKS",
    "MAX_CHUNK_CHARS",
    "MAX_DOCUMENT_CHARS",
    "SUFFIXES",
    "Chunk",
    "Converted",
    "chunk_markdown",
    "convert",
    "to_markdown",
]

# Martha indexes "every chunk of every uploaded document" but gives no size.
# ~2,000 characters is ~500 tokens: small enough that one chunk is about one
# thing (so its vector means something), large enough that a section usually
# stays whole. Far below the 20,000-character memory limit.
MAX_CHUNK_CHARS = 2_000
MAX_HEADING_CHARS = 120
# Larger documents are most likely a mistake (a data dump, not prose).
MAX_DOCUMENT_BYTES = 20 * 1024 * 1024
# A 1,000-page book is ~2.5 million characters; a document's chunks stay
# below what one commit and one embedding pass handle comfortably.
MAX_DOCUMENT_CHARS = 4_000_000
MAX_CHUNKS = 2_000
# A text PDF holds about 1-3 characters of text per byte of file (deflate
# takes text to a third, fonts and page objects add to it).
PDF_BASE_CHARS = 100_000
PDF_CHARS_PER_BYTE = 4
# pypdf's own limits (75 MB inflated, 2M operands a stream) let one page
# take minutes: extracting text costs ~7 s per MB of content stream. A page's
# stream may inflate to 4 bytes per character the PDF may keep, within these.
_PDF_STREAM_BYTES = (1_000_000, 16_000_000)
_PDF_DECODING_WORK = 64_000_000
_PDF_PARSING_WORK = 400_000

_MARKDOWN = (".md", ".markdown", ".mdown")
_TEXT = (".txt", ".text")
_HTML = (".html", ".htm", ".xhtml")
_PDF = (".pdf",)
SUFFIXES: tuple[str, ...] = (*_MARKDOWN, *_TEXT, *_HTML, *_PDF)

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


@dataclass(frozen=True)
class Chunk:
    """One piece of a document: the heading path it sits under and its text."""

    heading: str
    text: str


@dataclass(frozen=True)
class Converted:
    """A document as markdown, and why it was cut (None: it is whole)."""

    text: str
    cut: str | None = None


def to_markdown(path: Path, raw: bytes) -> str:
    """The document's text as markdown (``raw`` is the file's bytes), within the bounds."""
    return convert(path, raw).text


def convert(path: Path, raw: bytes) -> Converted:
    """The document's text as markdown, cut at :data:`MAX_DOCUMENT_CHARS` (and a
    PDF's at its share per byte), saying where it was cut."""
    text = _markdown(path, raw)
    if isinstance(text, Converted):
        return text
    return _bounded(text, MAX_DOCUMENT_CHARS, "characters")


def _bounded(text: str, limit: int, what: str) -> Converted:
    if len(text) <= limit:
        return Converted(text)
    cut = text.rfind("\n", 0, limit)
    kept = text[: cut if cut > limit // 2 else limit]
    return Converted(kept, f"cut at {len(kept):,} of {len(text):,} {what}")


def _markdown(path: Path, raw: bytes) -> str | Converted:
    suffix = path.suffix.lower()
    if len(raw) > MAX_DOCUMENT_BYTES:
        raise InvalidInputError(
            f"{path.name} is larger than {MAX_DOCUMENT_BYTES // (1024 * 1024)} MiB"
        )
    if suffix in _PDF:
        return _pdf_text(path, raw)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"{path.name} is not UTF-8 text (byte {exc.start})") from None
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if suffix in _HTML:
        try:
            return _html_markdown(text)
        except RecursionError:
            # markdownify walks the tree recursively: thousands of nested
            # elements (a generated page, or one made to crash readers).
            raise InvalidInputError(f"{path.name} nests its HTML too deeply to convert") from None
    if suffix in _MARKDOWN or suffix in _TEXT:
        return text
    raise InvalidInputError(f"can't ingest {path.name}: supported files are {', '.join(SUFFIXES)}")


def _html_markdown(html: str) -> str:
    # Imported when used: the CLI start stays cheap.
    from bs4 import BeautifulSoup
    from markdownify import MarkdownConverter

    soup = BeautifulSoup(html, "html.parser")
    # Scripts, styles and the head are what the browser runs or reads, not the
    # document's text (markdownify's strip= would keep their contents). Frames,
    # plugins and inline graphics show other content (their inner text is a
    # fallback for old browsers, not the page's own words).
    for tag in soup(_DROPPED_TAGS):
        tag.decompose()
    # A data: URL is an inline blob (kilobytes of base64 per image) and a
    # javascript:/vbscript: link runs code where a viewer renders it: only
    # links of known schemes stay; the element keeps its words (alt text,
    # link text), never the URL.
    for tag in soup.find_all(["a", "img", "area", "source", "video", "audio"]):
        for attr in ("href", "src", "srcset", "poster"):
            value = tag.get(attr)
            if isinstance(value, str) and not safe_link(value):
                if tag.name == "img":
                    tag.replace_with(str(tag.get("alt") or ""))
                    break
                if tag.name == "a":
                    tag.unwrap()
                    break
                del tag[attr]
    return str(MarkdownConverter(heading_style="ATX").convert_soup(soup))


_DROPPED_TAGS = [
    "script",
    "style",
    "noscript",
    "template",
    "head",
    "iframe",
    "frame",
    "frameset",
    "object",
    "embed",
    "applet",
    "svg",
    "canvas",
]
# Schemes that point somewhere; any other (javascript:, vbscript:, data:,
# file:, a custom app's) carries data or runs code, or may.
_SAFE_SCHEMES = frozenset(
    {"http", "https", "mailto", "tel", "ftp", "ftps", "sftp", "ssh", "git", "irc", "ircs", "news",
     "obsidian"}
)  # fmt: skip
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")
# What a browser ignores in a URL (WHATWG URL: leading and trailing C0 controls
# and spaces, and tabs and newlines anywhere), and what a markdown viewer
# might (other controls, invisible characters): gone before the scheme is read.
_IGNORED_IN_URL = re.compile(
    r"[\x00-\x20\x7f-\x9f\u00ad\u200b-\u200f\u2028-\u202e\u2060-\u2064\ufeff]"
)


def safe_link(url: str) -> bool:
    """Whether a link or image source may stay: relative, or of a scheme that points somewhere.

    Entities are decoded first, repeatedly (``java&#x09;script:`` in HTML, and
    ``&amp;#x09;`` that reaches markdown as ``&#x09;``, which a markdown viewer
    decodes again), then what browsers skip is dropped: ``java\tscript:``
    is ``javascript:`` to a browser.
    """
    for _ in range(5):
        decoded = html.unescape(url)
        if decoded == url:
            break
        url = decoded
    compact = _IGNORED_IN_URL.sub("", url)
    scheme = _SCHEME.match(compact)
    if scheme is None:
        return True  # no scheme: a path, a query or a #fragment here
    end = scheme.end()
    if any(c in compact[:end] for c in "/?#"):
        return True  # "a/b:c" is a path with a colon, not a scheme
    return scheme.group(1).lower() in _SAFE_SCHEMES


def _pdf_text(path: Path, raw: bytes) -> Converted:
    """One ``# Page n`` section a page (a PDF has no heading structure), pages read
    until the text reaches the PDF's bound."""
    import io

    from pypdf import PdfReader, apply_configuration
    from pypdf.errors import LimitReachedError

    budget = min(MAX_DOCUMENT_CHARS, PDF_BASE_CHARS + PDF_CHARS_PER_BYTE * len(raw))
    low, high = _PDF_STREAM_BYTES
    stream = min(high, max(low, 4 * budget))
    parts: list[str] = []
    size = 0
    cut: str | None = None
    unread: list[int] = []
    try:
        with apply_configuration(
            zlib_maximum_output_length=stream,
            stream_decoding_work_maximum_length=_PDF_DECODING_WORK,
            stream_parsing_work_maximum_count=_PDF_PARSING_WORK,
        ):
            reader = PdfReader(io.BytesIO(raw))
            if reader.is_encrypted and not reader.decrypt(""):
                # An empty user password only restricts printing and the like.
                raise InvalidInputError(f"{path.name} is password-protected: decrypt it first")
            pages = len(reader.pages)
            for n in range(pages):
                try:
                    text = (reader.pages[n].extract_text() or "").strip()
                except LimitReachedError:
                    unread.append(n + 1)  # one page past pypdf's limits: the rest can be read
                    continue
                if not text:
                    continue
                part = f"# Page {n + 1}\n\n{text}"
                if size + len(part) > budget:
                    room = budget - size
                    if room > 200:
                        parts.append(_bounded(part, room, "characters").text)
                    cut = (
                        f"cut at page {n + 1} of {pages}: a PDF of {len(raw):,} bytes "
                        f"keeps at most {budget:,} characters of text"
                    )
                    break
                parts.append(part)
                size += len(part) + 2
    except InvalidInputError:
        raise
    except Exception as exc:
        # Untrusted bytes: pypdf fails in many ways (fuzzing found
        # AttributeError, and deep object chains recurse); none of them may
        # leave the MdmemError tree.
        raise InvalidInputError(
            f"{path.name} is not a readable PDF ({type(exc).__name__}: {one_line(str(exc), 80)})"
        ) from None
    if unread:
        shown = ", ".join(map(str, unread[:10])) + (" …" if len(unread) > 10 else "")
        note = f"page(s) {shown} past the PDF reader's limits, left out"
        cut = f"{cut}; {note}" if cut else note
    if not parts and unread:
        raise InvalidInputError(f"{path.name}: no text within the PDF reader's limits ({cut})")
    if not parts:
        raise InvalidInputError(f"{path.name} holds no extractable text (a scanned PDF?)")
    return Converted("\n\n".join(parts), cut)


def split_frontmatter(text: str) -> tuple[str | None, str]:
    """(the document's own YAML frontmatter or None, the rest)."""
    if not text.startswith("---\n"):
        return None, text
    end = re.search(r"^(?:---|\.\.\.)[ \t]*$", text[4:], re.MULTILINE)
    if end is None:
        return None, text
    return text[4 : 4 + end.start()].strip("\n"), text[4 + end.end() :].lstrip("\n")


def chunk_markdown(text: str, title: str) -> list[Chunk]:
    """Split markdown at its headings into chunks of at most MAX_CHUNK_CHARS.

    A chunk's heading is the path of headings above it (``Install › Linux``);
    text before the first heading sits under ``title``. Headings inside code
    fences are code. A section longer than the bound is split at blank lines,
    then at line ends, then hard, and its parts are numbered.
    """
    front, body = split_frontmatter(text)
    sections: list[tuple[str, list[str]]] = []
    if front:
        # The document's own frontmatter is data like the rest of its text: it
        # is kept (and escaped when written), never read as mdmem's metadata.
        sections.append(("Frontmatter", ["---", *front.split("\n"), "---"]))
    path: list[tuple[int, str]] = []
    current: list[str] = []
    heading = title
    fence: str | None = None
    for line in body.split("\n"):
        if fence is None:
            opened = _FENCE.match(line)
            if opened:
                fence = opened.group(1)[0] * len(opened.group(1))
            else:
                match = _ATX.match(line)
                if match:
                    sections.append((heading, current))
                    level, name = len(match.group(1)), _heading_text(match.group(2) or "")
                    path = [(lv, nm) for lv, nm in path if lv < level]
                    if name:
                        path.append((level, name))
                    heading = " › ".join(nm for _, nm in path) or title
                    current = []
                    continue
        elif line.lstrip().startswith(fence):
            fence = None
        current.append(line)
    sections.append((heading, current))

    chunks: list[Chunk] = []
    for name, lines in sections:
        text_of = "\n".join(line.rstrip() for line in lines).strip()
        if not text_of:
            continue
        parts = _split(text_of)
        for n, part in enumerate(parts, 1):
            label = name if len(parts) == 1 else f"{name} ({n}/{len(parts)})"
            chunks.append(Chunk(heading=_cut(label), text=part))
    return chunks


def _heading_text(raw: str) -> str:
    # A heading becomes an entry heading: one line, without the characters a
    # heading line would read differently ("#" at the end, "^id", "[k:: v]").
    text = one_line(raw.replace("[", "(").replace("]", ")").replace("^", "").rstrip("#"))
    return text.strip()


def _cut(label: str) -> str:
    return one_line(label, MAX_HEADING_CHARS)


def _split(text: str) -> list[str]:
    if len(text) <= MAX_CHUNK_CHARS:
        return [text]
    parts: list[str] = []
    current = ""
    for piece in _pieces(text):
        joined = f"{current}\n\n{piece}" if current else piece
        if len(joined) <= MAX_CHUNK_CHARS:
            current = joined
            continue
        if current:
            parts.append(current)
        current = piece
    if current:
        parts.append(current)
    return parts


def _pieces(text: str) -> list[str]:
    """Paragraphs, each cut to MAX_CHUNK_CHARS at line ends (or hard, for one long line)."""
    out: list[str] = []
    for para in re.split(r"\n\s*\n", text):
        para = para.strip("\n")
        if not para.strip():
            continue
        while len(para) > MAX_CHUNK_CHARS:
            cut = para.rfind("\n", 0, MAX_CHUNK_CHARS)
            if cut <= 0:
                cut = para.rfind(" ", 0, MAX_CHUNK_CHARS)
            if cut <= 0:
                cut = MAX_CHUNK_CHARS
            out.append(para[:cut].rstrip())
            para = para[cut:].strip("\n ")
        if para.strip():
            out.append(para)
    return out
