# -*- coding: utf-8 -*-
"""The vllm-ascend version reader on hostile container images (a tenant's worker root): every
image gives a version or at most one error row, never an exception, in bounded time; the core
metadata's own line rules (the email header format) decide which ``Version:`` is read; the
package's ``_version.py`` (what the interpreter imports) beats a stale egg-info, with a warning."""

import email.parser
import email.policy

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.errors import InputError, ParseError
from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio
from ansible_collections.npuops.fleet.plugins.module_utils.parse import python_dist
from ansible_collections.npuops.fleet.plugins.module_utils.vllm_ascend.model import version as reader
from npuops_testing import hostile_images
from npuops_testing.fake_io import FakeIO


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    root = tmp_path_factory.mktemp("images")
    hostile_images.build(root)
    return root


# image -> (version found, error rows, warnings, the error row's text)
EXPECTED = {
    "sparse": (None, 1, 0, "no Version: header"),
    "many": (None, 1, 0, "100 vllm-ascend records, only the first 8 read"),
    "nel": ("0.9.1", 0, 0, None),
    "vt": ("0.9.1", 0, 0, None),
    "folded": ("0.9.1", 0, 0, None),
    "stale": ("0.9.1", 0, 1, None),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_hostile_image_gives_a_version_or_one_error_row(images, name):
    version, rows, warned, text = EXPECTED[name]
    measured = hostile_images.measure(images, name)
    assert measured["raised"] is None
    assert measured["version"] == version
    assert measured["errors"] == rows and len(measured["warnings"]) == warned
    if text:
        assert text in measured["rows"][0]["msg"]
    assert measured["seconds"] < 10  # 85 s and 11,000 rows for "many" before the bounds


def test_the_stale_egg_info_is_named_in_the_warning(images):
    measured = hostile_images.measure(images, "stale")
    warning = measured["warnings"][0]
    assert "vllm_ascend/_version.py says 0.9.1" in warning
    assert "vllm_ascend-0.7.3-py3.11.egg-info/PKG-INFO says 0.7.3" in warning


def test_a_sparse_metadata_is_read_by_what_is_read_not_its_size(images):
    io = hostio.LiveHostIO(str(images))
    path = "/proc/101/root/usr/lib/python3/site-packages/vllm_ascend-0.9.1.dist-info/METADATA"
    with pytest.raises(InputError, match="larger than 64 MiB"):
        io.read_text(path)  # the whole file: refused, as before
    assert io.read_text(path, reader.HEAD_BYTES) == "\0" * reader.HEAD_BYTES


def test_a_read_that_raises_is_one_error_row_not_a_failed_task():
    class Refusing(FakeIO):
        def read_text(self, path, limit=None):
            if path.endswith("METADATA"):
                raise InputError(path, "is larger than 64 MiB")
            return FakeIO.read_text(self, path, limit)

    site = "/proc/7/root/usr/lib/python3/site-packages"
    io = Refusing(files={site + "/vllm_ascend-1.0.dist-info/METADATA": "x", "/proc/7/cmdline": "/usr/bin/python3\0"})
    errors = []
    assert reader.gather(io, pids=[7], errors=errors) is None
    assert len(errors) == 1 and "larger than 64 MiB" in errors[0]["msg"]


# METADATA header blocks, each read by the standard library's own email parser (compat32, as
# the core metadata specification says tools read it) and by python_dist: the same Version.
HEADER_CASES = [
    "Name: vllm_ascend\nVersion: 0.9.1\n\nVersion: 9.9.9\n",
    "Name: vllm_ascend\r\nVersion: 0.9.1\r\n\r\nbody\r\n",
    "Name: vllm_ascend\rVersion: 0.9.1\r\rbody\r",
    "Name: vllm_ascend\nSummary: a\x85Version: 0.1.0\nVersion: 0.9.1\n\n",
    "Name: vllm_ascend\nSummary: a\x0bVersion: 0.1.0\nVersion: 0.9.1\n\n",
    "Name: vllm_ascend\nSummary: a\x0cVersion: 0.1.0\nVersion: 0.9.1\n\n",
    "Name: vllm_ascend\nSummary: a\u2028Version: 0.1.0\nVersion: 0.9.1\n\n",
    "Name: vllm_ascend\nSummary: a\x1cVersion: 0.1.0\nVersion: 0.9.1\n\n",
    "Name: vllm_ascend\nSummary: a\n Version: 0.2.0\nVersion: 0.9.1\n\n",
    "Name: vllm_ascend\nSummary: a\n\tVersion: 0.2.0\nVersion: 0.9.1\n\n",
    "Name: vllm_ascend\nSummary: a\n \nVersion: 0.9.1\n\n",
    "Name: vllm_ascend\nVersion: 0.9.1\nVersion: 0.1.0\n\n",
    "Name: vllm_ascend\nversion: 0.9.1\n\n",
    "Name: vllm_ascend\nVersion:0.9.1\n\n",
]
NO_VERSION_CASES = [
    "Name: vllm_ascend\n\nVersion: 0.9.1\n",
    "Name: vllm_ascend\nnot a header line\nVersion: 0.9.1\n",
    " Version: 0.9.1\n",
    "\0" * 100,
]


def _stdlib(text):
    message = email.parser.Parser(policy=email.policy.compat32).parsestr(text, headersonly=True)
    value = message["Version"]
    return None if value is None else value.strip()


@pytest.mark.parametrize("text", HEADER_CASES + NO_VERSION_CASES)
def test_the_version_is_the_one_the_email_parser_reads(text):
    expected = _stdlib(text)
    if expected is None:
        with pytest.raises(ParseError, match="no Version"):
            python_dist.metadata_version(text)
    else:
        assert python_dist.metadata_version(text) == expected
    assert (expected is None) == (text in NO_VERSION_CASES)


def test_version_module_breaks_lines_where_python_does():
    text = "# a comment\x85__version__ = '0.1.0'\n__version__ = version = '0.9.1'\n"
    assert python_dist.version_module(text) == ("0.9.1", None)
