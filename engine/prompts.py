"""Prompt files (prompts/<lang>/) and the explanation templates of vocabulary-only mode.

The prompt version hashes every file under the prompts folder, so any edit changes the cache
keys of LLM answers.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from engine.errors import UneraseError
from engine.llm.backend import Message
from engine.paths import PROJECT_ROOT

STAGES = ("disambiguation", "targeting", "fusion")
FALLBACK_LANGUAGE = "en"


class PromptError(UneraseError):
    status = 500
    code = "invalid-prompt"


@dataclass(frozen=True)
class PromptTemplate:
    system: str
    user: str

    def render(self, **values: str) -> list[Message]:
        return [
            Message("system", self.system.strip()),
            Message("user", self.user.format(**values).strip()),
        ]


def _parse(path: Path) -> PromptTemplate:
    text = path.read_text(encoding="utf-8")
    head, sep, tail = text.partition("\n---\n")
    if not sep or not head.startswith("system:") or not tail.lstrip().startswith("user:"):
        raise PromptError(f"{path}: a prompt needs a 'system:' block, a line '---', then a 'user:' block")
    return PromptTemplate(head.removeprefix("system:").strip(), tail.lstrip().removeprefix("user:").strip())


class Prompts:
    def __init__(self, root: Path | None = None) -> None:
        self.root = root or PROJECT_ROOT / "prompts"
        files = sorted(p for p in self.root.rglob("*") if p.is_file() and p.suffix in (".txt", ".yaml"))
        digest = hashlib.sha256()
        for path in files:
            digest.update(str(path.relative_to(self.root)).encode())
            digest.update(path.read_bytes())
        self.version = digest.hexdigest()[:16]
        self._templates: dict[tuple[str, str], PromptTemplate] = {}
        self._vocab_templates: dict[str, dict[str, Any]] = {}
        self.languages = tuple(sorted(p.name for p in self.root.iterdir() if (p / "disambiguation.txt").is_file()))
        if FALLBACK_LANGUAGE not in self.languages:
            raise PromptError(f"{self.root}: the English prompts ({FALLBACK_LANGUAGE}/) are missing")

    def language_for(self, language: str) -> str:
        return language if language in self.languages else FALLBACK_LANGUAGE

    def template(self, stage: str, language: str) -> PromptTemplate:
        key = (stage, self.language_for(language))
        if key not in self._templates:
            self._templates[key] = _parse(self.root / key[1] / f"{stage}.txt")
        return self._templates[key]

    def vocabulary_templates(self, language: str) -> dict[str, Any]:
        lang = self.language_for(language)
        if lang not in self._vocab_templates:
            path = self.root / lang / "templates.yaml"
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
            self._vocab_templates[lang] = data
        return self._vocab_templates[lang]
