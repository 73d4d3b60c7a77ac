"""`mdmem init` on a folder that already has a life: adopt it, don't flatten it.

A new vault is the template, committed by the agent. A folder with notes in
it (an Obsidian vault, a git repository of notes) is the person's:

* their files are committed first, as theirs (their git identity, or the
  author given), in a commit of their own; in a repository, that is the work
  they had not committed yet, which mdmem would otherwise commit at its first
  write. A secret typed into one is redacted in what git gets (see
  :mod:`mdmem.store.typed_secrets`). Editor state the template ignores
  (``.obsidian/workspace.json``, ``.trash/``) is not committed;
* the template is merged in, never over theirs: a file they have is kept;
  an Obsidian vault's ``.obsidian/`` is left byte for byte (not one file
  added or merged: ``mdmem doctor`` names the setting that hides tool
  outputs from Obsidian's search, for them to add); ``.gitignore`` and
  ``.gitattributes`` gain the lines they lack;
* the agent's commit holds only what mdmem added or merged;
* :class:`Adoption` says what happened, for ``mdmem init`` to print.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mdmem.errors import GitError, InvalidInputError, Spelled
from mdmem.store.gitstore import GitStore, Identity, format_message
from mdmem.store.typed_secrets import kept_in_files
from mdmem.store.vaultdir import check_new_vault, set_default_agent, template_dir

__all__ = ["Adoption", "adopt", "commit_mdmem", "parse_author"]

_AUTHOR = re.compile(r"\s*([^<>]*?)\s*<([^<>\s]+@[^<>\s]+)>\s*")
_LINE_FILES = (".gitignore", ".gitattributes")  # merged line by line
_HEADER = "# Added by mdmem init"
_OBSIDIAN_KEPT = "your Obsidian settings, not a byte changed (mdmem doctor says what to hide)"


@dataclass
class Adoption:
    """What ``mdmem init`` found in the folder and did with it."""

    root: str
    was_repository: bool = False
    had_files: int = 0  # the person's files before mdmem (not .git)
    person: str | None = None  # "Name <email>" the person's commit is authored as
    person_commit: str | None = None
    committed: list[str] = field(default_factory=list)  # what that commit took in
    kept_out: dict[str, list[str]] = field(default_factory=dict)  # path -> secrets redacted
    created: list[str] = field(default_factory=list)  # template files added
    merged: dict[str, list[str]] = field(default_factory=dict)  # settings file -> what it gained
    kept: list[str] = field(default_factory=list)  # template files the person had: left as theirs
    left_alone: dict[str, str] = field(default_factory=dict)  # settings not merged, and why
    agent_commit: str | None = None

    @property
    def adopted(self) -> bool:
        return self.had_files > 0

    def lines(self) -> list[str]:
        """What happened, for a person to read."""
        if not self.adopted:
            return [f"initialised mdmem vault at {self.root}"]
        out = [f"adopted {self.root} ({self.had_files} files of yours) as an mdmem vault"]
        if self.person_commit:
            what = "your uncommitted work" if self.was_repository else "your files"
            out.append(
                f"  committed {what} ({len(self.committed)} files) as {self.person}: "
                f"{self.person_commit[:10]}"
            )
        elif self.was_repository:
            out.append("  your repository had nothing uncommitted")
        for path, kinds in sorted(self.kept_out.items()):
            out.append(
                f"  {path} holds a {', '.join(kinds)}: committed with it redacted, "
                "the file keeps it (remove it; `mdmem doctor` lists it)"
            )
        for path, gained in sorted(self.merged.items()):
            out.append(f"  {path}: kept every setting of yours, added {', '.join(gained)}")
        for path, why in sorted(self.left_alone.items()):
            out.append(f"  {path}: left as it is ({why})")
        if self.kept:
            out.append(f"  kept your {', '.join(sorted(self.kept))}")
        if self.created:
            out.append(f"  added {len(self.created)} files of the template")
        if self.agent_commit:
            out.append(f"  mdmem's own files are in the agent's commit {self.agent_commit[:10]}")
        return out


def parse_author(author: str) -> Identity:
    """``"Name <email>"`` as a git identity, or InvalidInputError."""
    match = _AUTHOR.fullmatch(author)
    if match is None or not match.group(1):
        raise InvalidInputError(f"author {author!r} is not in the form 'Name <email>'")
    return Identity(match.group(1), match.group(2))


def adopt(root: Path, *, agent: str | None, author: str | None) -> Adoption:
    """Make ``root`` a vault: git, the person's commit, then the template merged in.

    The agent's commit of mdmem's files (:func:`commit_mdmem`) comes once the
    vault is open: the agent's name is one of its settings.
    """
    check_new_vault(root, agent)
    root.mkdir(parents=True, exist_ok=True)
    template = template_dir()
    report = Adoption(str(root.resolve()))
    git = GitStore(root)
    report.was_repository = git.is_repo()
    if report.was_repository:
        busy = git.operation_in_progress()
        if busy:
            raise InvalidInputError(f"{root} is in the middle of a git {busy}: finish it first")
    report.had_files = len(_files(root))
    person = None
    if not report.was_repository:
        # Who the files are committed as is settled before anything changes.
        person = _person(git, author, root, report.had_files) if report.had_files else None
        GitStore.init(root)
    if report.had_files:
        _commit_theirs(git, root, template, person or author, report)
    _merge_template(root, template, report)
    if agent is not None:
        set_default_agent(root, agent)
    return report


def commit_mdmem(git: GitStore, agent: Identity, report: Adoption) -> None:
    """The agent's commit: what mdmem added or merged, nothing of the person's."""
    paths = [*report.created, *report.merged]
    message = format_message("init: mdmem vault", trailers=[("Op", "init")])
    report.agent_commit = git.commit(message, agent, paths=paths) if paths else None


# ---------------------------------------------------------------- internals --


def _files(root: Path) -> list[str]:
    out = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        base = Path(folder).relative_to(root)
        out += [(base / name).as_posix() for name in names]
    return out


def _person(git: GitStore, author: Identity | str | None, root: Path, count: int) -> Identity:
    if isinstance(author, Identity):
        return author
    if author:
        return parse_author(author)
    name = git.config("user.name") or os.environ.get("GIT_AUTHOR_NAME", "")
    email = git.config("user.email") or os.environ.get("GIT_AUTHOR_EMAIL", "")
    if not name or not email:
        raise InvalidInputError.naming(
            f"{root} holds {count} files of yours to commit as yours, but git does not "
            "know who you are: set git config user.name and user.email, or pass ",
            Spelled("author='Name <email>'", "--author 'Name <email>'"),
        )
    return Identity(name, email)


def _commit_theirs(
    git: GitStore, root: Path, template: Path, author: Identity | str | None, report: Adoption
) -> None:
    """Commit what the person had and git didn't, as the person.

    A file holding a secret is staged with the secret redacted, and never
    whole: ``git add`` would write its blob into the object store.
    """
    # The template's ignore rules apply to this commit too (editor state,
    # trash), through the repository's own exclude file, put back after.
    exclude = root / git.run("rev-parse", "--git-path", "info/exclude")
    before = exclude.read_bytes() if exclude.exists() else None
    rules = (template / ".gitignore").read_text(encoding="utf-8")
    exclude.parent.mkdir(parents=True, exist_ok=True)
    exclude.write_bytes((before or b"") + b"\n" + rules.encode("utf-8"))
    try:
        paths = git.dirty_paths()
        if not paths:
            return
        person = _person(git, author, root, len(paths))
        head = git.head()
        kept = kept_in_files(root, git, paths, "refuse")
        plain = [rel for rel in paths if rel not in kept]
        literal = {"GIT_LITERAL_PATHSPECS": "1"}
        if plain:
            listed = "\0".join(plain).encode("utf-8", "surrogateescape")
            code, _, err = git.execute_bytes(
                "add",
                "-A",
                "--pathspec-from-file=-",
                "--pathspec-file-nul",
                input=listed,
                env=literal,
            )
            if code != 0:
                raise GitError(f"git add: {err.decode(errors='replace').strip()}")
    finally:
        if before is None:
            exclude.unlink()
        else:
            exclude.write_bytes(before)
    for rel, found in kept.items():
        _, blob, _ = git.execute_bytes("hash-object", "-w", "--stdin", input=found.data)
        mode = "100755" if os.access(root / rel, os.X_OK) else "100644"
        git.run("update-index", "--add", "--cacheinfo", f"{mode},{blob.decode().strip()},{rel}")
        report.kept_out[rel] = list(dict.fromkeys(found.kinds))
    subject = "adopt: the work left uncommitted" if head else "adopt: the files as they were"
    message = format_message(
        subject,
        "Committed by `mdmem init` as the person's own, before mdmem added its files.",
        trailers=[("Op", "adopt")],
    )
    git.run("commit", "-q", "--no-verify", "-m", message, env=person.env())
    report.person = f"{person.name} <{person.email}>"
    report.person_commit = git.head()
    report.committed = paths


def _merge_template(root: Path, template: Path, report: Adoption) -> None:
    # An Obsidian vault's settings are the person's: not a byte of .obsidian/
    # changes (doctor says what mdmem would hide from its search, and how).
    theirs_obsidian = (root / ".obsidian").is_dir()
    if theirs_obsidian:
        report.left_alone[".obsidian/"] = _OBSIDIAN_KEPT
    for rel in sorted(_files(template)):
        if theirs_obsidian and rel.startswith(".obsidian/"):
            continue
        source, target = template / rel, root / rel
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
            report.created.append(rel)
        elif rel in _LINE_FILES:
            _merge_lines(source, target, rel, report)
        elif rel.startswith(".obsidian/") and rel.endswith(".json"):
            _merge_json(source, target, rel, report)
        elif rel != "mdmem.toml" and not rel.endswith(".gitkeep"):
            report.kept.append(rel)


def _merge_lines(source: Path, target: Path, rel: str, report: Adoption) -> None:
    theirs = target.read_text(encoding="utf-8", errors="surrogateescape")
    have = {line.strip() for line in theirs.splitlines()}
    missing = [
        line
        for line in source.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#") and line.strip() not in have
    ]
    if not missing:
        return
    joiner = "" if theirs.endswith("\n") or not theirs else "\n"
    added = "\n".join([_HEADER, *missing]) + "\n"
    target.write_text(theirs + joiner + "\n" + added, encoding="utf-8", errors="surrogateescape")
    report.merged[rel] = [f"{len(missing)} lines"]


def _merge_json(source: Path, target: Path, rel: str, report: Adoption) -> None:
    try:
        theirs = json.loads(target.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        report.left_alone[rel] = "not JSON mdmem can read"
        return
    ours = json.loads(source.read_text(encoding="utf-8"))
    gained: list[str] = []
    merged = _merge_value(theirs, ours, gained, "")
    if merged is None:
        report.left_alone[rel] = "its shape differs from the template's"
        return
    if gained:
        target.write_text(json.dumps(merged, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        report.merged[rel] = gained


def _merge_value(theirs: Any, ours: Any, gained: list[str], where: str) -> Any:
    """Theirs, with what ours has and theirs lacks; None when the two can't merge."""
    if isinstance(theirs, dict) and isinstance(ours, dict):
        out = dict(theirs)
        for key, value in ours.items():
            if key not in out:
                out[key] = value
                gained.append(f"{where}{key}")
            else:
                inner = _merge_value(out[key], value, gained, f"{where}{key}.")
                if inner is not None:
                    out[key] = inner
        return out
    if isinstance(theirs, list) and isinstance(ours, list):
        missing = [item for item in ours if item not in theirs]
        if missing:
            gained.append(f"{len(missing)} {where.rstrip('.') or 'list'} entries")
        return theirs + missing
    if type(theirs) is type(ours) or where:
        return theirs  # a value of theirs wins over ours, always
    return None
