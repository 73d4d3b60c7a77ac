"""The block-aware merge driver git runs while mdmem syncs, merges and reverts.

The vault template marks append-only files (daily logs, JOURNAL.md,
sessions) ``merge=mdmem-append``, a driver only mdmem defines: plain git
(``git pull``, Obsidian Git) does not know the name and falls back to its
normal text merge, with conflict markers where both sides appended. Vaults
made before say ``merge=union``. Git's built-in union driver is not safe for
these files: when both sides append entries, its zealous merge factors out
lines the two sides share (a blank line, an identical ``## 10:00 · Note``
heading) and glues two entries into one section, so one block id is lost
(``mdmem doctor --fix`` renames it, see :mod:`mdmem.store.gitattributes`).
For the git commands that merge (sync's rebase, a review's merge, undo's
revert) mdmem defines both names as a block-aware driver (the code between
the ``merge driver`` markers below, run by git as a tiny stdlib-only
script): :func:`driver_config` gives the ``-c`` settings. It applies to
add/add too (both clones created today's log). It also takes the default
merge for the ledger files (MEMORY.md, USER.md, WORLD.md, LEARNING.md): a
clean line merge is used as is, and where git's line merge conflicts only
because both sides added different memories, the blocks are merged. Whenever
the same block was changed differently on both sides - or anything else git
cannot merge - the driver reports a conflict; nothing is resolved by dropping
a side.

The script's own ``git merge-file`` is a child of the git command that runs
the driver, so it inherits that command's safe settings (``-c`` options reach
git's children through ``GIT_CONFIG_PARAMETERS``); :func:`merge_texts`, run
in-process, asks :class:`~mdmem.store.gitstore.GitStore` instead.
"""

from __future__ import annotations

import hashlib
import shlex
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from mdmem.files.textfile import atomic_write
from mdmem.store.gitattributes import APPEND_DRIVER, LEGACY_APPEND_DRIVERS
from mdmem.store.gitstore import GitStore

if TYPE_CHECKING:
    from collections.abc import Callable

    from mdmem.store.memories import MemoryStore

__all__ = ["driver_command", "driver_config", "merge_blocks", "merge_texts"]


def driver_command(state_dir: Path) -> str:
    """The shell command git runs as the driver (its arguments follow: mode %O %A %B %P).

    Modes: ``union`` (append-only files), ``default`` (the ledgers by name),
    ``blocks`` (any file of memory lines, such as a repository's team tier:
    git's line merge, then the strict block merge where that conflicts).
    """
    folder, module = _driver_module(state_dir)
    # A module (not a script) so Python caches its bytecode: git starts the
    # driver once per merged file, and compiling it each time doubled that.
    program = (
        f"import sys; sys.path.insert(0, {str(folder)!r}); "
        f"from {module} import _driver_main; sys.exit(_driver_main(sys.argv))"
    )
    return f"{shlex.quote(sys.executable)} -S -I -c {shlex.quote(program)}"


def driver_config(store: MemoryStore) -> list[str]:
    """``-c`` settings that make git merge markdown with the block-aware driver."""
    command = driver_command(store.state_dir)
    append = []
    for name in (APPEND_DRIVER, *LEGACY_APPEND_DRIVERS):
        append += [
            f"merge.{name}.name=mdmem block-aware append merge",
            f"merge.{name}.driver={command} union %O %A %B %P",
        ]
    return [
        *append,
        "merge.mdmem.name=mdmem ledger merge",
        f"merge.mdmem.driver={command} default %O %A %B %P",
        "merge.default=mdmem",
    ]


def _driver_source() -> str:
    source = Path(__file__).read_text(encoding="utf-8")
    # The markers are split here so that this function does not match itself.
    start = source.index("# >>> merge" + " driver")
    end = source.index("# <<< merge" + " driver")
    return (
        "# Written by mdmem.git.merge_driver: git runs this as the merge driver for mdmem.\n"
        "from __future__ import annotations\n\nimport sys\n\n"
        + source[start:end]
        + '\nif __name__ == "__main__":\n    sys.exit(_driver_main(sys.argv))\n'
    )


def _driver_module(state_dir: Path) -> tuple[Path, str]:
    """(folder, module name) of the driver, written on first use; named by its hash."""
    source = _driver_source()
    digest = hashlib.sha256(source.encode("utf-8")).hexdigest()[:12]
    folder = state_dir / "merge-driver"
    module = f"mdmem_merge_{digest}"
    path = folder / f"{module}.py"
    if not path.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write(path, source.encode("utf-8"))
    return folder, module


