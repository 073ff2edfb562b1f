from __future__ import annotations

from pathlib import Path

import pytest

from engine.detector import Detector
from engine.vocabulary.loader import load_vocabulary
from engine.vocabulary.model import Vocabulary

TESTS = Path(__file__).resolve().parent
FIXTURES = TESTS / "fixtures"
PROJECT = TESTS.parent
SHARED_DATA = PROJECT.parent / "shared" / "data"


def shared_data(*parts: str) -> Path:
    """A file of the published vocabularies beside the clone; skip the test when absent."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"../shared/data not found ({path}); the published vocabularies are not part of the project")
    return path


@pytest.fixture(scope="session")
def fixture_vocabulary() -> Vocabulary:
    return load_vocabulary(FIXTURES / "vocab")


@pytest.fixture(scope="session")
def detector(fixture_vocabulary: Vocabulary, tmp_path_factory: pytest.TempPathFactory) -> Detector:
    return Detector(fixture_vocabulary, cache_dir=tmp_path_factory.mktemp("cache"))
