"""What one site's moderators changed about the vocabulary for their own posts.

Moderators can mark a term ambiguous for a site (its hits then go to disambiguation instead of being
contentious by themselves) or exclude it (its hits are dropped for that site). A `Scope` carries those
choices and the site's name into one analysis; an analysis without a scope uses the vocabulary as shipped.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from engine.hits import Hit


@dataclass(frozen=True)
class Scope:
    site: str | None = None
    excluded: frozenset[str] = frozenset()  # term ids
    ambiguous: frozenset[str] = frozenset()  # term ids

    def apply(self, hits: Sequence[Hit]) -> tuple[Hit, ...]:
        """The hits as this site sees them: excluded terms gone, marked terms ambiguous."""
        kept = []
        for hit in hits:
            if hit.term.id in self.excluded:
                continue
            if hit.term.id in self.ambiguous and not hit.term.ambiguous:
                hit = dataclasses.replace(hit, marked_ambiguous=True)
            kept.append(hit)
        return tuple(kept)

    @property
    def version(self) -> str:
        """A short hash of the term rules, for cache keys: changing a rule gives new answers."""
        if not self.excluded and not self.ambiguous:
            return ""
        text = "x:" + ",".join(sorted(self.excluded)) + "|a:" + ",".join(sorted(self.ambiguous))
        return hashlib.sha256(text.encode()).hexdigest()[:16]
