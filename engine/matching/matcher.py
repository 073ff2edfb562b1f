"""The vocabulary matcher: text in, non-overlapping hits with exact offsets out.

Steps, each cheap per token:
1. tokenize with offsets; each distinct surface form is looked up once (cached per matcher)
   to get its matching keys, compound parts (German, Dutch) and repeated-letter readings;
2. walk the lemma trie from every token with a known key (multi-word terms: same lemmas in
   the same order, only spaces, hyphens or apostrophes between);
3. scan for disguised spellings (leetspeak, separators, masks) and look their readings up;
4. resolve: overlapping candidates keep the longest; variants at one span keep the term with
   the smallest edit distance to the surface; hits inside names are dropped.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

import ahocorasick
from rapidfuzz.distance import Levenshtein

from engine.hits import Hit
from engine.matching.index import AGREEMENT_ENDINGS, LanguageIndex, TrieNode, agreement_key
from engine.matching.obfuscation import collapse_repeats, find_disguised, mask_matches
from engine.text.compounds import COMPOUND_LANGUAGES, CompoundSplitter
from engine.text.names import NameFilter, Span
from engine.text.normalize import INVISIBLE, fold, strip_marks
from engine.text.tokenizer import Token, Tokenizer
from engine.vocabulary.model import Term

# What may stand between the words of a multi-word term.
_JOINER_RE = re.compile(rf"[\s\-‐‑'’{INVISIBLE}]{{1,3}}")
CACHE_LIMIT = 200_000
# Regular verb endings (folded) and the infinitive endings they replace, for verb terms the
# lemmatizer does not know (in English, plural endings for nouns); longer endings first.
_FR_ER = ("er",)
VERB_ENDINGS: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    # English: plurals only; the dictionary knows English verb forms, and -ed, -ing read off
    # noun terms give words of their own (addicted is not addict)
    "en": (("es", ("", "e")), ("s", ("",))),
    "fr": tuple(
        (e, _FR_ER) for e in "erent eront aient erait erais ees ent ons ait ais ant era ee es ez ai e a".split()
    )
    + tuple((e, ("ir",)) for e in ("issent", "issant", "issait", "ies", "ie", "is", "it", "i")),
    "de": tuple(
        (e, ("en", "n")) for e in ("enden", "ender", "endes", "endem", "ende", "end", "eten", "test", "ten", "tet")
    )
    + tuple((e, ("en", "n")) for e in ("te", "st", "et", "en", "t", "e")),
    "nl": tuple((e, ("en",)) for e in ("ende", "end", "ten", "den", "te", "de", "en", "t", "d")),
    "it": tuple(
        (e, ("are",)) for e in ("avano", "iamo", "ando", "ano", "ato", "ata", "ati", "ate", "ava", "o", "i", "a")
    )
    + tuple((e, ("ire",)) for e in ("iscono", "isce", "ito", "ita", "iti", "ite")),
    "pt": tuple(
        (e, ("ar",)) for e in ("aram", "amos", "ados", "adas", "ando", "avam", "ado", "ada", "ava", "as", "am", "ou")
    )
    + tuple((e, ("ar",)) for e in ("ei", "o", "a"))
    + tuple((e, ("er", "ir")) for e in ("idos", "idas", "ido", "ida")),
}
# Spelling variants are looked for only in words at least this long, and only one edit away.
VARIANT_MIN_LENGTH = 9
_HYPHEN_PAIR_RE = re.compile(r"(?<![\w\-‐‑])(\w+)[\-‐‑](\w+)(?![\w\-‐‑])")
# Endings a vocabulary form may carry at the end of a compound or a word (Buschneger-n,
# roodhuid-en, Dutch diminutives inboorling-etjes); the empty ending first, so an exact fit
# is preferred.
FEMININE_ENDINGS = frozenset({"in", "innen"})
INFLECTION_ENDINGS: dict[str, tuple[str, ...]] = {
    "de": ("", "n", "en", "e", "s", "es", "er", "ern", "em", "in", "innen"),
    "nl": ("", "s", "en", "e", "n", "'s", "in", "innen", "es", "je", "jes", "tje", "tjes", "etje", "etjes"),
}


@dataclass(frozen=True, slots=True)
class Candidate:
    start: int
    end: int
    terms: tuple[Term, ...]
    obfuscated: bool = False
    reading: str | None = None  # the decoded form, for disguised spellings
    masked: bool = False
    variant: bool = False  # a spelling or hyphenation variant of a listed form


@dataclass(frozen=True, slots=True)
class Lookup:
    """What one distinct surface form contributes: trie keys, and hits inside the token."""

    keys: tuple[str, ...]
    parts: tuple[Candidate, ...]  # offsets relative to the token


_NOTHING = Lookup((), ())


class Matcher:
    def _word_keys(self, word: str) -> frozenset[str]:
        return frozenset(self.index.key_maker(word))

    def __init__(
        self,
        index: LanguageIndex,
        tokenizer: Tokenizer,
        splitter: CompoundSplitter | None = None,
        name_filter: NameFilter | None = None,
        *,
        obfuscation: bool = True,
    ) -> None:
        self.index = index
        self.language = index.language
        self.tokenizer = tokenizer
        self.splitter = splitter if index.language in COMPOUND_LANGUAGES else None
        self.name_filter = name_filter
        self.obfuscation = obfuscation
        self._lookups: dict[str, Lookup] = {}
        # a word's folded lemma keys, for context checks (sense cues) that see the same words again and again
        self.word_keys = functools.lru_cache(maxsize=65_536)(self._word_keys)
        self._readings: dict[tuple[str, ...], tuple[tuple[Term, ...], str, bool] | None] = {}
        self._inside = self._build_inside_automaton() if self.splitter is not None else None

    # -- per distinct surface form ------------------------------------------------------
    def _build_inside_automaton(self) -> ahocorasick.Automaton | None:
        """Folded one-word terms, to decide quickly whether a long word may hide one."""
        automaton = ahocorasick.Automaton()
        for forms in self.index.forms_by_length.values():
            for form, _term in forms:
                if len(form) >= 3:
                    automaton.add_word(form, form)
        for key in self.index.single_terms:
            if len(key) >= 3:
                automaton.add_word(key, key)
        if len(automaton) == 0:
            return None
        automaton.make_automaton()
        return automaton

    def _lookup(self, surface: str) -> Lookup:
        found = self._lookups.get(surface)
        if found is not None:
            return found
        keys = tuple(k for k in self.index.key_maker(surface) if k in self.index.keys)
        parts: tuple[Candidate, ...] = ()
        if not keys:
            folded = fold(surface, self.language)
            parts = (
                self._verb_form(surface, folded)
                or self._compound_parts(surface, folded)
                or self._repeated(surface)
                or self._variant(surface, folded)
            )
        found = Lookup(keys, parts) if keys or parts else _NOTHING
        if len(self._lookups) >= CACHE_LIMIT:
            self._lookups.clear()  # bounded memory on endless streams of new words
        self._lookups[surface] = found
        return found

    def _single(self, keys: tuple[str, ...], word: str) -> tuple[Term, ...]:
        """One-word terms reached by a word's keys, of which the word is a form (see `admits`)."""
        terms: list[Term] = []
        folded: str | None = None
        for key in keys:
            for term in self.index.single_terms.get(key, ()):
                if term not in terms:
                    if folded is None:
                        folded = fold(word, self.language)
                    if self.index.admits(term, 0, folded) and not self._other_marks(word, term):
                        terms.append(term)
        return tuple(terms)

    def _other_marks(self, word: str, term: Term) -> bool:
        """Whether `word` is another word that the term's spelling reaches only when accents are dropped: written
        with accents other than the term's ("arrière" for "arriéré"), neither it nor its lemma the term's spelling,
        and known to the dictionary as written. A word typed without any accent still matches ("arriere")."""
        written, listed = word.casefold(), term.literal.casefold()
        if written == listed or strip_marks(written) == written or strip_marks(listed) == listed:
            return False
        lemmatizer = self.index.key_maker.lemmatizer
        lemma = lemmatizer.lemmatize(word, self.language).casefold()
        if lemma == listed or strip_marks(listed) not in (strip_marks(written), strip_marks(lemma)):
            return False
        return lemmatizer.is_known(word, self.language)

    def _compound_parts(self, surface: str, folded: str) -> tuple[Candidate, ...]:
        """Vocabulary words inside a compound, with offsets relative to the token.

        Three readings, the longest of which wins when they overlap (`resolve_overlaps`):
        each part the splitter finds (Zigeuner|schnitzel); a longer vocabulary form that starts
        and ends at part boundaries, perhaps with an inflectional ending (Busch|neger|dorf holds
        Buschneger, not only Neger; Buschnegern); the whole word with its last part reduced to
        its lemma (rood|huiden -> roodhuid, Mohren|köpfe -> Mohrenkopf).
        """
        if self.splitter is None or self._inside is None or len(surface) < 6:
            return ()
        inside = list(self._inside.iter(folded))
        if not inside:
            return ()
        spans = self.splitter.split(surface, self.language)
        parts = []
        for start, end in spans:
            part = surface[start:end]
            terms = self._single(tuple(k for k in self.index.key_maker(part) if k in self.index.keys), part)
            if terms:
                parts.append(Candidate(start, end, terms))
        if len(folded) == len(surface):  # offsets of the folded form are those of the surface
            parts.extend(self._aligned_forms(surface, inside, spans))
        if spans:
            parts.extend(self._inflected_head(surface, folded, spans[-1][0]))
        return tuple(_not_an_ambiguous_head(parts, len(surface)))

    def _aligned_forms(
        self, surface: str, inside: list[tuple[int, str]], spans: tuple[tuple[int, int], ...]
    ) -> list[Candidate]:
        starts = {0, *(start for start, _ in spans)}
        ends = {len(surface), *(end for _, end in spans)}
        endings = INFLECTION_ENDINGS.get(self.language, ("",))
        found = []
        headword: bool | None = None
        for last, form in inside:
            start, end = last - len(form) + 1, last + 1
            if start not in starts:
                continue
            stop = next(
                (end + len(e) for e in endings if end + len(e) in ends and surface[end : end + len(e)] == e), None
            )
            if stop is None:
                continue
            if stop > end and surface[end:stop] not in FEMININE_ENDINGS:
                # A word the dictionary lists as a headword of its own is not an inflection of the
                # form it begins with (Dutch flikkeren, to flicker; slaafs, slavish), except for
                # feminine nouns, which dictionaries list apart (Trinkerin, Autistin).
                if headword is None:
                    headword = self._headword(surface)
                if headword:
                    continue
            terms = self._single((form,), surface[start:end])
            if terms:
                found.append(Candidate(start, stop, terms))
        return found

    def _inflected_head(self, surface: str, folded: str, head: int) -> list[Candidate]:
        if len(folded) != len(surface):
            return []
        stem = folded[:head]
        for key in self.index.key_maker(surface[head:]):
            whole = stem + key
            if whole != folded and whole in self.index.keys:
                terms = self._single((whole,), whole)
                if terms:
                    return [Candidate(0, len(surface), terms)]
        return []

    def _verb_form(self, surface: str, folded: str) -> tuple[Candidate, ...]:
        """An inflected form or participle of a verb term the lemmatizer does not know (French
        enjuivé, enjuivait for enjuiver): regular endings replaced by the infinitive's, and the
        participle prefix ge- of German and Dutch taken off. Only terms listed as that
        infinitive are reached, so a noun term never gains verb forms."""
        endings = VERB_ENDINGS.get(self.language)
        if endings is None:
            return ()
        stems = [folded, folded[2:]] if self.language in ("de", "nl") and folded.startswith("ge") else [folded]
        for stem in stems:
            for ending, infinitives in endings:
                if not stem.endswith(ending) or len(stem) - len(ending) < 3:
                    continue
                base = stem[: len(stem) - len(ending)] if ending else stem
                bases = [base, base[:-1]] if len(base) > 3 and base[-1] == base[-2] else [base]  # gypp-ed
                for root in bases:
                    for infinitive in infinitives:
                        key = root + infinitive
                        if key == folded:
                            continue
                        terms = tuple(
                            t for t in self.index.single_terms.get(key, ()) if fold(t.literal, self.language) == key
                        )
                        if terms:
                            return (
                                () if self._known_otherwise(surface, folded) else (Candidate(0, len(surface), terms),)
                            )
        return ()

    def _headword(self, surface: str) -> bool:
        lemmatizer = self.index.key_maker.lemmatizer
        return lemmatizer.is_known(surface, self.language) and (
            fold(lemmatizer.lemmatize(surface, self.language), self.language) == fold(surface, self.language)
        )

    def _known_otherwise(self, surface: str, folded: str) -> bool:
        """The dictionary knows the word as a form of another lemma (French juives: juif, not juiver)."""
        lemmatizer = self.index.key_maker.lemmatizer
        return lemmatizer.is_known(surface, self.language) and (
            fold(lemmatizer.lemmatize(surface, self.language), self.language) != folded
        )

    def _variant(self, surface: str, folded: str) -> tuple[Candidate, ...]:
        """A listed one-word form closed up (islamogauchiste for islamo-gauchiste) or, for long
        words the dictionary does not know, within one edit of a long listed form (transexual,
        transsexual). Short words never: one letter turns too many short words into others."""
        terms: tuple[Term, ...] = tuple(self.index.joined.get(folded, ()))
        if not terms and len(folded) >= VARIANT_MIN_LENGTH and folded.isalpha():
            if self.index.key_maker.lemmatizer.is_known(surface, self.language):
                return ()
            terms = tuple(
                term
                for size in (len(folded) - 1, len(folded), len(folded) + 1)
                for form, term in self.index.forms_by_length.get(size, ())
                if form[0] == folded[0]
                and len(form) >= VARIANT_MIN_LENGTH
                and Levenshtein.distance(folded, form, score_cutoff=1) <= 1
            )
        return (Candidate(0, len(surface), terms, variant=True),) if terms else ()

    def _hyphenated(self, text: str) -> list[Candidate]:
        """Two words joined by a hyphen that together are a listed one-word form (Muzul-Vrouw)."""
        found = []
        for match in _HYPHEN_PAIR_RE.finditer(text):
            closed = match.group(1) + match.group(2)
            lookup = self._lookups.get(closed) or self._lookup(closed)
            terms = self._single(lookup.keys, closed) if lookup.keys else ()
            if terms:
                found.append(Candidate(match.start(), match.end(), terms, variant=True))
        return found

    def _repeated(self, surface: str) -> tuple[Candidate, ...]:
        if not self.obfuscation:
            return ()
        readings = collapse_repeats(surface)
        found = self._resolve_readings(readings) if readings else None
        if found is None:
            return ()
        terms, reading, _masked = found
        return (Candidate(0, len(surface), terms, obfuscated=True, reading=reading),)

    def _resolve_readings(self, readings: tuple[str, ...]) -> tuple[tuple[Term, ...], str, bool] | None:
        """The terms a disguised span may stand for, with the reading that matched."""
        if readings in self._readings:
            return self._readings[readings]
        result = None
        for reading in readings:
            if "*" in reading:
                terms = self._masked(reading)
                if terms:
                    result = (terms, reading, True)
                    break
                continue
            terms = self._single(tuple(k for k in self.index.key_maker(reading) if k in self.index.keys), reading)
            if terms:
                result = (terms, reading, False)
                break
        self._readings[readings] = result
        return result

    def _masked(self, pattern: str) -> tuple[Term, ...]:
        pattern = fold(pattern, self.language)  # the forms are folded: accents, final sigma
        visible = sum(c != "*" for c in pattern)
        if visible == 0 or len(pattern) < 3:
            return ()
        return tuple(
            term for form, term in self.index.forms_by_length.get(len(pattern), ()) if mask_matches(pattern, form)
        )

    # -- per text -----------------------------------------------------------------------
    def candidates(self, text: str, tokens: Sequence[Token]) -> list[Candidate]:
        found: list[Candidate] = []
        terms: list[Term] | tuple[Term, ...]
        cached, compute = self._lookups.get, self._lookup
        lookups = [cached(t.text) or compute(t.text) for t in tokens]
        root = self.index.root
        stems = self.index.stems
        agreeing = self.language in AGREEMENT_ENDINGS
        for i in [i for i, lookup in enumerate(lookups) if lookup is not _NOTHING]:
            token, lookup = tokens[i], lookups[i]
            for part in lookup.parts:
                found.append(
                    Candidate(
                        token.start + part.start,
                        token.start + part.end,
                        part.terms,
                        part.obfuscated,
                        part.reading,
                        variant=part.variant,
                    )
                )
            if not lookup.keys:
                continue
            frontier: list[TrieNode] = [root.children[k] for k in lookup.keys if k in root.children]
            j = i
            while frontier:
                terms = [t for node in frontier for t in node.terms]
                if terms and stems:
                    terms = [t for t in terms if self._admitted(t, tokens, i, j)]
                if terms and j == i:
                    terms = [t for t in terms if not self._other_marks(token.text, t)]
                if terms:
                    found.append(Candidate(token.start, tokens[j].end, tuple(dict.fromkeys(terms))))
                j += 1
                if j >= len(tokens) or not _JOINER_RE.fullmatch(text, tokens[j - 1].end, tokens[j].start):
                    break
                next_keys = lookups[j].keys
                if agreeing:
                    key = agreement_key(fold(tokens[j].text, self.language), self.language)
                    if key is not None:
                        next_keys = (*next_keys, key)
                frontier = [node.children[k] for node in frontier for k in next_keys if k in node.children]
        if "-" in text or "‐" in text or "‑" in text:
            found.extend(self._hyphenated(text))
        if self.obfuscation:
            for disguised in find_disguised(text):
                resolved = self._resolve_readings(disguised.readings)
                if resolved is not None:
                    terms, reading, masked = resolved
                    found.append(
                        Candidate(
                            disguised.start, disguised.end, terms, obfuscated=True, reading=reading, masked=masked
                        )
                    )
        return found

    def _admitted(self, term: Term, tokens: Sequence[Token], first: int, last: int) -> bool:
        if term.id not in self.index.stems:
            return True
        return all(
            self.index.admits(term, p, fold(tokens[first + p].text, self.language)) for p in range(last - first + 1)
        )

    def find(self, text: str) -> list[Hit]:
        tokens = self.tokenizer.tokenize(text)
        chosen = resolve_overlaps(self.candidates(text, tokens))
        terms = [best_variant(cand, text[cand.start : cand.end], self.language) for cand in chosen]
        dropped = self._names(text, tokens, chosen, terms)
        hits: list[Hit] = []
        for n, (cand, term) in enumerate(zip(chosen, terms, strict=True)):
            if n in dropped:
                continue
            others = tuple(t.literal for t in cand.terms if t is not term) if cand.masked else ()
            hits.append(
                Hit(
                    id=f"h{len(hits) + 1}",
                    start=cand.start,
                    end=cand.end,
                    surface=text[cand.start : cand.end],
                    term=term,
                    issue=self.index.issues[term.issue_id],
                    obfuscated=cand.obfuscated,
                    candidates=(term.literal, *others) if others else (),
                    variant=cand.variant,
                )
            )
        return hits

    def _names(self, text: str, tokens: list[Token], chosen: list[Candidate], terms: list[Term]) -> set[int]:
        """Positions in `chosen` of hits inside names; disguised spellings are never names."""
        if self.name_filter is None or not chosen:
            return set()
        starts = [t.start for t in tokens]
        spans: list[Span] = []
        positions: list[int] = []
        for n, (cand, term) in enumerate(zip(chosen, terms, strict=True)):
            first, last = _token_at(starts, cand.start), _token_at(starts, cand.end - 1)
            if cand.obfuscated or first is None or last is None:
                continue
            spans.append(Span(first, last, term))
            positions.append(n)
        return {positions[k] for k in self.name_filter.names(text, tokens, spans, self.language)}


