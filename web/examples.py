"""The example texts the demo page offers, one set per shipped language (web/examples.yaml).

The file is data curated by hand, so it is checked strictly when loaded: a typo in a key or a
language code should stop the app at start-up, not show an empty button on the demo page.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from engine.errors import UneraseError
from web.curated import check_keys, language, read_yaml, string

DEFAULT_PATH = Path(__file__).with_name("examples.yaml")
ENTRY_KEYS = frozenset({"lang", "title", "text"})


class ExamplesError(UneraseError):
    """The examples file is missing or malformed; a deployment problem, not a user's mistake."""

    status = 500
    code = "invalid-examples"


@dataclass(frozen=True, slots=True)
class Example:
    lang: str
    title: str
    text: str


def load_examples(path: Path = DEFAULT_PATH) -> tuple[Example, ...]:
    """Read and validate the examples file; raise ExamplesError naming the file, entry and problem."""
    data = read_yaml(path, "an examples YAML file", ExamplesError)
    if not isinstance(data, dict) or set(data) != {"examples"} or not isinstance(data["examples"], list):
        raise ExamplesError(f"{path}: must be a mapping with the single key 'examples' holding a list of entries")
    examples = tuple(_example(entry, f"{path}: entry {number}") for number, entry in enumerate(data["examples"], 1))
    seen: set[tuple[str, str]] = set()
    for number, example in enumerate(examples, 1):
        if (example.lang, example.title) in seen:
            raise ExamplesError(
                f"{path}: entry {number}: the title '{example.title}' is already used for language '{example.lang}'; "
                "titles must be unique per language"
            )
        seen.add((example.lang, example.title))
    return examples


def _example(entry: object, where: str) -> Example:
    if not isinstance(entry, dict):
        raise ExamplesError(f"{where}: must be a mapping with the keys {', '.join(sorted(ENTRY_KEYS))}")
    check_keys(entry, ENTRY_KEYS, where, ExamplesError)
    title, text = string(entry, "title", where, ExamplesError), string(entry, "text", where, ExamplesError)
    return Example(lang=language(entry, where, ExamplesError), title=title, text=text)
