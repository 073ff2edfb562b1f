"""Use versus mention: is a hit used against someone, or quoted, reported, reclaimed or historical?

A slur quoted to denounce it, reported ("they called me a ..."), used by the group it names about itself, or
standing in a historical title is explained to readers but not held against the author (docs/contracts.md,
"Use versus mention"; docs/uses.md). Without a language model this module reads the hit's surroundings with
rules that live in data, one file per language (`prompts/<lang>/use.yaml`, part of the prompt version):
quotation marks, cue phrases before the hit ("called me a", "the word", "we"), cue phrases after it ("is a
slur").

Deliberate choices (do not "fix"):
- The default is `attack`: a hit with no cue is used against someone. A rule can only take a hit *out* of
  the flagged path when a cue says so, and an attack cue nearer to the hit (or right before a quotation mark:
  `you "..."`, scare quotes) wins over a farther mention cue.
- Only the hit's own sentence is read; the nearest cue decides, the longer cue at equal distance. A reclaimed
  or historical cue comes before quotation marks (`the painting titled "..."`), quotation marks before a
  reported cue (`he wrote "..."` is quoted).
- An old source named before the hit in its sentence (a document word such as "register" or "diary", and a
  year before `sources.before_year` or an era word such as "colonial") makes the hit historical, unless any
  attack cue stands in the sentence before it: "The 1890 gazetteer lists the population as ...". A year alone
  or a document alone is not enough ("the 2024 report", "my diary").
- "As X, we ...": a hit right after one of `self_reference.as` whose clause goes on with a first-person subject
  pronoun ("As queer people we decide ...", "Als Tunte auf der Bühne fühle ich ...") is reclaimed. Only subject
  pronouns, within `self_reference.words` words of the hit and before a comma ("as" also means "because":
  "as wetbacks keep coming we ..." stays an attack with English's 2 words).
- A catalogue entry that opens the hit's paragraph ("Lot 117: tin money box ...", "Lot 212. Enamelled tin ...":
  one of `sources.entries`, then a number) makes the hit historical too: an auction or inventory description.
- A quotation that holds the hit alone, set off by commas ('Nice try, "...".', `vocative_quotes`), is a word
  addressed to someone: an attack, unless a mention cue stands anywhere before it in the sentence ("the word in
  the caption, "...", is ...") or the quotation is one of a list. It costs a mention written as a bare apposition
  ('Graffiti on the bridge again, "..."'), which the dev corpora hardly hold and attacks often do.
- The frame of a report (`frames`: "according to the police", "was convicted", "secondo i testimoni") anywhere
  before the hit in its sentence makes a hit that no cue explains reported: a news or court report of what
  someone said. Only institutional sources and sanctions are listed: "according to my gran, ..." is no frame.
- Indirect speech (`speech`): a verb of saying in the third person ("told", "a raconté", "ha detto"), then within
  `speech.reach` words a word that opens a reported clause ("that", "que", "dass", "ότι"), anywhere before the hit
  in its sentence, makes a hit that no cue explains reported: "my landlord asked if the ... upstairs had paid".
  Only verbs of another speaker are listed, and a `speech.writer` pronoun within three words before the verb
  ("I told him that ...") leaves the hit an attack: the writer's own claim is no report; so does the writer's
  endorsement (`after.attack`) anywhere after the hit in its sentence or the next. Stance comes first.
- Someone else naming people with the word (`speech.naming`: "called", "dà del", "noemde"), the verb within four
  words before the hit in its clause (no comma, colon or semicolon between), makes a hit no cue explains reported:
  "the coach called the new lads ...". The writer's pronoun near the verb ("I called them ...", the impersonal
  "wie nennt man ..."), or the writer's endorsement or stance in the sentence, leaves an attack.
- A short heading with an old year that opens the hit's sentence and ends in a colon before it ("Hansard, March
  1904: ...") makes the hit historical, like a named old source (`_Sources.dated_heading`).
- The writer's own quotation is no mention: a hit inside quotation marks with no mention cue of its own is an
  attack when the sentence, outside the marks, names the writer as its author (`own_words`: "my sign:", "I told
  him", "te lo scrivo") or states the writer's stance there or in the next sentence ("… I'd say it again").
  Only the first person singular: "our banner: …" is as often a group's reclaimed slogan.
- The writer's stance (`stance`: "I'm not racist, but", "and I still mean it"), anywhere in the hit's sentence or
  the next one, makes a hit that no cue explains an attack with that phrase as its cue; it comes before a frame.
  It never turns a recognised mention into an attack; it only names the evidence, so the learned second reading
  (engine.use_model, offered only hits without a cue) cannot clear the hit.
- Another user's post quoted in a reply (`replies`) is quoted, whatever its own words: a hit on a line opening
  with ">", inside [quote]…[/quote], or on the line after a header such as "Dave wrote:" (in the sentence after it
  when on the same line). Only verbs of posting make a header ("as grandad said: ..." endorses), and one with a
  writer pronoun ("I wrote:") brings the writer's own words. The reply agreeing makes the hit an attack: a first
  clause that is one of `replies.agree` ("This.", "Exactly, ..."), or an endorsement or stance in its first two
  sentences. A reclaimed or historical cue nearest the hit still comes first.
- A hit that no cue explains, spelt with a capital its vocabulary term lacks inside an ordinary sentence (not at
  its start, not in a title-case heading or all caps), is a group's own name (`group_names`: "the Raging
  Fruitcakes beat Leeds", "Club des Croulants"): reclaimed. Terms of the categories whose words take a capital in
  ordinary writing (`group_names.conventional`: peoples, religions, parties) are left out: "the Polacks".
- A language model, when one judged the hit, overrules these rules (engine.analysis): its prompt already
  weighs quotation, reported speech and reclaimed use, so a contentious model verdict is an attack.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal, Protocol

import yaml

from engine.errors import UneraseError
from engine.hits import Hit
from engine.text.names import plain_case, sentence_initial, team_word
from engine.text.tokenizer import RegexTokenizer
from engine.vocabulary.model import CATEGORIES

Use = Literal["attack", "quoted", "reported", "reclaimed", "historical"]
USES: tuple[Use, ...] = ("attack", "quoted", "reported", "reclaimed", "historical")
MENTIONS = frozenset({"quoted", "reported", "reclaimed", "historical"})
CUE_KINDS = ("attack", "reported", "reclaimed", "historical")
# how sure a recognised mention makes a "not flagged" decision: rules read a few words, not the meaning
USE_CONFIDENCE = 0.7
CONTEXT = 400  # characters read on each side of a hit at most
SHORT_QUOTE = 80  # characters: the longest stretch between single quotation marks read as a quotation
WILDCARD = "*"
WILDCARD_WORDS = 4  # "chamou a minha mulher de ...": who was called something takes a few words
REPORTED_CUE = 8  # an attack cue this close after a report's "that" belongs to the reported words
ECHO = "echoes the quotation"  # the cue of a hit whose words were quoted earlier in the text
ECHO_WORDS = 2  # an echo repeats the hit and this many words beside it
COMMA_REACH = 12  # "pelo que minha avó conta, na tecelagem da Mooca ele nunca foi Giuseppe: era o …": a report after
# its verb and a comma reaches the hit within this many words
SUBJECT_WORDS = 2  # a report with no "that": the hit comes this many words after its subject at least
NAMING_WORDS = 6  # "called the families on the old site a bunch of …": the named people take a few words
COMPOUND_HEAD = 5  # "notulen", "register": a document word this long ends compounds that name documents
NUMBER = "#"  # in `self_reference.opening.ages`: any number ("since #", "de # ans")
_AGE = re.compile(r"\s*,\s*(\d{2})\s*[,.;:)]")  # "Ouwe homo, 58, Zwolle": an age set off by commas
ASIDE_WORDS = 6  # a parenthesis this close after the hit speaks of those it names; an apposition is this short
ASIDE_PARTS = 3  # an introduction ("I'm Priya, second year, resident …") has at most this many parts before the hit
WE_WORDS = 4  # "Οι … της γειτονιάς πήγαμε": the verb in the first person plural comes this close after the hit
OPENING_WORDS = 5  # the writer's age or place follows a post's opening word this closely ("Terrona a Torino dal 2009")
# an attack_before_quote cue starting with "^" counts only when it opens the sentence: Dutch "die" is "those"
# there ('Die "mongolen" van het tehuis ...') but a relative pronoun inside one ('de jongen die "flikker" riep')
SENTENCE_START = "^"
ENDORSED_SENTENCES = 2  # a quotation's or report's endorsement comes in the sentences right after it
# the evidence of a quoted word addressed to someone: 'Nice try, "X".', 'Go back to your ward, «X», adults are talking'
VOCATIVE = "a quoted word addressed to someone, between commas"
_AGAINST = frozenset({"no", "anti", "kein", "keine", "geen", "sans", "senza", "sem", "όχι", "αντι"})  # "No … FC"
_AND = frozenset({"and", "et", "und", "en", "e", "y", "και", "&"})  # between names given together ("Sam and Jo")
_CLAUSE_BREAKS = ",;:()\n\u2013\u2014"  # a naming verb reaches the hit within its clause
GROUP_NAME = "capitalized as a group's name"  # the cue of a hit read by `group_names`
SAME_WORD = "the writer's own word for themselves, used again"  # the cue of a hit read by `UseRules.carried`
_TOKENIZER = RegexTokenizer()
QUOTED_POST = "quoted post"  # the cue of a hit in another user's post quoted in a reply ("> ...", [quote])
_QUOTE_CLOSE = re.compile(r"\[/quote\]", re.IGNORECASE)
_CLOSING_MARKS = frozenset("\"”»“’'")
GAP = "+"  # a cue ending in "+" allows up to `gap` words between the cue and the hit ("called me a dirty ...")
# an `after` cue starting with "+" may follow the hit's noun phrase: up to this many words stand between them
# ("... jokes under her selfie is not banter")
AFTER_GAP = 4
_COMMA = re.compile(",")
_JOINED = re.compile(r"\w[ \t]+$")  # a word, then only spaces up to the hit
_WORD = re.compile(r"\w+|\*")  # apostrophes separate: "l'appelaient" reads as "l", "appelaient"
# a full stop before a number ends no sentence: "c. 1905", "ca. 1910", "περ. 1910", "Nr. 4" (catalogue captions); nor
# one after a title: "chamou o Sr. Osvaldo de …", "είπε τον κ. Σταύρο …", "M. Dupont" (an initial may: "face B.")
_TITLES = "Mr Mrs Ms Dr St Sr Sra M Mme Mlle Hr Fr Dhr Mevr Sig Dott Prof κ".split()
# the dot first: the titles are looked behind at a dot only, not at every character; a dot before a comma is an
# abbreviation's ("214 pp., brossura", "etc., and")
_SENTENCE_END = re.compile(r"[!?;\n]|\." + "".join(rf"(?<!\b{t}\.)" for t in _TITLES) + r"(?!\s*\d|,)")
HEADER_WORDS = 12  # "On 3 May 2026 at 10:02, Dave Smith wrote:" introduces a quoted post
HEADER_CHARS = 120  # and a header is looked for only that far into its line
HEADING_WORDS = 12  # a dated heading ("Hansard, March 1904:") is short
_YEAR = re.compile(r"(?<!\d)(1[0-9]{3})(?:s|er|\u2019?s)?(?!\d)")  # 1890, 1890s, 1890er
_APOSTROPHES = str.maketrans({"’": "'", "ʼ": "'", "`": "'", "´": "'"})
_APOSTROPHE_MARKS = {"'", "’"}


class UseRulesError(UneraseError):
    status = 500
    code = "invalid-use-rules"


@dataclass(frozen=True, slots=True)
class UseReading:
    """How one hit is used, and the evidence: the cue phrase or "quotation marks" (empty for the default)."""

    use: Use = "attack"
    cue: str = ""
    by: str = "rules"  # "rules", or the model id that overruled them


@dataclass(frozen=True, slots=True)
class _Cue:
    words: tuple[str, ...]
    kind: str
    gap: bool
    text: str
    first: bool = False  # attack_before_quote only: the cue must open the sentence ("^die")


@dataclass(frozen=True)
class _Phrases:
    """Phrases of words looked for anywhere in a run of words; the first listed that occurs is the one named. A `*`
    stands for one or two words, in the lists that allow it (`agreement`: "hat * recht", "heeft * gelijk")."""

    words: tuple[tuple[str, ...], ...] = ()
    spaced: tuple[str | re.Pattern[str], ...] = field(init=False, repr=False, compare=False)
    plain: tuple[str, ...] | None = field(init=False, repr=False, compare=False)  # no `*`: one quick look each

    def __post_init__(self) -> None:
        spaced = tuple(
            re.compile(" " + " ".join(r"\S+(?: \S+)?" if w == WILDCARD else re.escape(w) for w in p) + " ")
            if WILDCARD in p
            else f" {' '.join(p)} "
            for p in self.words
        )
        object.__setattr__(self, "spaced", spaced)
        plain = tuple(p for p in spaced if isinstance(p, str))
        object.__setattr__(self, "plain", plain if len(plain) == len(spaced) else None)

    def __bool__(self) -> bool:
        return bool(self.words)

    def find(self, words: list[str]) -> str:
        joined = f" {' '.join(words)} "
        if self.plain is not None:
            return next((spaced[1:-1] for spaced in self.plain if spaced in joined), "")
        for phrase, spaced in zip(self.words, self.spaced, strict=True):
            if isinstance(spaced, str):
                if spaced in joined:
                    return " ".join(phrase)
            elif found := spaced.search(joined):
                return found.group(0).strip()  # the words themselves: "hat der alte recht"
        return ""


def fold(text: str) -> str:
    """Case, accents and apostrophe styles removed: cues match however the text is written."""
    decomposed = unicodedata.normalize("NFD", text.translate(_APOSTROPHES).casefold())
    if decomposed.isascii():
        return decomposed  # nothing to take off, and most texts' sentences are plain ASCII
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def _as_written(text: str, phrase: str) -> str:
    """The words of a folded cue phrase as `text` writes them ("he s right" → "he's right"), or the phrase itself when
    they are not found so (a description such as VOCATIVE, a cue with `*`)."""
    lower = text.lower()
    if len(lower) == len(text):  # most cues are written as listed, but for capitals: "You", "Nothing to add"
        at = lower.find(phrase)
        if at >= 0 and not (lower[at - 1 : at].isalnum() or lower[at + len(phrase) : at + len(phrase) + 1].isalnum()):
            return text[at : at + len(phrase)]
    folded: list[str] = []
    where: list[int] = []
    for at, char in enumerate(text):
        for part in fold(char):
            folded.append(part)
            where.append(at)
    words = phrase.split()
    match = re.search(r"(?<!\w)" + r"\W+".join(map(re.escape, words)) + r"(?!\w)", "".join(folded)) if words else None
    return text[where[match.start()] : where[match.end() - 1] + 1] if match else phrase


def _words(text: str, cue: bool = False) -> list[str]:
    words = _WORD.findall(fold(text))
    return words if cue else [w for w in words if w != WILDCARD]


@dataclass(frozen=True)
class UseRules:
    """The rules of one language (prompts/<lang>/use.yaml)."""

    language: str
    quotes: tuple[tuple[str, str], ...]
    before: tuple[_Cue, ...]
    after: tuple[_Cue, ...]
    attack_before_quote: tuple[_Cue, ...]
    gap: int = 2
    notes: Mapping[str, str] = field(default_factory=dict)
    sources: _Sources | None = None
    self_reference: _SelfReference | None = None
    vocative: bool = False  # vocative_quotes: a quoted word set off by commas is addressed to someone (_vocative)
    stance: _Phrases = _Phrases()  # the writer's stance, anywhere in the hit's sentence or the next
    frames: _Phrases = _Phrases()  # a report's frame ("according to the police"), before the hit
    own_words: _Phrases = _Phrases()  # the writer's own quotation ("my sign:", "I told him")
    speech: _Speech | None = None  # indirect speech: "he told the class that ..."
    replies: _Replies | None = None  # another user's post quoted in a reply: "> ...", "Dave wrote: ..."
    group_names: _GroupNames | None = None  # "the Raging Fruitcakes": a capital the vocabulary does not write
    inscriptions: _Phrases = _Phrases()  # "sprayed NO … across the glass": words in capitals written somewhere
    agreement: _Phrases = _Phrases()  # the writer agreeing with a quotation, in the sentences after it

    @classmethod
    def from_file(cls, path: Path, language: str) -> UseRules:
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except yaml.YAMLError as exc:
            raise UseRulesError(f"{path}: not valid YAML ({exc})") from exc
        if not isinstance(data, dict):
            raise UseRulesError(f"{path}: expected a mapping with quotes, before, after, gap and notes")
        return cls.from_dict(data, language, str(path))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], language: str, where: str = "use rules") -> UseRules:
        quotes = []
        for pair in data.get("quotes") or ():
            if not isinstance(pair, str) or len(pair) != 2:
                raise UseRulesError(f"{where}: quotes: {pair!r} is not two characters (an opening and a closing mark)")
            quotes.append((pair[0], pair[1]))
        gap = data.get("gap", 2)
        if not isinstance(gap, int) or not 0 <= gap <= 5:
            raise UseRulesError(f"{where}: gap: {gap!r} is not a number of words from 0 to 5")

        def cues(section: str, kinds: Sequence[str]) -> tuple[_Cue, ...]:
            found: list[_Cue] = []
            groups = data.get(section) or {}
            if not isinstance(groups, dict):
                raise UseRulesError(f"{where}: {section}: expected a mapping of {', '.join(kinds)} to lists of cues")
            for kind, phrases in groups.items():
                if kind not in kinds:
                    raise UseRulesError(f"{where}: {section}: '{kind}' is not known; accepted: {', '.join(kinds)}")
                for phrase in _texts(phrases or [], f"{section}.{kind}", where):
                    text = phrase.strip()
                    has_gap = text.startswith(GAP) if section == "after" else text.endswith(GAP)
                    text = text.removeprefix(GAP).strip() if section == "after" else text
                    words = tuple(_words(text.removesuffix(GAP), cue=True))
                    if not words:
                        raise UseRulesError(f"{where}: {section}.{kind}: the cue {phrase!r} has no word")
                    found.append(_Cue(words, kind, has_gap, text.removesuffix(GAP).strip()))
            return tuple(found)

        notes = data.get("notes") or {}
        unknown = sorted(set(notes) - MENTIONS)
        if unknown:
            accepted = ", ".join(sorted(MENTIONS))
            raise UseRulesError(f"{where}: notes: {', '.join(unknown)} not known; accepted: {accepted}")
        attack_quote = _attack_cues(data.get("attack_before_quote") or (), where)
        speech = _Speech.from_dict(data.get("speech"), where)
        return cls(
            language,
            tuple(quotes),
            cues("before", CUE_KINDS),
            cues("after", CUE_KINDS),
            attack_quote,
            gap,
            {str(k): str(v) for k, v in notes.items()},
            _Sources.from_dict(data.get("sources"), where),
            _SelfReference.from_dict(data.get("self_reference"), where),
            _flag(data, "vocative_quotes", where),
            _phrases(data.get("stance"), "stance", where),
            _phrases(data.get("frames"), "frames", where),
            _phrases(data.get("own_words"), "own_words", where),
            speech,
            _Replies.from_dict(data.get("replies"), where, speech.writer if speech is not None else frozenset()),
            _GroupNames.from_dict(data.get("group_names"), where),
            _phrases(data.get("inscriptions"), "inscriptions", where),
            _phrases(data.get("agreement"), "agreement", where, wildcards=True),
        )

    # -- reading ------------------------------------------------------------------------------
    def _quoted(self, text: str, start: int, end: int) -> tuple[int, int] | None:
        """The offsets of the opening and closing marks of a quotation around [start, end), if the hit is inside
        one."""
        left = _sentence_start(text, start, quotes=True)
        for opening, closing in self.quotes:
            at = text.rfind(opening, left, start)
            while at >= 0 and opening in _APOSTROPHE_MARKS and at > 0 and text[at - 1].isalnum():
                at = text.rfind(opening, left, at)  # an apostrophe inside a word (don't, l'homme), not a mark
            if at < 0:
                continue
            if opening == closing:
                if not _inside_pair(text, opening, left, at):
                    continue  # the mark before the hit closes an earlier quotation
            elif _closing(text, closing, at + 1, start) is not None:
                continue  # the quotation closed before the hit
            close = _closing(text, closing, end, len(text))
            if close is None:
                continue
            if opening in _APOSTROPHE_MARKS and close - at > SHORT_QUOTE:
                continue  # single marks double as apostrophes: only a short stretch counts as a quotation
            return at, close
        return None

    def read(self, text: str, hit: Hit) -> UseReading:
        """The use of one hit in `text`, by the nearest cue in its sentence, then quotation marks. An attack's cue is
        given as the text writes it ("he's right", not the folded "he s right"): readers see it in the reasons."""
        reading = self._read(text, hit)
        if reading.use != "attack" or not reading.cue:
            return reading
        start = max(0, hit.start - CONTEXT)
        return UseReading("attack", _as_written(text[start : hit.end + CONTEXT], reading.cue), reading.by)

    def carried(self, text: str, hits: Sequence[Hit], readings: dict[str, UseReading]) -> dict[str, UseReading]:
        """A hit that no cue explains, after a hit of the same entry read as the writer's own word for themselves, is
        that word again ("Είμαι ο κοντοστούπης της βάρδιας … απόψε κερνάει ο κοντοστούπης", "Zitelle del Sabato: io e
        mia sorella, due zitelle …"); not when one of `attack_before_quote` points at others ("those …")."""
        own: set[str] = set()
        for hit in sorted(hits, key=lambda h: h.start):
            reading = readings[hit.id]
            if reading.use == "reclaimed":
                own.add(hit.issue.id)
            elif reading.use == "attack" and not reading.cue and hit.issue.id in own:
                before = _words(text[_sentence_start(text, hit.start) : hit.start])
                if not any(tuple(before[-len(c.words) :]) == c.words for c in self.attack_before_quote):
                    readings[hit.id] = UseReading("reclaimed", SAME_WORD)
        return readings

    def _read(self, text: str, hit: Hit) -> UseReading:
        left = _sentence_start(text, hit.start)
        right = _sentence_end(text, hit.end)
        before = _words(text[left : hit.start])
        after = _words(text[hit.end : right])
        best: tuple[int, int, int, _Cue, int] | None = None  # (distance, -length, attack first, cue, start)
        for distance, cue in self._cues_before(before):  # in the file's order: the first of equal ranks wins
            rank = (
                distance,
                -len(cue.words),
                0 if cue.kind == "attack" else 1,
                cue,
                len(before) - distance - len(cue.words),
            )
            best = rank if best is None or rank[:3] < best[:3] else best
        after_cues = self._cues_after(after)
        for distance, cue in after_cues:
            rank = (distance, -len(cue.words), 0 if cue.kind == "attack" else 1, cue, -1)
            best = rank if best is None or rank[:3] < best[:3] else best
        nearest = best[3] if best is not None else None
        if nearest is not None and nearest.kind in ("reclaimed", "historical"):
            return UseReading(nearest.kind, nearest.text)  # type: ignore[arg-type]
        post = self.replies.quoted_post(text, hit.start) if self.replies is not None else None
        if post is not None:
            return self._quoted_post(text, post)
        if self.sources is not None and not self._attack_phrases.find(before):
            # a catalogue entry opens its paragraph, not a long text: a paragraph start farther back is not looked for
            paragraph = text.rfind("\n", max(0, left - CONTEXT - 1), left) + 1
            first_words = (
                _words(text[paragraph : min(left, paragraph + 40)])[:3] if 0 < left - paragraph <= CONTEXT else before
            )
            source = (
                self.sources.named(before, text[left:right])
                or self.sources.entry(first_words)
                or self.sources.dated_heading(text[left : hit.start])
                or self.sources.cited(text, left, before)
            )
            if source:
                return UseReading("historical", source)
        if self.self_reference is not None and (nearest is None or nearest.kind != "attack"):
            clause = text[hit.end : right].split(",", 1)[0]
            marker = self.self_reference.marker(before, _words(clause)[: self.self_reference.words])
            marker = marker or self.self_reference.opening(text, hit, left, right, before, after)
            marker = marker or self.self_reference.aside_of(text, hit, right)
            marker = marker or self.self_reference.introduced(text, left, hit)
            marker = marker or self.self_reference.owned(text[hit.end : right], before, after)
            if marker:
                return UseReading("reclaimed", marker)
        quotation = self._quoted(text, hit.start, hit.end)
        if quotation is not None:
            opening = quotation[0]
            outside = _words(text[_sentence_start(text, opening) : opening])
            for scare in self.attack_before_quote:
                if _distance_before(outside, scare, 0) == 0 and (not scare.first or len(outside) == len(scare.words)):
                    return UseReading("attack", scare.text)  # scare quotes aimed at someone: `you "..."`
            if (
                self.vocative
                and (nearest is None or nearest.kind == "attack")
                and _vocative(text, hit, quotation)
                and not self._mention_phrases.find(before)
            ):
                return UseReading("attack", VOCATIVE)  # but "the word of the day, «...», is ..." names a word
            mentioned = self._mention_cue_near(text, hit, quotation, after_cues)
            if not mentioned:
                own = self._own_quotation(text, quotation, nearest)
                if own:
                    return UseReading("attack", own)  # 'My sign: "..."', 'I told him "...". I stand by it.'
            agreed = self._endorsed_after(text, quotation, mentioned)
            if agreed:
                return UseReading("attack", agreed)  # '"Residents called them … at the meeting." Spot on.'
            return UseReading("quoted", "quotation marks")
        following = after + _words(text[right : _sentence_end(text, right + 1)])
        if nearest is not None and nearest.kind == "reported":
            # unless the writer endorses the report: "…, die halbe Schlange seien …, und ehrlich, das ist der
            # Einzige, der noch Klartext redet"
            return self._reported_unless_endorsed(following, nearest.text)
        if nearest is not None and best is not None and best[4] >= 0 and self.speech is not None:
            # an attack cue inside someone else's reported clause is theirs: "you wrote that Matteo is a …"
            said, that = self.speech.find_at(before[: best[4]])
            if said and best[4] - that <= REPORTED_CUE and not self._endorsements.find(before + following):
                return UseReading("reported", said)
        if nearest is not None:
            return UseReading("attack", nearest.text)
        # no cue reaches the hit: the sentence-level lists read the rest of its sentence and the next one, once
        stance = self.stance.find(before + following)
        if stance:
            return UseReading("attack", stance)  # "I'm not racist, but ...": evidence the learned source keeps
        inscription = self._inscription(text, hit, left, right, before + after)
        if inscription and not self._writers_own(before + after) and not self._endorsements.find(following):
            return UseReading("quoted", inscription)  # "Someone sprayed NO … across the bus shelter"
        frame = self.frames.find(before)
        if frame:
            return UseReading("reported", frame)  # "according to the police, the man shouted ..."
        said = self.speech.find(before) if self.speech is not None else ""
        if said:
            return self._reported_unless_endorsed(following, said)  # "the landlord asked if the ... upstairs had paid"
        joined = _JOINED.search(text, max(left, hit.start - 4), hit.start) is not None  # only a space between: "sagt …"
        said = self.speech.object_of(before) if self.speech is not None and joined else ""
        if said:
            return self._reported_unless_endorsed(following, said)  # "sagt … gerade so laut, dass der es hört"
        if self.speech is not None and "," in text[left : hit.start]:
            commas, tags = self._commas(text, left, hit.start, len(before))
            said = self.speech.before_comma(before, commas, tags)
            if said.startswith("!"):
                return UseReading("attack", said[1:])  # "as my grandad said, …": the writer's own
            if said:
                return self._reported_unless_endorsed(following, said)  # "meinte, um … kümmere man sich nicht"
        if self.speech is not None and self.speech.naming:
            opens = max(left, *(text.rfind(mark, left, hit.start) + 1 for mark in _CLAUSE_BREAKS))  # the hit's clause
            naming = self.speech.named(before[len(before) - len(_WORD.findall(text, opens, hit.start)) :])
            if naming:  # "the councillor called the twins …", "gli dà del …"
                return self._reported_unless_endorsed(before + following, naming)
        echo = self._echo(text, hit)
        if echo:
            return UseReading("quoted", echo)  # 'she said: «the old man in bed 4 can wait». The old man … is my dad.'
        if self.self_reference is not None and self.self_reference.we_endings:
            closing = min((i for i in (text.find(m, hit.end, right) for m in _CLAUSE_BREAKS) if i >= 0), default=right)
            we = self.self_reference.we_subject(before, _words(text[hit.end : closing]))
            if we:
                return UseReading("reclaimed", f"… {_as_written(text[hit.end : closing], we)}")  # "Οι … πήγαμε"
        if self.group_names is not None and self.group_names.named(text[left:right], hit, left, self.language):
            return UseReading("reclaimed", GROUP_NAME)  # "Crumblies CC, Tuesday ride: ...", "le Club des Croulants"
        return UseReading("attack", "")

    @staticmethod
    def _commas(text: str, left: int, start: int, words: int) -> tuple[list[int], set[int]]:
        """The commas between `left` and the hit at `start`, as positions among the `words` words there, from the last
        back to the first more than COMMA_REACH words from the hit (none further can reach it); and those right after a
        closing quotation mark, the tags of a quotation ('« … », qu'elle a dit, …')."""
        commas: list[int] = []
        tags: set[int] = set()
        for comma in reversed([m.start() for m in _COMMA.finditer(text, left, start)]):
            after = len(_words(text[comma:start]))
            commas.append(words - after)
            if text[left:comma].rstrip(" \t")[-1:] in _CLOSING_MARKS:
                tags.add(words - after)
            if after > COMMA_REACH:
                break
        return commas[::-1], tags

    def _reported_unless_endorsed(self, words: list[str], cue: str) -> UseReading:
        """A report (cue `cue`), unless the writer endorses it in `words`: then an attack whose cue is the endorsement
        ("…, and he's right", "der noch Klartext redet")."""
        agreed = self._endorsements.find(words)
        return UseReading("attack", agreed) if agreed else UseReading("reported", cue)

    def _echo(self, text: str, hit: Hit) -> str:
        """The cue ("echoes the quotation") when the hit and ECHO_WORDS words beside it stand in the CONTEXT
        characters before it, inside quotation marks: the writer takes up the words just quoted ('«o velhote da cama 4
        que espere». O velhote da cama 4 é o meu pai.'); the word alone again is no echo ('The sign said "no …". The
        … came anyway.'): "" when not."""
        surface = text[hit.start : hit.end]
        earlier = text[max(0, hit.start - CONTEXT) : hit.start]  # as every rule, CONTEXT characters back at most
        if surface.casefold() not in earlier.casefold():
            return ""  # the usual case, read at once
        before = re.findall(r"\w+", text[max(0, hit.start - 60) : hit.start])[-ECHO_WORDS:]
        after = re.findall(r"\w+", text[hit.end : hit.end + 60])[:ECHO_WORDS]
        phrases = {" ".join([surface, *after])} if len(after) == ECHO_WORDS else set()
        if len(before) == ECHO_WORDS:
            phrases.add(" ".join([*before, surface]))
        offset = hit.start - len(earlier)
        for phrase in phrases:
            for match in re.finditer(r"\W+".join(map(re.escape, phrase.split())), earlier, re.IGNORECASE):
                if self._quoted(text, offset + match.start(), offset + match.end()) is not None:
                    return ECHO
        return ""

    @cached_property
    def _writer_words(self) -> frozenset[str]:
        """The writer's own words: `speech.writer` and `self_reference.first_person` ("I", "we", "ich")."""
        mine = self.speech.writer if self.speech is not None else frozenset()
        return mine | self.self_reference.pronouns if self.self_reference is not None else mine

    def _writers_own(self, sentence: list[str]) -> bool:
        """Whether the writer stands in the sentence: one of `own_words` ("my sign"), or one of the writer's words
        ("I painted …")."""
        return bool(self.own_words.find(sentence)) or not self._writer_words.isdisjoint(sentence)

    def _inscription(self, text: str, hit: Hit, left: int, right: int, sentence: list[str]) -> str:
        """The cue ("in capitals: sprayed") when the hit is a word in capitals beside another, in a sentence that
        also has words in lower case, and names writing on a wall, a sign or a placard (`inscriptions`): the
        writer copies what was written ("" when not)."""
        if not self.inscriptions or not _capitals(text[hit.start : hit.end]):
            return ""
        words = re.findall(r"\w+", text[left:right])
        if not any(w.islower() for w in words):
            return ""  # a sentence all in capitals is how its writer types, not a copy of a sign
        beside = re.findall(r"\w+", text[max(left, hit.start - 30) : hit.start])[-1:]
        beside += re.findall(r"\w+", text[hit.end : min(right, hit.end + 30)])[:1]
        if not any(_capitals(w) for w in beside):
            return ""
        found = self.inscriptions.find(sentence)
        return f"in capitals: {found}" if found else ""

    def _quoted_post(self, text: str, post: tuple[int, int, str]) -> UseReading:
        """Another user's post quoted in a reply is quoted, whatever its own words say, unless the reply after it
        agrees: it opens with one of `replies.agree` ("This.", "Exactly,") or holds an endorsement (`after.attack`)
        or the writer's stance in its first two sentences."""
        assert self.replies is not None
        _, end, cue = post
        reply = text[end : end + CONTEXT].lstrip(" \t\r\n\"”»“’'.!?…")
        agree = self.replies.agreeing(reply)
        if not agree:
            first = _sentence_end(reply, 0)
            words = _words(reply[: _sentence_end(reply, first + 1)])
            agree = self._endorsements.find(words) or self.stance.find(words)
        return UseReading("attack", agree) if agree else UseReading("quoted", cue)

    def _mention_cue_near(
        self, text: str, hit: Hit, quotation: tuple[int, int], after_cues: list[tuple[int, _Cue]]
    ) -> bool:
        """Whether a mention cue reaches the hit from inside its quotation ('"don't call me a ...", I told him') or
        after it ('"..." is a word we should drop'); a verb that introduces the quotation ("I shouted") does not
        count: it is what makes the words the writer's own."""
        inside_before = _words(text[quotation[0] + 1 : hit.start])
        cues = [c for _, c in self._cues_before(inside_before)] + [c for _, c in after_cues]
        return any(c.kind != "attack" for c in cues)

    def _own_quotation(self, text: str, quotation: tuple[int, int], nearest: _Cue | None) -> str:
        """The phrase that makes a quotation the writer's own words: one of `own_words` in its sentence outside the
        marks, unless the nearest cue is another's mention cue ('my post about the man who called me a "..."'); an
        endorsement (`after.attack`) after the closing mark in the same sentence; or one of `stance` there or in the
        next sentence ("" when none)."""
        if not self.own_words and not self.stance:
            return ""
        opening, closing = quotation
        start, end = _sentence_start(text, opening), _sentence_end(text, closing + 1)
        outside = _words(text[start:opening]) + _words(text[closing + 1 : end])
        own = self.own_words.find(outside)
        if own and _someone_elses(nearest, own):
            own = ""
        own = own or self._endorsements.find(_words(text[closing + 1 : end]))  # '"…", and the phone has a point.'
        if own or not self.stance:
            return own
        return self.stance.find(outside + _words(text[end : _sentence_end(text, end + 1)]))

    def _endorsed_after(self, text: str, quotation: tuple[int, int], mentioned: bool) -> str:
        """The writer agreeing with a quotation ("" when not): one of `agreement` in the sentence after its closing
        mark or the ENDORSED_SENTENCES after it ('"…". Harsh, but honestly? Watch them and tell me he's wrong.').
        When a mention cue reaches the hit (`mentioned`), an endorsement (`after.attack`) in that sentence or the
        next counts too, even after a report ('"… called them …" Spot on.'), and so does the writer's stance when
        the quotation is not the writer's own (`own_words`): 'HR's notes say I "referred to a colleague as a …".
        I'd say it again.', but not '"Stop calling people …", I wrote. I stand by it.'."""
        start, end = _sentence_start(text, quotation[0]), _sentence_end(text, quotation[1] + 1)
        sentences = [_words(text[quotation[1] + 1 : end])]
        for _ in range(ENDORSED_SENTENCES):
            sentences.append(_words(text[end : (end := _sentence_end(text, end + 1))]))
        agreed = self.agreement.find([w for words in sentences for w in words])
        if agreed or not mentioned:
            return agreed
        near = sentences[0] + sentences[1]
        agreed = self._endorsements.find(near)
        if agreed or self.own_words.find(_words(text[start : quotation[0]]) + near):
            return agreed
        return self.stance.find(near)

    # -- cues by the word next to the hit: a hit meets the few cues that could end there, not all of them ----------
    @cached_property
    def _before_by_last(self) -> dict[str, tuple[tuple[int, _Cue], ...]]:
        index: dict[str, list[tuple[int, _Cue]]] = {}
        for order, cue in enumerate(self.before):
            if WILDCARD not in cue.words:
                index.setdefault(cue.words[-1], []).append((order, cue))
        return {word: tuple(cues) for word, cues in index.items()}

    @cached_property
    def _before_wildcards(self) -> tuple[tuple[int, _Cue, re.Pattern[str], int], ...]:
        """Cues with a `*`, each as a pattern over the words before the hit joined by spaces (see _distance_before)
        and how many of the last words it can reach."""
        found = []
        for order, cue in enumerate(self.before):
            if WILDCARD in cue.words:
                reach = self.gap if cue.gap else 0
                parts = [rf"(?:\S+ ){{0,{WILDCARD_WORDS}}}" if w == WILDCARD else re.escape(w) + " " for w in cue.words]
                pattern = re.compile(r"(?:^| )" + "".join(parts) + rf"((?:\S+ ){{0,{reach}}})$")
                found.append((order, cue, pattern, len(cue.words) * (WILDCARD_WORDS + 1) + reach))
        return tuple(found)

    @cached_property
    def _after_by_first(self) -> dict[str, tuple[_Cue, ...]]:
        index: dict[str, list[_Cue]] = {}
        for cue in self.after:
            index.setdefault(cue.words[0], []).append(cue)
        return {word: tuple(cues) for word, cues in index.items()}

    @cached_property
    def _mention_phrases(self) -> _Phrases:
        return _Phrases(tuple(c.words for c in self.before if c.kind != "attack" and WILDCARD not in c.words))

    @cached_property
    def _endorsements(self) -> _Phrases:
        """The writer's endorsements (`after.attack`) looked for anywhere after a reported clause: "my grandad used to
        say that ..., and he was right"."""
        return _Phrases(tuple(c.words for c in self.after if c.kind == "attack") + self.agreement.words)

    @cached_property
    def _attack_phrases(self) -> _Phrases:
        return _Phrases(tuple(c.words for c in self.before if c.kind == "attack" and WILDCARD not in c.words))

    def _cues_before(self, words: list[str]) -> list[tuple[int, _Cue]]:
        """(distance, cue) for every `before` cue ending within its reach of the hit, in the file's order: the same
        as asking _distance_before of each cue, without visiting the cues whose last word is nowhere near."""
        found: list[tuple[int, int, _Cue]] = []  # (order, distance, cue)
        n = len(words)
        for distance in range(min(self.gap, n - 1) + 1):
            end = n - distance
            for order, cue in self._before_by_last.get(words[end - 1], ()):
                size = len(cue.words)
                if (distance == 0 or cue.gap) and end >= size and tuple(words[end - size : end]) == cue.words:
                    found.append((order, distance, cue))
        if self._before_wildcards and words:
            longest = max(size for *_, size in self._before_wildcards)
            joined = " ".join(words[-longest:]) + " "
            # a pattern spans at most its own reach of words and ends at the hit, so one tail serves every cue
            for order, cue, pattern, _ in self._before_wildcards:
                match = pattern.search(joined)
                if match is not None:
                    found.append((order, len(match.group(1).split()), cue))
        return [(distance, cue) for _, distance, cue in sorted(found, key=lambda item: (item[0], item[1]))]

    def _cues_after(self, words: list[str]) -> list[tuple[int, _Cue]]:
        found = []
        for distance in range(min(AFTER_GAP, len(words) - 1) + 1):
            for cue in self._after_by_first.get(words[distance], ()):
                if (distance == 0 or cue.gap) and tuple(words[distance : distance + len(cue.words)]) == cue.words:
                    found.append((distance, cue))
        return found

    def note(self, use: str, surface: str) -> str:
        """The sentence that tells readers which use was recognised ("" for an attack)."""
        template = self.notes.get(use, "")
        return template.format(surface=surface) if template else ""


@dataclass(frozen=True, slots=True)
class _Sources:
    """An old source named in a sentence: one of `documents`, and a year before `before_year` or one of `eras`."""

    documents: _Phrases
    eras: _Phrases
    before_year: int
    entries: tuple[tuple[str, ...], ...] = ()  # "Lot 117: ...": a catalogue entry opens the sentence
    compounds: re.Pattern[str] | None = None  # German, Dutch: a word ending in a document word ("Armenhausregister")
    pages: frozenset[str] = frozenset()  # "Page 40 says …": the sentence goes on citing the source named before it

    @classmethod
    def from_dict(cls, data: Any, where: str) -> _Sources | None:
        if data is None:
            return None
        if not isinstance(data, dict) or not isinstance(data.get("documents"), list):
            raise UseRulesError(f"{where}: sources: expected a mapping with documents, eras and before_year")
        year = data.get("before_year", 1970)
        if not isinstance(year, int) or not 1000 <= year <= 2100:
            raise UseRulesError(f"{where}: sources: before_year {year!r} is not a year from 1000 to 2100")

        def phrases(key: str) -> _Phrases:
            return _phrases(data.get(key), f"sources.{key}", where)

        documents = phrases("documents")
        compounds = None
        if _flag(data, "compounds", where):
            heads = sorted({p[0] for p in documents.words if len(p) == 1 and len(p[0]) >= COMPOUND_HEAD}, key=len)
            compounds = re.compile(r"\w{3,}(?:" + "|".join(map(re.escape, reversed(heads))) + ")")
        pages = _word_set(data.get("pages") or [], "sources.pages", where)
        return cls(documents, phrases("eras"), year, phrases("entries").words, compounds, pages)

    def cited(self, text: str, left: int, before: list[str]) -> str:
        """The source named in the sentence before the hit's when one of `pages` is among the first three words of the
        hit's sentence ("A 1936 walkers' guide to the dale. Page 40 says the … of the upper valley …"): "" when
        none."""
        # "Page 40 says …", "Auf Seite 40 rät er …", "Στη δεύτερη σελίδα …"
        page = next((w for w in before[:3] if w in self.pages), "")
        if not page or left == 0:
            return ""
        previous = text[_sentence_start(text, left - 1) : left]
        found = self.named(_words(previous), previous)
        return f"{found} … {page}" if found else ""

    def named(self, before: list[str], sentence: str) -> str:
        """The document phrase that names an old source before the hit ("" when none does)."""
        document = self.documents.find(before) or self._compound(before)
        if not document:
            return ""
        if any(int(m.group(1)) < self.before_year for m in _YEAR.finditer(sentence)):
            return document
        return document if self.eras.find(_words(sentence)) else ""

    def _compound(self, before: list[str]) -> str:
        """A compound whose last part is a one-word document of COMPOUND_HEAD letters or more ("raadsnotulen",
        "armenhausregister"), where the language writes compounds as one word ("" when none)."""
        if self.compounds is None:
            return ""
        return next((w for w in before if self.compounds.fullmatch(w)), "")

    def dated_heading(self, before: str) -> str:
        """The year of a short heading that opens the hit's sentence and ends in a colon before the hit, when it is
        before `before_year` ("Hansard, March 1904: …", "Playbill, November 1861: …"; "" when none)."""
        colon = before.find(":")
        if colon < 0 or len(_words(before[:colon])) > HEADING_WORDS:
            return ""
        year = next((m.group(1) for m in _YEAR.finditer(before, 0, colon) if int(m.group(1)) < self.before_year), "")
        return year  # the readers' note names it: "… a historical or catalogue use (1904)"

    def entry(self, before: list[str]) -> str:
        """The catalogue entry ("lot 117") that opens the hit's sentence: a phrase of `entries`, then a number."""
        for phrase in self.entries:
            size = len(phrase)
            if tuple(before[:size]) == phrase and len(before) > size and before[size].isdigit():
                return f"{' '.join(phrase)} {before[size]}"
        return ""


@dataclass(frozen=True, slots=True)
class _GroupNames:
    """A hit spelt with a capital its vocabulary term does not have, inside a sentence neither in title case nor in
    all caps, names a club, a team or an event ("the Raging Fruitcakes beat Leeds", "Radtreff Alte Säcke"): a name
    the group gave itself. A capital says nothing at a sentence's start, in a heading's style or one too short to
    judge ("The Junkie": engine.text.names.plain_case), on a term the vocabulary writes with one (German nouns,
    "Kraut") or on a term of the `conventional` categories, whose words take a capital in ordinary writing ("the
    Polacks", "Christ killers", "a Nazi"). A team word right after the hit ("United", "FC") makes it a team's name
    wherever it stands ("Polentoni United", engine.text.names.team_word)."""

    conventional: frozenset[str]

    @classmethod
    def from_dict(cls, data: Any, where: str) -> _GroupNames | None:
        if data is None:
            return None
        if not isinstance(data, dict) or set(data) - {"conventional"}:
            raise UseRulesError(f"{where}: group_names: expected a mapping with the list conventional")
        listed = _texts(data.get("conventional") or [], "group_names.conventional", where)
        conventional = frozenset(category.strip() for category in listed)
        unknown = sorted(conventional - set(CATEGORIES))
        if unknown:
            named = f"{where}: group_names.conventional: {', '.join(unknown)}"
            raise UseRulesError(f"{named} not known; accepted: {', '.join(CATEGORIES)}")
        return cls(conventional)

    def named(self, sentence: str, hit: Hit, offset: int, language: str) -> bool:
        """Whether `hit` (in `sentence`, which starts at `offset` in the text) is capitalized as a name."""
        surface = hit.surface
        if not surface[:1].isupper() or _capitals(surface) or hit.term.literal[:1].isupper():
            return False
        tokens = _TOKENIZER.tokenize(sentence)
        start, end = hit.start - offset, hit.end - offset
        inside = [n for n, token in enumerate(tokens) if token.start >= start and token.end <= end]
        if not inside or tokens[inside[0]].start != start:
            return False
        first, last = inside[0], inside[-1]
        if last + 1 < len(tokens) and team_word(tokens[last + 1]):
            # "Polentoni United", "Lezzies United, Thursday five-a-side": a team's name, wherever it stands; but "No
            # Benders FC" names a team against the group
            return first == 0 or tokens[first - 1].text.lower() not in _AGAINST
        if self.conventional.intersection(hit.issue.categories):
            return False
        return not sentence_initial(sentence, tokens, first) and plain_case(sentence, tokens, first, last, language)


@dataclass(frozen=True, slots=True)
class _SelfReference:
    """ "As X, we ...": one of `as` right before the hit, one of `first_person` in the rest of its clause. And
    `opening`: a post (or a line) that opens with the hit and at once says the writer's age, place or "here" ("Old
    crone here, …", "Ouwe homo, 58, Zwolle")."""

    markers: tuple[tuple[str, ...], ...]
    pronouns: frozenset[str]
    words: int  # the pronoun comes within this many words of the hit
    here: tuple[tuple[str, ...], ...] = ()  # "here": right after the hit's words, closing its clause
    ages: tuple[tuple[str, ...], ...] = ()  # "since #", "of # years": "#" a number, within OPENING_WORDS of the hit
    signs: tuple[tuple[str, ...], ...] = ()  # "says goodbye", "asks kindly": the writer signing, within OPENING_WORDS
    aside: _Phrases = _Phrases()  # the writer in a parenthesis right after the hit: "(hi, it's me and Marcus)"
    introductions: tuple[tuple[str, ...], ...] = ()  # "I'm", "ich bin": then a name, and the hit among its appositions
    links: frozenset[str] = frozenset()  # what may follow the hit in an introduction: "of" ("resident … of the lab")
    writer: frozenset[str] = frozenset()  # a signed opening needs one of these in the post ("I", "my"), when listed
    others: frozenset[str] = frozenset()  # "he", "him": a profile opening with a full name speaks of no one else
    titles: tuple[tuple[str, ...], ...] = ()  # "diary of a": a title naming the writer, then a colon and the writer
    greetings: tuple[tuple[str, ...], ...] = ()  # "hi!", "profile:": before a name, when the writer's age follows
    was_me: tuple[tuple[str, ...], ...] = ()  # "… ero io": the sentence the hit opens says it was the writer
    who: frozenset[str] = frozenset()  # "che", "who": the relative pronoun right after the hit in such a sentence
    # "Οι … της γειτονιάς πήγαμε", "os … da AE estamos": the hit as the subject of a verb in the first person plural
    we_subjects: frozenset[str] = frozenset()  # right before the hit: "οι", "os", "noi"
    we_endings: tuple[str, ...] = ()  # a verb's ending in the first person plural: "με", "amos", "iamo"
    we_objects: frozenset[str] = frozenset()  # an object pronoun before that verb makes the hit its object: "τους"
    longest_title: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "longest_title", max((len(t) for t in self.titles), default=0))

    @classmethod
    def from_dict(cls, data: Any, where: str) -> _SelfReference | None:
        if data is None:
            return None
        kinds = ("opening", "aside", "introductions", "greetings", "was_me", "we_verbs")
        if not isinstance(data, dict) or (
            not (data.get("as") and data.get("first_person")) and not data.keys() & set(kinds)
        ):
            raise UseRulesError(
                f"{where}: self_reference: expected a mapping with the lists as and first_person, "
                f"or one of {', '.join(kinds)}"
            )
        markers = tuple(tuple(_words(p)) for p in _texts(data.get("as") or [], "self_reference.as", where))
        pronouns = _word_set(data.get("first_person") or [], "self_reference.first_person", where)
        if any(not m for m in markers) or bool(markers) != bool(pronouns):
            raise UseRulesError(f"{where}: self_reference: a phrase has no word")
        opening = data.get("opening")
        if opening is not None and (
            not isinstance(opening, dict)
            or not (opening.get("here") or opening.get("ages") or opening.get("signs") or opening.get("titles"))
        ):
            raise UseRulesError(
                f"{where}: self_reference.opening: expected a mapping with the lists here, ages, signs or titles"
            )
        opening = opening or {}
        here = _phrases(opening.get("here"), "self_reference.opening.here", where).words
        ages = tuple(
            tuple(w for part in p.split() for w in ([NUMBER] if part == NUMBER else _words(part)))
            for p in _texts(opening.get("ages") or [], "self_reference.opening.ages", where)
        )
        if any(not a or NUMBER not in a for a in ages):
            raise UseRulesError(f"{where}: self_reference.opening.ages: each phrase needs the number mark {NUMBER}")
        signs = _phrases(opening.get("signs"), "self_reference.opening.signs", where).words
        words = _number(data, "words", 2, (1, 8), f"{where}: self_reference")
        aside = _phrases(data.get("aside"), "self_reference.aside", where)
        introductions = _phrases(data.get("introductions"), "self_reference.introductions", where).words
        links = _word_set(data.get("links") or [], "self_reference.links", where)
        writer = _word_set(opening.get("writer") or [], "self_reference.opening.writer", where)
        others = _word_set(opening.get("others") or [], "self_reference.opening.others", where)
        titles = _phrases(opening.get("titles"), "self_reference.opening.titles", where).words
        if titles and not writer:
            raise UseRulesError(f"{where}: self_reference.opening.titles: needs the list writer (who the title names)")
        greetings = _phrases(data.get("greetings"), "self_reference.greetings", where).words
        owned = data.get("was_me") or {}
        if not isinstance(owned, dict) or bool(owned) != bool(owned.get("end") and owned.get("who")):
            raise UseRulesError(f"{where}: self_reference.was_me: expected a mapping with the lists who and end")
        was_me = _phrases(owned.get("end"), "self_reference.was_me.end", where).words
        who = _word_set(owned.get("who") or [], "self_reference.was_me.who", where)
        we = data.get("we_verbs") or {}
        if not isinstance(we, dict) or bool(we) != bool(we.get("subjects") and we.get("endings")):
            raise UseRulesError(
                f"{where}: self_reference.we_verbs: expected a mapping with the lists subjects and endings"
            )
        we_endings = tuple(fold(e) for e in _texts(we.get("endings") or [], "self_reference.we_verbs.endings", where))
        return cls(
            markers,
            pronouns,
            words,
            here=here,
            ages=ages,
            signs=signs,
            aside=aside,
            introductions=introductions,
            links=links,
            writer=writer,
            others=others,
            titles=titles,
            greetings=greetings,
            was_me=was_me,
            who=who,
            we_subjects=_word_set(we.get("subjects") or [], "self_reference.we_verbs.subjects", where),
            we_endings=we_endings,
            we_objects=_word_set(we.get("objects") or [], "self_reference.we_verbs.objects", where),
        )

    def introduced(self, text: str, left: int, hit: Hit) -> str:
        """The cue ("introduction: I'm Priya, …") when the hit is among the appositions of the writer introducing
        themselves: one of `introductions`, a capitalized name, up to ASIDE_PARTS short parts set off by commas,
        and the hit (with at most one word before it) in the last, which ends after it or goes on with one of
        `links`: "hi, I'm Priya, second year, resident … of the maths building" ("I'm Dave, 45, and … disgust me"
        is no apposition). One of `greetings` serves instead when a part between the name and the hit has a number,
        the writer's age ("hi! Mei, 24, total …"; not "Hi Tom, you …"); before a name that opens its sentence, the
        words before the sentence on its line count ("hi! Mei, …")."""
        if not (self.introductions or self.greetings):
            return ""
        parts = text[left : hit.start].split(",")
        if len(_words(parts[-1])) > 1:
            return ""
        following = text[hit.end : hit.end + 40]
        if following.strip()[:1].isalnum() and (_words(following)[:1] or [""])[0] not in self.links:
            return ""
        for at in range(len(parts) - 2, max(-1, len(parts) - 3 - ASIDE_PARTS), -1):
            raw = parts[at].split()
            if not raw or not raw[-1][:1].isupper():
                if len(_words(parts[at])) > ASIDE_WORDS:
                    return ""
                continue
            names = raw[:-1]
            while len(names) >= 2 and names[-1].lower() in _AND and names[-2][:1].isupper():
                names = names[:-2]  # "we're Sam and Jo": the names given together
            opening = " ".join(names)
            if at == 0 and not names:  # the name opens its sentence: "hi! Mei, 24, …"
                opening = text[(text.rfind("\n", max(0, left - CONTEXT), left) + 1) or max(0, left - CONTEXT) : left]
                opening = opening if len(_words(opening)) <= 3 else ""
            words = _words(opening)
            heading = opening.rstrip().endswith(":")  # "Profile on Neighbours: Ornella, 58, …" heads a profile
            if heading:
                words = _words(opening.rsplit(":", 1)[0])[:3]
            # a greeting needs the writer's age, and outside a profile's heading the writer in the rest of the post
            # ("Hallo! Peter, 45, typischer … aus Neukölln, klaut alles" describes someone else)
            aged = any(c.isdigit() for part in parts[at + 1 : -1] for c in part) and (
                heading or not self.writer or not self.writer.isdisjoint(_words(text[hit.end : hit.end + CONTEXT]))
            )
            greetings = self.greetings if aged else ()
            if aged and not heading and at == 0 and 2 <= len(raw) <= 3 and _opens_line(text, left) and self.writer:
                # a profile that opens with the writer's full name: the word alone in its part, and no one else
                # spoken of in the rest ("Kees Dekker, 61, …, woont naast me en ik wil hem weg" is no profile)
                alone = not _words(parts[-1])
                if alone and all(w[:1].isupper() for w in raw) and self.others.isdisjoint(_words(text[hit.end :])):
                    return f"introduction: {parts[0].strip()}, …"  # "Mia Kowalczyk, 29, … mit Lastenrad, …"
            for phrase in greetings if heading else self.introductions + greetings:
                if _heads(words, phrase) if heading else tuple(words[-len(phrase) :]) == phrase:
                    said = f"{opening.strip()} {raw[-1]}" if not names or heading else parts[at].strip()
                    return f"introduction: {said}, …"  # the writer's own words: "I'm Priya, …"
        return ""

    def we_subject(self, before: list[str], clause: list[str]) -> str:
        """The verb ("πηγαμε", folded) when one of `we_subjects` stands right before the hit and, within WE_WORDS words
        of the rest of its clause (`clause`), a word ends as a verb in the first person plural, with no "and" or
        object pronoun before it ("Οι … της γειτονιάς πήγαμε όλες μαζί", "os … da AE estamos à porta"; not "τους … τους
        διώξαμε", "vi os … e fomos embora")."""
        if not self.we_endings or not before or before[-1] not in self.we_subjects:
            return ""
        for word in clause[:WE_WORDS]:
            if word in _AND or word in self.we_objects:
                return ""
            if len(word) >= 5 and word.endswith(self.we_endings):
                return word
        return ""

    def aside_of(self, text: str, hit: Hit, right: int) -> str:
        """The cue ("aside: it's me and Marcus") when a parenthesis of at most ASIDE_WORDS words opens within
        ASIDE_WORDS words after the hit, in its sentence, and holds one of `aside`: the writer is one of those named
        ("the two old queens of the returns desk (hi, it's me and Marcus)"; not "(I saw them myself)")."""
        if not self.aside:
            return ""
        opening = text.find("(", hit.end, right)
        closing = text.find(")", opening + 1, opening + 120) if opening >= 0 else -1
        if closing < 0 or len(_words(text[hit.end : opening])) > ASIDE_WORDS:
            return ""
        inside = _words(text[opening + 1 : closing])
        if len(inside) == 1:  # a one-word phrase of `aside` counts alone in its parenthesis: "(me)", "(io)"
            mine = inside[0] if (inside[0],) in self.aside.words else ""
        else:
            mine = self.aside.find(inside) if len(inside) <= ASIDE_WORDS else ""
            mine = mine if " " in mine else ""  # a lone pronoun among other words identifies no one: "(I saw it)"
        return f"aside: {text[opening + 1 : closing].strip()}" if mine else ""  # as written: "yes, that's me …"

    def owned(self, rest: str, before: list[str], after: list[str]) -> str:
        """The cue ("… ero io", as `rest`, the sentence after the hit, writes it) when the hit opens its sentence (at
        most two words before it), one of `who` follows it and the sentence ends with one of `was_me`: "Il … che ti
        ha prestato l'ombrello domenica ero io." ("The … stole the bike, and the one who called the police was me" and
        "… wasn't me" are no such sentences)."""
        if len(before) > 2 or not after or after[0] not in self.who:
            return ""
        said = next((p for p in self.was_me if tuple(after[-len(p) :]) == p), None)
        return f"… {_as_written(rest, ' '.join(said))}" if said else ""  # as written: "… ήμουν εγώ"

    def _titled(self, text: str, hit: Hit, left: int, before: list[str]) -> str:
        """The cue ("title: diary of a …") when the post or a line opens with one of `titles` right before the hit
        (one word may stand between), and the title ends at a colon on its line after which the writer speaks first
        ("Confessions of a …, year six in Perth: I have finally …"; not "Diary of a …: he cried all day")."""
        if not self.titles or len(before) > self.longest_title + 1 or not _opens_line(text, left):
            return ""
        for title in self.titles:
            size = len(title)
            if size <= len(before) <= size + 1 and tuple(before[:size]) == title:
                break
        else:
            return ""
        line_end = _line_end(text, hit.end)
        colon = text.find(":", hit.end, min(line_end, hit.end + HEADER_CHARS))
        following = _words(text[colon + 1 : colon + 40])[:1] if colon >= 0 else []
        if not following or following[0] not in self.writer:
            return ""
        return f"title: {_as_written(text[left : hit.start], ' '.join(title))} …"  # as written: "Confessions of a"

    def marker(self, before: list[str], clause: list[str]) -> str:
        """The cue ("as … we") when the hit follows a marker and its clause has a first-person pronoun."""
        said = next((m for m in self.markers if tuple(before[-len(m) :]) == m), None)
        pronoun = next((w for w in clause if w in self.pronouns), None)
        return f"{' '.join(said)} … {pronoun}" if said and pronoun else ""

    def opening(self, text: str, hit: Hit, left: int, right: int, before: list[str], after: list[str]) -> str:
        """The cue ("opens the post: … here") when the hit opens the post or one of its lines (at most two words
        before it in that sentence: `before`) and is followed by `here` closing its clause, by an age set off by
        commas ("…, 58,"), or within OPENING_WORDS words of `after` by a phrase of `ages` ("since 2009") or of
        `signs` ("The old crone from accounts says goodbye: …")."""
        if not (self.here or self.ages or self.signs or self.titles):
            return ""
        titled = self._titled(text, hit, left, before)
        if titled:
            return titled
        # the hit opens its sentence, or follows a short heading on its line ("Notice for the warehouse: …")
        colon = text.rfind(":", left, hit.start)
        if len(before) > 2 and (colon < 0 or len(_words(text[colon : hit.start])) > 2 or len(before) > HEADING_WORDS):
            return ""
        if not _opens_line(text, left):
            return ""  # the sentence does not open the post or a line
        following = text[hit.end : right]
        age = _AGE.match(following)
        if age:
            return f"opens the post: … {age.group(1)}"
        near = after[:OPENING_WORDS]
        numbered = f" {' '.join(NUMBER if w.isdigit() else w for w in near)} "
        for phrase in self.ages:
            if f" {' '.join(phrase)} " in numbered:
                return "opens the post: … " + " ".join(phrase)
        signed = next((p for p in self.signs if f" {' '.join(p)} " in numbered), None)
        # a signature needs the writer in the post: "… says goodbye: after thirty years I …"
        if signed is not None and (
            not self.writer or not self.writer.isdisjoint(_words(text[hit.end : hit.end + CONTEXT]))
        ):
            return "opens the post: … " + " ".join(signed)
        if not any(phrase[-1] in near for phrase in self.here):
            return ""
        clause = _words(re.split(r"[,.:;!?]", following, maxsplit=1)[0])
        for phrase in self.here:
            if len(clause) <= OPENING_WORDS and tuple(clause[-len(phrase) :]) == phrase:
                return "opens the post: … " + " ".join(phrase)
        return ""


