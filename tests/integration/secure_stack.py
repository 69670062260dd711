"""The secured local stack for tests: started on its own ports and state dir, one principal per
component (``stack.sh up --secure``), and helpers to build each component's settings."""

from __future__ import annotations

import os
import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from opensearchpy import OpenSearch
from pydantic import SecretStr

from backscroll.indexer import OpenSearchSettings
from backscroll.ingest import KafkaSettings

REPO = Path(__file__).resolve().parents[2]
STACK = REPO / "deploy" / "local" / "stack.sh"
#: Own ports and state dir: never the shared stack's (9092/9093/9200/9300).
ENV = {
    "BACKSCROLL_STACK_DIR": os.environ.get("BACKSCROLL_SECURE_STACK_DIR", "/var/tmp/sl-secure"),
    "BACKSCROLL_KAFKA_PORT": "29092",
    "BACKSCROLL_KAFKA_CONTROLLER_PORT": "29093",
    "BACKSCROLL_OPENSEARCH_PORT": "29200",
    "BACKSCROLL_OPENSEARCH_TRANSPORT_PORT": "29300",
}
DLS_WORKSPACE = "workspace-a"


def stack(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BACKSCROLL_")}
    env.update(ENV, BACKSCROLL_STACK_DLS_WORKSPACE=DLS_WORKSPACE)
    return subprocess.run(
        ["bash", str(STACK), *args], env=env, capture_output=True, text=True, timeout=900, check=False
    )


def read_env(path: Path) -> dict[str, str]:
    values: dict[str, str] = {}
    for line in path.read_text().splitlines():
        name, sep, value = line.partition("=")
        if sep and not name.startswith("#"):
            values[name] = value
    return values


@dataclass(frozen=True)
class Secured:
    """The running secured stack and each component's client settings."""

    dir: Path
    components: dict[str, dict[str, str]]
    prefix: str

    @property
    def tls(self) -> Path:
        return self.dir / "secure" / "tls"

    @property
    def ca(self) -> Path:
        return self.tls / "ca.pem"

    def passwords(self) -> list[str]:
        return [v for k, v in read_env(self.dir / "secure" / "secrets.env").items() if k != "#"]

    def kafka(self, component: str, **update: object) -> KafkaSettings:
        env = self.components[component]
        settings = KafkaSettings(
            bootstrap_servers=env["BACKSCROLL_KAFKA_BOOTSTRAP_SERVERS"],
            topic=env["BACKSCROLL_KAFKA_TOPIC"],
            security_protocol="SASL_SSL",
            sasl_mechanism="SCRAM-SHA-512",
            sasl_username=env["BACKSCROLL_KAFKA_SASL_USERNAME"],
            sasl_password=SecretStr(env["BACKSCROLL_KAFKA_SASL_PASSWORD"]),
            ssl_cafile=self.ca,
            bootstrap_timeout_s=5.0,
            request_timeout_s=30.0,
        )
        return settings.model_copy(update=update)

    def opensearch(self, component: str, **update: object) -> OpenSearchSettings:
        env = self.components[component]
        settings = OpenSearchSettings(
            url=env["BACKSCROLL_OPENSEARCH_URL"],
            username=env["BACKSCROLL_OPENSEARCH_USERNAME"],
            password=SecretStr(env["BACKSCROLL_OPENSEARCH_PASSWORD"]),
            ca_certs=self.ca,
            index_prefix=self.prefix,
            timeout_s=60.0,  # a fresh node on a busy CI machine answers its first searches slowly
        )
        return settings.model_copy(update=update)

    def admin(self) -> OpenSearch:
        """A client authenticated by the security admin certificate (test setup only)."""
        url = self.components["query"]["BACKSCROLL_OPENSEARCH_URL"]
        return OpenSearch(
            hosts=[url],
            ca_certs=str(self.ca),
            client_cert=str(self.tls / "admin.pem"),
            client_key=str(self.tls / "admin.key"),
            verify_certs=True,
            timeout=20,
        )


def load(prefix: str) -> Secured:
    root = Path(ENV["BACKSCROLL_STACK_DIR"])
    env_dir = root / "secure" / "env"
    components = {p.stem: read_env(p) for p in env_dir.glob("*.env")}
    return Secured(root, components, prefix)


def sign_cert(secured: Secured, out: Path, *, san: str, days: int) -> tuple[Path, Path]:
    """A server certificate signed by the stack's CA (``days`` < 0: already expired)."""
    key, csr, pem, ext = out / "srv.key", out / "srv.csr", out / "srv.pem", out / "srv.ext"
    ext.write_text(f"subjectAltName={san}\n")
    ca_key = str(secured.tls / "ca.key")
    request = ["openssl", "req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-subj"]
    sign = ["openssl", "x509", "-req", "-in", str(csr), "-CA", str(secured.ca), "-CAkey", ca_key]
    run = [
        [*request, "/CN=test-server", "-out", str(csr)],
        [
            *sign,
            "-CAcreateserial",
            "-CAserial",
            str(out / "ca.srl"),
            "-days",
            str(days),
            "-extfile",
            str(ext),
            "-out",
            str(pem),
        ],
    ]
    for cmd in run:
        subprocess.run(cmd, check=True, capture_output=True, timeout=60)
    return pem, key


@contextmanager
def tls_server(cert: Path, key: Path) -> Iterator[int]:
    """A TLS endpoint presenting ``cert`` on 127.0.0.1 (handshakes only); yields its port."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(cert), str(key))
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(5)
            try:
                with context.wrap_socket(conn, server_side=True) as tls:
                    tls.recv(1)
            except (OSError, ssl.SSLError):
                conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join(timeout=5)
        listener.close()
