"""Where the project's shipped data lives."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def shipped_vocabularies() -> Path:
    """The vocabularies shipped with unerase (override with UNERASE_VOCABULARIES)."""
    return Path(os.environ.get("UNERASE_VOCABULARIES") or PROJECT_ROOT / "vocabularies")
