"""Ids: unique across processes, sortable by time, decodable."""

from __future__ import annotations

import multiprocessing
from datetime import UTC, datetime
from pathlib import Path

import pytest

from mdmem.errors import InvalidInputError
from mdmem.ids import IdIssuer, id_time, is_memory_id, normalize_id


def _issue_many(state: str, n: int, queue: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    issuer = IdIssuer(Path(state))
    queue.put([issuer.issue() for _ in range(n)])


def test_ids_are_unique_across_processes(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_issue_many, args=(str(tmp_path), 2000, queue)) for _ in range(4)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    ids = [i for chunk in results for i in chunk]
    assert len(ids) == 8000 == len(set(ids))
    for chunk in results:
        assert chunk == sorted(chunk)  # each process sees strictly increasing ids


def test_ids_are_time_sortable_and_decode(tmp_path: Path) -> None:
    issuer = IdIssuer(tmp_path)
    before = datetime.now(UTC)
    ids = [issuer.issue() for _ in range(3000)]
    assert ids == sorted(ids) and len(set(ids)) == 3000
    created = id_time(ids[0])
    assert created is not None and abs((created - before).total_seconds()) < 2
    assert all(is_memory_id(i) for i in ids)


@pytest.mark.parametrize(
    "text", ["m-01jd3k5x7q0000", "^m-01jd3k5x7q0000", "USER.md#^m-01jd3k5x7q0000"]
)
def test_normalize_id(text: str) -> None:
    assert normalize_id(text) == "m-01jd3k5x7q0000"


@pytest.mark.parametrize("text", ["", "m-", "x-01jd3k5x7q", "m-UPPER00000", "../m-01jd3k5x7q"])
def test_normalize_rejects(text: str) -> None:
    with pytest.raises(InvalidInputError):
        normalize_id(text)
