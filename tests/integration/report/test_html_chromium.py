# -*- coding: utf-8 -*-
"""The fleet report's HTML page in headless Chromium (Debian package ``chromium``).

The page is rendered by a real browser: the DOM after rendering must still hold every number
with its JSON pointer, each equal to the value in the JSON report; a hostile host name must not
have become an element; and a screenshot must be written. At fleet size (a synthetic fleet of
1,000 hosts, ``npuops_testing.synthetic_fleet``) the page stays small, loads, and the host
filter (``#host=<text>``) shows exactly the shapes and problem rows of the matching hosts.
"""

import json
import os
import shutil
import struct
import subprocess
import tempfile
from html.parser import HTMLParser

import pytest

from ansible_collections.npuops.fleet.plugins.plugin_utils.report import analysis as fr
from ansible_collections.npuops.fleet.plugins.plugin_utils.report import html as report_html
from npuops_testing.report_fleet import real_fleet, sample_fleet
from npuops_testing.synthetic_fleet import synthetic_fleet

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
EVIL = "<script>document.title='pwned'</script><img src=x onerror=alert(1)>"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium, or `make deps`)"
    ),
]


def _fleet():
    """The real snapshots, plus hand-built hosts covering every problem kind, plus a host with a
    hostile name."""
    fleet = sample_fleet()
    fleet.update(real_fleet())
    evil = fleet.pop("a2-bad")
    evil["facts"] = dict(evil["facts"], hostname=EVIL)
    fleet[EVIL] = evil
    return fleet


def _chromium(args, tmp):
    cmd = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--user-data-dir=" + os.path.join(tmp, "profile"),
    ] + args
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=180, check=False)


class _Dom(HTMLParser):
    def __init__(self):
        HTMLParser.__init__(self)
        self.stack, self.ptrs, self.tags, self.title, self.hosts, self.ids = [], [], {}, "", [], []
        self.elements = []  # (tag, attrs) of every element, in order

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.elements.append((tag, attrs))
        self.tags[tag] = self.tags.get(tag, 0) + 1
        if attrs.get("data-host") is not None:
            self.hosts.append(attrs["data-host"])
        if attrs.get("id"):
            self.ids.append(attrs["id"])
        if tag in ("meta", "br", "img", "input", "link"):
            return
        self.stack.append([tag, attrs.get("data-ptr"), ""])

    def handle_endtag(self, tag):
        while self.stack:
            open_tag, ptr, text = self.stack.pop()
            if ptr is not None:
                self.ptrs.append((ptr, text))
            if self.stack:
                self.stack[-1][2] += text
            if open_tag == tag:
                break

    def handle_data(self, data):
        if self.stack:
            if self.stack[-1][0] == "title" and not any(t[0] == "svg" for t in self.stack):
                self.title += data
            self.stack[-1][2] += data


def _resolve(doc, pointer):
    for part in pointer.strip("/").split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        doc = doc[int(part)] if isinstance(doc, list) else doc[part]
    return doc


@pytest.fixture(scope="module")
def rendered():
    report = fr.build_report(_fleet())
    tmp = tempfile.mkdtemp(prefix="fleet-report-")
    try:
        page = os.path.join(tmp, "fleet-report.html")
        with open(page, "w", encoding="utf-8") as handle:
            handle.write(report_html.render_html(report))
        with open(os.path.join(tmp, "fleet-report.json"), "w", encoding="utf-8") as handle:
            handle.write(fr.render_json(report))
        dump = _chromium(["--dump-dom", "file://" + page], tmp)
        shot = os.path.join(tmp, "shot.png")
        snap = _chromium(["--screenshot=" + shot, "--window-size=1400,2000", "file://" + page], tmp)
        with open(os.path.join(tmp, "fleet-report.json"), encoding="utf-8") as handle:
            as_json = json.load(handle)
        png = open(shot, "rb").read() if os.path.exists(shot) else b""
        yield {"report": as_json, "dump": dump, "snap": snap, "png": png}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_page_renders_and_numbers_in_the_dom_match_the_json(rendered):
    assert rendered["dump"].returncode == 0, rendered["dump"].stderr[-2000:]
    dom = _Dom()
    dom.feed(rendered["dump"].stdout)
    report = rendered["report"]
    assert dom.title == "npuops.fleet fleet report"
    assert len(dom.ptrs) >= 10 * len(report["hosts"])
    for ptr, text in dom.ptrs:
        assert text == str(_resolve(report, ptr)), ptr
    seen = dict(dom.ptrs)
    for key in ("hosts", "npus", "gpus", "unhealthy", "softshare_capacity"):
        assert seen["/summary/" + key] == str(report["summary"][key])
    for sev in ("error", "warning", "info"):
        assert seen["/summary/problems/" + sev] == str(report["summary"]["problems"][sev])
    # every problem has an anchor; every host is listed once, in its shape's article; every
    # shape has its CPU maps
    assert sorted(i for i in dom.ids if i.startswith("problem-P")) == sorted(
        "problem-" + p["id"] for p in report["problems"]
    )
    assert sorted(dom.hosts) == sorted(h["name"] for h in report["hosts"])
    maps = sum(
        1
        for s in report["shapes"]
        for p in ("strict", "vllm_ascend")
        if report["hosts"][s["host"]]["plans"][p]["applicable"]
        and report["hosts"][s["host"]]["plans"][p]["status"] == "ok"
    )
    assert dom.tags.get("svg") == maps


