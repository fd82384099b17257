"""Shared helpers of the Python module's tests: where the sources and the built CLI are (set by
CTest, python/CMakeLists.txt) and how to run the CLI for a comparison."""

import json
import os
import subprocess

import pytest

SOURCE_DIR = os.environ.get(
    "AB_SOURCE_DIR", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
CLI = os.environ.get("AB_CLI", os.path.join(SOURCE_DIR, "build", "autobatch"))


def sample_path(name):
    return os.path.join(SOURCE_DIR, "samples", name)


def read(path):
    with open(path) as f:
        return f.read()


def cli_json(args):
    """`autobatch ARGS --format json`'s document."""
    done = subprocess.run([CLI] + args + ["--format", "json"], capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout)


@pytest.fixture
def cli():
    if not os.path.exists(CLI):
        pytest.skip("the autobatch CLI is not built")
    return cli_json