# >>> merge driver (stdlib only: this section is also git's merge driver script)

# Plain string tests instead of regexes: importing `re` would double the
# start-up time of the driver, which git runs once per merged file.
_LEDGER_NAMES = ("MEMORY.md", "USER.md", "WORLD.md", "LEARNING.md")
_ID_CHARS = frozenset("0123456789abcdefghijklmnopqrstuvwxyz")


def _indent_ok(line: str) -> str | None:
    """The line without up to three leading spaces (None if indented more)."""
    stripped = line.lstrip(" ")
    return stripped if len(line) - len(stripped) <= 3 else None


def _is_heading(line: str) -> bool:
    rest = _indent_ok(line)
    if not rest or rest[0] != "#":
        return False
    level = len(rest) - len(rest.lstrip("#"))
    return level <= 6 and (len(rest) == level or rest[level] in " \t\r\n")


def _fence_of(line: str) -> str:
    rest = _indent_ok(line)
    if not rest or rest[0] not in "`~":
        return ""
    run = len(rest) - len(rest.lstrip(rest[0]))
    return rest[0] * run if run >= 3 else ""


def _is_item(line: str) -> bool:
    if line[:1] in ("-", "*", "+"):
        return len(line) == 1 or line[1] in " \t\r\n"
    digits = len(line) - len(line.lstrip("0123456789"))
    if not 1 <= digits <= 9 or len(line) <= digits or line[digits] not in ".)":
        return False
    return len(line) == digits + 1 or line[digits + 1] in " \t\r\n"


def _block_id(line: str) -> str:
    """The ``m-…`` block id ending the line, or ""."""
    line = line.rstrip()
    at = line.rfind("^m-")
    if at < 0 or (at > 0 and not line[at - 1].isspace()):
        return ""
    ident = line[at + 1 :]
    body = ident[2:]
    if not 6 <= len(body) <= 32 or not set(body) <= _ID_CHARS:
        return ""
    return ident


def _split_chunks(text: str, items: bool) -> list[str]:
    """Cut a markdown file into blocks: heading sections (entries), and in ledger
    files also top-level list items and paragraphs. Code fences are never cut."""
    lines = text.splitlines(keepends=True)
    chunks: list[list[str]] = []
    current: list[str] = []
    fence = ""
    start = 0
    if lines and lines[0].rstrip("\r\n") == "---":  # frontmatter stays in the first chunk
        for idx in range(1, len(lines)):
            if lines[idx].rstrip("\r\n").rstrip() in ("---", "..."):
                current = lines[: idx + 1]
                start = idx + 1
                break
    previous_blank = False
    for line in lines[start:]:
        bare = line.rstrip("\r\n")
        if fence:
            current.append(line)
            if bare.strip().startswith(fence):
                fence = ""
            continue
        blank = not bare.strip()
        cut = _is_heading(bare)
        if items and not cut and not blank:
            cut = _is_item(bare) or (previous_blank and not bare[:1].isspace())
        if cut and current and any(x.strip() for x in current):
            chunks.append(current)
            current = []
        current.append(line)
        fence = _fence_of(bare)
        previous_blank = blank
    if current:
        if chunks and not any(x.strip() for x in current):
            chunks[-1].extend(current)
        else:
            chunks.append(current)
    return ["".join(chunk) for chunk in chunks]


def _chunk_keys(chunks: list[str]) -> list[str]:
    """A stable key per chunk: its first block id, else its text; repeats numbered."""
    keys: list[str] = []
    seen: dict[str, int] = {}
    for n, chunk in enumerate(chunks):
        key = ""
        for line in chunk.splitlines():
            ident = _block_id(line)
            if ident:
                key = "id:" + ident
                break
        if not key:
            first = chunk.lstrip()
            is_preamble = n == 0 and not _is_heading(first) and not first.startswith("-")
            key = "preamble" if is_preamble or first.startswith("---") else "text:" + chunk.strip()
        seen[key] = seen.get(key, 0) + 1
        keys.append(key if seen[key] == 1 else f"{key}#{seen[key]}")
    return keys


def _same(a: str, b: str) -> bool:
    return a.rstrip() == b.rstrip()


