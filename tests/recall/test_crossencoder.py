"""The cross-encoder reranker provider and the model re-rank of recall, with scripted models.

No model weights exist in a test: the ONNX route runs a real ``tokenizer.json``
(built here with the ``tokenizers`` package) and a scripted stand-in for
``onnxruntime`` whose "model" scores a memory by the query tokens it shares;
the sentence-transformers route a stand-in ``CrossEncoder`` that records how
it was loaded.
"""

from __future__ import annotations

import logging
import sys
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any, ClassVar

import numpy as np
import pytest

from mdmem import Vault
from mdmem.config import load_settings
from mdmem.errors import ConfigError
from mdmem.models import Hit, Recall
from mdmem.providers import crossencoder, registry
from mdmem.recall import model_rerank

WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "deploy", "runs", "on", "tuesday", "cat"]
WORDS += ["is", "named", "moon", "when", "does", "my", "which", "day", "staging", "database"]


def write_tokenizer(folder: Path) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    vocab = {w: i for i, w in enumerate(WORDS)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", 2), ("[SEP]", 3)],
    )
    tok.save(str(folder / "tokenizer.json"))


class ScriptedSession:
    """onnxruntime.InferenceSession's stand-in: one logit per pair, the number of
    the memory's tokens (type 1) that the query (type 0) has too."""

    runs: ClassVar[list[dict[str, np.ndarray]]] = []

    def __init__(self, path: str, providers: list[str]) -> None:
        assert Path(path).name == "model.onnx" and providers == ["CPUExecutionProvider"]

    def get_inputs(self) -> list[SimpleNamespace]:
        return [SimpleNamespace(name=n) for n in ("input_ids", "attention_mask", "token_type_ids")]

    def run(self, outputs: None, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        self.runs.append(feed)
        assert all(a.dtype == np.int64 for a in feed.values())
        logits = []
        for ids, mask, types in zip(
            feed["input_ids"], feed["attention_mask"], feed["token_type_ids"], strict=True
        ):
            query = {i for i, m, t in zip(ids, mask, types, strict=True) if m and t == 0 and i > 3}
            memory = [i for i, m, t in zip(ids, mask, types, strict=True) if m and t == 1 and i > 3]
            logits.append([float(sum(i in query for i in memory))])
        return [np.asarray(logits, dtype=np.float32)]


@pytest.fixture
def onnx_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    fake = ModuleType("onnxruntime")
    fake.InferenceSession = ScriptedSession  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "onnxruntime", fake)
    ScriptedSession.runs = []
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "model.onnx").write_bytes(b"scripted")
    write_tokenizer(folder)
    return folder


def hit(memory_id: str, score: float) -> Hit:
    return Hit(
        id=memory_id,
        path="MEMORY.md",
        line_start=1,
        line_end=1,
        heading="",
        text=f"text of {memory_id}",
        kind="fact",
        tags=(),
        status="active",
        created=datetime(2024, 1, 1, tzinfo=UTC),
        score=score,
        scores={},
    )


def settings_for(folder: Path | str, **extra: Any) -> Any:
    return load_settings(
        None,
        env={},
        recall={"reranker": "cross-encoder", "reranker_model": str(folder), **extra},
    )


def test_the_onnx_route_scores_query_and_memory_together(onnx_model: Path) -> None:
    reranker = registry.build("reranker", "cross-encoder", settings=settings_for(onnx_model))
    texts = ["the cat is named moon", "the deploy runs on tuesday", "staging database"]
    scores = reranker.rerank("which day does the deploy run", texts)
    assert scores == [1.0, 2.0, 0.0]  # shared tokens, as the scripted model counts them
    feed = ScriptedSession.runs[-1]
    assert feed["input_ids"].shape[0] == 3  # one batch, padded to one length
    assert set(feed) == {"input_ids", "attention_mask", "token_type_ids"}


def test_recall_puts_its_top_hits_in_the_models_order(onnx_model: Path, tmp_path: Path) -> None:
    vault = Vault.init(
        tmp_path / "v",
        embedder={"provider": "hash"},
        recall={
            "reranker": "cross-encoder",
            "reranker_model": str(onnx_model),
            "min_vector": -1.0,  # both memories are candidates
        },
    )
    for text in ("the staging database is on the port", "deploy tuesday"):
        vault.remember(text)
    query = "is the deploy on the tuesday"
    plain = Vault.open(tmp_path / "v", recall={"min_vector": -1.0})
    assert plain.recall(query, k=2).items[0].text == "deploy tuesday"  # the first stage
    plain.close()
    result = vault.recall(query, k=2)
    assert result.reranked
    # The scripted model counts every shared token ("is", "the", "on", "the"): 4 to 2.
    assert [h.text for h in result.items] == [
        "the staging database is on the port",
        "deploy tuesday",
    ]
    assert [h.scores["reranker"] for h in result.items] == [4.0, 2.0]
    vault.close()


