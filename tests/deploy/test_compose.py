"""The compose stack, checked by reading it (Docker does not run in CI): every file it
mounts exists, and the services point at each other on the right names and ports."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from gateway.http.guard import unauthenticated_exposure
from gateway.settings import Settings
from tests.deploy.dashboards import DEPLOY, JOB, PROMETHEUS_CONFIG

SERVICES = {"gateway", "redis", "prometheus", "grafana", "otel-collector", "jaeger"}


def load(path: Path) -> dict[str, Any]:
    yaml = pytest.importorskip("yaml")
    data: dict[str, Any] = yaml.safe_load(path.read_text())
    return data


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return load(DEPLOY / "docker-compose.yml")


def mounts(service: dict[str, Any]) -> dict[str, str]:
    """Bind mounts of a service: container path -> host path (named volumes left out)."""
    found = {}
    for volume in service.get("volumes", []):
        source, target = volume.split(":")[:2]
        if source.startswith("."):
            found[target] = source
    return found


def test_services_and_mounted_files_exist(compose: dict[str, Any]) -> None:
    assert set(compose["services"]) == SERVICES
    for name, service in compose["services"].items():
        for source in mounts(service).values():
            assert (DEPLOY / source).exists(), f"{name} mounts missing {source}"
    build = compose["services"]["gateway"]["build"]
    context = (DEPLOY / build["context"]).resolve()
    assert (context / build["dockerfile"]).is_file()
    assert (context / "pyproject.toml").is_file()


def test_gateway_environment(compose: dict[str, Any]) -> None:
    env = compose["services"]["gateway"]["environment"]
    assert env["HOST"] == "0.0.0.0"
    assert env["REDIS_URL"].startswith("redis://redis:6379")
    assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://otel-collector:4318"
    assert env["OTEL_SERVICE_NAME"] == JOB
    # Secrets pass through from the shell, never baked into the file.
    assert env["ANTHROPIC_API_KEY"] is None
    # Off loopback without keys the gateway refuses to start: the keyless stack says so,
    # and publishes the port on loopback only.
    assert env["GATEWAY_API_KEYS"] is None and env["GATEWAY_ALLOW_UNAUTHENTICATED"] == "1"
    assert all(p.startswith("127.0.0.1:") for p in compose["services"]["gateway"]["ports"])
    assert "gateway" in env["GATEWAY_ALLOWED_HOSTS"].split(",")
    given = {k.lower(): v for k, v in env.items() if v is not None}
    assert unauthenticated_exposure(Settings(_env_file=None, **given)) is None


def test_prometheus_scrapes_the_gateway_and_loads_the_alerts(compose: dict[str, Any]) -> None:
    config = load(PROMETHEUS_CONFIG)
    (job,) = [job for job in config["scrape_configs"] if job["job_name"] == JOB]
    port = compose["services"]["gateway"]["environment"]["PORT"]
    assert job["static_configs"][0]["targets"] == [f"gateway:{port}"]
    config_dir = Path("/etc/prometheus")
    volumes = mounts(compose["services"]["prometheus"])
    assert volumes[str(config_dir / "prometheus.yml")] == "./prometheus.yml"
    for rule_file in config["rule_files"]:
        assert volumes[str(config_dir / rule_file)] == f"./{rule_file}"


def test_grafana_provisioning_matches_the_mounts(compose: dict[str, Any]) -> None:
    grafana = compose["services"]["grafana"]
    volumes = mounts(grafana)
    assert volumes["/etc/grafana/provisioning"] == "./grafana/provisioning"
    provisioning = DEPLOY / "grafana" / "provisioning"
    (provider,) = load(provisioning / "dashboards" / "dashboards.yml")["providers"]
    assert volumes[provider["options"]["path"]] == "./grafana/dashboards"
    home = grafana["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert home == provider["options"]["path"] + "/research-gateway.json"
    datasources = load(provisioning / "datasources" / "prometheus.yml")["datasources"]
    sources = {source["uid"]: source for source in datasources}
    assert sources["prometheus"]["url"] == "http://prometheus:9090"
    assert sources["jaeger"]["url"] == "http://jaeger:16686"


def test_traces_flow_from_collector_to_jaeger(compose: dict[str, Any]) -> None:
    collector = compose["services"]["otel-collector"]
    (config_path,) = [arg.split("=", 1)[1] for arg in collector["command"]]
    assert mounts(collector)[config_path] == "./otel-collector.yml"
    config = load(DEPLOY / "otel-collector.yml")
    assert config["receivers"]["otlp"]["protocols"]["http"]["endpoint"] == "0.0.0.0:4318"
    pipeline = config["service"]["pipelines"]["traces"]
    (exporter,) = pipeline["exporters"]
    assert config["exporters"][exporter]["endpoint"] == "jaeger:4317"
    assert compose["services"]["jaeger"]["environment"]["COLLECTOR_OTLP_ENABLED"] == "true"


def test_dockerfile() -> None:
    text = (DEPLOY / "Dockerfile").read_text()
    assert re.search(r"^ARG PYTHON_IMAGE=python:3\.11-slim", text, re.M)
    assert re.search(r"^USER (?!root)\S+", text, re.M)
    assert "HOST=0.0.0.0" in text
    # The image alone wants keys: the override is the operator's decision, never baked in.
    assert not re.search(r"^\s*(ENV\s+)?GATEWAY_ALLOW_UNAUTHENTICATED", text, re.M)
    assert re.search(r"^EXPOSE 3001$", text, re.M)
    assert re.search(r"^HEALTHCHECK .*\n?.*healthcheck\.py", text, re.M)
    root = DEPLOY.parent
    for source in re.findall(r"^COPY (?!--from)(.+) \S+$", text, re.M):
        for path in source.split():
            if "*" not in path:
                assert (root / path).exists(), f"COPY source {path} is missing"
    ignore = (DEPLOY / "Dockerfile.dockerignore").read_text()
    for package in ("gateway", "demo_model", "tools", "playground"):  # what the app imports
        assert re.search(rf"^COPY {package} ", text, re.M), package
        assert f"!{package}/" in ignore, package


def test_image_puts_the_playground_where_the_gateway_looks() -> None:
    # The gateway finds the playground beside its package; installed, that is site-packages.
    import gateway
    from gateway.http.handlers import PLAYGROUND

    package_parent = Path(gateway.__file__).resolve().parent.parent
    relative = PLAYGROUND.relative_to(package_parent)
    text = (DEPLOY / "Dockerfile").read_text()
    site_packages = "/opt/venv/lib/python3.11/site-packages"
    assert re.search(rf"^COPY playground {site_packages}/{relative}$", text, re.M)


def test_keys_survive_a_new_container(compose: dict[str, Any]) -> None:
    """The SQLite file of the admin API's keys and spend (GATEWAY_KEYS_DB) is on a named
    volume in the stack and a VOLUME of the image, in a directory the gateway's user owns;
    the admin key and the keys secret are documented, never given a value."""
    gateway = compose["services"]["gateway"]
    db = Path(gateway["environment"]["GATEWAY_KEYS_DB"])
    named = {
        target: source
        for source, target in (v.split(":")[:2] for v in gateway["volumes"])
        if not source.startswith(".")
    }
    assert named[str(db.parent)] in compose["volumes"]
    text = (DEPLOY / "Dockerfile").read_text()
    assert re.search(rf"GATEWAY_KEYS_DB={re.escape(str(db))}\b", text)
    assert re.search(rf"^VOLUME {re.escape(str(db.parent))}$", text, re.M)
    user = re.search(r"^USER (\S+):", text, re.M)
    assert user and re.search(
        rf"install -d -o {user[1]} .* {re.escape(str(db.parent))}$", text, re.M
    )
    compose_text = (DEPLOY / "docker-compose.yml").read_text()
    for name in ("GATEWAY_ADMIN_KEY", "GATEWAY_KEYS_SECRET"):
        assert name.lower() in Settings.model_fields
        assert re.search(rf"^\s+# {name}:$", compose_text, re.M), name
        assert name not in gateway["environment"]
