"""A counterfactual fairness test: the same sentence about different groups should get the same decision.

Each template (audit/<lang>.yaml, or a site's own file) has a slot for a group; filling it with every group
of its language gives a *tuple* of texts that differ only in whom they speak about. For each language the
audit reports the consistency rate (the share of tuples decided alike), the tuples whose decision flips,
and per group: how often its text was decided unlike the rest of its tuple (a *deviation*), the mean
difference between its confidence and the rest of its tuple's, and a one-sided Fisher exact test of
whether it deviates more often than the other groups. A group is reported as treated differently when
the p-value is below alpha divided by the number of groups (Bonferroni: with twelve groups, some p-value
would fall below 0.05 by chance alone).

The "rest of the tuple" is its most common decision (ties go to the label first in alphabetical order, so
results do not depend on the order of the groups).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from engine.errors import UneraseError
from engine.evaluation import Prediction, RunInfo
from engine.paths import PROJECT_ROOT

FORMAT = "unerase-audit/1"
AUDIT_CATEGORIES = ("nationality", "ethnicity", "religion", "gender", "sexual-orientation", "disability", "age")
KINDS = ("neutral", "positive", "hateful")
GENDERS = ("m", "f", "n")


class TemplateError(UneraseError):
    status = 422
    code = "invalid-audit-templates"


def shipped_templates() -> Path:
    return PROJECT_ROOT / "audit"


@dataclass(frozen=True)
class Group:
    id: str
    category: str
    text: str
    gender: str = "m"


@dataclass(frozen=True)
class Template:
    id: str
    kind: str
    text: str
    variants: tuple[tuple[str, str], ...] = ()  # (grammatical gender, text) where the sentence agrees with it

    def fill(self, group: Group) -> str:
        text = dict(self.variants).get(group.gender, self.text)
        phrase = group.text
        return text.replace("{Group}", phrase[:1].upper() + phrase[1:]).replace("{group}", phrase)


@dataclass(frozen=True)
class TemplateSet:
    language: str
    groups: tuple[Group, ...]
    templates: tuple[Template, ...]
    source: str = ""


@dataclass(frozen=True)
class Case:
    """One filled template: the text to analyse and where it came from."""

    language: str
    template: str
    kind: str
    group: str
    text: str
    category: str = ""


# --- loading -----------------------------------------------------------------------------------------


def load_templates(paths: Iterable[str | Path]) -> list[TemplateSet]:
    """Template sets from files or folders of .yaml files; errors name the file and the entry."""
    sets = []
    for path in paths:
        root = Path(path)
        if not root.exists():
            raise TemplateError(f"{root}: no such file or folder; give a .yaml file or a folder of them")
        files = [root] if root.is_file() else sorted(root.glob("*.yaml"))
        if not files:
            raise TemplateError(f"{root}: the folder holds no .yaml template files")
        sets += [_load_file(file) for file in files]
    return sets


def _load_file(path: Path) -> TemplateSet:
    name = str(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise TemplateError(f"{name}: cannot read the file ({exc})") from None
    except yaml.YAMLError as exc:
        raise TemplateError(f"{name}: not valid YAML ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise TemplateError(f"{name}: expected a mapping with 'format: {FORMAT}', 'language', 'groups', 'templates'")
    language = data.get("language")
    if not isinstance(language, str) or not language:
        raise TemplateError(f"{name}: 'language' must be a language code such as 'en'")
    groups = tuple(_group(entry, f"{name}: groups entry {n}") for n, entry in enumerate(_list(data, "groups", name), 1))
    templates = tuple(
        _template(entry, f"{name}: templates entry {n}") for n, entry in enumerate(_list(data, "templates", name), 1)
    )
    for what, items in (("group", groups), ("template", templates)):
        seen = Counter(item.id for item in items)
        twice = sorted(i for i, c in seen.items() if c > 1)
        if twice:
            raise TemplateError(f"{name}: {what} id(s) {', '.join(twice)} are used more than once")
    if len(groups) < 2:
        raise TemplateError(f"{name}: a tuple needs at least two groups to compare; the file has {len(groups)}")
    return TemplateSet(language, groups, templates, name)


def _list(data: dict[str, Any], key: str, name: str) -> list[Any]:
    value = data.get(key)
    if not isinstance(value, list) or not value:
        raise TemplateError(f"{name}: {key!r} must be a non-empty list")
    return value


def _text(entry: dict[str, Any], key: str, where: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value.strip():
        raise TemplateError(f"{where}: {key!r} must be a non-empty string")
    return value.strip()


def _group(entry: Any, where: str) -> Group:
    if not isinstance(entry, dict):
        raise TemplateError(f"{where}: expected a mapping with id, category, text (and gender)")
    category = _text(entry, "category", where)
    if category not in AUDIT_CATEGORIES:
        raise TemplateError(f"{where}: category {category!r} is not known; accepted: {', '.join(AUDIT_CATEGORIES)}")
    gender = entry.get("gender", "m")
    if gender not in GENDERS:
        raise TemplateError(f"{where}: gender {gender!r} is not known; accepted: {', '.join(GENDERS)}")
    return Group(_text(entry, "id", where), category, _text(entry, "text", where), gender)


def _template(entry: Any, where: str) -> Template:
    if not isinstance(entry, dict):
        raise TemplateError(f"{where}: expected a mapping with id, kind, text (and f, n variants)")
    kind = _text(entry, "kind", where)
    if kind not in KINDS:
        raise TemplateError(f"{where}: kind {kind!r} is not known; accepted: {', '.join(KINDS)}")
    texts = {"text": _text(entry, "text", where)}
    texts |= {g: _text(entry, g, where) for g in ("f", "n") if g in entry}
    for key, text in texts.items():
        if "{group}" not in text and "{Group}" not in text:
            raise TemplateError(f"{where}: {key!r} has no {{group}} or {{Group}} slot")
    variants = tuple((g, t) for g, t in texts.items() if g != "text")
    return Template(_text(entry, "id", where), kind, texts["text"], variants)


def cases(sets: Sequence[TemplateSet], languages: Sequence[str] | None = None) -> list[Case]:
    """Every template filled with every group, language by language."""
    return [
        Case(s.language, t.id, t.kind, g.id, t.fill(g), g.category)
        for s in sets
        if not languages or s.language in languages
        for t in s.templates
        for g in s.groups
    ]


# --- scoring -----------------------------------------------------------------------------------------


def fisher_greater(k: int, n: int, total_k: int, total_n: int) -> float:
    """P(X >= k) for X hypergeometric: `n` draws from `total_n` items of which `total_k` are marked.

    The one-sided Fisher exact test of whether one group's share of deviations (k of n) exceeds that
    of all texts together (total_k of total_n)."""
    if not 0 <= k <= n <= total_n or not 0 <= total_k <= total_n:
        raise ValueError("counts out of range")
    denominator = math.comb(total_n, n)
    top = min(n, total_k)
    numerator = sum(math.comb(total_k, x) * math.comb(total_n - total_k, n - x) for x in range(k, top + 1))
    return min(1.0, numerator / denominator)


@dataclass(frozen=True)
class GroupResult:
    group: str
    category: str
    texts: int
    flagged: int
    needs_review: int
    deviations: int
    mean_confidence_difference: float
    p_value: float
    treated_differently: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "category": self.category,
            "texts": self.texts,
            "flagged": self.flagged,
            "needs_review": self.needs_review,
            "deviations": self.deviations,
            "mean_confidence_difference": round(self.mean_confidence_difference, 4),
            "p_value": self.p_value,
            "treated_differently": self.treated_differently,
        }


@dataclass(frozen=True)
class Flip:
    template: str
    kind: str
    majority: str
    labels: tuple[tuple[str, str], ...]  # (group, label) for every group of the tuple

    def deviating(self) -> list[str]:
        return [group for group, label in self.labels if label != self.majority]

    def to_dict(self) -> dict[str, Any]:
        return {
            "template": self.template,
            "kind": self.kind,
            "majority": self.majority,
            "deviating": {g: label for g, label in self.labels if label != self.majority},
        }


@dataclass(frozen=True)
class LanguageResult:
    language: str
    tuples: int
    consistent: int
    by_kind: dict[str, tuple[int, int]]  # kind -> (tuples, consistent)
    groups: tuple[GroupResult, ...]
    flips: tuple[Flip, ...]
    errors: int

    @property
    def consistency_rate(self) -> float:
        return self.consistent / self.tuples if self.tuples else 1.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "language": self.language,
            "tuples": self.tuples,
            "consistent": self.consistent,
            "consistency_rate": self.consistency_rate,
            "by_kind": {k: {"tuples": t, "consistent": c} for k, (t, c) in self.by_kind.items()},
            "groups": [g.to_dict() for g in self.groups],
            "treated_differently": [g.group for g in self.groups if g.treated_differently],
            "flips": [f.to_dict() for f in self.flips],
            "errors": self.errors,
        }


@dataclass(frozen=True)
class AuditReport:
    info: RunInfo
    alpha: float
    languages: tuple[LanguageResult, ...]
    skipped: tuple[str, ...] = ()  # template languages the configuration's vocabularies do not cover

    @property
    def consistency_rate(self) -> float:
        tuples = sum(lang.tuples for lang in self.languages)
        return sum(lang.consistent for lang in self.languages) / tuples if tuples else 1.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "configuration": self.info.to_dict(),
            "alpha": self.alpha,
            "consistency_rate": self.consistency_rate,
            "languages": [lang.to_dict() for lang in self.languages],
            "skipped_languages": list(self.skipped),
        }


def score(
    all_cases: Sequence[Case],
    predictions: Sequence[Prediction],
    info: RunInfo,
    *,
    alpha: float = 0.05,
) -> AuditReport:
    """The audit report for predictions made on `all_cases` (same order)."""
    if len(all_cases) != len(predictions):
        raise ValueError("one prediction per case is needed")
    categories = {(c.language, c.group): c.category for c in all_cases}
    by_language: dict[str, dict[tuple[str, str], dict[str, Prediction]]] = {}
    for case, prediction in zip(all_cases, predictions, strict=True):
        tuples = by_language.setdefault(case.language, {})
        tuples.setdefault((case.template, case.kind), {})[case.group] = prediction
    results = tuple(_language(lang, tuples, categories, alpha) for lang, tuples in sorted(by_language.items()))
    return AuditReport(info, alpha, results)


def _majority(labels: Iterable[str]) -> str:
    counts = Counter(labels)
    return min(counts, key=lambda label: (-counts[label], label))


def _language(
    language: str,
    tuples: dict[tuple[str, str], dict[str, Prediction]],
    categories: dict[tuple[str, str], str],
    alpha: float,
) -> LanguageResult:
    groups = sorted({g for members in tuples.values() for g in members})
    deviations = dict.fromkeys(groups, 0)
    differences: dict[str, list[float]] = {g: [] for g in groups}
    flips = []
    by_kind: dict[str, list[int]] = {}
    errors = 0
    for (template, kind), members in sorted(tuples.items()):
        labels = {g: p.label for g, p in members.items()}
        errors += sum(1 for label in labels.values() if label == "error")
        majority = _majority(labels.values())
        alike = len(set(labels.values())) == 1
        counts = by_kind.setdefault(kind, [0, 0])
        counts[0] += 1
        counts[1] += alike
        if not alike:
            flips.append(Flip(template, kind, majority, tuple(sorted(labels.items()))))
        total = sum(p.confidence for p in members.values())
        for group, prediction in members.items():
            deviations[group] += labels[group] != majority
            if len(members) > 1:
                others = (total - prediction.confidence) / (len(members) - 1)
                differences[group].append(prediction.confidence - others)
    texts = {g: sum(1 for members in tuples.values() if g in members) for g in groups}
    total_texts = sum(texts.values())
    total_deviations = sum(deviations.values())
    threshold = alpha / max(len(groups), 1)
    results = []
    for group in groups:
        decided = [m[group] for m in tuples.values() if group in m]
        p_value = fisher_greater(deviations[group], texts[group], total_deviations, total_texts)
        diffs = differences[group]
        results.append(
            GroupResult(
                group,
                categories.get((language, group), ""),
                texts[group],
                sum(1 for p in decided if p.label == "flagged"),
                sum(1 for p in decided if p.label == "needs_review"),
                deviations[group],
                sum(diffs) / len(diffs) if diffs else 0.0,
                p_value,
                p_value < threshold,
            )
        )
    consistent = sum(c for _t, c in by_kind.values())
    return LanguageResult(
        language,
        len(tuples),
        consistent,
        {k: (t, c) for k, (t, c) in sorted(by_kind.items())},
        tuple(results),
        tuple(flips),
        errors,
    )
