"""The widget's script and a node to run it with, for the tests that execute JavaScript."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parent.parent.parent
WIDGET = PROJECT / "widget"
SCRIPT = WIDGET / "unerase-widget.js"
MIN_NODE = 18  # node:test and the global fetch Response the tests use


def node_or_skip() -> str:
    """Path of a usable node; skip without one, or fail under CI."""
    path = shutil.which("node")
    problem = f"node not found on PATH; install Node.js {MIN_NODE} or later to run the widget's tests"
    if path is not None:
        version = subprocess.run([path, "--version"], capture_output=True, text=True, check=False).stdout.strip()
        major = re.match(r"v(\d+)\.", version)
        if major and int(major.group(1)) >= MIN_NODE:
            return path
        problem = f"node {version or '(unknown version)'} is too old; the widget's tests need {MIN_NODE} or later"
    if os.environ.get("CI"):
        pytest.fail(f"{problem} (required because CI is set)")
    pytest.skip(problem)
