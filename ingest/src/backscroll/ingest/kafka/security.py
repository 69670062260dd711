"""Turn Kafka security failures into one clear line naming the server and the cause.

kafka-python reports a rejected password, an untrusted certificate or a plain-text port alike as
``Unable to bootstrap`` after its timeout. :func:`diagnose` finds the real cause with one direct
attempt (TCP, then the TLS handshake with the configured CA, then the client's SASL login), and
:func:`translate` maps a driver exception to a typed error. Secrets never enter a message.
"""

from __future__ import annotations

import gc
import socket
import ssl
import warnings

from kafka.errors import (
    AuthorizationError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    SaslAuthenticationFailedError,
)

from backscroll.ingest.errors import IngestError, LogAccessDenied, LogUnavailable
from backscroll.ingest.kafka.errors import translate_kafka_error
from backscroll.ingest.settings import KafkaSettings
from backscroll.ingest.tls import describe_tls_error

__all__ = ["diagnose", "translate"]


def _reap_failed_clients() -> None:
    """Finalise the sockets a kafka-python client leaves behind when its constructor fails to
    bootstrap (it keeps no handle to close them): now, quietly, instead of at a random later GC."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()


def _tls_context(settings: KafkaSettings) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(settings.ssl_cafile) if settings.ssl_cafile else None)
    if settings.ssl_certfile:
        context.load_cert_chain(
            str(settings.ssl_certfile), str(settings.ssl_keyfile) if settings.ssl_keyfile else None
        )
    return context


def _sasl_login(settings: KafkaSettings, timeout_s: float) -> str | None:
    """Log in once with kafka-python (the TLS part is known good); a cause line or None."""
    from kafka import KafkaAdminClient

    config = settings.client_config()
    config["bootstrap_timeout_ms"] = int(timeout_s * 1000)
    config["request_timeout_ms"] = int(timeout_s * 1000)
    try:
        KafkaAdminClient(**config).close()
    except (SaslAuthenticationFailedError, KafkaTimeoutError, KafkaConnectionError):
        _reap_failed_clients()
    except KafkaError as err:
        _reap_failed_clients()
        return f"{type(err).__name__}"
    else:
        return None
    return (
        f"SASL {settings.sasl_mechanism} login as {settings.sasl_username!r} was rejected "
        "(wrong password, unknown user, or a mechanism the listener does not enable)"
    )


def _speaks_tls(raw: socket.socket, host: str, timeout: float) -> bool:
    """Whether the listener answers a TLS handshake (certificates unchecked: only the protocol)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    raw.settimeout(timeout)
    try:
        with context.wrap_socket(raw, server_hostname=host):
            return True
    except (ssl.SSLError, OSError):
        return False


def diagnose(settings: KafkaSettings, timeout_s: float | None = None) -> str | None:
    """Find why the bootstrap servers cannot be used; a one-line cause, or None if they can."""
    timeout = min(timeout_s or settings.bootstrap_timeout_s, 10.0)
    protocol = settings.security_protocol
    for server in (s.strip() for s in settings.bootstrap_servers.split(",")):
        host, _, port = server.rpartition(":")
        host = host.strip("[]")
        try:
            raw = socket.create_connection((host, int(port)), timeout=timeout)
        except OSError as err:
            return f"Kafka {server}: cannot connect ({err.strerror or type(err).__name__})"
        try:
            if protocol in ("PLAINTEXT", "SASL_PLAINTEXT") and _speaks_tls(raw, host, timeout):
                return (
                    f"Kafka {server}: the listener speaks TLS, but the security protocol is {protocol} "
                    "(set BACKSCROLL_KAFKA_SECURITY_PROTOCOL to SSL or SASL_SSL)"
                )
            if protocol in ("SSL", "SASL_SSL"):
                try:
                    with _tls_context(settings).wrap_socket(raw, server_hostname=host) as tls:
                        tls.settimeout(timeout)
                except (ssl.SSLError, OSError) as err:
                    cause = describe_tls_error(err, settings.ssl_cafile)
                    return f"Kafka {server}: {cause or f'TLS handshake failed ({err})'}"
        finally:
            raw.close()
        if protocol in ("SASL_SSL", "SASL_PLAINTEXT"):
            cause = _sasl_login(settings, timeout)
            if cause is not None:
                return f"Kafka {server}: {cause}"
    return None


def translate(settings: KafkaSettings, err: KafkaError, doing: str) -> IngestError:
    """The typed error for a kafka-python exception raised while ``doing`` something."""
    who = f"principal {settings.sasl_username!r}" if settings.sasl_username else "this client"
    if isinstance(err, AuthorizationError):
        what = type(err).__name__.removesuffix("Error")
        detail = f" ({err.args[0]})" if err.args and isinstance(err.args[0], str) else ""
        return LogAccessDenied(
            f"Kafka {settings.bootstrap_servers}: {who} is not allowed to {doing}: {what}{detail}"
        )
    if isinstance(err, (KafkaTimeoutError, KafkaConnectionError)):
        _reap_failed_clients()
        cause = diagnose(settings)
        if cause is not None and ("TLS" in cause or "SASL" in cause):
            return LogAccessDenied(f"cannot {doing}: {cause}")
        if cause is not None:
            return LogUnavailable(f"cannot {doing}: {cause}")
    return translate_kafka_error(err, f"cannot {doing} at {settings.bootstrap_servers}")
