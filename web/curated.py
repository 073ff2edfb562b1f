"""Reading the small YAML files the team curates by hand (demo examples, the demo forum thread).

They are checked strictly: a typo in a key or a language code should stop the app at start-up with
the file, the entry and the problem named, not show an empty page. Each file passes its own error
class, so its messages and codes stay its own.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from engine.errors import UneraseError

# The languages the project ships vocabularies for; the demo offers content in each of them.
DEMO_LANGUAGES = ("en", "fr", "el", "de", "nl", "it", "pt")


def read_yaml(path: Path, what: str, error: type[UneraseError]) -> object:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise error(f"{path}: cannot be read ({exc.strerror}); give the path of {what}") from None
    except yaml.YAMLError as exc:
        raise error(f"{path}: is not valid YAML: {exc}") from None


def check_keys(
    mapping: dict[object, object],
    accepted: frozenset[str],
    where: str,
    error: type[UneraseError],
    optional: frozenset[str] = frozenset(),
) -> None:
    unknown = set(map(str, mapping)) - accepted
    missing = accepted - optional - set(map(str, mapping))
    if unknown or missing:
        problems = [f"unknown key(s) {', '.join(sorted(unknown))}"] if unknown else []
        problems += [f"missing key(s) {', '.join(sorted(missing))}"] if missing else []
        raise error(f"{where}: {'; '.join(problems)}; accepted keys: {', '.join(sorted(accepted))}")


def string(mapping: dict[object, object], key: str, where: str, error: type[UneraseError]) -> str:
    value = mapping[key]
    if not isinstance(value, str) or not value.strip():
        raise error(f"{where}: '{key}' must be a non-empty string, got {value!r}")
    return value.strip()


def language(mapping: dict[object, object], where: str, error: type[UneraseError]) -> str:
    lang = string(mapping, "lang", where, error)
    if lang not in DEMO_LANGUAGES:
        raise error(f"{where}: unknown language '{lang}'; accepted: {', '.join(DEMO_LANGUAGES)}")
    return lang