@dataclass(frozen=True, slots=True)
class _Speech:
    """Indirect speech: one of `verbs` (another speaker's), then within `reach` words one of `that`."""

    verbs: Mapping[str, tuple[tuple[str, ...], ...]]  # by their last word: a position meets only the verbs ending there
    that: frozenset[str]
    writer: frozenset[str]
    reach: int
    naming: Mapping[str, tuple[tuple[str, ...], ...]] = field(default_factory=dict)  # "called", "dà del": by last word
    subjects: frozenset[str] = frozenset()  # a report's subject right after its verb, with no "that" ("said the …")
    me: frozenset[str] = frozenset()  # the writer named by a naming verb ("nennt mich"): its reach is the clause
    stop: tuple[tuple[str, ...], ...] = ()  # "stop", "arrêter d": before or opening a naming verb, a request to stop
    endorsing: tuple[tuple[str, ...], ...] = ()  # "as", "comme": opening a clause of saying, the writer endorses it

    @classmethod
    def from_dict(cls, data: Any, where: str) -> _Speech | None:
        if data is None:
            return None
        if not isinstance(data, dict) or not data.get("verbs") or not data.get("that"):
            raise UseRulesError(f"{where}: speech: expected a mapping with the lists verbs, that and writer")
        that = _word_set(data["that"], "speech.that", where)
        if not that:
            raise UseRulesError(f"{where}: speech: that has no word")
        return cls(
            _by_last(_phrases(data["verbs"], "speech.verbs", where)),
            that,
            _word_set(data.get("writer") or [], "speech.writer", where),
            _number(data, "reach", 5, (0, 8), f"{where}: speech"),
            _by_last(_phrases(data.get("naming") or [], "speech.naming", where)),
            _word_set(data.get("subjects") or [], "speech.subjects", where),
            _word_set(data.get("me") or [], "speech.me", where),
            _phrases(data.get("stop") or [], "speech.stop", where).words,
            _phrases(data.get("endorsing") or [], "speech.endorsing", where).words,
        )

    def find(self, before: list[str]) -> str:
        return self.find_at(before)[0]

    def find_at(self, before: list[str]) -> tuple[str, int]:
        """The cue ("told … that") and the position of its `that` in `before` (("", -1) if none) when the nearest
        reported clause before the hit was said by someone else: no `writer` pronoun within three words before its
        verb or between the verb and `that`. A clause with no `that` counts when one of `subjects` follows the verb,
        or the verb and the one told ("told Jan he …"), and more than SUBJECT_WORDS words come between it and the
        hit ("said the author is only here because she's a …")."""
        for at in range(len(before), 0, -1):
            if at < len(before) and before[at] in self.that:
                first = max(0, at - self.reach - 1)
            elif at < len(before) and before[at] in self.subjects and len(before) - at > SUBJECT_WORDS:
                first = at - 2  # the verb right before the subject, or before the one told ("told Jan he …")
            elif at >= 2 and before[at - 1] in self.me and (at == len(before) or before[at] not in self.writer):
                first = at - 3  # the verb, then the writer told: "spent the ride telling me Leicester had …"
            else:
                continue
            for end in range(at, first, -1):
                verb = _ending(self.verbs, before, end)
                if verb is not None:
                    start = end - len(verb)
                    if not self.writer.isdisjoint(before[max(0, start - 3) : start] + before[end:at]):
                        return "", -1  # the writer's own claim: "I told him that ...", "diz-se que ..."
                    return f"{' '.join(verb)} … {before[at] if at < len(before) else ''}".rstrip(" …"), at
        return "", -1

    def object_of(self, before: list[str]) -> str:
        """The verb ("sagt", "typing") when it stands right before the hit: the word itself is what someone else said or
        typed ("sagt … gerade so laut, dass der es hört", "anyone typing … at Jess"); "" when a `writer` pronoun stands
        within three words before it ("I said …")."""
        verb = _ending(self.verbs, before, len(before))
        if verb is None:
            return ""
        start = len(before) - len(verb)
        return "" if not self.writer.isdisjoint(before[max(0, start - 3) : start]) else " ".join(verb)

    def before_comma(self, before: list[str], commas: Sequence[int], tags: Container[int] = ()) -> str:
        """The verb ("erzählt", "gli ha detto") when what the hit's sentence says after a comma is someone else's
        words: the words before one of `commas` (positions in `before`) end with one of `verbs`, or with a verb and
        one of `me` ("hat mir erzählt, in Neukölln würden …", "perché, gli ha detto, i …"). Not when a `writer`
        pronoun stands in the verb's clause ("die heb ik op de clubavond verteld, …"), nor after a quotation's tag
        (`tags`: commas right after a closing quotation mark: '« … », qu'elle a dit, la …' names the speaker); one of
        `endorsing` opening the clause makes it the writer's ("as my grandad said, …": the cue of an attack,
        returned as "!as … said")."""
        for n in range(len(commas) - 1, -1, -1):
            at, opening = commas[n], commas[n - 1] if n else 0
            if len(before) - at > COMMA_REACH:
                return ""  # "Gematcht, eine Woche geschrieben, und kaum hatte ich erwähnt, dass …" is no report
            for end in (at, at - 1):
                verb = _ending(self.verbs, before, end, opening) if end == at or before[end] in self.me else None
                if verb is None:
                    continue
                if not self.writer.isdisjoint(before[opening:at]) or (n and opening in tags):
                    return ""
                if any(tuple(before[opening : opening + len(e)]) == e for e in self.endorsing):
                    return f"!{' '.join(before[opening:end])}"
                return " ".join(before[end - len(verb) : at])
        return ""

    def named(self, clause: list[str]) -> str:
        """The verb ("called", "dà del") when someone else names people with the hit: one of `naming` ending within
        NAMING_WORDS words before the hit in its clause (anywhere in it when one of `me` stands within three words after
        the verb: "noemt mijn teamleider mij … de ouwe taart"), with no `writer` pronoun from three words before the
        verb to the word after it ("I call them ...", "wie nennt man ..."), unless one of `stop` comes right before the
        verb or opens it ("can we stop calling …", "on peut arrêter d'appeler …"): "" if none."""
        n = len(clause)
        for end in range(n, 0, -1):
            verb = _ending(self.naming, clause, end)
            if verb is None:
                continue
            if n - end > NAMING_WORDS and self.me.isdisjoint(clause[end : end + 3]):
                continue  # far from the hit, unless the writer is the one named ("nennt mich …")
            start = end - len(verb)
            if any(verb[: len(s)] == s or tuple(clause[max(0, start - len(s)) : start]) == s for s in self.stop):
                return " ".join(verb)  # "can we stop calling the … the …": the writer's request is no naming
            if not self.writer.isdisjoint(clause[max(0, start - 3) : start] + clause[end : end + 1]):
                return ""
            return " ".join(verb)
        return ""


