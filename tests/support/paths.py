"""Where the tests find their files, and the published vocabularies beside the clone (used where present)."""

from __future__ import annotations

from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent.parent
FIXTURES = TESTS / "fixtures"
PROJECT = TESTS.parent
SHARED_DATA = PROJECT.parent / "shared" / "data"


def shared_data(*parts: str) -> Path:
    """A file of the published vocabularies beside the clone; skip the test when absent."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"../shared/data not found ({path}); the published vocabularies are not part of the project")
    return path
