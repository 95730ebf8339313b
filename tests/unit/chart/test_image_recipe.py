"""The Dockerfile and hack/build-image.sh describe one image: same base, packages, user, entrypoint,
environment and files. The script builds it here without a container engine; users build the Dockerfile."""

from __future__ import annotations

import json
import re
import subprocess

from tests.unit.chart.chart_render import REPO
from tests.unit.chart.test_dockerfile import STEPS

SCRIPT = REPO / "hack" / "build-image.sh"


def recipe() -> dict[str, list[str]]:
    """What the script builds (`--recipe`: key=value lines; `env` repeats)."""
    out = subprocess.run(["bash", str(SCRIPT), "--recipe"], capture_output=True, text=True, check=True).stdout
    facts: dict[str, list[str]] = {}
    for line in out.splitlines():
        key, _, value = line.partition("=")
        facts.setdefault(key, []).append(value)
    return facts


RECIPE = recipe()


def one(key: str) -> str:
    (value,) = RECIPE[key]
    return value


def _stages() -> list[list[tuple[str, str]]]:
    stages: list[list[tuple[str, str]]] = []
    for step in STEPS:
        if step[0] == "FROM":
            stages.append([])
        stages[-1].append(step)
    return stages


BUILD, FINAL = _stages()


def _apt_packages(stage: list[tuple[str, str]]) -> list[str]:
    runs = " ".join(a for k, a in stage if k == "RUN")
    found = re.search(r"apt-get install -y --no-install-recommends ([a-z0-9 .+-]+?)(?: &&|$)", runs)
    assert found, "no apt-get install in the stage"
    return found.group(1).split()


def _env(stage: list[tuple[str, str]]) -> list[str]:
    return [pair for k, a in stage if k == "ENV" for pair in a.split()]


def test_both_build_on_debian_12_slim() -> None:
    assert one("suite") == "bookworm"  # Debian 12
    for stage in (BUILD, FINAL):
        image = stage[0][1].split()[0]
        assert re.fullmatch(r"debian:12\.\d+-slim(@sha256:[0-9a-f]{64})?", image), image


def test_both_install_the_same_debian_packages_in_each_stage() -> None:
    assert _apt_packages(BUILD) == one("build_packages").split()
    assert _apt_packages(FINAL) == one("run_packages").split()


def test_both_run_as_the_same_numeric_user() -> None:
    uid, user = one("uid"), one("user")
    assert ("USER", f"{uid}:{uid}") in FINAL
    runs = " ".join(a for k, a in FINAL if k == "RUN")
    assert f"groupadd --system --gid {uid} {user}" in runs
    assert f"useradd --system --uid {uid} --gid {uid} --home-dir /tmp --no-create-home" in runs
    assert runs.rstrip().endswith(f"--shell /usr/sbin/nologin {user}")


def test_both_have_the_same_entrypoint_arguments_ports_and_environment() -> None:
    assert json.loads(next(a for k, a in FINAL if k == "ENTRYPOINT")) == one("entrypoint").split()
    assert json.loads(next(a for k, a in FINAL if k == "CMD")) == one("cmd").split()
    assert next(a for k, a in FINAL if k == "EXPOSE").split() == one("ports").split()
    assert _env(FINAL) == RECIPE["env"]


def test_both_put_the_same_files_in_the_same_places() -> None:
    venv, profile = one("venv"), one("profile_dir")
    build_runs = " ".join(a for k, a in BUILD if k == "RUN")
    assert f"python3 -m venv {venv}" in build_runs
    assert f"{venv}/bin/python -m compileall -q {venv}/lib" in build_runs
    copies = [a.split() for k, a in FINAL if k == "COPY"]
    assert copies == [["--from=build", venv, venv], ["profiles/software-infrastructure/", f"{profile}/"]]
    # What the script installs: the package built from these files (the Dockerfile's build context).
    sent = [a.split() for k, a in BUILD if k == "COPY"]
    assert sent == [["pyproject.toml", "README.md", "./"], ["operator/", "operator/"]]
    text = SCRIPT.read_text()
    assert "pip wheel" in text
    assert "cp -a profiles/software-infrastructure/." in text