def merge_blocks(base: str, ours: str, theirs: str, *, items: bool, strict: bool) -> str | None:
    """Three-way merge of markdown blocks; None when both sides changed one block.

    Blocks only one side added are all kept (theirs after ours at the same
    place); a block one side changed and the other left alone takes the change;
    a block one side removed and the other left alone is removed. ``strict``
    (ledger files) also refuses when both sides changed text without a block id.
    """
    parts: dict[str, list[tuple[str, str]]] = {}
    for name, text in (("base", base), ("ours", ours), ("theirs", theirs)):
        chunks = _split_chunks(text, items)
        parts[name] = list(zip(_chunk_keys(chunks), chunks, strict=True))
    b_map = dict(parts["base"])
    o_map = dict(parts["ours"])
    t_map = dict(parts["theirs"])
    if strict:

        def free(side: str) -> list[str]:
            return sorted(v.rstrip() for k, v in parts[side] if not k.startswith("id:"))

        fb, fo, ft = free("base"), free("ours"), free("theirs")
        if fo != fb and ft != fb and fo != ft:
            return None
    out: list[tuple[str, str, bool]] = []  # (key, text, inserted from theirs)
    for key, text in parts["ours"]:
        if key in t_map:
            theirs_text = t_map[key]
            if _same(text, theirs_text):
                out.append((key, text, False))
            elif key in b_map and _same(text, b_map[key]):
                out.append((key, _keep_tail(theirs_text, text), False))
            elif key in b_map and _same(theirs_text, b_map[key]):
                out.append((key, text, False))
            else:
                return None  # the same block changed differently on both sides
        elif key in b_map:
            if not _same(text, b_map[key]):
                return None  # theirs removed a block ours changed
            # theirs removed it and ours left it alone: removed
        else:
            out.append((key, text, False))  # added by ours
    for key, text in parts["theirs"]:
        if key in b_map and key not in o_map and not _same(text, b_map[key]):
            return None  # ours removed a block theirs changed
    ours_added = {k for k, _ in parts["ours"] if k not in b_map and k not in t_map}
    position = {item[0]: n for n, item in enumerate(out)}
    inserts: dict[int, list[tuple[str, str, bool]]] = {}  # after out[n] (-1: at the top)
    anchor = -1
    for key, text in parts["theirs"]:
        if key in position:
            anchor = position[key]
            continue
        if key in b_map:
            continue  # ours removed it
        while anchor + 1 < len(out) and out[anchor + 1][0] in ours_added:
            anchor += 1  # theirs' additions go after ours' at the same place
        inserts.setdefault(anchor, []).append((key, text, True))
    merged = list(inserts.get(-1, []))
    for n, item in enumerate(out):
        merged.append(item)
        merged.extend(inserts.get(n, []))
    return _join(merged, newline="\r\n" if "\r\n" in ours else "\n")


def _keep_tail(new: str, old: str) -> str:
    """``new`` with the trailing blank lines ``old`` had (so spacing stays put)."""
    tail = old[len(old.rstrip()) :]
    return new.rstrip() + (tail or "")


def _join(chunks: list[tuple[str, str, bool]], newline: str) -> str:
    """Concatenate chunks; only around inserted ones add the line breaks a
    block needs (a final newline, a blank line before a heading)."""
    out: list[str] = []
    prev_new = False
    for _key, text, inserted in chunks:
        if out and not out[-1].endswith("\n"):
            out[-1] += newline
        heading = _is_heading(text.lstrip("\r\n"))
        if out and (inserted or prev_new) and heading and not out[-1].endswith(newline * 2):
            out[-1] += newline
        out.append(text)
        prev_new = inserted
    if out and (prev_new or len(chunks) > 1) and not out[-1].endswith("\n"):
        out[-1] += newline
    return "".join(out)


def _merge_file_args(base: str, ours: str, theirs: str) -> list[str]:
    return ["merge-file", "-p", "-L", "ours", "-L", "base", "-L", "theirs", ours, base, theirs]


def _git_merge_file(base: str, ours: str, theirs: str) -> tuple[int, bytes]:
    """git's own line merge (exit status = number of conflicts), in the driver process.

    The driver is a child of a git command started by GitStore: this git
    inherits its safe settings through ``GIT_CONFIG_PARAMETERS``.
    """
    import subprocess  # imported here: the driver starts once per merged file

    proc = subprocess.run(
        ["git", *_merge_file_args(base, ours, theirs)],
        capture_output=True,
        stdin=subprocess.DEVNULL,
    )
    return proc.returncode, proc.stdout


def _read_texts(*files: str) -> list[str]:
    texts = []
    for file in files:
        with open(file, "rb") as handle:
            texts.append(handle.read().decode("utf-8", "surrogateescape"))
    return texts


