"""The deploy files cannot run here (no Docker, no Kubernetes): check what can be checked.

Every YAML parses and has the keys its kind needs; every BACKSCROLL_* variable the files set is a
field of a settings model, and its value passes that model's validation; the probes, ports and
Prometheus annotations agree with each other and with the paths the real metrics server answers;
the Dockerfile's entrypoint is a command of the CLI.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import tomllib
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic_settings import BaseSettings

from backscroll.config_docs import env_variables, render_env_example, settings_models

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "k8s" / "base"
COMPOSE = DEPLOY / "compose.yaml"
DOCKERFILE = DEPLOY / "Dockerfile"
ENV_EXAMPLE = DEPLOY / "env.example"
REGENERATE = "run `python -m backscroll.config_docs --write`"
VARIABLE = re.compile(r"\bBACKSCROLL_[A-Z0-9_]+\b")
LOCAL_URL = re.compile(r"http://127\.0\.0\.1:(\d+)(/[a-z]+)")


# -- helpers ---------------------------------------------------------------------------------------
def _model_variables() -> dict[str, tuple[type[BaseSettings], str]]:
    """Variable name -> (model, field), from each model's env prefix and field names."""
    out: dict[str, tuple[type[BaseSettings], str]] = {}
    for model in settings_models():
        prefix = str(model.model_config.get("env_prefix") or "")
        assert prefix.startswith("BACKSCROLL_"), model
        for name in model.model_fields:
            out.setdefault(f"{prefix}{name}".upper(), (model, name))  # the first model owns it
    return out