@dataclass(frozen=True)
class _Replies:
    """Another user's post quoted in a reply: lines opening with ">", a [quote]…[/quote] block, or the line after
    (or the sentence after, on the same line) a header that opens with one of `quoting` ("Quote from Dave:") or
    ends in one of `wrote` before its colon ("Dave wrote:"), when no `speech.writer` pronoun stands in it ("I
    wrote:" brings the writer's own words)."""

    wrote: _Phrases
    quoting: _Phrases
    agree: frozenset[str]  # folded, one space between words: "this", "+1", "100%"
    writer: frozenset[str]

    @classmethod
    def from_dict(cls, data: Any, where: str, writer: frozenset[str]) -> _Replies | None:
        if data is None:
            return None
        if not isinstance(data, dict) or not data.get("wrote"):
            raise UseRulesError(f"{where}: replies: expected a mapping with the lists wrote, quoting and agree")
        agree = data.get("agree") or []
        _phrases(agree, "replies.agree", where)  # refuses a phrase without a word; the phrases keep their signs
        return cls(
            _phrases(data["wrote"], "replies.wrote", where),
            _phrases(data.get("quoting") or [], "replies.quoting", where),
            frozenset(_clause(phrase) for phrase in _texts(agree, "replies.agree", where)),
            writer,
        )

    def quoted_post(self, text: str, at: int) -> tuple[int, int, str] | None:
        """The start and end of the quoted post around offset `at`, and its cue (None when `at` is in no post)."""
        line = text.rfind("\n", 0, at) + 1
        line_end = _line_end(text, at)
        if _opens_with_mark(text, line, at):
            end = line_end
            while end < len(text) and _opens_with_mark(text, end + 1, len(text)):
                end = _line_end(text, end + 1)
            return line, end, QUOTED_POST
        floor = max(0, at - 20 * CONTEXT)  # a quoted post is long at most; most texts hold no "[" at all
        if text.rfind("[", floor, at) >= 0:
            lower = text[floor:at].lower()
            opening = lower.rfind("[quote")
            if opening >= 0 and "[/quote]" not in lower[opening:]:
                close = _QUOTE_CLOSE.search(text, at)
                return floor + opening, len(text) if close is None else close.end(), QUOTED_POST
        colon = text.rfind(":", line, min(at, line + HEADER_CHARS))  # a header opens its line and is short
        if colon >= 0 and self._header(text[line:colon]):  # "Dave wrote: ..." on the hit's own line
            return colon + 1, _sentence_end(text, at), f"{text[line:colon].strip()}:"
        if line >= 1:
            above = max(text.rfind("\n", 0, line - 1) + 1, line - 1 - HEADER_CHARS)
            header = text[above : line - 1].strip()
            if header.endswith(":") and self._header(header[:-1]):  # the header on the line above
                return line, line_end, header
        return None

    def agreeing(self, reply: str) -> str:
        """The `agree` phrase that makes up the reply's first clause ("This.", "Exactly, ...", "+1, and ..."), or
        ""; signs count ("+1" is no "1." opening a list)."""
        clause = _clause(re.split(r"[.,!?;:\n…]", reply, maxsplit=1)[0])
        return clause if clause in self.agree else ""

    def _header(self, header: str) -> bool:
        words = _words(header)
        if not words or len(words) > HEADER_WORDS or not self.writer.isdisjoint(words):
            return False
        return any(tuple(words[-len(p) :]) == p for p in self.wrote.words) or any(
            tuple(words[: len(p)]) == p for p in self.quoting.words
        )


