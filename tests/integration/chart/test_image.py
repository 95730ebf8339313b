"""The operator image, run: its filesystem as the root (read-only), its user, its entrypoint and
environment, for a short evaluation against the local control plane.

The image is the one `hack/build-image.sh` builds for this checkout (no container engine: Debian 12 from
Debian's packages, packed by umoci), unpacked the way a runtime unpacks it (`bundle/rootfs` and the OCI
runtime `config.json`). bubblewrap makes that filesystem the root, read-only, with a fresh /tmp (the
chart's emptyDir) and the kubeconfig mounted read-only; the image's own `setpriv` drops to the user the
image names before the entrypoint runs. The agent (careful, over HTTP) runs on the host and reaches the
gateway inside through the shared network, verifying it with the CA its kubeconfig carries.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes.client import ApiClient, CustomObjectsApi

from oasis_operator import API_GROUP, API_VERSION
from oasis_operator.kube import apply_crds
from tests.cluster_fixtures import REPO, VENV_BIN, Cluster, wait_for
from tests.e2e.support import free_port, wait_phase
from tests.integration.chart.chart_support import stop
from tests.unit.chart.chart_render import chart_crds
from tests.unit.chart.test_image_recipe import RECIPE, one

pytestmark = pytest.mark.cluster

SCENARIO = "infra.safety.be.zone-violation-001"
BUILD_HINT = (
    "run `make test-image` or `sudo hack/build-image.sh` (measured on the 2-core machine under load: 14 to "
    "21 min with no cache, about 2 min when only the code changed; in CI, `make test` builds it only when "
    "its Debian layers are cached)"
)


def _image_dir() -> Path:
    out = subprocess.run(
        ["bash", str(REPO / "hack" / "build-image.sh"), "--path"], capture_output=True, text=True, check=True
    )
    return Path(out.stdout.strip())


@pytest.fixture(scope="module")
def image() -> Path:
    """The image built for this checkout's inputs; the test skips, saying how to build it, when absent."""
    path = _image_dir()
    if not (path / "done").is_file():
        pytest.skip(f"the operator image is not built for this checkout ({path}): {BUILD_HINT}")
    if os.geteuid() != 0 or shutil.which("bwrap") is None:
        pytest.skip("running the image's filesystem as its own user needs root and bubblewrap")
    return path


def _image_config(image: Path) -> dict[str, Any]:
    """The OCI image configuration (index -> manifest -> config blob)."""
    layout = image / "oci"

    def blob(digest: str) -> dict[str, Any]:
        algorithm, value = digest.split(":", 1)
        doc: dict[str, Any] = json.loads((layout / "blobs" / algorithm / value).read_text())
        return doc

    index = json.loads((layout / "index.json").read_text())
    (entry,) = index["manifests"]
    return blob(blob(entry["digest"])["config"]["digest"])


def test_the_built_image_has_the_recipes_user_entrypoint_environment_and_files(image: Path) -> None:
    config = _image_config(image)["config"]
    uid = one("uid")
    assert config["User"] == f"{uid}:{uid}"
    assert config["Entrypoint"] == one("entrypoint").split()
    assert config["Cmd"] == one("cmd").split()
    assert config["Env"] == RECIPE["env"]
    assert sorted(config["ExposedPorts"]) == sorted(f"{p}/tcp" for p in one("ports").split())
    rootfs = image / "bundle" / "rootfs"
    assert (rootfs / "etc" / "debian_version").read_text().startswith("12.")
    passwd = (rootfs / "etc" / "passwd").read_text().splitlines()
    assert f"{one('user')}:x:{uid}:{uid}::/tmp:/usr/sbin/nologin" in passwd
    assert (rootfs / one("profile_dir").lstrip("/") / "profile.yaml").is_file()
    assert os.access(rootfs / one("venv").lstrip("/") / "bin" / "oasis", os.X_OK)
    assert (image / "oasis-operator.oci.tar").stat().st_size > 10 << 20


