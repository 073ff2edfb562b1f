from __future__ import annotations

from pathlib import Path

from web.settings import Settings

DOC = Path(__file__).resolve().parents[1] / "docs" / "settings.md"


def test_every_setting_is_documented_with_its_variable() -> None:
    text = DOC.read_text(encoding="utf-8")
    for name in Settings.model_fields:
        assert f"| `{name}` | `UNERASE_{name.upper()}` |" in text, f"docs/settings.md does not document {name}"


def test_settings_come_from_the_environment(monkeypatch, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("UNERASE_MAX_TEXT_CHARS", "123")
    monkeypatch.setenv("UNERASE_VOCABULARIES", f'["{tmp_path}"]')
    settings = Settings()
    assert settings.max_text_chars == 123 and settings.vocabularies == [tmp_path]
