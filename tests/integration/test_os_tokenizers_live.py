"""The real server's tokenizers split text as ``textfold`` does (the provider scores, excerpts and
plans queries with it): every word and identifier of any text, through the analysis the product
gives its indices, and a 1 MiB word in one pass."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from tests.contracts.token_texts import TOKEN_TEXTS

from backscroll.indexer import OpenSearchSettings, OpenSearchView
from backscroll.indexer.opensearch.analysis import analysis_settings
from backscroll.indexer.opensearch.mappings import events_alias
from backscroll.indexer.textfold import ident_tokens, word_tokens


@pytest.fixture(scope="module")
def view() -> Iterator[OpenSearchView]:
    settings_ = OpenSearchSettings().model_copy(update={"index_prefix": f"test-an{uuid.uuid4().hex[:8]}"})
    view = OpenSearchView(settings_)
    view.ensure_schema()
    # The tokenizers alone, as analyzers built once (an ad hoc one is built again on each request).
    analysis = analysis_settings()
    analysis["analyzer"]["t_words"] = {"type": "custom", "tokenizer": "sl_words"}
    analysis["analyzer"]["t_idents"] = {
        "type": "custom",
        "tokenizer": "sl_idents",
        "filter": ["sl_joined", "sl_non_empty"],
    }
    view.client.indices.create(index=_tokens(view), body={"settings": {"analysis": analysis}})
    try:
        yield view
    finally:
        view.client.indices.delete(index=_tokens(view))
        view.drop()
        view.close()


def _tokens(view: OpenSearchView) -> str:
    return f"{view.prefix}-tokens"


def _analyze(view: OpenSearchView, text: str, analyzer: str, index: str | None = None) -> list[str]:
    answer = view.client.indices.analyze(
        index=index or events_alias(view.prefix),
        body={"text": text, "analyzer": analyzer},
        request_timeout=60,
    )
    return [token["token"] for token in answer["tokens"]]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=TOKEN_TEXTS)
def test_the_servers_words_and_identifiers_are_textfolds(view: OpenSearchView, text: str) -> None:
    assert _analyze(view, text, "t_words", _tokens(view)) == word_tokens(text)
    assert _analyze(view, text, "t_idents", _tokens(view)) == ident_tokens(text)


@pytest.mark.parametrize(
    ("text", "idents"),
    [
        ("get_type foo.bar 2.2.1-3 __init__.py eu-west-1", ["get_type", "foo.bar", "2.2.1-3", "eu-west-1"]),
        ("sha256:" + "ab" * 32, ["sha256:" + "ab" * 32]),
        ("a.-b c. .d", []),
        ("用Python写 types.Mapping", ["types.mapping"]),
    ],
)
def test_identifier_analyzer(view: OpenSearchView, text: str, idents: list[str]) -> None:
    assert _analyze(view, text, "sl_ident") == idents


def test_a_one_mib_word_is_one_pass(view: OpenSearchView) -> None:
    """An automaton that failed inside a word would start again at each of its characters: a 1 MiB
    word without a joiner would then take ~10^12 steps. The request would time out."""
    blob = "0123456789abcdef" * (1 << 16)
    assert _analyze(view, f"see {blob} end", "sl_ident") == []
    assert _analyze(view, f"see {blob} end", "sl_folded") == ["see", blob[:256], "end"]
    assert _analyze(view, f"{blob}_x", "sl_ident") == [blob[:256]]
