"""Security failures become one typed line naming the server and the cause; secrets stay out."""

from __future__ import annotations

import logging
import ssl
from typing import Any

import pytest
from kafka.errors import GroupAuthorizationFailedError, TopicAuthorizationFailedError
from opensearchpy.exceptions import AuthenticationException, AuthorizationException
from opensearchpy.exceptions import ConnectionError as OSConnectionError
from pydantic import SecretStr

from backscroll.indexer.errors import ViewAccessDenied
from backscroll.indexer.opensearch.security import deny, item_failure, security_failure
from backscroll.indexer.settings import OpenSearchSettings
from backscroll.ingest.errors import LogAccessDenied
from backscroll.ingest.kafka.security import translate
from backscroll.ingest.settings import KafkaSettings
from backscroll.ingest.tls import describe_tls_error

SECRET = "s3cr3t-Value-never-printed"


def _kafka() -> KafkaSettings:
    return KafkaSettings(
        bootstrap_servers="broker.example:9093",
        security_protocol="SASL_SSL",
        sasl_mechanism="SCRAM-SHA-512",
        sasl_username="sl-agent",
        sasl_password=SecretStr(SECRET),
    )


def _opensearch() -> OpenSearchSettings:
    return OpenSearchSettings(url="https://os.example:9200", username="sl-query", password=SecretStr(SECRET))


def _verify_error(code: int, message: str) -> ssl.SSLCertVerificationError:
    err = ssl.SSLCertVerificationError(
        1, f"[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: {message}"
    )
    err.verify_code = code
    err.verify_message = message
    return err


@pytest.mark.parametrize(
    ("code", "message", "expected"),
    [
        (10, "certificate has expired", "has expired"),
        (19, "self-signed certificate in certificate chain", "unknown CA"),
        (20, "unable to get local issuer certificate", "unknown CA"),
        (62, "Hostname mismatch, certificate is not valid for 'x'.", "not valid for this host name"),
        (64, "IP address mismatch, certificate is not valid for '10.0.0.1'.", "not valid for this host name"),
    ],
)
def test_certificate_failures_are_named(code: int, message: str, expected: str) -> None:
    wrapped = OSConnectionError("N/A", "ssl", _verify_error(code, message))
    line = describe_tls_error(wrapped, "/etc/ca.pem")
    assert line is not None and expected in line
    line = security_failure(wrapped, _opensearch())
    assert (
        line is not None and line.startswith("OpenSearch https://os.example:9200: TLS") and expected in line
    )


def test_text_only_verify_failures_are_named() -> None:
    # urllib3 sometimes keeps only the message of the ssl error
    err = OSConnectionError("N/A", "x", Exception("[SSL: CERTIFICATE_VERIFY_FAILED] certificate has expired"))
    line = security_failure(err, _opensearch())
    assert line is not None and "has expired" in line


def test_plain_connection_errors_are_not_security_failures() -> None:
    assert (
        security_failure(OSConnectionError("N/A", "refused", ConnectionRefusedError(111)), _opensearch())
        is None
    )


def test_opensearch_401_and_403_name_the_user_and_the_permission() -> None:
    settings = _opensearch()
    line = security_failure(AuthenticationException(401, "security_exception", {}), settings)
    assert line == (
        "OpenSearch https://os.example:9200: login as 'sl-query' was rejected "
        "(401: wrong password or unknown user)"
    )
    reason = "no permissions for [indices:data/write/bulk] and User [name=sl-query, backend_roles=[]]"
    denied = AuthorizationException(403, "security_exception", {"error": {"reason": reason}})
    line = security_failure(denied, settings)
    assert line is not None and "user 'sl-query' lacks permission indices:data/write/bulk (403)" in line
    with pytest.raises(ViewAccessDenied) as err:
        deny(denied, settings)
    assert not err.value.retriable
    item: dict[str, Any] = {"type": "security_exception", "reason": reason}
    assert "indices:data/write/bulk" in (item_failure(item, settings) or "")
    assert item_failure({"type": "index_not_found_exception"}, settings) is None


def test_missing_acl_names_principal_and_operation() -> None:
    err = translate(_kafka(), TopicAuthorizationFailedError("backscroll.entries.dlq"), "produce to the DLQ")
    assert isinstance(err, LogAccessDenied) and not err.retriable
    assert str(err) == (
        "Kafka broker.example:9093: principal 'sl-agent' is not allowed to produce to the DLQ: "
        "TopicAuthorizationFailed (backscroll.entries.dlq)"
    )
    err = translate(_kafka(), GroupAuthorizationFailedError("g"), "consume")
    assert "GroupAuthorizationFailed (g)" in str(err)


def test_secrets_stay_out_of_repr_and_kafka_debug_logs(caplog: pytest.LogCaptureFixture) -> None:
    kafka, opensearch = _kafka(), _opensearch()
    assert SECRET not in repr(kafka) + str(kafka) + repr(opensearch) + str(opensearch)
    config = kafka.client_config()  # holds the password for kafka-python and installs the filter
    assert config["sasl_plain_password"] == SECRET
    caplog.set_level(logging.DEBUG, logger="kafka")
    logging.getLogger("kafka.admin.client").debug("Starting KafkaAdminClient with configuration: %s", config)
    logging.getLogger("kafka.producer.kafka").debug("configs %s %s", "x", config)
    assert SECRET not in caplog.text
    assert "sasl_plain_password': '**********'" in caplog.text
    assert config["sasl_plain_password"] == SECRET  # the filter masks a copy, not the client's dict
