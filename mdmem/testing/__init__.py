"""Test helpers shipped with mdmem.

:class:`ScriptedOpenAIServer` is a real HTTP server on 127.0.0.1 that speaks
enough of the OpenAI protocol (chat completions, embeddings, models) for
tests, examples and demos to exercise the real ``openai`` SDK end to end
without a network or an API key.
"""

from __future__ import annotations

from mdmem.testing.openai_server import Reply, ScriptedOpenAIServer, rule_based_responder

__all__ = ["Reply", "ScriptedOpenAIServer", "rule_based_responder"]
