"""One phrase for a TLS failure found anywhere in an exception's causes, for Kafka and OpenSearch.

Needs only the standard library, so both drivers' error edges share it without loading each other.
"""

from __future__ import annotations

import ssl
from typing import Final

__all__ = ["describe_tls_error"]

#: OpenSSL X509 verify codes worth naming (the rest keep OpenSSL's own words).
_VERIFY: Final[dict[int, str]] = {
    2: "its certificate is not signed by a CA in the trusted bundle (unknown CA)",
    10: "its certificate has expired",
    9: "its certificate is not yet valid",
    18: "it presents a self-signed certificate that is not trusted",
    19: "its certificate is not signed by a CA in the trusted bundle (unknown CA)",
    20: "its certificate is not signed by a CA in the trusted bundle (unknown CA)",
    21: "its certificate is not signed by a CA in the trusted bundle (unknown CA)",
    62: "its certificate is not valid for this host name",
    64: "its certificate is not valid for this host name (IP address mismatch)",
}


def describe_tls_error(err: BaseException, ca: object | None = None) -> str | None:
    """A phrase for a TLS failure found in ``err`` or its causes; None when it is not one."""
    seen: set[int] = set()
    todo: list[object] = [err]
    while todo:
        item = todo.pop()
        if not isinstance(item, BaseException) or id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, ssl.SSLCertVerificationError):
            phrase = _VERIFY.get(item.verify_code, f"certificate verification failed: {item.verify_message}")
            if item.verify_code in (2, 18, 19, 20, 21) and ca is not None:
                phrase += f" - trusted CA file {ca}"
            return f"TLS: the server was refused because {phrase}"
        if isinstance(item, ssl.SSLError):
            reason = item.reason or item.strerror or "ssl error"
            return f"TLS handshake failed ({reason}) - is this a TLS port?"
        text = str(item)
        if "CERTIFICATE_VERIFY_FAILED" in text:  # urllib3 sometimes keeps only the text
            code = 62 if "mismatch" in text else 10 if "expired" in text else 20
            suffix = f" - trusted CA file {ca}" if ca is not None and code == 20 else ""
            return f"TLS: the server was refused because {_VERIFY[code]}{suffix}"
        todo.extend([item.__cause__, item.__context__, *getattr(item, "args", ())])
        for attr in ("reason", "info", "orig"):
            todo.append(getattr(item, attr, None))
    return None
