#!/usr/bin/env python
"""Fleet report at fleet size: build and render the report of a synthetic fleet of N hosts (the
demo fleet's 13 hosts repeated, a few percent with a failed chip, a cut cpuset or a drifted
binding; tests/lib/npuops_testing/synthetic_fleet.py) and check the page in headless Chromium.

Per fleet size: the time of ``analysis.build_report`` and of each renderer (HTML, Markdown,
JSON), their sizes, the number of host shapes, and the ``npuops.fleet.fleet_report`` filter as
the audit role calls it (Ansible values to plain data, the rail check, the report, plain dicts).
Chromium (when installed) loads the page with ``#host=<a host with a failed chip>``: the time
to load and run the host filter, and whether exactly that host's shape is left on the page.
``--before REF`` also runs the report code of git commit REF on the same fleet, in a
subprocess (the code before the report by shape: c132345).

Wall-clock seconds on a shared machine; no figure is asserted. Figures go in
docs/performance.md under "Fleet report at fleet size".

Usage: .venv/bin/python bench/bench_report.py [--hosts 1000,10000] [--before REF] [--no-browser]
"""

import argparse
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import time
from html.parser import HTMLParser

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, ".cache", "collections"))
sys.path.insert(0, os.path.join(REPO, "tests", "lib"))

from ansible_collections.npuops.fleet.plugins.filter import report as report_filter  # noqa: E402
from ansible_collections.npuops.fleet.plugins.plugin_utils.report import analysis  # noqa: E402
from ansible_collections.npuops.fleet.plugins.plugin_utils.report import html as report_html  # noqa: E402
from ansible_collections.npuops.fleet.plugins.plugin_utils.report import markdown as report_md  # noqa: E402
from npuops_testing.synthetic_fleet import demo_entries, synthetic_fleet  # noqa: E402

TARGETS = {1000: (3e6, 5.0), 10000: (10e6, 30.0)}  # the issue's: HTML bytes, build + render s
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

# Run by --before in a subprocess: the report code of another commit on the pickled fleet.
BEFORE = r"""
import pickle, sys, time
sys.path.insert(0, sys.argv[1])
from ansible_collections.npuops.fleet.plugins.plugin_utils.report import analysis, html, markdown
fleet = pickle.load(open(sys.argv[2], "rb"))
t = time.monotonic(); report = analysis.build_report(fleet); build = time.monotonic() - t
t = time.monotonic(); page = html.render_html(report); t_html = time.monotonic() - t
t = time.monotonic(); md = markdown.render_markdown(report); t_md = time.monotonic() - t
t = time.monotonic(); text = analysis.render_json(report); t_json = time.monotonic() - t
print(repr((build, t_html, len(page.encode()), t_md, len(md.encode()), t_json, len(text.encode()))))
"""


def timed(func, *args):
    start = time.monotonic()
    value = func(*args)
    return value, time.monotonic() - start


class _Visible(HTMLParser):
    def __init__(self):
        HTMLParser.__init__(self)
        self.articles, self.hits, self.status, self._in_status = [], [], "", False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "article" and "data-shape" in attrs and "hidden" not in attrs:
            self.articles.append(attrs["data-shape"])
        if tag == "span" and "hit" in (attrs.get("class") or "").split():
            self.hits.append(attrs.get("data-host"))
        self._in_status = attrs.get("id") == "filter-status"

    def handle_data(self, data):
        if self._in_status:
            self.status += data

    def handle_endtag(self, tag):
        self._in_status = False


def browser_check(page, report, tmp):
    """(seconds to load with the filter applied, verdict text) or None without Chromium."""
    if CHROMIUM is None:
        return None
    sick = next((p["host"] for p in report["problems"] if p["kind"] == "unhealthy_chip"), report["hosts"][0]["name"])
    shape = next(h["shape"] for h in report["hosts"] if h["name"] == sick)
    cmd = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--user-data-dir=" + os.path.join(tmp, "profile"),
        "--dump-dom",
        "file://%s#host=%s" % (page, sick),
    ]
    start = time.monotonic()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600, check=False)
    seconds = time.monotonic() - start
    if proc.returncode != 0:
        return seconds, "failed (rc=%d)" % proc.returncode
    seen = _Visible()
    seen.feed(proc.stdout)
    ok = seen.articles == [shape] and seen.hits == [sick]
    return seconds, "%s: %s (%s)" % (
        sick,
        "only its shape shown" if ok else "WRONG: shapes %s, hits %s" % (seen.articles[:5], seen.hits[:5]),
        seen.status.strip(),
    )


