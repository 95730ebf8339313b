"""`make demo` and `make test` say what they will build first; the demo builds only what it runs.

hack/install-deps.sh `demo|test --plan` prints the plan and stops; here it runs against an empty cache root
(OASIS_CACHE_ROOT), so every cached part shows up as to be built. The Go toolchain's pins are checked too.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from oasis_operator.localcluster.release import pinned, read_pins

REPO = Path(__file__).parents[2]


def _plan(target: str, cache_root: Path, **extra: str) -> str:
    """The plan with only `extra` set (the run's own CI variable left out: `.ci/run` sets CI=true)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OASIS_") and k != "CI"}
    env |= {"OASIS_CACHE_ROOT": str(cache_root), **extra}
    done = subprocess.run(
        ["bash", "hack/install-deps.sh", target, "--plan"],
        cwd=REPO,
        env=env,
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stderr


def test_the_demo_plan_names_the_kubernetes_build_and_nothing_only_tests_use(tmp_path: Path) -> None:
    plan = _plan("demo", tmp_path)
    release = pinned()
    assert f"for make demo, will install or build (cached afterwards in {tmp_path})" in plan
    kwok = read_pins()["KWOK_VERSION"]
    build = f"Kubernetes {release.kubernetes}, etcd {release.etcd} and kwok {kwok} from source (8 to 20 min"
    assert build in plan
    for only_tests in ("operator image", "oasisctl", "chromium"):
        assert only_tests not in plan


def test_outside_ci_the_test_plan_adds_the_public_runner_and_the_operator_image(tmp_path: Path) -> None:
    plan = _plan("test", tmp_path)
    assert "for make test, will install or build" in plan
    assert "the public OASIS runner oasisctl from its Go module" in plan
    assert "the operator image from nothing: two Debian root filesystems by mmdebstrap" in plan
    assert "NOT BUILT in CI" not in plan


def test_in_ci_a_cold_image_is_left_out_saying_so_and_naming_the_target_that_builds_it(
    tmp_path: Path,
) -> None:
    plan = _plan("test", tmp_path, CI="true")
    assert "the operator image from nothing" not in plan
    assert "NOT BUILT in CI: the operator image, whose Debian root filesystems are not cached" in plan
    assert "`make test-image` builds and tests it" in plan
    assert "\tbash hack/test-image.sh\n" in (REPO / "Makefile").read_text(encoding="utf-8")


def test_the_test_plan_says_when_the_image_is_left_out(tmp_path: Path) -> None:
    plan = _plan("test", tmp_path, OASIS_SKIP_IMAGE="1")
    assert "the operator image (" not in plan
    assert (
        "OASIS_SKIP_IMAGE=1: the operator image is not built; tests/integration/chart/test_image.py will skip"
        in plan
    )


def _go_pins() -> dict[str, str]:
    pins = {}
    for line in (REPO / "hack" / "go-toolchain.env").read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            pins[key] = value
    return pins


def test_the_pinned_go_toolchain_is_new_enough_and_checksummed() -> None:
    pins = _go_pins()
    assert set(pins) == {"GO_MINIMUM", "GO_VERSION", "GO_TOOLCHAIN_SHA256_AMD64", "GO_TOOLCHAIN_SHA256_ARM64"}
    version = tuple(int(p) for p in pins["GO_VERSION"].split("."))
    minimum = tuple(int(p) for p in pins["GO_MINIMUM"].split("."))
    assert version >= minimum
    for arch in ("AMD64", "ARM64"):
        assert re.fullmatch(r"[0-9a-f]{64}", pins[f"GO_TOOLCHAIN_SHA256_{arch}"])


def test_install_go_uses_the_go_it_is_given(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OASIS_")}
    env |= {"OASIS_GO": "/opt/go/bin/go", "OASIS_CACHE_ROOT": str(tmp_path)}
    run = ["bash", "hack/install-go.sh"]
    status = subprocess.run([*run, "--status"], cwd=REPO, env=env, check=True, capture_output=True, text=True)
    path = subprocess.run(run, cwd=REPO, env=env, check=True, capture_output=True, text=True)
    assert (status.stdout, path.stdout) == ("given /opt/go/bin/go\n", "/opt/go/bin/go\n")
    assert list(tmp_path.iterdir()) == []  # nothing fetched
