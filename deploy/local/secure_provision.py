"""Provision the secured local stack (called by ``stack.sh up --secure`` once both servers answer).

Kafka (as the broker's own super user ``sl-admin``): the entries and dead-letter topics, and the
ACLs of each component's principal. OpenSearch (through the ``CN=backscroll-admin`` client
certificate): the internal users with their passwords (roles and role mappings come from the
security plugin's yml files that stack.sh writes). Then one ``env/<component>.env`` per component
with the client settings it needs. Idempotent: run on every secured ``up``.

Secrets come from ``$SEC_DIR/secrets.env`` and go to the servers in request bodies only; nothing
secret is printed.
"""

from __future__ import annotations

import contextlib
import json
import os
import ssl
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from kafka import KafkaAdminClient
from kafka.admin import (
    ACL,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    NewTopic,
    ResourcePattern,
    ResourceType,
)
from kafka.errors import KafkaError, TopicAlreadyExistsError

SEC_DIR = Path(os.environ["SEC_DIR"])
TLS = SEC_DIR / "tls"
KAFKA = os.environ["SEC_KAFKA"]
TOPIC = os.environ.get("SEC_TOPIC", "backscroll.entries")
DLQ = f"{TOPIC}.dlq"
GROUP = os.environ.get("SEC_GROUP", "backscroll-indexer")
OPENSEARCH = os.environ.get("SEC_OPENSEARCH", "")

LITERAL = ACLResourcePatternType.LITERAL
PREFIXED = ACLResourcePatternType.PREFIXED
Op = ACLOperation

#: principal -> [(resource type, name, pattern type, operations)]: the Kafka half of the
#: principal x permission table in docs/security.md.
KAFKA_ACLS: dict[str, list[tuple[ResourceType, str, ACLResourcePatternType, list[ACLOperation]]]] = {
    "sl-agent": [(ResourceType.TOPIC, TOPIC, LITERAL, [Op.WRITE, Op.DESCRIBE])],
    "sl-indexer": [
        (ResourceType.TOPIC, TOPIC, LITERAL, [Op.READ, Op.DESCRIBE]),
        (ResourceType.GROUP, GROUP, LITERAL, [Op.READ]),
        (ResourceType.TOPIC, DLQ, LITERAL, [Op.WRITE, Op.DESCRIBE]),
    ],
    "sl-operator": [
        (ResourceType.TOPIC, TOPIC, LITERAL, [Op.READ, Op.WRITE, Op.DESCRIBE, Op.CREATE]),
        (ResourceType.TOPIC, DLQ, LITERAL, [Op.READ, Op.DESCRIBE, Op.CREATE]),
        (ResourceType.GROUP, "backscroll-", PREFIXED, [Op.READ]),
    ],
}

#: component -> (Kafka principal or None, OpenSearch principal or None)
COMPONENTS: dict[str, tuple[str | None, str | None]] = {
    "agent": ("sl-agent", "sl-query"),
    "indexer": ("sl-indexer", "sl-indexer"),
    "query": (None, "sl-query"),
    "query-scoped": (None, "sl-query-scoped"),
    "operator": ("sl-operator", "sl-operator"),
}


def secrets() -> dict[str, str]:
    values: dict[str, str] = {}
    for line in (SEC_DIR / "secrets.env").read_text().splitlines():
        name, sep, value = line.partition("=")
        if sep and not name.startswith("#"):
            values[name.strip()] = value.strip()
    return values


def var(prefix: str, user: str) -> str:
    return f"{prefix}_{user.replace('-', '_').upper()}"


def kafka_admin(secret: dict[str, str], timeout_ms: int = 20_000) -> KafkaAdminClient:
    return KafkaAdminClient(
        bootstrap_servers=KAFKA,
        security_protocol="SASL_SSL",
        sasl_mechanism="SCRAM-SHA-512",
        sasl_plain_username="sl-admin",
        sasl_plain_password=secret["KAFKA_SL_ADMIN"],
        ssl_cafile=str(TLS / "ca.pem"),
        request_timeout_ms=timeout_ms,
        bootstrap_timeout_ms=timeout_ms,
    )


def probe() -> int:
    """Exit 0 when the broker answers a metadata request over SASL_SSL as sl-admin."""
    try:
        admin = kafka_admin(secrets(), 4_000)
        try:
            admin.list_topics()
        finally:
            admin.close()
    except KafkaError:
        return 1
    return 0