def _k8s_docs() -> list[tuple[Path, dict[str, Any]]]:
    docs = []
    for path in sorted(K8S.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc is not None:
                docs.append((path, doc))
    return docs


def _k8s(kind: str) -> list[dict[str, Any]]:
    return [doc for _, doc in _k8s_docs() if doc.get("kind") == kind]


def _one(kind: str) -> dict[str, Any]:
    (doc,) = [d for d in _k8s(kind) if d["metadata"]["name"] != "backscroll-tls"]
    return doc


def _compose() -> dict[str, Any]:
    data = yaml.safe_load(COMPOSE.read_text())
    assert isinstance(data, dict)
    return data


def _environment(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):  # the KEY=value list form
        env = dict(item.split("=", 1) for item in env)
    return {str(k): str(v) for k, v in env.items()}


def _dockerfile() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    logical: list[str] = []
    pending = ""
    for raw in DOCKERFILE.read_text().splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        logical.append(pending + line)
        pending = ""
    assert not pending, "Dockerfile ends in a continuation"
    out = []
    for line in logical:
        instruction, _, args = line.partition(" ")
        out.append((instruction.upper(), args.strip()))
    return out


def _docker_env() -> dict[str, str]:
    env: dict[str, str] = {}
    for instruction, args in _dockerfile():
        if instruction == "ENV":
            for item in shlex.split(args):
                key, _, value = item.partition("=")
                env[key] = value
    return env


def _deployment_env() -> dict[str, str]:
    return {str(k): str(v) for k, v in _one("ConfigMap")["data"].items()}


def _probe_urls(probe: dict[str, Any]) -> list[tuple[int, str]]:
    """(port, path) a probe reaches, from an httpGet or from an exec command holding a URL."""
    if "httpGet" in probe:
        return [(int(probe["httpGet"]["port"]), probe["httpGet"]["path"])]
    command = " ".join(probe["exec"]["command"])
    return [(int(port), path) for port, path in LOCAL_URL.findall(command)]


def _assert_valid_values(values: dict[str, str], where: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each variable is a settings field, and the values validate in their models."""
    known = _model_variables()
    unknown = sorted(set(values) - set(known))
    assert not unknown, f"{where} sets variables no settings model reads: {unknown}"
    by_model: dict[type[BaseSettings], dict[str, str]] = {}
    for variable, value in values.items():
        model, field = known[variable]
        annotation = str(model.model_fields[field].annotation)
        if "Path" in annotation:  # files that exist only inside the container
            continue
        by_model.setdefault(model, {})[field] = value
    for name in list(_model_variables()):
        monkeypatch.delenv(name, raising=False)
    for model, kwargs in by_model.items():
        model.model_validate(kwargs)  # raises ValidationError naming the field


# -- all files -------------------------------------------------------------------------------------
def test_every_yaml_parses_and_names_its_kind() -> None:
    paths = [COMPOSE, *sorted(K8S.glob("*.yaml"))]
    assert len(paths) >= 6
    for path in paths:
        docs = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
        assert docs, f"{path} is empty"
        for doc in docs:
            assert isinstance(doc, dict), path
    kinds = {doc["kind"] for _, doc in _k8s_docs()}
    assert {"Deployment", "ConfigMap", "Secret", "Service", "PodDisruptionBudget"} <= kinds


def test_the_variable_list_matches_the_generated_reference() -> None:
    assert set(_model_variables()) == set(env_variables()), "config_docs and the models disagree"


# -- compose ---------------------------------------------------------------------------------------
def test_compose_services_healthchecks_and_dependencies() -> None:
    services = _compose()["services"]
    assert set(services) >= {"kafka", "opensearch", "indexer"}
    for name, service in services.items():
        test = service.get("healthcheck", {}).get("test")
        assert test and test[0] in ("CMD", "CMD-SHELL"), f"{name} has no healthcheck"
        assert service.get("image") or service.get("build"), name
        for port in service.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), f"{name} publishes {port} beyond loopback"
    indexer = services["indexer"]
    assert indexer["depends_on"] == {
        "kafka": {"condition": "service_healthy"},
        "opensearch": {"condition": "service_healthy"},
    }
    build = indexer["build"]
    assert (COMPOSE.parent / build["context"] / build["dockerfile"]).resolve() == DOCKERFILE
    assert indexer.get("stop_grace_period"), "the SIGTERM drain needs a grace period"


def test_compose_kafka_is_a_kraft_single_node_and_opensearch_is_open_with_analysis_common() -> None:
    services = _compose()["services"]
    kafka = services["kafka"]
    assert kafka["image"].startswith("apache/kafka:")
    env = _environment(kafka)
    assert set(env["KAFKA_PROCESS_ROLES"].split(",")) == {"broker", "controller"}
    node = env["KAFKA_NODE_ID"]
    assert env["KAFKA_CONTROLLER_QUORUM_VOTERS"].startswith(f"{node}@kafka:")
    assert "zookeeper" not in json.dumps(kafka).lower()
    listeners = dict(item.split("://", 1) for item in env["KAFKA_ADVERTISED_LISTENERS"].split(","))
    assert env["KAFKA_CONTROLLER_LISTENER_NAMES"] not in listeners  # the controller is not advertised

    opensearch = services["opensearch"]
    assert opensearch["image"].startswith("opensearchproject/opensearch:2.19")
    os_env = _environment(opensearch)
    assert os_env["discovery.type"] == "single-node"
    assert os_env["DISABLE_SECURITY_PLUGIN"] == "true"
    assert "analysis-common" in COMPOSE.read_text()

    indexer_env = _environment(services["indexer"])
    assert indexer_env["BACKSCROLL_KAFKA_BOOTSTRAP_SERVERS"] in listeners.values() or any(
        value.endswith(indexer_env["BACKSCROLL_KAFKA_BOOTSTRAP_SERVERS"]) for value in listeners.values()
    ), "the indexer must use an advertised listener"
    assert indexer_env["BACKSCROLL_OPENSEARCH_URL"] == "http://opensearch:9200"


def test_compose_variables_exist_and_validate(monkeypatch: pytest.MonkeyPatch) -> None:
    env = _environment(_compose()["services"]["indexer"])
    ours = {k: v for k, v in env.items() if k.startswith("BACKSCROLL_")}
    _assert_valid_values(ours, "compose.yaml", monkeypatch)
    health = " ".join(_compose()["services"]["indexer"]["healthcheck"]["test"])
    assert LOCAL_URL.findall(health) == [(env["BACKSCROLL_INDEXER_METRICS_PORT"], "/healthz")]


# -- Kubernetes ------------------------------------------------------------------------------------
def test_k8s_objects_have_api_version_kind_and_metadata() -> None:
    for path, doc in _k8s_docs():
        assert doc.get("apiVersion") and doc.get("kind"), path
        if doc["kind"] != "Kustomization":
            assert doc["metadata"]["name"], path
            assert doc["metadata"]["labels"]["app.kubernetes.io/name"] == "backscroll", path


def test_k8s_deployment_probes_ports_resources_and_drain() -> None:
    deployment = _one("Deployment")
    spec = deployment["spec"]
    pod = spec["template"]
    assert spec["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    assert pod["spec"]["terminationGracePeriodSeconds"] >= 30
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
    (container,) = pod["spec"]["containers"]
    port = int(_deployment_env()["BACKSCROLL_INDEXER_METRICS_PORT"])
    assert {"name": "metrics", "containerPort": port, "protocol": "TCP"} in container["ports"]
    annotations = pod["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true"
    assert int(annotations["prometheus.io/port"]) == port and annotations["prometheus.io/path"] == "/metrics"
    assert _probe_urls(container["livenessProbe"]) == [(port, "/healthz")]
    assert _probe_urls(container["readinessProbe"]) == [(port, "/readyz")]
    assert _probe_urls(container["startupProbe"]) == [(port, "/healthz")]
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        assert container[probe]["timeoutSeconds"] >= 1
    resources = container["resources"]
    assert resources["requests"]["cpu"] and resources["requests"]["memory"] and resources["limits"]["memory"]
    assert container["command"] == _entrypoint()


def test_k8s_replicas_do_not_exceed_partitions_and_rollouts_do_not_surge() -> None:
    spec = _one("Deployment")["spec"]
    assert spec["replicas"] <= int(_deployment_env()["BACKSCROLL_KAFKA_PARTITIONS"])
    assert spec["strategy"]["rollingUpdate"]["maxSurge"] == 0


def test_k8s_config_comes_from_the_configmap_and_passwords_from_the_secret(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    configmap, secret = _one("ConfigMap"), _one("Secret")
    (container,) = _one("Deployment")["spec"]["template"]["spec"]["containers"]
    refs = {next(iter(ref)): next(iter(ref.values()))["name"] for ref in container["envFrom"]}
    assert refs == {"configMapRef": configmap["metadata"]["name"], "secretRef": secret["metadata"]["name"]}
    settings = env_variables()
    secrets = {name for name, row in settings.items() if row.secret}
    in_configmap = set(configmap["data"])
    assert not in_configmap & secrets, "passwords belong in the Secret, not the ConfigMap"
    assert set(secret["stringData"]) <= secrets
    _assert_valid_values({**configmap["data"]}, "configmap.yaml", monkeypatch)
    _assert_valid_values({k: "x" for k in secret["stringData"]}, "secret.yaml", monkeypatch)
    for doc in _k8s("Secret"):
        for key, value in (doc.get("stringData") or {}).items():
            assert value == "REPLACE_ME", f"{doc['metadata']['name']}.{key} must stay a placeholder"
        assert "data" not in doc, "no base64 data in a committed Secret"


def test_k8s_tls_paths_are_mounted_from_the_tls_secret() -> None:
    pod = _one("Deployment")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    tls_secret = next(d for d in _k8s("Secret") if d["metadata"]["name"] == "backscroll-tls")
    for variable, value in _deployment_env().items():
        if value.startswith("/"):
            directory, _, filename = value.rpartition("/")
            (volume,) = [name for name, path in mounts.items() if path == directory]
            assert volumes[volume]["secret"]["secretName"] == tls_secret["metadata"]["name"], variable
            assert filename in tls_secret["stringData"], variable


def test_k8s_service_and_pdb_select_the_indexer_pods() -> None:
    labels = _one("Deployment")["spec"]["template"]["metadata"]["labels"]
    service = _one("Service")
    assert service["spec"]["selector"].items() <= labels.items()
    (port,) = service["spec"]["ports"]
    assert port["targetPort"] == "metrics"
    assert port["port"] == int(_deployment_env()["BACKSCROLL_INDEXER_METRICS_PORT"])
    pdb = _one("PodDisruptionBudget")
    assert pdb["apiVersion"] == "policy/v1"
    assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert pdb["spec"].get("maxUnavailable") == 1 or "minAvailable" in pdb["spec"]


def test_kustomization_lists_the_manifests_but_not_the_placeholder_secrets() -> None:
    (kustomization,) = _k8s("Kustomization")
    resources = set(kustomization["resources"])
    assert all((K8S / name).is_file() for name in resources)
    assert resources == {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml", "secret.yaml"}


def test_probe_and_scrape_paths_are_served_by_the_metrics_server() -> None:
    from backscroll.indexer.metrics import IndexerMetrics, MetricsServer

    (container,) = _one("Deployment")["spec"]["template"]["spec"]["containers"]
    paths = {
        path
        for probe in ("livenessProbe", "readinessProbe", "startupProbe")
        for _, path in _probe_urls(container[probe])
    }
    paths.add(_one("Deployment")["spec"]["template"]["metadata"]["annotations"]["prometheus.io/path"])
    assert paths == {"/healthz", "/readyz", "/metrics"}

    def status(base: str, path: str) -> int:
        try:
            with urllib.request.urlopen(base + path, timeout=5) as response:
                return int(response.status)
        except urllib.error.HTTPError as err:
            return err.code

    metrics = IndexerMetrics()
    server = MetricsServer(metrics, 0)
    try:
        base = f"http://127.0.0.1:{server.port}"
        assert status(base, "/nope") == 404
        assert status(base, "/healthz") == 200
        assert status(base, "/readyz") == 503  # no partitions yet
        metrics.ready = True
        assert {path: status(base, path) for path in sorted(paths)} == dict.fromkeys(sorted(paths), 200)
    finally:
        server.close()


# -- Dockerfile ------------------------------------------------------------------------------------
def _entrypoint() -> list[str]:
    (args,) = [args for instruction, args in _dockerfile() if instruction == "ENTRYPOINT"]
    command = json.loads(args)
    assert isinstance(command, list)
    return [str(part) for part in command]


def test_dockerfile_base_user_install_and_healthcheck(monkeypatch: pytest.MonkeyPatch) -> None:
    instructions = _dockerfile()
    bases = [args.split()[0] for instruction, args in instructions if instruction == "FROM"]
    assert bases and all(base == "python:3.11-slim" for base in bases)
    users = [args for instruction, args in instructions if instruction == "USER"]
    assert users and users[-1].split(":")[0] not in ("root", "0")
    assert any(
        instruction == "RUN" and "pip install -c constraints.txt ./ingest" in args
        for instruction, args in instructions
    )
    (health,) = [args for instruction, args in instructions if instruction == "HEALTHCHECK"]
    assert "urllib" in health and "/healthz" in health and "BACKSCROLL_INDEXER_METRICS_PORT" in health
    env = _docker_env()
    (expose,) = [args for instruction, args in instructions if instruction == "EXPOSE"]
    assert expose == env["BACKSCROLL_INDEXER_METRICS_PORT"]
    ours = {k: v for k, v in env.items() if k.startswith("BACKSCROLL_")}
    _assert_valid_values(ours, "Dockerfile", monkeypatch)
    deployment = _one("Deployment")["spec"]["template"]["spec"]["securityContext"]
    assert str(deployment["runAsUser"]) == users[-1].split(":")[0]


def test_dockerfile_entrypoint_is_a_cli_command() -> None:
    import typer

    from backscroll.cli.main import app

    program, *args = _entrypoint()
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    # the entry point runs the Claude Code hook form itself and hands every other line to the app
    assert scripts[program] == "backscroll.cli.entry:main"
    command = typer.main.get_command(app)
    commands = getattr(command, "commands", {})
    assert args and args[0] in commands, f"`{program} {args[0]}` is not a command: {sorted(commands)}"


# -- env.example -----------------------------------------------------------------------------------
def test_env_example_lists_every_variable_and_nothing_else() -> None:
    text = ENV_EXAMPLE.read_text()
    listed = set(re.findall(r"^#?\s*(BACKSCROLL_[A-Z0-9_]+)=", text, flags=re.MULTILINE))
    known = set(_model_variables())
    assert listed - known == set(), f"env.example has unknown variables; {REGENERATE}"
    assert known - listed == set(), f"env.example misses variables; {REGENERATE}"
    assert text == render_env_example(), f"deploy/env.example is out of date; {REGENERATE}"


def test_every_variable_mentioned_in_the_deploy_files_exists() -> None:
    known = set(_model_variables())
    for path in [COMPOSE, DOCKERFILE, *sorted(K8S.glob("*.yaml"))]:
        mentioned = set(VARIABLE.findall(path.read_text()))
        assert mentioned <= known, f"{path.relative_to(ROOT)} mentions {sorted(mentioned - known)}"


def _kustomize() -> list[str] | None:
    local = ROOT / ".venv" / "bin" / "kustomize"
    if local.is_file():
        return [str(local), "build"]
    found = shutil.which("kustomize")
    return [found, "build"] if found else None


@pytest.mark.parametrize("overlay", ["k8s", "k8s/secure"])
def test_k8s_overlays_build(overlay: str) -> None:
    """``kubectl apply -k`` runs kustomize first: each documented directory must build."""
    command = _kustomize()
    if command is None:
        if os.environ.get("BACKSCROLL_REQUIRE_STACK") == "1":
            pytest.fail("kustomize is missing: scripts/setup --stack installs it into .venv/bin")
        pytest.skip("kustomize is not installed (scripts/setup --stack installs it)")
    built = subprocess.run(
        [*command, str(DEPLOY / overlay)], capture_output=True, text=True, timeout=120, check=False
    )
    assert built.returncode == 0, built.stderr
    docs = [d for d in yaml.safe_load_all(built.stdout) if d]
    kinds = sorted(d["kind"] for d in docs)
    assert kinds == ["ConfigMap", "Deployment", "PodDisruptionBudget", "Service"]
    if overlay.endswith("secure"):
        (config,) = [d for d in docs if d["kind"] == "ConfigMap"]
        assert config["data"]["BACKSCROLL_OPENSEARCH_USERNAME"] == "sl-indexer"
        (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
        refs = [
            source["secretRef"]["name"]
            for source in deployment["spec"]["template"]["spec"]["containers"][0]["envFrom"]
            if "secretRef" in source
        ]
        assert "backscroll-indexer-credentials" in refs


def _stack_roles() -> dict[str, Any]:
    script = (DEPLOY / "local" / "secure.sh").read_text()
    body = script.split('cat >"$sc/roles.yml" <<EOF\n', 1)[1].split("\nEOF\n", 1)[0]
    return dict(yaml.safe_load(body.replace("$p", "backscroll*").replace("$SEC_DLS_WORKSPACE", "ws")))


@pytest.mark.parametrize("source", ["deploy/secure", "deploy/local"])
def test_roles_grant_no_templates_and_the_indexer_never_deletes(source: str) -> None:
    if source == "deploy/local":
        roles = _stack_roles()
    else:
        roles = yaml.safe_load((DEPLOY / "secure" / "opensearch-security" / "roles.yml").read_text())
    for name, role in roles.items():
        if name.startswith("_"):
            continue
        assert not any("template" in p for p in role["cluster_permissions"]), name
    indexer = roles["backscroll_indexer"]["index_permissions"][0]["allowed_actions"]
    for broad in ("crud", "write", "delete", "manage", "indices:data/write/*", "indices:data/write/delete"):
        assert broad not in indexer