def before(fleet, tmp, ref):
    """The report code of git commit ``ref`` on the same fleet (subprocess), or None."""
    tree = os.path.join(tmp, "before")
    target = os.path.join(tree, "ansible_collections", "npuops", "fleet")
    shutil.rmtree(tree, ignore_errors=True)
    os.makedirs(target)
    archive = subprocess.run(["git", "-C", REPO, "archive", ref, "plugins"], stdout=subprocess.PIPE, check=False)
    if archive.returncode != 0:
        return None
    subprocess.run(["tar", "-x", "-C", target], input=archive.stdout, check=True)
    data = os.path.join(tmp, "fleet.pickle")
    with open(data, "wb") as handle:
        pickle.dump(fleet, handle, protocol=4)
    proc = subprocess.run(
        [sys.executable, "-c", BEFORE, tree, data],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-2000:])
        return None
    return eval(proc.stdout.strip().splitlines()[-1])  # pylint: disable=eval-used  # noqa: S307


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", default="1000,10000")
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--before", metavar="REF", help="also run the report code of this commit")
    parser.add_argument("--no-browser", action="store_true")
    args = parser.parse_args(argv)
    base = demo_entries()
    rows, checks, olds = [], [], []
    tmp = tempfile.mkdtemp(prefix="bench_report.")
    try:
        for n in [int(x) for x in args.hosts.split(",")]:
            fleet, counts = synthetic_fleet(n, seed=args.seed, base=base)
            report, t_build = timed(analysis.build_report, fleet)
            page, t_html = timed(report_html.render_html, report)
            md, t_md = timed(report_md.render_markdown, report)
            text, t_json = timed(analysis.render_json, report)
            dummy, t_filter = timed(report_filter.fleet_report, fleet)
            total = t_build + t_html + t_md + t_json
            size = len(page.encode("utf-8"))
            target = TARGETS.get(n)
            verdict = (
                "-"
                if target is None
                else "%s (<= %.0f MB, <= %.0f s)"
                % ("met" if size <= target[0] and total <= target[1] else "MISSED", target[0] / 1e6, target[1])
            )
            rows.append(
                (
                    n,
                    counts,
                    len(report["shapes"]),
                    len(report["problems"]),
                    len(report["problem_groups"]),
                    t_build,
                    t_html,
                    size,
                    t_md,
                    len(md.encode("utf-8")),
                    t_json,
                    len(text.encode("utf-8")),
                    total,
                    t_filter,
                    verdict,
                )
            )
            path = os.path.join(tmp, "fleet-report-%d.html" % n)
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(page)
            if not args.no_browser:
                checks.append((n, browser_check(path, report, tmp)))
            if args.before:
                olds.append((n, before(fleet, tmp, args.before)))
            del report, page, md, text, fleet
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(
        "Fleet report: synthetic fleets of the 13 demo hosts (seed %d), %d CPUs, Python %s"
        % (args.seed, os.cpu_count() or 0, sys.version.split()[0])
    )
    print()
    print(
        "| hosts | varied hosts (chip, cpuset, drift) | shapes | problems (rows) | build s | "
        "HTML s | HTML MB | Markdown s / MB | JSON s / MB | build + render s | "
        "fleet_report filter s | target |"
    )
    print("|---:|---|---:|---:|---:|---:|---:|---|---|---:|---:|---|")
    for (
        n,
        counts,
        shapes,
        problems,
        groups,
        t_build,
        t_html,
        size,
        t_md,
        md_size,
        t_json,
        json_size,
        total,
        t_filter,
        verdict,
    ) in rows:
        print(
            "| %s | %d, %d, %d | %d | %s (%d) | %.2f | %.2f | %.2f | %.2f / %.2f | %.2f / %.1f | "
            "%.2f | %.2f | %s |"
            % (
                format(n, ","),
                counts["failed_chip"],
                counts["cut_cpuset"],
                counts["drifted_binding"],
                shapes,
                format(problems, ","),
                groups,
                t_build,
                t_html,
                size / 1e6,
                t_md,
                md_size / 1e6,
                t_json,
                json_size / 1e6,
                total,
                t_filter,
                verdict,
            )
        )
    if olds:
        print()
        print(
            "| hosts | %s: build s | HTML s | HTML MB | Markdown s / MB | JSON s / MB | "
            "build + render s |" % args.before
        )
        print("|---:|---:|---:|---:|---|---|---:|")
        for n, old in olds:
            if old is None:
                print("| %s | not run | | | | | |" % format(n, ","))
                continue
            build, t_html, size, t_md, md_size, t_json, json_size = old
            print(
                "| %s | %.2f | %.2f | %.1f | %.2f / %.1f | %.2f / %.1f | %.2f |"
                % (
                    format(n, ","),
                    build,
                    t_html,
                    size / 1e6,
                    t_md,
                    md_size / 1e6,
                    t_json,
                    json_size / 1e6,
                    build + t_html + t_md + t_json,
                )
            )
    if checks:
        print()
        print("| hosts | Chromium: load + filter s | filter by host (#host=...) |")
        print("|---:|---:|---|")
        for n, check in checks:
            if check is None:
                print("| %s | - | chromium not installed |" % format(n, ","))
            else:
                print("| %s | %.1f | %s |" % (format(n, ","), check[0], check[1]))
    failed = [r for r in rows if r[-1].startswith("MISSED")] + [
        c for c in checks if c[1] is not None and "only its shape shown" not in c[1][1]
    ]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
