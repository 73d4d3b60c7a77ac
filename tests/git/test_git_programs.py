"""A vault's own .git/config never makes mdmem's git calls run a program.

Each case plants settings in the vault's ``.git/config`` (and the
attributes in ``.git/info/attributes`` that point files at them) whose
program would touch a marker file, then runs every git-backed feature:
remember, resolve, history, diff, provenance/blame, time travel, sync with a
second clone (the rebase merges both sides) and purge. No marker may appear;
settings git cannot be talked out of make the commands that need them refuse
with a GitError naming the setting. ``doctor`` lists every setting.
"""

from __future__ import annotations

import os
import pty
import shlex
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import pytest

from mdmem import GitError, Vault
from mdmem.store.gitstore import GitStore

from ..conftest import git

WHEN = datetime(2026, 1, 15, 10, 0)

# Variables that would override the config under test (the user's own choices).
_USER_GIT_VARIABLES = (
    "GIT_ALLOW_PROTOCOL",
    "GIT_ASKPASS",
    "SSH_ASKPASS",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_EDITOR",
    "GIT_SEQUENCE_EDITOR",
    "VISUAL",
    "EDITOR",
    "GIT_PAGER",
    "PAGER",
    "GIT_EXTERNAL_DIFF",
    "GIT_PROXY_COMMAND",
    "GIT_CONFIG_COUNT",
    "GIT_CONFIG_PARAMETERS",
)


class Programs:
    """Shell scripts standing in for a planted program; each touches its own marker."""

    def __init__(self, root: Path) -> None:
        self.bin = root / "bin"
        self.markers = root / "markers"
        self.bin.mkdir()
        self.markers.mkdir()

    def __call__(self, name: str, body: str = "exit 1") -> str:
        path = self.bin / name
        marker = shlex.quote(str(self.markers / name))
        path.write_text(f"#!/bin/sh\ntouch {marker}\n{body}\n", encoding="utf-8")
        path.chmod(0o755)
        return str(path)

    def ran(self) -> list[str]:
        return sorted(p.name for p in self.markers.iterdir())


@dataclass
class Shared:
    """A vault synced to a local bare remote, and a second clone of it."""

    vault: Vault
    clone: Vault
    remote: Path
    ids: list[str] = field(default_factory=list)  # four memories in MEMORY.md


@pytest.fixture
def programs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Programs:
    for name in _USER_GIT_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return Programs(tmp_path)


@pytest.fixture
def shared(tmp_path: Path, programs: Programs) -> Shared:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    vault = Vault.init(tmp_path / "vault", agent="agent-a")
    git(vault.root, "remote", "add", "origin", str(remote))
    ids = [
        vault.remember(text).id
        for text in (
            "The office plant is a monstera",
            "The kitchen kettle takes two minutes",
            "The lift is serviced on Mondays",
            "The printer on floor 3 jams on A3 paper",
        )
    ]
    vault.log("Watered the monstera", when=WHEN)
    assert vault.git.sync().ok
    git(tmp_path, "clone", "-q", str(remote), str(tmp_path / "clone"))
    clone = Vault.open(tmp_path / "clone", agent="agent-b")
    return Shared(vault, clone, remote, ids)


def plant(vault: Vault, settings: dict[str, str], attributes: str = "") -> None:
    """Write settings into the vault's .git/config, attributes into .git/info/attributes."""
    for key, value in settings.items():
        git(vault.root, "config", "--add", key, value)
    if attributes:
        info = vault.root / ".git" / "info"
        info.mkdir(exist_ok=True)
        (info / "attributes").write_text(attributes, encoding="utf-8")


