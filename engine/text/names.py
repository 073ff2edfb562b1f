"""Dropping hits that are part of a person's or a place's name (Italian surname Sordo,
Via Moro, Mr. Savage).

The offline heuristic (HeuristicNameFilter) looks at the hit's neighbours and capitalization;
Stanza's NER replaces it when its models are present.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from engine.text.lemmatizer import Lemmatizer, load_stanza_pipeline
from engine.text.tokenizer import Token
from engine.vocabulary.model import Term

# Words that introduce a person's or a place's name, lowercased, without the trailing dot.
NAME_MARKERS: frozenset[str] = frozenset(
    """
    mr mrs ms miss dr prof professor professeur professore professoressa maestro maestra onorevole
    dokter doctor doktor pater padre don sir lady lord saint st street road avenue lane square m mme mlle monsieur
    madame docteur rue boulevard place sainte sig sigg signor signore signora signorina dott dottor
    dottore dottoressa avv ing via piazza corso viale largo san santa santo herr frau fräulein
    straße strasse platz gasse weg allee dhr mevr mevrouw meneer heer straat plein laan gracht sr
    sra srta senhor senhora dom dona doutor doutora rua avenida praça são κ κα κος κυρ κύριος κυρία
    κύριε οδός οδό πλατεία άγιος αγίου αγία
    """.split()
)

# Small words inside names between a first name, title or place word and the rest
# (Ria de Mof, Van der Kreupel, rue de la Juiverie, Nossa Senhora dos Pretos).
NAME_PARTICLES: frozenset[str] = frozenset(
    """
    de der den van von vom zu zum zur ter ten te het la le les du des d l di da dal del della dei degli
    delle lo do dos das y e
    """.split()
)

# Place words that end Dutch compound street and place names (Moorplein, Heidelaan).
PLACE_SUFFIXES = ("plein", "straat", "laan", "weg", "gracht", "kade", "dijk", "markt", "steeg", "singel", "park")

# Words that often open a sentence before an insult ("You cripple"); a capitalized first word
# from this list is not taken for a first name.
SENTENCE_OPENERS: frozenset[str] = frozenset(
    """
    you your yours the a an this that these those my his her our their hey oh ah what he she they we
    i it dear stupid dirty filthy fucking bloody damn go get shut poor typical another some all no
    not just only every look fuck screw tu toi vous le la les un une ce cette ces mon ton son sa nos
    vos leur sale espèce eh hé voi il lo gli una uno questo questa quel quella sporco sporca brutto
    brutta ehi du ihr der die das den ein eine dieser diese dieses mein dein sein unser euer scheiß
    jij je jullie de het een dat deze mijn jouw zijn haar onze vuile vieze kut você vocês o os as um
    uma esse essa este esta meu minha seu sua seus suas εσύ εσείς ο η το οι τα ένας μια ένα αυτός
    αυτή αυτό ρε βρε μωρέ
    """.split()
)


@dataclass(frozen=True, slots=True)
class Span:
    """A hit as the name filter sees it: token indices first..last of a term."""

    first: int
    last: int
    term: Term


class NameFilter(Protocol):
    def names(self, text: str, tokens: Sequence[Token], spans: Sequence[Span], language: str) -> set[int]:
        """Positions in `spans` of the hits that are part of a person's or a place's name."""
        ...


def _capitalized(token: Token) -> bool:
    return token.text[:1].isupper()


def _sentence_initial(text: str, tokens: Sequence[Token], index: int) -> bool:
    if index == 0:
        return True
    between = text[tokens[index - 1].end : tokens[index].start]
    return any(c in between for c in '.!?:;\n"«»“”')


def _adjacent(text: str, a: Token, b: Token) -> bool:
    """Tokens separated only by spaces (or a title's dot): parts of one name."""
    between = text[a.end : b.start]
    return between.strip(" .\u00a0") == "" and "\n" not in between


class HeuristicNameFilter:
    """Offline rules, in order:

    1. a capitalized hit right after a title or place word (Sig. Sordo, Via Moro) is a name;
    2. in languages that write common nouns in lower case (all but German), a hit of a
       lower-case vocabulary term written capitalized in mid-sentence, right beside another
       capitalized word, is a name (Marco Sordo, Sordo Rossi); ethnonyms such as 'Gypsy',
       listed capitalized, are not affected;
    3. in German, a capitalized hit beside a capitalized word the dictionary does not know.
    """

    def __init__(self, lemmatizer: Lemmatizer) -> None:
        self.lemmatizer = lemmatizer

    def _unknown(self, token: Token, language: str) -> bool:
        known = self.lemmatizer.is_known
        return not (known(token.text, language) or known(token.text.lower(), language))

    def names(self, text: str, tokens: Sequence[Token], spans: Sequence[Span], language: str) -> set[int]:
        in_hits = {i for span in spans for i in range(span.first, span.last + 1)}
        return {
            n
            for n, span in enumerate(spans)
            if self._is_name(text, tokens, span.first, span.last, language, span.term, in_hits)
        }

    def _is_name(
        self, text: str, tokens: Sequence[Token], first: int, last: int, language: str, term: Term, in_hits: set[int]
    ) -> bool:
        token, index = tokens[first], first
        if not _capitalized(token) or (token.text.isupper() and len(token.text) > 1):
            return False
        lower_case_term = term.literal[:1].islower()
        if language == "nl" and lower_case_term and token.text.lower().endswith(PLACE_SUFFIXES):
            return True
        if self._after_particles(text, tokens, first, lower_case_term, language):
            return True
        before = tokens[first - 1] if first > 0 and _adjacent(text, tokens[first - 1], token) else None
        after = tokens[last + 1] if last + 1 < len(tokens) and _adjacent(text, tokens[last], tokens[last + 1]) else None
        if before is not None and before.text.lower() in NAME_MARKERS:
            return True
        # Shouted words and other hits are not names ("CRIPPLE Faggots", "Junkies Faggots").
        neighbours = [
            t
            for t, at in ((before, first - 1), (after, last + 1))
            if t is not None and _capitalized(t) and not t.text.isupper() and at not in in_hits
        ]
        if after is not None and after in neighbours and _sentence_initial(text, tokens, last + 1):
            neighbours.remove(after)
        if before is not None and before in neighbours and before.text.lower() in SENTENCE_OPENERS:
            neighbours.remove(before)
        if not neighbours:
            return False
        if language == "de":
            return any(self._unknown(t, language) for t in neighbours)
        return lower_case_term and not _sentence_initial(text, tokens, index)

    def _after_particles(
        self, text: str, tokens: Sequence[Token], first: int, lower_case_term: bool, language: str
    ) -> bool:
        """A capitalized hit after name particles that follow a title or place word (rue de la
        Juiverie) or, for terms written in lower case, a first name the dictionary does not know
        (Ria de Mof; but the Estatuto do Índio is a law's title, where the word itself counts)."""
        i = first - 1
        while i >= 0 and tokens[i].text.lower() in NAME_PARTICLES and _adjacent(text, tokens[i], tokens[i + 1]):
            i -= 1
        if i == first - 1 or i < 0 or not _adjacent(text, tokens[i], tokens[i + 1]):
            return False
        head = tokens[i]
        if head.text.lower() in NAME_MARKERS:
            return True
        return (
            lower_case_term
            and _capitalized(head)
            and not head.text.isupper()
            and head.text.lower() not in SENTENCE_OPENERS
            and self._unknown(head, language)
        )


class StanzaNameFilter:
    """Named-entity recognition with Stanza; needs its models locally (never downloads)."""

    def __init__(self, languages: tuple[str, ...]) -> None:
        self._pipelines: dict[str, Any] = {lang: load_stanza_pipeline(lang, "tokenize,ner") for lang in languages}

    def names(self, text: str, tokens: Sequence[Token], spans: Sequence[Span], language: str) -> set[int]:
        pipeline = self._pipelines.get(language)
        if pipeline is None or not spans:
            return set()
        doc = pipeline(text)
        entities = [(e.start_char, e.end_char) for e in doc.ents if e.type in ("PER", "PERSON", "LOC", "GPE")]
        return {
            n
            for n, span in enumerate(spans)
            if any(s <= tokens[span.first].start and tokens[span.last].end <= e for s, e in entities)
        }