def _clause(text: str) -> str:
    """A reply's first clause as `replies.agree` lists it: folded, apostrophes as spaces, one space between words."""
    return " ".join(fold(text).replace("'", " ").split())


def _opens_with_mark(text: str, line: int, stop: int) -> bool:
    """Whether the line starting at `line` opens with ">" (after spaces), looked for before `stop`."""
    while line < stop and text[line] in " \t":
        line += 1
    return line < stop and text[line] == ">"


def _opens_line(text: str, at: int) -> bool:
    """Whether only spaces or tabs stand between offset `at` and the start of its line (or of the text)."""
    start = at
    while start > 0 and text[start - 1] in " \t":
        start -= 1
    return start == 0 or text[start - 1] == "\n"


def _line_end(text: str, at: int) -> int:
    newline = text.find("\n", at)
    return len(text) if newline < 0 else newline


def _by_last(phrases: _Phrases) -> dict[str, tuple[tuple[str, ...], ...]]:
    found: dict[str, list[tuple[str, ...]]] = {}
    for phrase in phrases.words:
        found.setdefault(phrase[-1], []).append(phrase)
    return {last: tuple(group) for last, group in found.items()}


def _phrases(value: Any, key: str, where: str, wildcards: bool = False) -> _Phrases:
    if value is None:
        return _Phrases()
    found = tuple(tuple(_words(p, cue=wildcards)) for p in _texts(value, key, where))
    if any(not words or set(words) == {WILDCARD} for words in found):
        raise UseRulesError(f"{where}: {key}: a phrase has no word")
    return _Phrases(found)


