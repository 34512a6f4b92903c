# -*- coding: utf-8 -*-
"""docs/demo.md and docs/audit.md state `make demo`'s report counts in one marked sentence;
tests/integration/playbooks/test_demo.py compares them with the report of a real run."""

import pytest

from npuops_testing import demo_docs


@pytest.mark.parametrize("page", demo_docs.PAGES)
def test_the_counts_sentence_is_there_and_readable(page):
    counts = demo_docs.counts(page)
    assert set(counts) == set(demo_docs.KEYS)
    assert counts["hosts"] > 0 and counts["error"] >= 0


def test_both_pages_say_the_same():
    assert demo_docs.counts(demo_docs.PAGES[0]) == demo_docs.counts(demo_docs.PAGES[1])


def test_the_reader_compares_a_report_summary():
    stated = demo_docs.counts(demo_docs.PAGES[0])
    summary = dict((k, stated[k]) for k in demo_docs.KEYS[:5])
    summary["problems"] = {"error": stated["error"], "warning": stated["warning"], "info": stated["info"]}
    assert demo_docs.mismatches(demo_docs.PAGES[0], summary) == []
    summary["problems"] = dict(summary["problems"], error=stated["error"] + 1)
    (wrong,) = demo_docs.mismatches(demo_docs.PAGES[0], summary)
    assert wrong.startswith("error: demo.md says ")
