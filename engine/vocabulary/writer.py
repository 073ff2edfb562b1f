"""Write vocabularies in the project's YAML format, readable and stable in diffs."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import yaml

from engine.vocabulary.model import FORMAT, Issue, Term, Vocabulary


class _Dumper(yaml.SafeDumper):
    """Long texts as folded blocks; lists of short strings inline."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = ">" if len(value) > 80 else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def _term(term: Term, default_ambiguous: bool) -> Any:
    plain = term.ambiguous == default_ambiguous and not term.sense_cues and not term.uri and not term.exact
    if plain:
        return term.literal
    data: dict[str, Any] = {"literal": term.literal}
    if term.ambiguous != default_ambiguous:
        data["ambiguous"] = term.ambiguous
    if term.sense_cues:
        cues: dict[str, list[str]] = {}
        if term.sense_cues.neutral:
            cues["neutral"] = list(term.sense_cues.neutral)
        if term.sense_cues.contentious:
            cues["contentious"] = list(term.sense_cues.contentious)
        data["sense_cues"] = cues
    if term.uri:
        data["uri"] = term.uri
    if term.exact:
        data["exact"] = True
    return data


def issue_to_yaml_data(issue: Issue) -> dict[str, Any]:
    default_ambiguous = sum(t.ambiguous for t in issue.terms) * 2 > len(issue.terms)
    data: dict[str, Any] = {"id": issue.id}
    if issue.uri != f"urn:unerase:{issue.language}:{issue.id}":
        data["uri"] = issue.uri
    data["categories"] = list(issue.categories)
    data["description"] = issue.description
    if issue.suggestion_note:
        data["suggestion_note"] = issue.suggestion_note
    data["suggested_terms"] = list(issue.suggested_terms)
    data["sources"] = list(issue.sources)
    if default_ambiguous:
        data["ambiguous"] = True
    data["terms"] = [_term(t, default_ambiguous) for t in issue.terms]
    return data


def dump_language(issues: list[Issue], language: str) -> str:
    document = {"format": FORMAT, "language": language, "issues": [issue_to_yaml_data(i) for i in issues]}
    return yaml.dump(document, Dumper=_Dumper, allow_unicode=True, sort_keys=False, width=100)


def write_vocabulary(vocabulary: Vocabulary, out: str | Path) -> list[Path]:
    """Write `out/<lang>/<name>.yaml` per language, or one file when `out` ends in .yaml."""
    target = Path(out)
    by_language: dict[str, list[Issue]] = defaultdict(list)
    for issue in vocabulary.issues:
        by_language[issue.language].append(issue)
    if target.suffix in (".yaml", ".yml"):
        if len(by_language) > 1:
            raise ValueError(
                f"{target}: one file holds one language, and this vocabulary has {sorted(by_language)}; "
                "give a folder instead"
            )
        target.parent.mkdir(parents=True, exist_ok=True)
        language = next(iter(by_language), "und")
        target.write_text(dump_language(by_language.get(language, []), language), encoding="utf-8")
        return [target]
    written = []
    for language, issues in sorted(by_language.items()):
        path = target / language / f"{vocabulary.name or 'vocabulary'}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(dump_language(issues, language), encoding="utf-8")
        written.append(path)
    return written