def _word_set(value: Any, key: str, where: str) -> frozenset[str]:
    """Every word of a list of phrases, as one set (pronouns, conjunctions)."""
    return frozenset(word for phrase in _texts(value, key, where) for word in _words(phrase))


def _number(data: Mapping[str, Any], key: str, default: int, bounds: tuple[int, int], where: str) -> int:
    """A count of words in a rule file, refused with the accepted range when it is not one."""
    value = data.get(key, default)
    low, high = bounds
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise UseRulesError(f"{where}: {key} {value!r} is not a number of words from {low} to {high}")
    return int(value)


def _texts(value: Any, key: str, where: str) -> list[str]:
    """The phrases of a list, refusing what YAML did not read as text: unquoted on, off, yes and no are booleans."""
    if not isinstance(value, list):
        raise UseRulesError(f"{where}: {key}: expected a list of phrases")
    for item in value:
        if isinstance(item, bool):
            raise UseRulesError(f"{where}: {key}: {item!r} is not a phrase (quote on, off, yes and no)")
    return [str(item) for item in value]


def _capitals(word: str) -> bool:
    """A word written in capitals: two characters or more, no lower-case letter ("NO", not "A")."""
    return len(word) > 1 and word.isupper()


def _flag(data: Mapping[str, Any], key: str, where: str) -> bool:
    value = data.get(key, False)
    if not isinstance(value, bool):
        raise UseRulesError(f"{where}: {key}: {value!r} is not true or false")
    return value


