"""Settings from the environment (prefix UNERASE_), a .env file, or a TOML file; see docs/settings.md.

Precedence, highest first: arguments to `Settings(...)`, environment variables, `.env`, the TOML file
named by `UNERASE_CONFIG_FILE`, the defaults below.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from engine.paths import shipped_vocabularies

Backend = Literal["none", "llama-cpp", "openai"]


class LLMSettings(BaseModel):
    """One language model: how to reach it. Used as the default and per language."""

    backend: Backend = "none"
    model: str | None = None
    base_url: str | None = None
    api_key: str | None = None
    threads: int = 2


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="UNERASE_", env_file=".env", extra="ignore")

    config_file: Path | None = Field(
        default=None, description="A TOML file with any of these settings (keys as in the first column)."
    )
    vocabularies: list[Path] = Field(
        default_factory=lambda: [shipped_vocabularies()],
        description="Vocabulary files or folders to load (JSON list in the environment).",
    )
    cache_dir: Path | None = Field(default=None, description="Where lemma caches are kept (default ~/.cache/unerase).")
    data_dir: Path = Field(default=Path("data"), description="Folder for the SQLite database and the LLM answer cache.")
    database_url: str | None = Field(
        default=None,
        description="SQLAlchemy URL of the database (default: SQLite file unerase.db in data_dir); "
        "PostgreSQL: postgresql+psycopg://user:password@host:5432/name.",
    )
    llm_backend: Backend = Field(default="none", description="none (vocabulary-only), llama-cpp or openai.")
    llm_model: str | None = Field(default=None, description="GGUF file (llama-cpp) or model name (openai).")
    llm_base_url: str | None = Field(
        default=None, description="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1."
    )
    llm_api_key: str | None = Field(default=None, description="API key for the openai backend.")
    llm_threads: int = Field(default=2, description="CPU threads for the llama-cpp backend.")
    llm_languages: dict[str, LLMSettings] = Field(
        default_factory=dict,
        description='Per-language models, JSON: {"el": {"backend": "openai", "model": "m", "base_url": "..."}}.',
    )
    llm_timeout: float = Field(default=120.0, description="Seconds one model call may take.")
    llm_concurrency: int = Field(default=4, description="Model calls in flight at once (whole process).")
    mode: Literal["fast", "thorough"] = Field(
        default="fast", description="fast sends only ambiguous hits to the model; thorough sends every hit."
    )
    threshold: float = Field(default=0.5, description="Decisions with lower confidence are deferred (needs_review).")
    examples_enabled: bool = Field(
        default=True,
        description="Decide ambiguous hits from labelled examples by sentence embeddings (needs the examples extra).",
    )
    learned_uses_enabled: bool = Field(
        default=True,
        description=(
            "Read the uses the use rules leave without a cue (quoted, reported, reclaimed) from labelled uses by"
            " sentence embeddings (needs the examples extra)."
        ),
    )
    examples_min_confidence: float = Field(
        default=0.8,
        ge=0.0,
        le=1.0,
        description="Calibrated confidence below which the example source leaves an ambiguous hit undecided.",
    )
    max_text_chars: int = Field(default=20_000, description="Longest text accepted, in characters.")
    max_upload_bytes: int = Field(default=50_000_000, description="Largest batch upload accepted, in bytes.")
    max_body_bytes: int = Field(
        default=5_000_000,
        ge=0,
        description="Largest request body accepted (JSON, forms), in bytes; file uploads have max_upload_bytes.",
    )
    max_batch_rows: int = Field(default=200_000, description="Most records one batch may hold.")
    batch_concurrency: int = Field(
        default=4, ge=1, description="Records of batch jobs analysed at once, per process that runs jobs."
    )
    batch_fallback_language: str = Field(
        default="en",
        description="Language a batch record is analysed in when neither it nor its job gives one and detection "
        "cannot tell (short texts such as titles); empty: such records fail with a message.",
    )
    rate_limit_per_minute: int = Field(
        default=60, description="Requests per minute and client IP on public POST endpoints (0 turns it off)."
    )
    trust_forwarded_for: bool = Field(
        default=False, description="Take the client IP from X-Forwarded-For (only behind a trusted proxy)."
    )
    admin_token: str | None = Field(
        default=None,
        description="Secret for the admin pages and API (sites, feedback); unset: they are closed.",
    )
    session_hours: float = Field(default=12.0, description="How long a moderator's login lasts, in hours.")
    login_attempts: int = Field(
        default=10, description="Failed logins accepted per client IP and per user name within 15 minutes."
    )
    spot_check_percent: float = Field(
        default=2.0,
        ge=0.0,
        le=100.0,
        description="Share of automatic decisions drawn at random into the review queue as spot checks, in %.",
    )
    review_demo_analyses: bool = Field(
        default=False,
        description="Put analyses made on the public demo page (no site) into the review queue beside the sites' "
        "posts.",
    )
    contest_url: str = Field(
        default="",
        description="Where a person contests a decision (URL or mailto:), named in each statement of reasons.",
    )
    widget_wait_seconds: float = Field(
        default=3.0, description="How long a widget check waits for analyses before answering with what is ready."
    )
    workers: int = Field(
        default=1,
        ge=1,
        description="Web server processes `unerase serve` starts (uvicorn workers); they share the database.",
    )
    run_jobs: bool = Field(
        default=True,
        description="This process runs batch jobs and detached analyses besides serving HTTP; false on web nodes "
        "of a deployment whose `unerase worker` processes do that work.",
    )
    lease_seconds: float = Field(
        default=15.0,
        gt=0,
        description="How long a claimed analysis or batch chunk stays claimed unless its process renews the claim; "
        "after that another process takes the work over.",
    )
    host: str = Field(default="127.0.0.1", description="Address `make serve` binds to.")
    port: int = Field(default=8000, description="Port `make serve` listens on.")

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        config_file = os.environ.get("UNERASE_CONFIG_FILE")
        sources: tuple[PydanticBaseSettingsSource, ...] = (init_settings, env_settings, dotenv_settings)
        if config_file:
            sources += (TomlConfigSettingsSource(settings_cls, toml_file=config_file),)
        return sources

    @property
    def resolved_database_url(self) -> str:
        return self.database_url or f"sqlite:///{self.data_dir / 'unerase.db'}"

    def llm_for(self, language: str | None = None) -> LLMSettings:
        if language is not None and language in self.llm_languages:
            return self.llm_languages[language]
        return LLMSettings(
            backend=self.llm_backend,
            model=self.llm_model,
            base_url=self.llm_base_url,
            api_key=self.llm_api_key,
            threads=self.llm_threads,
        )


@lru_cache
def get_settings() -> Settings:
    return Settings()