def provision_kafka(secret: dict[str, str]) -> int:
    admin = kafka_admin(secret)
    try:
        existing = set(admin.list_topics())
        configs = {"max.message.bytes": str(5 * 1024 * 1024), "retention.ms": "-1"}
        wanted = [
            NewTopic(name, parts, 1, topic_configs=configs)
            for name, parts in ((TOPIC, 4), (DLQ, 1))
            if name not in existing
        ]
        if wanted:
            with contextlib.suppress(TopicAlreadyExistsError):
                admin.create_topics(wanted)
        acls = [
            ACL(f"User:{user}", "*", op, ACLPermissionType.ALLOW, ResourcePattern(rtype, name, ptype))
            for user, rules in KAFKA_ACLS.items()
            for rtype, name, ptype, ops in rules
            for op in ops
        ]
        result = admin.create_acls(acls)
        if result["failed"]:
            acl, err = result["failed"][0]
            raise SystemExit(f"secure_provision: creating Kafka ACL {acl} failed: {err}")
        return len(acls)
    finally:
        admin.close()


def os_request(context: ssl.SSLContext, method: str, path: str, body: object | None = None) -> object:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"{OPENSEARCH}{path}", data=data, method=method)
    request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, context=context, timeout=20) as response:
        return json.loads(response.read() or b"{}")


def provision_opensearch(secret: dict[str, str]) -> int:
    context = ssl.create_default_context(cafile=str(TLS / "ca.pem"))
    context.load_cert_chain(str(TLS / "admin.pem"), str(TLS / "admin.key"))
    users = sorted({u for _, u in COMPONENTS.values() if u})
    deadline = time.monotonic() + 120
    for user in users:
        # reserved: the account API refuses a reserved user's own password change, so one stolen
        # password cannot lock every process that shares the principal out
        body = {
            "password": secret[var("OPENSEARCH", user)],
            "description": "backscroll component principal",
            "reserved": True,
        }
        while True:
            try:
                os_request(context, "PUT", f"/_plugins/_security/api/internalusers/{user}", body)
                break
            except urllib.error.HTTPError as err:
                # 5xx while the security index is still initialising (or on a busy machine)
                if err.code < 500 or time.monotonic() > deadline:
                    detail = err.read()[:300].decode(errors="replace")
                    message = f"secure_provision: creating OpenSearch user {user}: {err.code} {detail}"
                    raise SystemExit(message) from None
                time.sleep(1)
    return len(users)


def write_env_files(secret: dict[str, str]) -> None:
    env_dir = SEC_DIR / "env"
    env_dir.mkdir(mode=0o700, exist_ok=True)
    ca = TLS / "ca.pem"
    for component, (kafka_user, os_user) in COMPONENTS.items():
        lines = [f"# backscroll client settings of the {component} component (secured local stack)"]
        lines.append("BACKSCROLL_BACKEND=kafka-opensearch")
        if kafka_user:
            lines += [
                f"BACKSCROLL_KAFKA_BOOTSTRAP_SERVERS={KAFKA}",
                f"BACKSCROLL_KAFKA_TOPIC={TOPIC}",
                "BACKSCROLL_KAFKA_SECURITY_PROTOCOL=SASL_SSL",
                "BACKSCROLL_KAFKA_SASL_MECHANISM=SCRAM-SHA-512",
                f"BACKSCROLL_KAFKA_SASL_USERNAME={kafka_user}",
                f"BACKSCROLL_KAFKA_SASL_PASSWORD={secret[var('KAFKA', kafka_user)]}",
                f"BACKSCROLL_KAFKA_SSL_CAFILE={ca}",
            ]
        if os_user:
            lines += [
                f"BACKSCROLL_OPENSEARCH_URL={OPENSEARCH}",
                f"BACKSCROLL_OPENSEARCH_USERNAME={os_user}",
                f"BACKSCROLL_OPENSEARCH_PASSWORD={secret[var('OPENSEARCH', os_user)]}",
                f"BACKSCROLL_OPENSEARCH_CA_CERTS={ca}",
            ]
        if component == "indexer":
            lines.append(f"BACKSCROLL_INDEXER_GROUP_ID={GROUP}")
        path = env_dir / f"{component}.env"
        fd = os.open(path.with_suffix(".tmp"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write("\n".join(lines) + "\n")
        os.replace(path.with_suffix(".tmp"), path)


def main() -> int:
    if sys.argv[1:] == ["--probe"]:
        return probe()
    secret = secrets()
    try:
        acls = provision_kafka(secret)
    except KafkaError as err:
        print(f"secure_provision: Kafka at {KAFKA}: {type(err).__name__}: {err}", file=sys.stderr)
        return 1
    try:
        users = provision_opensearch(secret)
    except (urllib.error.URLError, OSError) as err:
        print(f"secure_provision: OpenSearch at {OPENSEARCH}: {err}", file=sys.stderr)
        return 1
    write_env_files(secret)
    print(f"[stack] secure: {acls} Kafka ACLs, {users} OpenSearch users, topics {TOPIC} and {DLQ}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
