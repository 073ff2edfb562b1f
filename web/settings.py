"""Settings from the environment (prefix UNERASE_) or a .env file; see docs/settings.md."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from engine.paths import shipped_vocabularies


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="UNERASE_", env_file=".env", extra="ignore")

    vocabularies: list[Path] = Field(
        default_factory=lambda: [shipped_vocabularies()],
        description="Vocabulary files or folders to load (JSON list in the environment).",
    )
    cache_dir: Path | None = Field(default=None, description="Where lemma caches are kept (default ~/.cache/unerase).")
    max_text_chars: int = Field(default=20_000, description="Longest text accepted, in characters.")
    host: str = Field(default="127.0.0.1", description="Address `make serve` binds to.")
    port: int = Field(default=8000, description="Port `make serve` listens on.")


@lru_cache
def get_settings() -> Settings:
    return Settings()