def _token_at(starts: list[int], position: int) -> int | None:
    i = bisect.bisect_right(starts, position) - 1
    return i if i >= 0 else None


def resolve_overlaps(candidates: list[Candidate]) -> list[Candidate]:
    """Longest first; at equal length listed forms beat disguised ones and variants, then earlier ones."""
    ordered = sorted(candidates, key=lambda c: (-(c.end - c.start), c.obfuscated, c.variant, c.start))
    starts: list[int] = []  # of the intervals taken so far, kept sorted; they never overlap
    ends: list[int] = []
    chosen: list[Candidate] = []
    for cand in ordered:
        i = bisect.bisect_left(starts, cand.end)  # intervals starting before cand ends: < i
        if i > 0 and ends[i - 1] > cand.start:
            continue
        starts.insert(i, cand.start)
        ends.insert(i, cand.end)
        chosen.append(cand)
    chosen.sort(key=lambda c: c.start)
    return chosen


def best_variant(candidate: Candidate, surface: str, language: str) -> Term:
    """Among terms sharing a lemma, the one written most like the surface."""
    if len(candidate.terms) == 1:
        return candidate.terms[0]
    written = candidate.reading or fold(surface, language)
    return min(candidate.terms, key=lambda t: Levenshtein.distance(written, fold(t.literal, language)))


def _not_an_ambiguous_head(parts: list[Candidate], length: int) -> list[Candidate]:
    """The head of a compound names what the whole is, so an ambiguous word there is read in its neutral sense
    when nothing else in the compound is a vocabulary word (Dutch spaar|pot, a money box, is no "pot"; German
    Hunde|mischling): its hit is dropped. Beside another vocabulary word the compound names people (Juden|mischling)
    and the head keeps its hit; so does an ambiguous first part (Zigeuner|schnitzel)."""
    kept = []
    for part in parts:
        if part.start > 0 and part.end == length and not any(other.end <= part.start for other in parts):
            terms = tuple(t for t in part.terms if not t.ambiguous)
            if not terms:
                continue
            part = replace(part, terms=terms)
        kept.append(part)
    return kept
