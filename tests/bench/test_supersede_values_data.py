"""bench/data/supersede-values.json: the one-value update set keeps its shape."""

from __future__ import annotations

from tests.bench.scripts import load_bench


def test_the_set_has_enough_updates_and_look_alikes_and_no_pair_twice() -> None:
    bench = load_bench("supersede_values", as_name="bench_supersede_values")
    dev, dev_kinds = bench.load("dev")
    held, held_kinds = bench.load("held-out")
    for pairs, kinds in ((dev, dev_kinds), (held, held_kinds)):
        labels = [label for *_, label in pairs]
        assert set(labels) == {"update", "distinct"} and all(kinds)
        # Each half alone can measure "8 of 10 caught, 0 false" with some room.
        assert labels.count("update") >= 40 and labels.count("distinct") >= 80
        assert all(old.strip() and new.strip() and old != new for old, new, _ in pairs)
    texts = [(old, new) for old, new, _ in [*dev, *held]]
    assert len(set(texts)) == len(texts)  # the held-out half repeats no dev pair
