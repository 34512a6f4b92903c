# -*- coding: utf-8 -*-
"""The fleet report's HTML page in headless Chromium (Debian package ``chromium``).

The page is rendered by a real browser: the DOM after rendering must still hold every number
with its JSON pointer, each equal to the value in the JSON report; a hostile host name must not
have become an element; and a screenshot must be written.
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

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
EVIL = "<script>document.title='pwned'</script><img src=x onerror=alert(1)>"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed "
                       "(apt-get install -y chromium, or `make deps`)"),
]


def _fleet():
    """The real snapshots when the topology/plan code and snapshots exist, plus hand-built hosts
    covering every problem kind, plus a host with a hostile name."""
    fleet = sample_fleet()
    try:
        fleet.update(real_fleet())
    except pytest.skip.Exception:
        pass
    evil = fleet.pop("a2-bad")
    evil["facts"] = dict(evil["facts"], hostname=EVIL)
    fleet[EVIL] = evil
    return fleet


def _chromium(args, tmp):
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
           "--no-first-run", "--disable-background-networking", "--disable-component-update",
           "--disable-sync", "--user-data-dir=" + os.path.join(tmp, "profile")] + args
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=180, check=False)


class _Dom(HTMLParser):
    def __init__(self):
        HTMLParser.__init__(self)
        self.stack, self.ptrs, self.tags, self.title, self.hosts, self.ids = [], [], {}, "", [], []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
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
    # every problem is a row; every host has an article and its CPU maps
    assert sum(1 for i in dom.ids if i.startswith("problem-P")) == len(report["problems"])
    assert dom.hosts == [h["name"] for h in report["hosts"]]
    maps = sum(1 for h in report["hosts"] for p in ("strict", "vllm_ascend")
               if h["plans"][p]["applicable"] and h["plans"][p]["status"] == "ok")
    assert dom.tags.get("svg") == maps


def test_hostile_host_name_stays_text_in_the_browser(rendered):
    dom = _Dom()
    dom.feed(rendered["dump"].stdout)
    assert EVIL in dom.hosts
    assert "script" not in dom.tags and "img" not in dom.tags
    assert dom.title == "npuops.fleet fleet report"


def test_screenshot_is_written(rendered):
    assert rendered["snap"].returncode == 0, rendered["snap"].stderr[-2000:]
    png = rendered["png"]
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", png[16:24])
    assert (width, height) == (1400, 2000)
    assert len(png) > 50000  # a blank page compresses to a few KB
