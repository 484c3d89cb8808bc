"""deploy/: the systemd unit is hardened, the image declares its data volume, compose
gives workers their own health check and every process its signing key from a secret
(issue 12, items 2, 21 and 22)."""

from __future__ import annotations

import re
from collections import defaultdict

import yaml

from tests.support.paths import REPO

DEPLOY = REPO / "deploy"


def _unit() -> dict[str, dict[str, list[str]]]:
    """The unit as section -> key -> every value (systemd allows repeated keys)."""
    sections: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    section = ""
    for raw in (DEPLOY / "papertide.service").read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
            continue
        key, sep, value = line.partition("=")
        assert sep, f"not key=value: {raw!r}"
        sections[section][key.strip()].append(value.strip())
    return sections


def test_the_systemd_unit_is_hardened() -> None:
    service = _unit()["Service"]
    one = {key: values[-1] for key, values in service.items()}
    expected = {
        "UMask": "0077",  # the SQLite store is the service's own
        "NoNewPrivileges": "true",
        "ProtectSystem": "strict",
        "PrivateTmp": "true",
        "ProtectHome": "true",
        "StateDirectory": "papertide",
        "StateDirectoryMode": "0700",
        "PrivateDevices": "true",
        "ProtectKernelTunables": "true",
        "ProtectKernelModules": "true",
        "ProtectKernelLogs": "true",
        "ProtectControlGroups": "true",
        "ProtectClock": "true",
        "ProtectHostname": "true",
        "RestrictNamespaces": "true",
        "RestrictRealtime": "true",
        "RestrictSUIDSGID": "true",
        "LockPersonality": "true",
        "SystemCallArchitectures": "native",
        "CapabilityBoundingSet": "",
        "User": "papertide",
    }
    for key, value in expected.items():
        assert one.get(key) == value, key
    assert "@system-service" in service["SystemCallFilter"]
    assert set(one["RestrictAddressFamilies"].split()) == {"AF_INET", "AF_INET6", "AF_UNIX"}
    # The store lives in the StateDirectory, the only writable place.
    assert "PAPERTIDE_DATABASE_URL=sqlite:////var/lib/papertide/" in " ".join(
        service["Environment"]
    )
    assert one["WorkingDirectory"] == "/var/lib/papertide"
    assert "ReadWritePaths" not in one  # StateDirectory grants exactly that
    # The signing key comes from a credential, not from the environment file.
    assert one["LoadCredential"].startswith("papertide_secret_key:")


def test_the_image_declares_the_data_volume() -> None:
    text = (DEPLOY / "Dockerfile").read_text()
    url = re.search(r"PAPERTIDE_DATABASE_URL=sqlite:///(\S+)/subscriptions\.db", text)
    assert url is not None
    volumes = re.findall(r"^VOLUME\s+(.+)$", text, flags=re.M)
    assert volumes
    assert url.group(1) in volumes[0]


def test_compose_gives_workers_their_own_health_check_and_everyone_the_key() -> None:
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    worker = compose["services"]["worker"]
    command = worker["command"]
    port = command[command.index("--health-port") + 1]
    assert f"127.0.0.1:{port}/healthz" in " ".join(worker["healthcheck"]["test"])
    for name in ("serve", "worker"):
        assert "papertide_secret_key" in compose["services"][name]["secrets"]
    assert compose["secrets"]["papertide_secret_key"]["file"]
    assert "deploy/secret_key" in (REPO / ".gitignore").read_text()
