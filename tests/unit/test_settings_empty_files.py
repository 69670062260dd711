"""An empty file setting (``BACKSCROLL_OPENSEARCH_CA_CERTS=``) says it is empty, not "file not found: .",
the misdiagnosis a blank line of an env file used to produce."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from backscroll.indexer import OpenSearchSettings
from backscroll.ingest import KafkaSettings


@pytest.mark.parametrize(
    ("model", "variable"),
    [
        (OpenSearchSettings, "BACKSCROLL_OPENSEARCH_CA_CERTS"),
        (KafkaSettings, "BACKSCROLL_KAFKA_SSL_CAFILE"),
        (KafkaSettings, "BACKSCROLL_KAFKA_SSL_CERTFILE"),
        (KafkaSettings, "BACKSCROLL_KAFKA_SSL_KEYFILE"),
    ],
)
@pytest.mark.parametrize("blank", ["", "  "])
def test_an_empty_file_setting_says_it_is_empty(
    model: type[OpenSearchSettings] | type[KafkaSettings],
    variable: str,
    blank: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(variable, blank)
    with pytest.raises(ValidationError) as refused:
        model()
    message = str(refused.value)
    assert "is empty" in message
    assert "file not found" not in message
