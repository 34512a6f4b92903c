# -*- coding: utf-8 -*-
"""Every parser case file in ``cases/`` (real fixture -> expected values), one test per case.

Case file format and selectors: ``tests/lib/npuops_testing/cases.py``. Parser behaviour that is
not a table (bad input, fuzzing, reference samples, invariants over all rows) stays in the
``test_<parser>.py`` next to this file.
"""

import os

import pytest

from npuops_testing import cases

CASES = cases.load_dir(os.path.join(os.path.dirname(os.path.abspath(__file__)), "cases"))


@pytest.mark.parametrize("case", CASES, ids=["%s:%s" % (c.source, c.id) for c in CASES])
def test_fixture_case(case):
    cases.check(case.run(), case.expected)
