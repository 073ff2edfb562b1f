"""The embeddable widget script (widget/unerase-widget.js): its node tests, its size budget, its DOM safety.

The script has no npm dependencies, so its unit tests run on node's built-in runner; this module runs them
from pytest. Without `node` they are skipped locally and fail under CI (environment variable CI set), so a
CI image that lost node cannot pass silently. The size and API checks need only Python.
"""

from __future__ import annotations

import gzip
import re
import subprocess
from pathlib import Path

import pytest

from web.routes.widget import compact

from .support.node import PROJECT, SCRIPT, WIDGET, node_or_skip

BUDGET = 12 * 1024  # gzipped bytes: forums load the script on every page
# APIs that parse strings as markup; the widget builds every node with createElement and textContent
FORBIDDEN = ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write")


def test_node_unit_tests_pass() -> None:
    node = node_or_skip()
    # files rather than the directory: how node expands a directory argument differs between versions
    files = sorted(str(p.relative_to(PROJECT)) for p in WIDGET.glob("test/*.test.*js"))
    assert files, "no widget/test/*.test.mjs files found"
    run = subprocess.run(
        [node, "--test", *files], cwd=PROJECT, capture_output=True, text=True, timeout=120, check=False
    )
    output = run.stdout + run.stderr
    assert run.returncode == 0, f"node --test failed:\n{output}"
    counts = dict(re.findall(r"^# (tests|pass|fail) (\d+)$", run.stdout, flags=re.M))
    assert int(counts.get("tests", 0)) >= 40, f"fewer node tests ran than expected:\n{output}"
    assert counts.get("fail") == "0" and counts.get("pass") == counts.get("tests"), output


def test_gzipped_size_within_budget() -> None:
    served = compact(SCRIPT.read_text(encoding="utf-8")).encode("utf-8")
    size = len(gzip.compress(served, compresslevel=9))
    assert size <= BUDGET, f"widget/unerase-widget.js is {size} bytes gzipped as served; the budget is {BUDGET}"


def test_the_compacted_script_parses_and_keeps_every_line_of_code(tmp_path: Path) -> None:
    node = node_or_skip()
    source = SCRIPT.read_text(encoding="utf-8")
    served = compact(source)
    assert not any(line.startswith("//") for line in served.split("\n")), "a whole-line comment was kept"
    code = [line.strip() for line in source.split("\n") if line.strip() and not line.strip().startswith("//")]
    assert [line.rstrip() for line in served.split("\n") if line.strip()] == code, "compact() changed a line of code"
    path = tmp_path / "served.js"
    path.write_text(served, encoding="utf-8")
    check = subprocess.run([node, "--check", str(path)], capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stderr


def test_compact_drops_whole_line_comments_only() -> None:
    source = 'const a = "https://example.org"; // kept: not a whole line\n    // dropped\n  b();'
    assert compact(source) == 'const a = "https://example.org"; // kept: not a whole line\nb();'


@pytest.mark.parametrize("api", FORBIDDEN)
def test_no_markup_parsing_api(api: str) -> None:
    lines = [n for n, line in enumerate(SCRIPT.read_text(encoding="utf-8").splitlines(), 1) if api in line]
    assert not lines, f"widget/unerase-widget.js uses {api} on line(s) {lines}; build nodes with createElement"


def test_script_is_utf8_without_bom() -> None:
    # served as text/javascript; charset=utf-8, and the translations are not ASCII
    data = SCRIPT.read_bytes()
    assert not data.startswith(b"\xef\xbb\xbf")
    data.decode("utf-8")


def test_the_widget_bands_confidence_as_the_demo_page_does() -> None:
    # the widget's floors (widget/unerase-widget.js `band`) are the demo's CONFIDENCE_BANDS, so a reader sees the
    # same words for the same number on the demo page and in a forum
    # (the words in every language: tests/test_i18n.py compares the widget's table with web/locales)
    from web.i18n import catalogue
    from web.render import CONFIDENCE_BANDS

    floors = ", ".join(str(floor) for floor, _ in CONFIDENCE_BANDS)
    assert f"const band = (c) => [{floors}, -1].findIndex" in SCRIPT.read_text(encoding="utf-8")
    english = [catalogue("en")[key] for _, key in CONFIDENCE_BANDS] + [catalogue("en")["confidence.unsure"]]
    assert f"sure: [{', '.join(map(repr, english))}]".replace("'", '"') in SCRIPT.read_text(encoding="utf-8")