def test_a_reranker_that_cannot_load_leaves_recall_as_it_was(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    vault = Vault.init(
        tmp_path / "v",
        embedder={"provider": "hash"},
        recall={"reranker": "cross-encoder", "reranker_model": str(tmp_path / "nowhere")},
    )
    vault.remember("the deploy runs on tuesday")
    vault.remember("the staging database is on port 5433")
    with caplog.at_level(logging.WARNING, logger="mdmem"):
        result = vault.recall("deploy tuesday", k=2)
        vault.recall("deploy tuesday", k=2)
    assert not result.reranked and result.items
    assert caplog.text.count("is not a folder") == 1  # said once, not at every recall
    vault.close()


def test_without_a_reranker_setting_nothing_is_built(tmp_path: Path) -> None:
    vault = Vault.init(tmp_path / "v", embedder={"provider": "hash"})
    vault.remember("the deploy runs on tuesday")
    vault.remember("the staging database is on port 5433")
    assert not vault.recall("deploy", k=2).reranked
    assert model_rerank.Reranking(vault.settings).reranker is None
    vault.close()


def test_setting_errors_are_one_line_config_errors(tmp_path: Path, onnx_model: Path) -> None:
    with pytest.raises(ConfigError, match="needs \\[recall\\] reranker_model"):
        crossencoder.CrossEncoderReranker(settings=settings_for(""))
    with pytest.raises(ConfigError, match="is not a folder"):
        crossencoder.CrossEncoderReranker(settings=settings_for(tmp_path / "missing"))
    (onnx_model / "tokenizer.json").unlink()
    with pytest.raises(ConfigError, match=r"no tokenizer\.json"):
        crossencoder.CrossEncoderReranker(settings=settings_for(onnx_model))
    with pytest.raises(ConfigError, match="reranker_top"):
        load_settings(None, env={}, recall={"reranker_top": 0})


def test_missing_optional_packages_name_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    onnx = tmp_path / "onnx"
    onnx.mkdir()
    (onnx / "model.onnx").write_bytes(b"x")
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import fails
    with pytest.raises(ConfigError, match=r"mdmem\[onnx\]"):
        crossencoder.CrossEncoderReranker(settings=settings_for(onnx))
    st = tmp_path / "st"
    st.mkdir()
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(ConfigError, match=r"mdmem\[st\]"):
        crossencoder.CrossEncoderReranker(settings=settings_for(st))


def test_the_sentence_transformers_route_loads_the_folder_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loaded: list[tuple[str, dict[str, Any]]] = []

    class CrossEncoder:
        def __init__(self, path: str, **kwargs: Any) -> None:
            loaded.append((path, kwargs))

        def predict(self, pairs: list[tuple[str, str]], batch_size: int) -> np.ndarray:
            return np.asarray([len(set(q.split()) & set(t.split())) for q, t in pairs])

    fake = ModuleType("sentence_transformers")
    fake.CrossEncoder = CrossEncoder  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sentence_transformers", fake)
    folder = tmp_path / "st-model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    reranker = crossencoder.CrossEncoderReranker(settings=settings_for(folder))
    assert reranker.rerank("deploy day", ["the deploy day", "cats"]) == [2.0, 0.0]
    assert loaded == [(str(folder), {"max_length": 512, "local_files_only": True})]


def test_a_reranker_answering_nonsense_leaves_the_order(caplog: pytest.LogCaptureFixture) -> None:
    result = Recall(query="q", items=[hit("m-a", 0.9), hit("m-b", 0.8), hit("m-c", 0.7)])

    class Short:
        def rerank(self, query: str, texts: list[str]) -> list[float]:
            return [1.0]

    class Raises:
        def rerank(self, query: str, texts: list[str]) -> list[float]:
            raise RuntimeError("model exploded")

    with caplog.at_level(logging.WARNING, logger="mdmem"):
        assert model_rerank.rerank(Short(), result, top=3) is result
        assert model_rerank.rerank(Raises(), result, top=3) is result
    assert "1 scores for 3 hits" in caplog.text and "model exploded" in caplog.text

    class Reverse:
        def rerank(self, query: str, texts: list[str]) -> list[float]:
            return [float(i) for i in range(len(texts))]

    out = model_rerank.rerank(Reverse(), result, top=2)
    assert [h.id for h in out.items] == ["m-b", "m-a", "m-c"]  # only the top 2 reordered
