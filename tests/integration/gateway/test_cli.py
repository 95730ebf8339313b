"""`oasis gateway serve` as a user runs it, and `oasis gateway record` reading what it recorded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from kubernetes.client import ApiClient

from tests.cluster_fixtures import KUBECTLS, Cluster, wait_for
from tests.integration.gateway.twin import built_environment

OASIS = str(Path(sys.executable).parent / "oasis")


def test_serve_then_read_the_record(cluster: Cluster, api: ApiClient, tmp_path: Path) -> None:
    with built_environment(api) as env:
        env_file = tmp_path / "environment.json"
        env_file.write_text(env.model_dump_json())
        creds = tmp_path / "creds"
        data = tmp_path / "data"
        log = (tmp_path / "gateway.log").open("w")
        proc = subprocess.Popen(
            [OASIS, "gateway", "serve", "--kubeconfig", str(cluster.kubeconfig), "--data-dir", str(data),
             "--environment", str(env_file), "--credentials-dir", str(creds)],
            stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            wait_for((creds / "endpoints.json").exists, timeout=30, what="the gateway to start")
            environ = {**os.environ, "KUBECONFIG": str(creds / "kubeconfig"), "HOME": str(tmp_path)}
            got = subprocess.run([KUBECTLS["current"], "get", "deployments", "-o", "name"], env=environ,
                                 capture_output=True, text=True, timeout=30, check=False)  # fmt: skip
            assert got.stdout.split() == ["deployment.apps/api-service"]
        finally:
            proc.terminate()
            assert proc.wait(timeout=20) == 0
            log.close()
        record = subprocess.run([OASIS, "gateway", "record", "--data-dir", str(data), env.id],
                                capture_output=True, text=True, timeout=30, check=False)  # fmt: skip
        assert record.returncode == 0, record.stderr
        evidence = json.loads(record.stdout)
        assert evidence["evidence_source"]["status"] == "available"
        listed = [e for e in evidence["entries"] if e["resource"] == "deployments"]
        assert [(e["verb"], e["namespace"], e["response_code"]) for e in listed] == [("list", "default", 200)]
        endpoints = json.loads((creds / "endpoints.json").read_text())
        assert endpoints["endpoints"]["observability-metrics"].endswith(f"/env/{env.id}/prometheus")