def _merge_paths(
    base: str,
    ours: str,
    theirs: str,
    path: str,
    mode: str,
    line_merge: Callable[[str, str, str], tuple[int, bytes]] = _git_merge_file,
) -> tuple[bytes, bool]:
    """(merged bytes, clean?) for the three files git hands a merge driver.

    Append-only files try the block merge first (no subprocess: the common
    case of both sides appending); ledgers try git's line merge first, and the
    block merge only where it conflicts. Either way a clean git line merge is
    accepted, and anything else is a conflict with git's markers in ``ours``.
    ``line_merge`` is git's line merge (``git merge-file``).
    """
    posix = path.replace("\\", "/")
    if posix.endswith(".md.jsonl") and "/.fields/" in "/" + posix:
        return _merge_fields(*_read_texts(base, ours, theirs))
    name = posix.rsplit("/", 1)[-1]
    if name.endswith(".earlier.md"):
        mode = "default"  # a memory file's archive: list items, merged as its note is
        name = name[: -len(".earlier.md")] + ".md"
    blockwise = mode in ("union", "blocks") or (name in _LEDGER_NAMES and path.endswith(".md"))
    if mode == "union":
        texts = _read_texts(base, ours, theirs)
        result = merge_blocks(texts[0], texts[1], texts[2], items=False, strict=False)
        if result is not None:
            return result.encode("utf-8", "surrogateescape"), True
    status, merged = line_merge(base, ours, theirs)
    if status == 0:
        return merged, True
    if blockwise and mode != "union":
        texts = _read_texts(base, ours, theirs)
        result = merge_blocks(texts[0], texts[1], texts[2], items=True, strict=True)
        if result is not None:
            return result.encode("utf-8", "surrogateescape"), True
    if status < 0 or status > 127:  # binary or unreadable: leave ours in place
        with open(ours, "rb") as handle:
            return handle.read(), False
    return merged, False


def _merge_fields(base: str, ours: str, theirs: str) -> tuple[bytes, bool]:
    """A fields file (mdmem.files.sidecar), merged as sets of record lines: ours,
    less what theirs took out since the base, then what theirs added. Clean
    unless both sides set the same field of the same memory to different
    values since the base (as two edits of one line conflict); then the file
    holds both records and git reports the conflict."""
    import json  # imported here: only a fields file needs it

    base_lines = set(base.splitlines())
    their_lines = theirs.splitlines()
    gone = base_lines - set(their_lines)  # records theirs took out (a revert, a purge)
    ours_lines = [line for line in ours.splitlines() if line not in gone]
    have = set(ours_lines)
    added = [line for line in their_lines if line not in have and line not in base_lines]
    newline = "\r\n" if "\r\n" in ours else "\n"
    merged = newline.join([*ours_lines, *added]) + (newline if ours_lines or added else "")

    def changes(lines: list[str]) -> dict[tuple[str, str], object]:
        out: dict[tuple[str, str], object] = {}
        for line in lines:
            if line in base_lines or not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict):
                for key, value in record.items():
                    if key not in ("id", "at"):
                        out[(str(record.get("id")), key)] = value
        return out

    mine, yours = changes(ours_lines), changes(added)
    clean = all(yours[k] == v for k, v in mine.items() if k in yours)
    return merged.encode("utf-8", "surrogateescape"), clean


def _driver_main(argv: list[str]) -> int:
    """git merge driver: ``<mode> %O %A %B %P``; writes the result into %A."""
    mode, base, ours, theirs, path = argv[1:6]
    merged, clean = _merge_paths(base, ours, theirs, path, mode)
    with open(ours, "wb") as handle:
        handle.write(merged)
    return 0 if clean else 1


# <<< merge driver


def merge_texts(base: str, ours: str, theirs: str, path: str, mode: str = "union") -> str | None:
    """Merge three versions as the driver would; None when they conflict."""
    with tempfile.TemporaryDirectory(prefix="mdmem-merge-") as tmp:
        folder = Path(tmp)
        git = GitStore(folder)

        def line_merge(base: str, ours: str, theirs: str) -> tuple[int, bytes]:
            status, out, _err = git.execute_bytes(*_merge_file_args(base, ours, theirs))
            return status, out

        files = []
        for name, text in (("base", base), ("ours", ours), ("theirs", theirs)):
            file = folder / name
            file.write_bytes(text.encode("utf-8", "surrogateescape"))
            files.append(str(file))
        merged, clean = _merge_paths(files[0], files[1], files[2], path, mode, line_merge)
    return merged.decode("utf-8", "surrogateescape") if clean else None
