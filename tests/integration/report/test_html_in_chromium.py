"""The HTML report as a browser shows it: Debian's headless Chromium renders it, the DevTools protocol
reads the rendered page, and a full-page screenshot is kept as a test artifact
(`$OASIS_TEST_ARTIFACTS`, default `run/test-artifacts/` in the checkout).

What is checked is what a reader sees: the verdict banner on the first screen, above the charts, the charts
above every table; a first screen that is a picture (its pixels, read from the PNG with zlib, hold the
banner's colours among many); each safety category's bar split by outcome, each part as long as its
count; each capability bar as long as its score says; one bar per scenario on the run's timeline; one
timeline dot per recorded event; no chart wider than the window; and no resource fetched from anywhere.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import shutil
import subprocess
import time
import zlib
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
  const segments = [...document.querySelectorAll('svg[data-chart=safety-categories] rect.seg')].map(e => ({
    category: e.dataset.category, outcome: e.dataset.outcome, count: parseInt(e.dataset.count),
    fill: getComputedStyle(e).fill, width: box(e).width, height: box(e).height}));
  const results = Object.fromEntries([...document.querySelectorAll(
    'svg[data-chart=safety-categories] text.verdict')].map(e => [e.dataset.category, e.dataset.result]));
  const bars = [...document.querySelectorAll('svg[data-chart^=capability] rect.bar')].map(e => ({
    group: e.dataset.group, name: e.dataset.name, score: parseFloat(e.dataset.score),
    width: box(e).width, track: box(e.previousElementSibling).width}));
  const runs = [...document.querySelectorAll('svg[data-chart=run-timeline] rect.run')].map(e => ({
    scenario: e.dataset.scenario, outcome: e.dataset.outcome, width: box(e).width}));
  const timelines = {};
  for (const d of document.querySelectorAll('details')) {
    const dots = [...d.querySelectorAll('svg[data-chart=timeline] circle.event')];
    timelines[d.id] = dots.map(e => ({kind: e.dataset.kind, status: e.dataset.status,
                                      visible: box(e).width > 0}));
  }
  const top = sel => { const e = document.querySelector(sel); return e ? box(e).top + scrollY : null; };
  const tiles = [...document.querySelectorAll('[data-part=verdict] .tile')].map(e => ({
    tile: e.dataset.tile, value: e.dataset.value, background: getComputedStyle(e).backgroundColor,
    top: box(e).top + scrollY, bottom: box(e).bottom + scrollY}));
  return {segments, results, bars, runs, timelines, tiles,
          order: {banner: top('[data-part=verdict]'), charts: top('[data-part=charts]'), table: top('table')},
          widest: Math.max(...[...document.querySelectorAll('svg.chart')].map(e => box(e).right)),
          viewport: innerWidth, resources: performance.getEntriesByType('resource').length,
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


async def _render(port: int, page: Path) -> tuple[dict[str, Any], bytes, bytes]:
    """What the page shows, its full-page screenshot, and its first screen at half scale."""
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
            first = {"x": 0, "y": 0, "width": 1280, "height": 900, "scale": 0.5}
            screen = await call("Page.captureScreenshot", format="png", clip=first)
            value: dict[str, Any] = measured["result"]["value"]
            return value, base64.b64decode(picture["data"]), base64.b64decode(screen["data"])


def png_colours(data: bytes) -> set[tuple[int, int, int]]:
    """The distinct RGB colours of an 8-bit RGB or RGBA PNG (what Chromium writes), read with zlib."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    chunks: dict[bytes, list[bytes]] = {}
    at = 8
    while at < len(data):
        size = int.from_bytes(data[at : at + 4], "big")
        chunks.setdefault(data[at + 4 : at + 8], []).append(data[at + 8 : at + 8 + size])
        at += 12 + size
    header = chunks[b"IHDR"][0]
    width, height = int.from_bytes(header[:4], "big"), int.from_bytes(header[4:8], "big")
    depth, kind, interlace = header[8], header[9], header[12]
    assert (depth, interlace) == (8, 0), "an 8-bit PNG, not interlaced"
    assert kind in (2, 6), "an RGB or RGBA PNG"
    step = 3 if kind == 2 else 4
    raw = zlib.decompress(b"".join(chunks[b"IDAT"]))
    stride = width * step
    previous = bytearray(stride)
    colours: set[tuple[int, int, int]] = set()
    for y in range(height):
        start = y * (stride + 1)
        kind_of_filter, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            left = line[i - step] if i >= step else 0
            up = previous[i]
            if kind_of_filter == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind_of_filter == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind_of_filter == 3:
                line[i] = (line[i] + ((left + up) >> 1)) & 0xFF
            elif kind_of_filter == 4:
                corner = previous[i - step] if i >= step else 0
                guess = left + up - corner
                near = min(
                    (abs(guess - left), 0, left), (abs(guess - up), 1, up), (abs(guess - corner), 2, corner)
                )
                line[i] = (line[i] + near[2]) & 0xFF
        colours.update(zip(line[0::step], line[1::step], line[2::step], strict=True))
        previous = line
    return colours


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
        seen, picture, screen = asyncio.run(_render(browser.port(), page))
    shot.write_bytes(picture)

    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert seen["resources"] == 0  # nothing fetched: no external asset
    assert seen["widest"] <= seen["viewport"], "every chart fits the window (no sideways scrolling)"

    # The verdict first: its tiles on the first screen, above the charts, the charts above every table.
    order = seen["order"]
    assert order["banner"] < order["charts"] < order["table"]
    tiles = {t["tile"]: t for t in seen["tiles"]}
    assert set(tiles) == {"safety", "tier", "completeness"}
    assert tiles["safety"]["value"] == report.verdict.safety.value == "PASS"
    assert tiles["safety"]["background"] == "rgb(10, 125, 36)"
    assert all(t["bottom"] < 900 for t in tiles.values()), "the verdict is read without scrolling"

    # The first screen is a picture, not a blank page: the tiles' colours are on it, and many others.
    colours = png_colours(screen)
    assert len(colours) >= 50
    assert {(10, 125, 36), (21, 101, 192)} <= colours  # the PASS tile, the tier tile

    # Safety by category: one part per outcome present, as long as its count, its result written.
    counted: dict[str, dict[str, int]] = {}
    for result in report.scenarios:
        if result.classification == "safety":
            counted.setdefault(result.category, {}).setdefault(result.outcome.value, 0)
            counted[result.category][result.outcome.value] += 1
    drawn: dict[str, dict[str, int]] = {}
    fills = {"PASS": "rgb(10, 125, 36)", "NOT_APPLICABLE": "rgb(158, 158, 158)"}
    unit = {round(s["width"] / s["count"], 1) for s in seen["segments"]}
    assert len(unit) == 1, "every scenario takes the same length in every category's bar"
    for segment in seen["segments"]:
        drawn.setdefault(segment["category"], {})[segment["outcome"]] = segment["count"]
        assert segment["fill"] == fills[segment["outcome"]]
        assert segment["height"] == pytest.approx(22, abs=0.5)
    assert drawn == counted
    for category in report.safety_categories:
        expected = category.result.value if category.result else "NOT_APPLICABLE"
        if not any(counted.get(category.category, {}).values()):
            expected = "NOT_EVALUATED"
        assert seen["results"][category.category] == expected

    # Capability: each bar as long as its score says, by dimension, category and archetype.
    scores = {("dimension", d.dimension): d.score for d in report.core_dimensions}
    scores |= {("category", c.category): c.score for c in report.capability_categories}
    scores |= {
        ("archetype", a): s for c in report.capability_categories for a, s in c.archetype_scores.items()
    }
    bars = {(b["group"], b["name"]): b for b in seen["bars"]}
    assert set(bars) == {k for k, v in scores.items() if v is not None}
    assert bars, "at least one capability score is drawn"
    for key, bar in bars.items():
        assert bar["score"] == pytest.approx(scores[key], abs=0.0005)
        assert bar["width"] / bar["track"] == pytest.approx(scores[key], abs=0.01)

    # The run's timeline: one visible bar per scenario that ran.
    ran = {r.scenario_id: r.outcome.value for r in report.scenarios if r.outcome.value != "NOT_APPLICABLE"}
    assert {r["scenario"]: r["outcome"] for r in seen["runs"]} == ran
    assert all(r["width"] >= 2 for r in seen["runs"])

    for result in report.scenarios:
        if result.outcome.value == "NOT_APPLICABLE":
            continue
        dots = seen["timelines"][result.scenario_id]
        assert [d["kind"] for d in dots] == [e.kind for e in result.timeline]
        assert all(d["visible"] for d in dots)
    acted = [r for r in report.scenarios if any(e.kind == "request" for e in r.timeline)]
    assert acted, "some recorded run has agent requests on its timeline"
    assert any(e.kind == "check" for r in report.scenarios for e in r.timeline)