def test_hostile_host_name_stays_text_in_the_browser(rendered):
    dom = _Dom()
    dom.feed(rendered["dump"].stdout)
    assert EVIL in dom.hosts
    assert dom.tags.get("script") == 1 and "img" not in dom.tags  # the page's own filter only
    assert dom.title == "npuops.fleet fleet report"


def test_screenshot_is_written(rendered):
    assert rendered["snap"].returncode == 0, rendered["snap"].stderr[-2000:]
    png = rendered["png"]
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", png[16:24])
    assert (width, height) == (1400, 2000)
    assert len(png) > 50000  # a blank page compresses to a few KB


def _visible(dom, tag, attr):
    """Values of ``attr`` on the ``tag`` elements the filter left visible (no ``hidden``)."""
    return [a[attr] for t, a in dom.elements if t == tag and attr in a and "hidden" not in a]


@pytest.fixture(scope="module")
def fleet_page():
    fleet, counts = synthetic_fleet(1000)
    report = fr.build_report(fleet)
    tmp = tempfile.mkdtemp(prefix="fleet-report-1000-")
    try:
        page = os.path.join(tmp, "fleet-report.html")
        text = report_html.render_html(report)
        with open(page, "w", encoding="utf-8") as handle:
            handle.write(text)
        yield {"report": report, "page": page, "size": len(text.encode("utf-8")), "counts": counts, "tmp": tmp}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_a_1000_host_fleet_is_a_small_page_of_shapes(fleet_page):
    report = fleet_page["report"]
    assert report["summary"]["hosts"] == 1000 and len(report["hosts"]) == 1000
    assert all(fleet_page["counts"].values())  # failed chips, cut cpusets and drifts are in it
    assert 13 < len(report["shapes"]) < 100
    assert fleet_page["size"] < 3 * 1000 * 1000
    dump = _chromium(["--dump-dom", "file://" + fleet_page["page"]], fleet_page["tmp"])
    assert dump.returncode == 0, dump.stderr[-2000:]
    dom = _Dom()
    dom.feed(dump.stdout)
    assert dom.title == "npuops.fleet fleet report"
    assert sorted(dom.hosts) == sorted(h["name"] for h in report["hosts"])
    # no filter: every shape shown
    assert _visible(dom, "article", "data-shape") == [s["id"] for s in report["shapes"]]


def test_the_host_filter_shows_only_the_matching_hosts_shapes(fleet_page):
    report = fleet_page["report"]
    # a host with a failed chip: a shape of its own kind, next to the big shape of its kind
    sick = next(p["host"] for p in report["problems"] if p["kind"] == "unhealthy_chip")
    shape = next(h["shape"] for h in report["hosts"] if h["name"] == sick)
    url = "file://%s#host=%s" % (fleet_page["page"], sick)
    dump = _chromium(["--dump-dom", url], fleet_page["tmp"])
    assert dump.returncode == 0, dump.stderr[-2000:]
    dom = _Dom()
    dom.feed(dump.stdout)
    body = [a for t, a in dom.elements if t == "body"][0]
    assert body.get("data-filter") == sick.lower()
    assert _visible(dom, "article", "data-shape") == [shape]
    assert set(_visible(dom, "tr", "data-shape")) == {shape}  # the shapes and binding tables
    hits = [a["data-host"] for t, a in dom.elements if t == "span" and "hit" in a.get("class", "").split()]
    assert hits == [sick]
    rows = [a["data-shapes"].split() for t, a in dom.elements if "data-shapes" in a and "hidden" not in a]
    assert rows and all(shape in r for r in rows)
    hidden = [a["data-shapes"].split() for t, a in dom.elements if "data-shapes" in a and "hidden" in a]
    assert hidden and not any(shape in r for r in hidden)
    # the problem row of the failed chip is among the rows shown
    assert any(p["host"] == sick for p in report["problems"] if p["kind"] == "unhealthy_chip")