def _vocative(text: str, hit: Hit, quotation: tuple[int, int]) -> bool:
    """A quotation that holds the hit alone, set off by commas like a name one calls someone by: after a comma, and
    before a comma or the sentence's end ('Nice try, "X".'). A list of quoted words ('"X", "Y", "Z"') is none."""
    opening, closing = quotation
    if text[opening + 1 : closing].strip().rstrip("!?.,").strip() != text[hit.start : hit.end]:
        return False
    left, right = text[max(0, opening - 20) : opening].rstrip(), text[closing + 1 : closing + 20].lstrip()
    if not left.endswith(",") or left[:-1].rstrip()[-1:] in _CLOSING_MARKS:
        return False
    if right[:1] == ",":
        return right[1:].lstrip()[:1] not in _CLOSING_MARKS | {"«", "„", "‘"}
    return right[:1] in {"", ".", "!", "?", "\n"}


def _someone_elses(cue: _Cue | None, own: str) -> bool:
    """Whether a mention cue outside the writer's own phrase reports the quotation: 'My post about the man who
    called me a "..."' is the writer reporting another's word, but in 'I shouted "..."' the cue is the writer's."""
    return cue is not None and cue.kind != "attack" and f" {' '.join(cue.words)} " not in f" {own} "


def _attack_cues(phrases: Sequence[Any], where: str) -> tuple[_Cue, ...]:
    cues = []
    for phrase in phrases:
        text = str(phrase).strip()
        words = tuple(_words(text.removeprefix(SENTENCE_START)))
        if not words:
            raise UseRulesError(f"{where}: attack_before_quote: the cue {phrase!r} has no word")
        cues.append(_Cue(words, "attack", False, text, first=text.startswith(SENTENCE_START)))
    return tuple(cues)