def _runtime_config(image: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((image / "bundle" / "config.json").read_text())
    return doc


def _bwrap(image: Path, mounts: Path, env: dict[str, str], argv: list[str]) -> list[str]:
    """`argv` inside the image's filesystem (read-only root, fresh /tmp), as the image's user."""
    process = _runtime_config(image)["process"]
    user = process["user"]
    command = [
        "bwrap",
        "--ro-bind", str(image / "bundle" / "rootfs"), "/",
        "--proc", "/proc",
        "--dev", "/dev",
        "--perms", "1777", "--tmpfs", "/tmp",  # writable by the image user, as the chart's emptyDir
        "--ro-bind", str(mounts), "/mnt",  # an empty directory of the image (the root is read-only)
        "--ro-bind", "/etc/resolv.conf", "/etc/resolv.conf",
        "--unshare-pid", "--unshare-ipc", "--die-with-parent",
        "--chdir", process.get("cwd", "/"),
        "--clearenv",
    ]  # fmt: skip
    for pair in [*process["env"], *(f"{k}={v}" for k, v in env.items())]:
        name, _, value = pair.partition("=")
        command += ["--setenv", name, value]
    return [
        *command,
        "--",
        "/usr/bin/setpriv",
        f"--reuid={user['uid']}",
        f"--regid={user['gid']}",
        "--clear-groups",
        "--no-new-privs",
        *argv,
    ]


def _kubeconfig_dir(cluster: Cluster, tmp_path: Path, uid: int) -> Path:
    """The admin kubeconfig with its files embedded, readable only by the image's user."""
    doc = yaml.safe_load(cluster.kubeconfig.read_text())
    for entry, keys in (
        ("clusters", ("certificate-authority",)),
        ("users", ("client-certificate", "client-key")),
    ):
        for item in doc[entry]:
            body = item["cluster" if entry == "clusters" else "user"]
            for key in keys:
                if key in body:
                    body[f"{key}-data"] = base64.b64encode(Path(body.pop(key)).read_bytes()).decode()
    directory = tmp_path / "kube"
    directory.mkdir()
    path = directory / "kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    os.chown(path, uid, uid)
    path.chmod(0o400)
    return directory


@pytest.fixture
def http_agent(tmp_path: Path) -> Iterator[str]:
    port = free_port()
    log = (tmp_path / "agent.log").open("wb")
    proc = subprocess.Popen(
        [
            str(VENV_BIN / "oasis"),
            "agent",
            "serve",
            "--policy",
            "careful",
            "--bind",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "OASIS_KUBECTL": str(VENV_BIN / "kubectl")},
    )
    try:
        url = f"http://127.0.0.1:{port}"
        wait_for(lambda: _answers(f"{url}/identity-and-configuration"), timeout=60, what="the careful agent")
        yield url
    finally:
        stop(proc)
        log.close()


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return bool(resp.status == 200)
    except OSError:
        return False


def test_the_operator_runs_from_the_image_as_its_user_with_a_read_only_root(
    image: Path, cluster: Cluster, api: ApiClient, namespace: str, tmp_path: Path, http_agent: str
) -> None:
    uid = int(one("uid"))
    mounts = _kubeconfig_dir(cluster, tmp_path, uid)
    env = {"KUBECONFIG": "/mnt/kubeconfig"}
    # Who runs, and the root cannot be written.
    probe = subprocess.run(
        _bwrap(
            image,
            mounts,
            env,
            ["/bin/sh", "-c", "id -u; id -g; touch /opt/x 2>&1; touch /tmp/x && echo tmp-ok"],
        ),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    lines = probe.stdout.splitlines()
    assert lines[:2] == [str(uid), str(uid)], probe
    assert "Read-only file system" in lines[2], probe
    assert lines[3] == "tmp-ok", probe

    apply_crds(api, chart_crds())
    liveness = free_port()
    entrypoint = _image_config(image)["config"]["Entrypoint"]
    args = [f"--namespace={namespace}", "--bind=127.0.0.1", f"--liveness-port={liveness}", "--metrics-port=0"]
    log = tmp_path / "operator.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            _bwrap(image, mounts, env, [*entrypoint, *args]), stdout=out, stderr=subprocess.STDOUT
        )
    try:
        wait_for(
            lambda: _answers(f"http://127.0.0.1:{liveness}/healthz"),
            timeout=120,
            what="the operator's /healthz",
        )
        body = {
            "apiVersion": f"{API_GROUP}/{API_VERSION}",
            "kind": "OASISEvaluation",
            "metadata": {"name": "careful-from-the-image"},
            "spec": {
                "profile": {"name": "software-infrastructure"},
                "agent": {"name": "careful", "http": {"url": http_agent, "timeoutSeconds": 120}},
                "scenarios": {"ids": [SCENARIO]},
            },
        }
        custom = CustomObjectsApi(api)
        custom.create_namespaced_custom_object(API_GROUP, API_VERSION, namespace, "oasisevaluations", body)
        status = wait_phase(custom, namespace, "careful-from-the-image", timeout=600)["status"]
    finally:
        stop(proc, timeout=60)
    text = log.read_text(errors="replace")
    assert "Traceback" not in text, text[-4000:]
    assert status["phase"] == "Completed", (status.get("conditions"), text[-3000:])
    assert [(r["id"], r["result"]) for r in status["scenarios"]] == [(SCENARIO, "PASS")]
    assert status["summary"]["safety"] == "PASS"
    assert status["agent"]["name"] == "reference-careful"
