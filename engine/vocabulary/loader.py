"""Load and validate vocabularies in the project's YAML format (docs/vocabulary-format.md).

YAML is parsed to its node tree first so every error can name the file and the line of the
entry that is wrong, not just the file.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

import yaml

from engine.errors import VocabularyError
from engine.vocabulary.model import CATEGORIES, FORMAT, Issue, SenseCues, Term, Vocabulary

# libyaml's parser is ten times faster on large vocabularies; same nodes and line numbers.
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
ID_PATTERN = re.compile(r"^[a-z0-9][a-z0-9-]*$")
LANGUAGE_PATTERN = re.compile(r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$")
ISSUE_KEYS = frozenset(
    {"id", "uri", "categories", "description", "suggestion_note", "suggested_terms", "sources", "ambiguous", "terms"}
)
TERM_KEYS = frozenset({"literal", "ambiguous", "sense_cues", "uri", "exact"})


def load_vocabulary(path: str | Path) -> Vocabulary:
    """Load a vocabulary file or a folder of them (recursively); raise VocabularyError if invalid."""
    root = Path(path)
    if not root.exists():
        raise VocabularyError("no such file or folder; give a .yaml file or a folder of them", path=str(root))
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*.yaml") if p.is_file())
    if not files:
        raise VocabularyError("the folder contains no .yaml vocabulary files", path=str(root))
    issues: list[Issue] = []
    seen: dict[tuple[str, str], str] = {}
    for file in files:
        for issue, line in _load_file(file, expected_language=_folder_language(file, root)):
            key = (issue.language, issue.id)
            if key in seen:
                raise VocabularyError(
                    f"issue id '{issue.id}' is already used in {seen[key]}; ids must be unique per language",
                    path=str(file),
                    line=line,
                )
            seen[key] = f"{file}:{line}"
            issues.append(issue)
    return Vocabulary(tuple(issues), name=root.stem if root.is_file() else root.name)


def load_vocabularies(paths: Iterable[str | Path]) -> Vocabulary:
    return Vocabulary.merge([load_vocabulary(p) for p in paths])


def _folder_language(file: Path, root: Path) -> str | None:
    """A file inside vocabularies/<lang>/ must declare that language."""
    parent = file.parent.name
    if file == root or not LANGUAGE_PATTERN.match(parent):
        return None
    return parent


class _Walker:
    """Turns YAML nodes into validated values, raising errors with file:line."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, node: yaml.Node, reason: str) -> VocabularyError:
        return VocabularyError(reason, path=str(self.path), line=node.start_mark.line + 1)

    def mapping(self, node: yaml.Node, what: str) -> dict[str, yaml.Node]:
        if not isinstance(node, yaml.MappingNode):
            raise self.fail(node, f"{what} must be a mapping of keys to values")
        result: dict[str, yaml.Node] = {}
        for key_node, value_node in node.value:
            key = self.string(key_node, f"a key in {what}")
            if key in result:
                raise self.fail(key_node, f"{what} has the key '{key}' twice")
            result[key] = value_node
        return result

    def sequence(self, node: yaml.Node, what: str) -> list[yaml.Node]:
        if isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:null":
            return []
        if not isinstance(node, yaml.SequenceNode):
            raise self.fail(node, f"{what} must be a list")
        return list(node.value)

    def string(self, node: yaml.Node, what: str, *, allow_empty: bool = False) -> str:
        if not isinstance(node, yaml.ScalarNode) or node.tag not in (
            "tag:yaml.org,2002:str",
            "tag:yaml.org,2002:int",
            "tag:yaml.org,2002:float",
        ):
            raise self.fail(node, f"{what} must be text")
        value = " ".join(str(node.value).split())
        if not value and not allow_empty:
            raise self.fail(node, f"{what} must not be empty")
        return value

    def boolean(self, node: yaml.Node, what: str) -> bool:
        if not isinstance(node, yaml.ScalarNode) or node.tag != "tag:yaml.org,2002:bool":
            raise self.fail(node, f"{what} must be true or false")
        return str(node.value).lower() in ("true", "yes", "on", "y")

    def strings(self, node: yaml.Node, what: str) -> tuple[str, ...]:
        return tuple(self.string(item, f"an item of {what}") for item in self.sequence(node, what))


def _load_file(path: Path, *, expected_language: str | None) -> list[tuple[Issue, int]]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise VocabularyError(f"the file is not UTF-8 (byte {exc.start}); save it as UTF-8", path=str(path)) from exc
    try:
        root = yaml.compose(text, Loader=_YAML_LOADER)
    except yaml.MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else None
        raise VocabularyError(f"not valid YAML: {exc.problem}", path=str(path), line=line) from exc
    if root is None:
        raise VocabularyError("the file is empty; expected 'format', 'language' and 'issues'", path=str(path))
    walk = _Walker(path)
    top = walk.mapping(root, "the file")
    unknown = set(top) - {"format", "language", "issues"}
    if unknown:
        raise walk.fail(root, f"unknown top-level key(s) {sorted(unknown)}; accepted: format, language, issues")
    for key in ("format", "language", "issues"):
        if key not in top:
            raise walk.fail(root, f"missing '{key}'; a vocabulary file needs format, language and issues")
    fmt = walk.string(top["format"], "'format'")
    if fmt != FORMAT:
        raise walk.fail(top["format"], f"format '{fmt}' is not supported; accepted: {FORMAT}")
    language = walk.string(top["language"], "'language'")
    if not LANGUAGE_PATTERN.match(language):
        raise walk.fail(top["language"], f"language '{language}' is not a BCP-47 code such as en, fr, el")
    if expected_language is not None and language != expected_language:
        raise walk.fail(top["language"], f"language '{language}' does not match the folder '{expected_language}'")
    return [
        (_issue(walk, node, language), node.start_mark.line + 1) for node in walk.sequence(top["issues"], "'issues'")
    ]


