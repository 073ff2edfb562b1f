"""The project's documents and code point only at files a user of a fresh clone has.

Relative Markdown links must resolve to a file inside the repository, and nothing a user reads
(README, docs, code, templates, the widget) may send them to the team's working folders beside it.
Tests and benchmarks may still *read* ../shared/data when it exists (they skip without it).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
SKIPPED_DIRS = {".venv", ".git", "node_modules", ".pytest_cache", ".mypy_cache", ".ruff_cache", "data"}


def _files(*patterns: str) -> list[Path]:
    found = []
    for pattern in patterns:
        for path in ROOT.glob(pattern):
            if not SKIPPED_DIRS.intersection(path.relative_to(ROOT).parts) and path.is_file():
                found.append(path)
    return sorted(set(found))


MARKDOWN = _files("*.md", "**/*.md")
USER_FACING = _files(
    "README.md", "ARCHITECTURE.md", "docs/**/*", "engine/**/*.py", "web/**/*.py", "templates/*", "widget/*.js"
)


def test_there_are_documents_to_check() -> None:
    assert ROOT / "README.md" in MARKDOWN
    assert ROOT / "docs" / "contracts.md" in MARKDOWN


@pytest.mark.parametrize("document", MARKDOWN, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_stay_inside_the_repository(document: Path) -> None:
    broken = []
    for target in LINK.findall(document.read_text(encoding="utf-8")):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # a URL or an anchor in the same page
        path = (document.parent / target.split("#", 1)[0]).resolve()
        if not path.is_relative_to(ROOT) or not path.exists():
            broken.append(target)
    assert not broken, f"{document.relative_to(ROOT)} links to files a fresh clone does not have: {broken}"


@pytest.mark.parametrize("path", USER_FACING, ids=lambda p: str(p.relative_to(ROOT)))
def test_nothing_user_facing_points_at_the_teams_folders(path: Path) -> None:
    text = path.read_text(encoding="utf-8", errors="replace")
    assert "../shared" not in text and "CONTRACTS.md" not in text, (
        f"{path.relative_to(ROOT)} refers to ../shared or CONTRACTS.md, which users do not have; "
        "point at docs/contracts.md or say where to get the file"
    )
