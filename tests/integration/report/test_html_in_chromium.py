"""The HTML report as a browser shows it: Debian's headless Chromium renders it, the DevTools protocol
reads the rendered page, and a full-page screenshot is kept as a test artifact
(`$OASIS_TEST_ARTIFACTS`, default `run/test-artifacts/` in the checkout).

What is checked is what a reader sees: every safety scenario's square in its category's row with its
outcome's colour and a real size, each capability bar as long as its score says, one timeline dot per
recorded event, and no resource fetched from anywhere.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from oasis_operator.engine.render import render_html
from oasis_operator.engine.replay import bundle_paths, load_bundle, replay_report, replay_results
from oasis_operator.models.verdict import Report
from oasis_operator.profiles import load_profile
from tests.cluster_fixtures import stop_process
from tests.unit.engine.fixtures_gen import BUNDLES
from tests.unit.profiles.profile_support import SHIPPED

REPO = Path(__file__).resolve().parents[3]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-port=0",
    "--window-size=1280,900",
]
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (hack/install-deps.sh)")

MEASURE = """(() => {
  for (const d of document.querySelectorAll('details')) d.open = true;  // a reader expands each one
  const box = e => e.getBoundingClientRect();
  const cells = [...document.querySelectorAll('svg[data-chart=safety-grid] rect.cell')].map(e => ({
    scenario: e.dataset.scenario, category: e.dataset.category, outcome: e.dataset.outcome,
    fill: getComputedStyle(e).fill, width: box(e).width, height: box(e).height}));
  const bars = [...document.querySelectorAll('svg[data-chart^=capability] rect.bar')].map(e => ({
    chart: e.closest('svg').dataset.chart, name: e.dataset.name, score: parseFloat(e.dataset.score),
    width: box(e).width, track: box(e.previousElementSibling).width}));
  const timelines = {};
  for (const d of document.querySelectorAll('details')) {
    const dots = [...d.querySelectorAll('svg[data-chart=timeline] circle.event')];
    timelines[d.id] = dots.map(e => ({kind: e.dataset.kind, status: e.dataset.status,
                                      visible: box(e).width > 0}));
  }
  return {cells, bars, timelines, resources: performance.getEntriesByType('resource').length,
          height: document.documentElement.scrollHeight};
})()"""


def _report() -> Report:
    """A report with both phases: the recorded bundles whose safety scenarios passed, plus capability."""
    profile = load_profile(SHIPPED)
    chosen = []
    for path in bundle_paths([BUNDLES]):
        result = replay_results([load_bundle(path)], profile)[0]
        if result.classification == "capability" or result.outcome.value in {"PASS", "NOT_APPLICABLE"}:
            chosen.append(path)
    report = replay_report(chosen, profile)
    assert report.verdict.capability is not None, "the chosen bundles must reach phase 2"
    return report


class Browser:
    """Headless Chromium with a fresh profile, driven over the DevTools protocol."""

    def __init__(self, workdir: Path) -> None:
        self.profile = workdir / "chromium-profile"
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Browser:
        assert CHROMIUM is not None
        log = (self.profile.parent / "chromium.log").open("wb")
        command = [CHROMIUM, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"]
        self.proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        return self

    def __exit__(self, *_: object) -> None:
        if self.proc is not None:
            stop_process(self.proc)

    def port(self, timeout: float = 60) -> int:
        marker = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if marker.exists() and marker.read_text().strip():
                return int(marker.read_text().split()[0])
            assert self.proc is not None
            assert self.proc.poll() is None, (self.profile.parent / "chromium.log").read_text()[-2000:]
            time.sleep(0.2)
        raise AssertionError("chromium did not open its DevTools port")


async def _render(port: int, page: Path) -> tuple[dict[str, Any], bytes]:
    async with aiohttp.ClientSession() as http:
        async with http.get(f"http://127.0.0.1:{port}/json/list") as answer:
            targets = await answer.json()
        url = next(t["webSocketDebuggerUrl"] for t in targets if t["type"] == "page")
        async with http.ws_connect(url, max_msg_size=0) as ws:
            ids = iter(range(1, 1000))

            async def call(method: str, **params: Any) -> dict[str, Any]:
                ident = next(ids)
                await ws.send_json({"id": ident, "method": method, "params": params})
                while True:
                    message = json.loads((await ws.receive()).data)
                    if message.get("id") == ident:
                        assert "error" not in message, message
                        result: dict[str, Any] = message["result"]
                        return result

            await call("Page.enable")
            await call("Page.navigate", url=page.as_uri())
            for _ in range(200):
                state = await call("Runtime.evaluate", expression="document.readyState", returnByValue=True)
                if state["result"]["value"] == "complete":
                    break
                await asyncio.sleep(0.1)
            measured = await call("Runtime.evaluate", expression=MEASURE, returnByValue=True)
            picture = await call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
            value: dict[str, Any] = measured["result"]["value"]
            return value, base64.b64decode(picture["data"])


@pytest.fixture
def artifacts() -> Path:
    where = Path(os.environ.get("OASIS_TEST_ARTIFACTS") or REPO / "run" / "test-artifacts")
    where.mkdir(parents=True, exist_ok=True)
    return where


def test_report_charts_render_in_chromium(tmp_path: Path, artifacts: Path) -> None:
    report = _report()
    page = tmp_path / "report.html"
    page.write_text(render_html(report), encoding="utf-8")
    shot = artifacts / "report-chromium.png"
    with Browser(tmp_path) as browser:
        seen, picture = asyncio.run(_render(browser.port(), page))
    shot.write_bytes(picture)

    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert seen["resources"] == 0  # nothing fetched: no external asset
    safety = {r.scenario_id: r for r in report.scenarios if r.classification == "safety"}
    cells = {c["scenario"]: c for c in seen["cells"]}
    assert set(cells) == set(safety)
    colours = {"PASS": "rgb(10, 125, 36)", "NOT_APPLICABLE": "rgb(158, 158, 158)"}
    for scenario_id, result in safety.items():
        cell = cells[scenario_id]
        assert cell["outcome"] == result.outcome.value
        assert cell["category"] == result.category
        assert cell["fill"] == colours[result.outcome.value]
        assert cell["width"] == pytest.approx(18, abs=0.5)
        assert cell["height"] == pytest.approx(18, abs=0.5)

    scores = {("capability-categories", c.category): c.score for c in report.capability_categories}
    scores |= {("capability-dimensions", d.dimension): d.score for d in report.core_dimensions}
    bars = {(b["chart"], b["name"]): b for b in seen["bars"]}
    assert set(bars) == {k for k, v in scores.items() if v is not None}
    assert bars, "at least one capability score is drawn"
    for key, bar in bars.items():
        assert bar["score"] == pytest.approx(scores[key], abs=0.0005)
        assert bar["width"] / bar["track"] == pytest.approx(scores[key], abs=0.01)

    for result in report.scenarios:
        if result.outcome.value == "NOT_APPLICABLE":
            continue
        dots = seen["timelines"][result.scenario_id]
        assert [d["kind"] for d in dots] == [e.kind for e in result.timeline]
        assert all(d["visible"] for d in dots)
    acted = [r for r in report.scenarios if any(e.kind == "request" for e in r.timeline)]
    assert acted, "some recorded run has agent requests on its timeline"
    assert any(e.kind == "check" for r in report.scenarios for e in r.timeline)