def exercise(shared: Shared, *, sync_refused: str | None = None) -> None:
    """Every git-backed feature once, with both clones changing the same files."""
    vault, clone = shared.vault, shared.clone
    then = vault.git.head()
    assert then is not None
    # The clone changes the last memory in place and logs to the same day.
    clone.resolve(shared.ids[3])
    clone.log("Agent B restocked the printer", when=WHEN)
    assert clone.git.sync().ok
    # The vault changes the first memory in place, logs to the same day, remembers.
    vault.resolve(shared.ids[0])
    vault.log("Agent A checked the printer", when=WHEN)
    vault.remember("The staging server is called blue-falcon", kind="world")
    assert [v.text for v in vault.history(shared.ids[0])][:1] == ["The office plant is a monstera"]
    assert vault.git.changes(then).remembered
    assert vault.git.provenance(shared.ids[1]).authors == ("agent-a",)
    vault.git.blame("MEMORY.md", 1, 3)
    hits = vault.recall("office plant monstera", as_of=then)
    assert shared.ids[0] in [h.id for h in hits.items]
    # The porcelain diffs no feature needs yet: the wrapper keeps them safe too.
    assert "blue-falcon" in vault.admin.store.git.run("diff", then, "HEAD")
    assert "blue-falcon" in vault.admin.store.git.run("show", "HEAD")
    if sync_refused is None:
        result = vault.git.sync()
        assert result.ok, result.conflicts
        assert vault.get(shared.ids[3]).status == "resolved"  # the clone's change came in
    else:
        with pytest.raises(GitError, match=sync_refused):
            vault.git.sync()
    secret = vault.remember("The archive door code is 8812-lima for the basement")
    vault.git.purge(secret.id, confirm=True)
    # Through mdmem's git: plain git here would run the planted programs itself.
    assert "8812-lima" not in vault.admin.store.git.run("log", "--all", "-p")


