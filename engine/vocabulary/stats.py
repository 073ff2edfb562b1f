"""Counts per language, category and ambiguity, for `unerase vocab stats` and the docs."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from engine.vocabulary.model import CATEGORIES, Vocabulary


@dataclass(frozen=True)
class LanguageStats:
    language: str
    issues: int
    terms: int
    ambiguous_terms: int
    issues_per_category: dict[str, int]

    @property
    def ambiguous_share(self) -> float:
        return self.ambiguous_terms / self.terms if self.terms else 0.0


def vocabulary_stats(vocabulary: Vocabulary) -> list[LanguageStats]:
    result = []
    for language in vocabulary.languages:
        issues = [i for i in vocabulary.issues if i.language == language]
        terms = [t for i in issues for t in i.terms]
        per_category: Counter[str] = Counter(c for i in issues for c in i.categories)
        result.append(
            LanguageStats(
                language=language,
                issues=len(issues),
                terms=len(terms),
                ambiguous_terms=sum(t.ambiguous for t in terms),
                issues_per_category={c: per_category.get(c, 0) for c in CATEGORIES},
            )
        )
    return result


def format_stats(stats: list[LanguageStats]) -> str:
    languages = [s.language for s in stats]
    width = max([len(c) for c in CATEGORIES] + [len("ambiguous terms (%)")])
    rows = [
        ("issues", [str(s.issues) for s in stats]),
        ("terms", [str(s.terms) for s in stats]),
        ("ambiguous terms", [str(s.ambiguous_terms) for s in stats]),
        ("ambiguous terms (%)", [f"{100 * s.ambiguous_share:.0f}" for s in stats]),
    ]
    rows += [(c, [str(s.issues_per_category[c]) for s in stats]) for c in CATEGORIES]
    lines = [f"{'':<{width}}  " + "  ".join(f"{lang:>6}" for lang in languages)]
    for label, values in rows:
        if label == CATEGORIES[0]:
            lines.append(f"{'issues per category:':<{width}}")
        lines.append(f"{label:<{width}}  " + "  ".join(f"{v:>6}" for v in values))
    return "\n".join(lines)
