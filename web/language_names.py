"""Languages as people name them in their own language, for selects whose value stays the code.

Endonyms, not English names: a Greek archivist looks for "Ελληνικά", not "Greek"; the same names in every
interface language, so a select reads the same whatever the page's language.
"""

from __future__ import annotations

from jinja2 import Environment

LANGUAGE_NAMES = {
    "en": "English",
    "fr": "Français",
    "el": "Ελληνικά",
    "de": "Deutsch",
    "nl": "Nederlands",
    "it": "Italiano",
    "pt": "Português",
}


def language_name(code: str) -> str:
    """The language's own name; a code without one (a vocabulary added later) is shown as the code."""
    return LANGUAGE_NAMES.get(code, code)


def install(env: Environment) -> None:
    env.filters["language_name"] = language_name
