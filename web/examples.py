"""The example texts the demo page offers, one set per shipped language (web/examples.yaml).

The file is data curated by hand, so it is checked strictly when loaded: a typo in a key or a
language code should stop the app at start-up, not show an empty button on the demo page.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from engine.errors import UneraseError

DEFAULT_PATH = Path(__file__).with_name("examples.yaml")
# The languages the project ships vocabularies for; the demo offers examples in each of them.
DEMO_LANGUAGES = ("en", "fr", "el", "de", "nl", "it", "pt")
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
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ExamplesError(
            f"{path}: cannot be read ({error.strerror}); give the path of an examples YAML file"
        ) from None
    except yaml.YAMLError as error:
        raise ExamplesError(f"{path}: is not valid YAML: {error}") from None
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
    unknown = set(map(str, entry)) - ENTRY_KEYS
    missing = ENTRY_KEYS - set(map(str, entry))
    if unknown or missing:
        problems = [f"unknown key(s) {', '.join(sorted(unknown))}"] if unknown else []
        problems += [f"missing key(s) {', '.join(sorted(missing))}"] if missing else []
        raise ExamplesError(f"{where}: {'; '.join(problems)}; accepted keys: {', '.join(sorted(ENTRY_KEYS))}")
    for key in sorted(ENTRY_KEYS):
        value = entry[key]
        if not isinstance(value, str) or not value.strip():
            raise ExamplesError(f"{where}: '{key}' must be a non-empty string, got {value!r}")
    if entry["lang"] not in DEMO_LANGUAGES:
        raise ExamplesError(f"{where}: unknown language '{entry['lang']}'; accepted: {', '.join(DEMO_LANGUAGES)}")
    return Example(lang=entry["lang"], title=entry["title"].strip(), text=entry["text"].strip())