def _distance_before(words: list[str], cue: _Cue, gap: int) -> int | None:
    """How many words lie between the cue and the hit, when the cue ends within reach of it. A `*` inside a cue
    stands for up to WILDCARD_WORDS words ("called * a": "called my little sister a")."""
    reach = gap if cue.gap else 0
    if WILDCARD not in cue.words:
        size = len(cue.words)
        for distance in range(0, reach + 1):
            end = len(words) - distance
            if end - size < 0:
                return None
            if tuple(words[end - size : end]) == cue.words:
                return distance
        return None
    parts = [rf"(?:\S+ ){{0,{WILDCARD_WORDS}}}" if w == WILDCARD else re.escape(w) + " " for w in cue.words]
    tail = words[-(len(cue.words) * (WILDCARD_WORDS + 1) + reach) :]
    found = re.search(r"(?:^| )" + "".join(parts) + rf"((?:\S+ ){{0,{reach}}})$", " ".join(tail) + " ")
    return None if found is None else len(found.group(1).split())


def _sentence_start(text: str, at: int, quotes: bool = False) -> int:
    """Where the sentence holding offset `at` starts, at most CONTEXT characters back (a long text costs the same
    per hit as a short one); for quotes, the paragraph's start, since a quotation may span sentence ends."""
    floor = max(0, at - CONTEXT)
    if quotes:
        newline = text.rfind("\n", floor, at)
        return newline + 1 if newline >= 0 else floor
    start = floor
    for end in _SENTENCE_END.finditer(text, floor, at):
        start = end.end()
    return start