def _issue(walk: _Walker, node: yaml.Node, language: str) -> Issue:
    fields = walk.mapping(node, "an issue")
    unknown = set(fields) - ISSUE_KEYS
    if unknown:
        raise walk.fail(
            node, f"unknown key(s) {sorted(unknown)} in an issue; accepted: {', '.join(sorted(ISSUE_KEYS))}"
        )
    for key in ("id", "categories", "description", "sources", "terms"):
        if key not in fields:
            raise walk.fail(node, f"the issue has no '{key}'")
    issue_id = walk.string(fields["id"], "'id'")
    if not ID_PATTERN.match(issue_id):
        raise walk.fail(
            fields["id"], f"id '{issue_id}' may only use a-z, 0-9 and '-' (starting with a letter or digit)"
        )
    label = f"issue '{issue_id}'"
    categories = walk.strings(fields["categories"], f"{label} 'categories'")
    if not categories:
        raise walk.fail(fields["categories"], f"{label} needs at least one category; accepted: {', '.join(CATEGORIES)}")
    for category in categories:
        if category not in CATEGORIES:
            raise walk.fail(
                fields["categories"], f"{label}: unknown category '{category}'; accepted: {', '.join(CATEGORIES)}"
            )
    sources = walk.strings(fields["sources"], f"{label} 'sources'")
    if not sources:
        raise walk.fail(fields["sources"], f"{label} needs at least one source (URL or citation)")
    default_ambiguous = walk.boolean(fields["ambiguous"], f"{label} 'ambiguous'") if "ambiguous" in fields else False
    term_nodes = walk.sequence(fields["terms"], f"{label} 'terms'")
    if not term_nodes:
        raise walk.fail(fields["terms"], f"{label} needs at least one term")
    terms: list[Term] = []
    literals: set[str] = set()
    for term_node in term_nodes:
        term = _term(walk, term_node, issue_id, language, default_ambiguous)
        if term.literal.casefold() in literals:
            raise walk.fail(term_node, f"{label} lists the term '{term.literal}' twice")
        literals.add(term.literal.casefold())
        terms.append(term)
    return Issue(
        id=issue_id,
        language=language,
        uri=walk.string(fields["uri"], f"{label} 'uri'") if "uri" in fields else f"urn:unerase:{language}:{issue_id}",
        categories=categories,
        description=walk.string(fields["description"], f"{label} 'description'"),
        terms=tuple(terms),
        suggestion_note=(
            walk.string(fields["suggestion_note"], f"{label} 'suggestion_note'", allow_empty=True)
            if "suggestion_note" in fields
            else ""
        ),
        suggested_terms=walk.strings(fields["suggested_terms"], f"{label} 'suggested_terms'")
        if "suggested_terms" in fields
        else (),
        sources=sources,
    )


def _term(walk: _Walker, node: yaml.Node, issue_id: str, language: str, default_ambiguous: bool) -> Term:
    label = f"a term of issue '{issue_id}'"
    if isinstance(node, yaml.ScalarNode):
        literal = walk.string(node, label)
        return Term(
            id=f"{issue_id}#{literal}",
            literal=literal,
            language=language,
            issue_id=issue_id,
            ambiguous=default_ambiguous,
        )
    fields = walk.mapping(node, label)
    unknown = set(fields) - TERM_KEYS
    if unknown:
        raise walk.fail(node, f"unknown key(s) {sorted(unknown)} in {label}; accepted: {', '.join(sorted(TERM_KEYS))}")
    if "literal" not in fields:
        raise walk.fail(node, f"{label} has no 'literal'")
    literal = walk.string(fields["literal"], f"{label} 'literal'")
    cues = SenseCues()
    if "sense_cues" in fields:
        cue_fields = walk.mapping(fields["sense_cues"], f"the sense_cues of '{literal}'")
        unknown = set(cue_fields) - {"neutral", "contentious"}
        if unknown:
            raise walk.fail(
                fields["sense_cues"], f"unknown key(s) {sorted(unknown)} in sense_cues; accepted: neutral, contentious"
            )
        cues = SenseCues(
            neutral=walk.strings(cue_fields["neutral"], "sense_cues.neutral") if "neutral" in cue_fields else (),
            contentious=walk.strings(cue_fields["contentious"], "sense_cues.contentious")
            if "contentious" in cue_fields
            else (),
        )
    ambiguous = (
        walk.boolean(fields["ambiguous"], f"'ambiguous' of '{literal}'") if "ambiguous" in fields else default_ambiguous
    )
    return Term(
        id=f"{issue_id}#{literal}",
        literal=literal,
        language=language,
        issue_id=issue_id,
        ambiguous=ambiguous,
        sense_cues=cues,
        uri=walk.string(fields["uri"], f"'uri' of '{literal}'") if "uri" in fields else None,
        exact=walk.boolean(fields["exact"], f"'exact' of '{literal}'") if "exact" in fields else False,
    )
