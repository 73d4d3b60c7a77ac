"""Ids: unique across processes, sortable by time, decodable."""

from __future__ import annotations

import multiprocessing
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from mdmem.errors import InvalidInputError
from mdmem.files.ids import IdIssuer, id_time, is_memory_id, new_id_text, normalize_id


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


def test_issuers_sharing_a_counter_never_collide(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two issuers (as two processes would) in the same milliseconds: each
    reserves spare sequence numbers, and neither hands out the other's."""
    clock = [1_800_000_000_000]  # ms; read half-way through the millisecond
    monkeypatch.setattr("mdmem.files.ids.time.time", lambda: (clock[0] + 0.5) / 1000)
    a, b = IdIssuer(tmp_path), IdIssuer(tmp_path)
    issued: dict[str, list[str]] = {"a": [], "b": []}
    for step in range(600):
        if step % 50 == 0:
            clock[0] += 1
        name, issuer = ("a", a) if step % 3 else ("b", b)
        issued[name].append(issuer.issue())
    everything = issued["a"] + issued["b"]
    assert len(set(everything)) == len(everything)
    assert issued["a"] == sorted(issued["a"]) and issued["b"] == sorted(issued["b"])
    # No id's time part runs ahead of (or lags) the clock it was issued at.
    times = {id_time(i) for i in everything}
    assert len(times) == 12


def test_spare_numbers_are_not_used_once_the_clock_moves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = [1_800_000_000_000]
    monkeypatch.setattr("mdmem.files.ids.time.time", lambda: (clock[0] + 0.5) / 1000)
    issuer = IdIssuer(tmp_path)
    first = issuer.issue()
    clock[0] += 5000
    later = issuer.issue()
    assert (id_time(later) - id_time(first)).total_seconds() == pytest.approx(5.0)  # type: ignore[operator]


@pytest.mark.parametrize(
    "text", ["m-01jd3k5x7q0000", "^m-01jd3k5x7q0000", "USER.md#^m-01jd3k5x7q0000"]
)
def test_normalize_id(text: str) -> None:
    assert normalize_id(text) == "m-01jd3k5x7q0000"


@pytest.mark.parametrize("text", ["", "m-", "x-01jd3k5x7q", "m-UPPER00000", "../m-01jd3k5x7q"])
def test_normalize_rejects(text: str) -> None:
    with pytest.raises(InvalidInputError):
        normalize_id(text)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_draws_its_own_random_tails() -> None:
    # Ids of one (ms, seq) differ only in their random tail.
    new_id_text(0)  # the parent's pool of tails is filled before the fork
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.write(write_end, "".join(new_id_text(0) for _ in range(64)).encode())
        os._exit(0)
    os.close(write_end)
    os.waitpid(pid, 0)
    child = os.read(read_end, 4096).decode()
    os.close(read_end)
    parent = "".join(new_id_text(0) for _ in range(64))
    assert len(child) == len(parent) == 64 * len(new_id_text(0))
    assert child != parent