def _sentence_end(text: str, at: int) -> int:
    ceiling = min(len(text), at + CONTEXT)
    found = _SENTENCE_END.search(text, at, ceiling)
    return found.start() if found else ceiling


def _closing(text: str, closing: str, start: int, stop: int) -> int | None:
    """The first closing mark in text[start:stop] within the paragraph and CONTEXT characters (an apostrophe
    inside a word does not close)."""
    stop = min(stop, start + CONTEXT)
    newline = text.find("\n", start, stop)
    stop = stop if newline < 0 else newline
    at = text.find(closing, start, stop)
    while at >= 0:
        if closing in _APOSTROPHE_MARKS and at + 1 < len(text) and text[at + 1].isalnum():
            at = text.find(closing, at + 1, stop)
            continue
        return at
    return None


def _inside_pair(text: str, mark: str, left: int, at: int) -> bool:
    """For a mark that both opens and closes ("): the marks before `at` in the paragraph pair up."""
    count = 0
    position = text.find(mark, left, at)
    while position >= 0:
        if not (mark in _APOSTROPHE_MARKS and position > 0 and text[position - 1].isalnum()):
            count += 1
        position = text.find(mark, position + 1, at)
    return count % 2 == 0


class UseSource(Protocol):
    """A second reading after the rules (engine.use_model.LearnedUses): given the rules' readings, it returns only
    the hits it reads otherwise. The Analyzer asks it after the hit events; a failure leaves the rules' readings."""

    async def read(
        self, text: str, hits: Sequence[Hit], language: str, readings: Mapping[str, UseReading]
    ) -> dict[str, UseReading]: ...


class UseDetector:
    """Reads the use of every hit, with the rules of the hit's language (English when a language has none)."""

    def __init__(self, root: Path, fallback: str = "en") -> None:
        self.root = root
        self.fallback = fallback
        self._rules: dict[str, UseRules | None] = {}

    def rules(self, language: str) -> UseRules | None:
        if language not in self._rules:
            path = self.root / language / "use.yaml"
            if not path.is_file():
                path = self.root / self.fallback / "use.yaml"
            self._rules[language] = UseRules.from_file(path, language) if path.is_file() else None
        return self._rules[language]

    def read(self, text: str, hits: Sequence[Hit], language: str) -> dict[str, UseReading]:
        rules = self.rules(language)
        if rules is None:
            return {hit.id: UseReading() for hit in hits}
        readings = {hit.id: rules.read(text, hit) for hit in hits}
        return rules.carried(text, hits, readings)


def _ending(
    phrases: Mapping[str, tuple[tuple[str, ...], ...]], words: list[str], end: int, start: int = 0
) -> tuple[str, ...] | None:
    """The first of `phrases` (listed by their last word) that ends right before position `end` of `words` and begins
    at `start` or after: the verb of a report or a naming ("hat gesagt", "dà del"); None when none does."""
    for phrase in phrases.get(words[end - 1], ()) if end > start else ():
        if end - start >= len(phrase) and tuple(words[end - len(phrase) : end]) == phrase:
            return phrase
    return None


def _heads(heading: list[str], phrase: tuple[str, ...]) -> bool:
    """Whether `phrase` stands in a profile's heading ("Driver bio", "Profilo"), or, one word long, ends one of its
    words ("Fahrerprofil")."""
    if len(phrase) == 1:
        return any(word.endswith(phrase[0]) for word in heading)
    return any(tuple(heading[n : n + len(phrase)]) == phrase for n in range(len(heading)))