def make_signed_head(root: Path) -> None:
    """Give HEAD a (fake) GPG signature, so `git log --show-signature` would run GPG."""
    raw = git(root, "cat-file", "commit", "HEAD")
    header, _sep, message = raw.partition("\n\n")
    signature = (
        "gpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEzBAABCAAdFiEEmdmemmdmemmdmem\n"
        " -----END PGP SIGNATURE-----"
    )
    signed = f"{header}\n{signature}\n\n{message}"
    sha = subprocess.run(
        ["git", "hash-object", "-t", "commit", "-w", "--stdin"],
        cwd=root,
        input=signed,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    git(root, "update-ref", "HEAD", sha)


# ------------------------------------------------------------ the classes --


@dataclass(frozen=True)
class Case:
    settings: Callable[[Programs, Shared], dict[str, str]]
    attributes: str = ""
    setup: Callable[[Programs, Shared], None] | None = None
    sync_refused: str | None = None  # the GitError sync raises instead of syncing
    listed: tuple[str, ...] = ()  # keys doctor must list


def _alternates(programs: Programs, shared: Shared) -> None:
    alternates = shared.vault.root / ".git" / "objects" / "info" / "alternates"
    alternates.write_text(str(shared.clone.root / ".git" / "objects") + "\n", encoding="utf-8")


def _signed(programs: Programs, shared: Shared) -> None:
    make_signed_head(shared.vault.root)


CASES = {
    "filter": Case(
        lambda p, s: {
            "filter.evil.clean": p("clean", "exec cat"),
            "filter.evil.smudge": p("smudge", "exec cat"),
            "filter.evil.process": p("process"),
            "filter.evil.required": "true",
        },
        "* filter=evil\n",
        listed=("filter.evil.clean", "filter.evil.smudge", "filter.evil.process"),
    ),
    "textconv": Case(
        lambda p, s: {"diff.evil.textconv": p("textconv", 'exec cat "$1"')},
        "*.md diff=evil\n",
        listed=("diff.evil.textconv",),
    ),
    "external-diff": Case(
        lambda p, s: {"diff.evil.command": p("command"), "diff.external": p("external")},
        "*.md diff=evil\n",
        listed=("diff.evil.command", "diff.external"),
    ),
    "merge-driver": Case(
        # exit 0 keeps "ours": a driver that silently drops the other side.
        lambda p, s: {
            "merge.evil.driver": p("driver", "exit 0") + " %O %A %B",
            "merge.mdmem-append.driver": p("append-driver", "exit 0") + " %O %A %B",
            "merge.union.driver": p("union-driver", "exit 0") + " %O %A %B",
        },
        "MEMORY.md merge=evil\n",
        listed=("merge.evil.driver", "merge.mdmem-append.driver", "merge.union.driver"),
    ),
    "upload-pack": Case(
        lambda p, s: {
            "remote.origin.uploadpack": p("uploadpack"),
            "remote.origin.receivepack": p("receivepack"),
        },
        sync_refused=r"remote\.origin\.uploadpack in .*mdmem doctor",
        listed=("remote.origin.uploadpack", "remote.origin.receivepack"),
    ),
    "alternate-refs": Case(
        lambda p, s: {"core.alternateRefsCommand": p("alternate-refs")},
        setup=_alternates,
        listed=("core.alternaterefscommand",),
    ),
    "gpg": Case(
        lambda p, s: {
            "gpg.program": p("gpg"),
            "gpg.ssh.program": p("gpg-ssh"),
            "log.showSignature": "true",
            "commit.gpgSign": "true",
            "merge.verifySignatures": "true",
        },
        setup=_signed,
        listed=("gpg.program", "gpg.ssh.program", "log.showsignature", "commit.gpgsign"),
    ),
    "hooks-and-fsmonitor": Case(
        lambda p, s: {"core.hooksPath": str(p.bin), "core.fsmonitor": p("fsmonitor")},
        listed=("core.hookspath", "core.fsmonitor"),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_features_never_run_a_program_the_vault_config_names(
    name: str, shared: Shared, programs: Programs
) -> None:
    case = CASES[name]
    # A hook under the planted hooksPath too, for the case that points there.
    programs("pre-commit")
    programs("post-commit")
    plant(shared.vault, case.settings(programs, shared), case.attributes)
    if case.setup is not None:
        case.setup(programs, shared)
    exercise(shared, sync_refused=case.sync_refused)
    assert programs.ran() == []
    listed = " ".join(
        p.detail for p in shared.vault.admin.doctor().problems if p.check == "git config"
    )
    for key in case.listed:
        assert key in listed.lower(), (key, listed)


def test_settings_from_included_files_are_neutralised_too(
    shared: Shared, programs: Programs, tmp_path: Path
) -> None:
    included = tmp_path / "included.cfg"
    included.write_text(
        f'[filter "evil"]\n\tclean = {programs("clean")}\n\tsmudge = {programs("smudge")}\n'
        "\trequired = true\n",
        encoding="utf-8",
    )
    on_branch = tmp_path / "on-branch.cfg"
    on_branch.write_text(f'[diff "evil"]\n\ttextconv = {programs("textconv")}\n', encoding="utf-8")
    plant(
        shared.vault,
        {"include.path": str(included), "includeIf.onbranch:main.path": str(on_branch)},
        "* filter=evil diff=evil\n",
    )
    exercise(shared)
    assert programs.ran() == []
    listed = " ".join(p.detail for p in shared.vault.admin.doctor().problems)
    assert "filter.evil.clean" in listed and str(included) in listed
    assert "diff.evil.textconv" in listed


def test_a_setting_added_after_opening_is_noticed_at_the_next_write(
    vault: Vault, programs: Programs, tmp_path: Path
) -> None:
    vault.remember("Written before the config changed")  # the guard is read and cached
    included = tmp_path / "later.cfg"
    included.write_text("[core]\n\tquotepath = off\n", encoding="utf-8")
    plant(vault, {"include.path": str(included)}, "* filter=evil\n")
    vault.remember("Written after an include was added")
    # Only the included file changes now; .git/config stays as it is.
    included.write_text(
        f'[filter "evil"]\n\tclean = {programs("clean")}\n\trequired = true\n', encoding="utf-8"
    )
    m = vault.remember("Written after the included file changed")
    assert programs.ran() == []
    assert git(vault.root, "show", f"HEAD:{m.path}").count("after the included file") == 1


def test_a_subsection_name_with_an_equals_sign_is_neutralised(
    vault: Vault, programs: Programs
) -> None:
    # `-c filter.a=b.clean=` would set "filter.a" to "b.clean="; the overrides
    # travel in GIT_CONFIG_KEY_n / VALUE_n, which keep the name whole.
    plant(vault, {"filter.a=b.clean": programs("clean")}, "*.md filter=a=b\n")
    assert git(vault.root, "check-attr", "filter", "MEMORY.md").strip().endswith("a=b")
    m = vault.remember("A memory behind an oddly named filter")
    assert vault.history(m.id)
    assert programs.ran() == []


# -------------------------------------------- remotes, transports, prompts --


def test_remote_transports_that_run_programs_are_refused(
    shared: Shared, programs: Programs
) -> None:
    vault = shared.vault
    ext_marker = programs.markers / "ext"
    plant(
        vault,
        {
            "protocol.allow": "always",
            "protocol.ext.allow": "always",
            "remote.viaext.url": f"ext::sh -c touch% {ext_marker}",
            "remote.helper.url": f"sh -c touch% {programs.markers / 'vcs'}",
            "remote.helper.vcs": "ext",
            "remote.gitproto.url": "git://127.0.0.1:1/vault.git",
            "core.gitProxy": programs("git-proxy"),
        },
    )
    for remote, transport in (("viaext", "ext"), ("helper", "ext"), ("gitproto", "git")):
        with pytest.raises(GitError, match=f"'{transport}' transport, which mdmem does not allow"):
            vault.git.sync(remote=remote)
    assert vault.git.sync().ok  # file remotes still work
    assert programs.ran() == []
    listed = " ".join(p.detail for p in vault.admin.doctor().problems)
    for key in ("protocol.ext.allow", "remote.helper.vcs", "core.gitproxy"):
        assert key in listed


def test_ssh_remotes_use_ssh_not_the_vault_ssh_command(shared: Shared, programs: Programs) -> None:
    vault = shared.vault
    plant(
        vault,
        {
            "core.sshCommand": programs("ssh"),
            # Port 1 refuses at once: the real ssh fails fast, the planted one would run.
            "remote.viassh.url": "ssh://127.0.0.1:1/vault.git",
        },
    )
    with pytest.raises(GitError):
        vault.git.sync(remote="viassh")
    assert programs.ran() == []
    assert "core.sshcommand" in " ".join(p.detail for p in vault.admin.doctor().problems)


def test_credential_helpers_and_askpass_of_the_vault_never_run(
    vault: Vault, programs: Programs
) -> None:
    plant(
        vault,
        {
            "credential.helper": programs("helper"),
            "credential.https://example.org.helper": programs("url-helper"),
            "core.askPass": programs("askpass"),
        },
    )
    status, _out, _err = vault.admin.store.git.execute_bytes(
        "credential", "fill", input=b"protocol=https\nhost=example.org\n\n"
    )
    assert status != 0  # no helper of the user's, no prompt: no credentials
    assert programs.ran() == []
    listed = " ".join(p.detail for p in vault.admin.doctor().problems)
    assert "credential.helper" in listed and "core.askpass" in listed


def test_the_users_own_credential_helper_still_answers(
    vault: Vault, programs: Programs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    answer = tmp_path / "own-helper"
    answer.write_text("#!/bin/sh\necho username=me\necho password=mine\n", encoding="utf-8")
    answer.chmod(0o755)
    own = tmp_path / "own.gitconfig"
    own.write_text(f"[credential]\n\thelper = {answer}\n", encoding="utf-8")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(own))
    plant(vault, {"credential.helper": programs("helper")})
    out = vault.admin.store.git.run_bytes(
        "credential", "fill", input=b"protocol=https\nhost=example.org\n\n"
    )
    assert b"password=mine" in out
    assert programs.ran() == []


def test_editors_and_pagers_of_the_vault_never_run(vault: Vault, programs: Programs) -> None:
    vault.remember("One memory so there is a commit to rebase")
    plant(
        vault,
        {
            "core.editor": programs("editor"),
            "sequence.editor": programs("sequence-editor"),
            "core.pager": programs("pager", "exec cat"),
            "pager.log": programs("log-pager", "exec cat"),
        },
    )
    status, _out, _err = vault.admin.store.git.execute(
        "commit", "--allow-empty"
    )  # no -m: wants an editor
    assert status != 0
    vault.admin.store.git.run("rebase", "-q", "-i", "HEAD~1")
    # A pager starts only on a terminal: give git one.
    leader, follower = pty.openpty()
    try:
        proc = vault.admin.store.git.popen("log", "-1", stdout=follower, stderr=subprocess.DEVNULL)
        os.close(follower)
        assert proc.wait(timeout=30) == 0
    finally:
        os.close(leader)
    assert programs.ran() == []
    listed = " ".join(p.detail for p in vault.admin.doctor().problems)
    for key in ("core.editor", "sequence.editor", "core.pager", "pager.log"):
        assert key in listed


def test_settings_equal_to_the_users_own_are_not_reported(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `git lfs install --local` style: the vault repeats what the user has globally.
    own = tmp_path / "own.gitconfig"
    own.write_text('[filter "lfs"]\n\tclean = git-lfs clean -- %f\n', encoding="utf-8")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(own))
    plant(vault, {"filter.lfs.clean": "git-lfs clean -- %f"})
    assert vault.admin.store.git.program_settings() == ()
    assert vault.admin.doctor().ok


def test_a_folder_without_a_repository_reads_no_config(tmp_path: Path) -> None:
    store = GitStore(tmp_path)
    assert store.program_settings() == ()
    assert store.config_guard().overrides == ()
