"""Benchmark of use versus mention: do quoted, reported and reclaimed uses end not flagged, and attacks flagged?

    python benchmarks/bench_uses.py [--languages en,fr,...] [--json PATH] [--compare-rules PROMPTS_DIR]
        [--groups SET,...] [--no-learned] [--no-examples] [--cache FILE] [--misses FILE] [--rules-cost]

Vocabulary-only analyses (no language model) of the team's corpus sentences, against the shipped vocabularies,
in several configurations in one run: the use rules off (every hit an attack, the behaviour before the rules
existed); the use rules alone (prompts/<lang>/use.yaml, engine/uses.py); the rules and the learned use source
(engine/use_model.py: hits the rules leave as attacks without a cue, read from labelled uses by embeddings); and
those with the example source too (what a site without a model runs by default). Five sets of sentences:

- `uses.yaml` (tests/corpora/<lang>/uses.yaml): a use per hit, written together with the rules (so not held
  out); a sentence is a mention when none of its hits is an attack, an attack when one is.
- older corpora: the other corpus files, written before the rules, by kind: quoted, reclaimed and counter-speech
  sentences are mentions, hateful ones attacks (some of those report an attack, e.g. fans shouting a slur:
  a careful reader may call them mentions, so this set's attack figure is a floor). The rules' cues were
  generalised from this set's failures, so it is not held out either.
- fresh held-out (tests/corpora/<lang>/heldout.yaml): written after the rules and never used to tune them or to
  build the curated examples; mentions and attacks with the same terms, by kind as above. Its misses have been
  read, so it is a development set now.
- second held-out (tests/corpora/<lang>/heldout2.yaml): written after those misses were known and before any
  change made to read them, committed on its own first; never used to write, tune or train anything.
- third held-out (tests/corpora/<lang>/heldout3.yaml): written after the second set's misses were known and
  before any change made to read them, committed on its own first. Its misses were read at stop 22: a
  development set now.
- fourth held-out (tests/corpora/<lang>/heldout4.yaml): written after the third set's misses were known and
  before any change made to read them, committed on its own first. Its misses were read at stop 23: a
  development set now.
- fifth held-out (tests/corpora/<lang>/heldout5.yaml): written after the fourth set's misses were known and
  before any change made to read them, committed on its own first. Its misses were read at stop 23: a
  development set now.
- sixth held-out (tests/corpora/<lang>/heldout6.yaml): written after the fifth set's misses were known and
  before any change made to read them, committed on its own first. Its misses were read at stop 24: a
  development set now.
- seventh held-out (tests/corpora/<lang>/heldout7.yaml): written after the sixth set's misses were known and
  before any change made to read them, committed on its own first. Its misses were read at stop 24: a
  development set now.
- eighth held-out (tests/corpora/<lang>/heldout8.yaml): written after the seventh set's misses were known and
  before any change made to read them, committed on its own first. Its misses were read at stop 24: a
  development set now.
- ninth held-out (tests/corpora/<lang>/heldout9.yaml): written after the eighth set's misses were known and
  before any change made to read them, committed on its own first. Its misses were read at stop 24: a
  development set now.
- tenth held-out (tests/corpora/<lang>/heldout10.yaml): written after the ninth set's misses were known and
  before any change made to read them, committed on its own first; never used to write, tune or train anything.
  Unlike the earlier sets, its writers were asked for an ordinary day's posts: most attacks plain, about a third
  looking like mentions. Its misses were read at stop 26, after its blind runs: a development set now.
- eleventh held-out (tests/corpora/<lang>/heldout11.yaml): written at stop 25, before any change made to read the
  tenth set's misses, committed on its own from the tree before the stop's changes; never used to write, tune or
  train anything while blind. Its writers were asked for forum threads and replies: quoted posts refuted or
  agreed with, moderators' notes, comment sections, Q&A; half the attacks plain, half looking like mentions. Its
  misses were read at stop 25, after its blind run: a development set now.
- twelfth held-out (tests/corpora/<lang>/heldout12.yaml): written at stop 25 after the eleventh set's misses were
  known and before any change made to read them, committed on its own first; never used to write, tune or train
  anything. A third of its sentences are forum replies quoting another post (refuted, reported, asked about, or
  agreed with in words of the writer's own), the rest ordinary posts of every kind. Its misses were read at stop
  25, after its blind run: a development set now.
- thirteenth held-out (tests/corpora/<lang>/heldout13.yaml): written at stop 25 after the twelfth set's misses were
  known and before any change made to read them, committed on its own first; never used to write, tune or train
  anything. An ordinary day on a general-interest forum: a fifth of its sentences replies quoting another post,
  two thirds of its attacks plain. Its misses were read at stop 26, after its blind runs: a development set now.
- fourteenth held-out (tests/corpora/<lang>/heldout14.yaml): written at stop 26 from the tree before that stop's
  changes, committed on its own; never used to write, tune or train anything. A week on a community platform:
  profiles, notices of clubs, choirs and support groups, dating ads, reviews, family chats, a sixth replies; a
  third of its attacks look like mentions (a quotation agreed with, a self-description, a team's name).
- fifteenth held-out (tests/corpora/<lang>/heldout15.yaml): written at stop 26 after the tenth and thirteenth sets'
  misses were known and before any change made to read them, committed on its own; never used to write, tune or
  train anything. Comment sections under news articles on contested subjects: commenters quoting each other and
  the article, reports, moderators, victims, the group speaking of itself, old sources; a third of its attacks
  look like mentions (an article quoted and agreed with, "saying what everyone thinks", a rhetorical question).
  Read at stop 27 with the fourteenth: both are development sets now.
- sixteenth held-out (tests/corpora/<lang>/heldout16.yaml): written at stop 27 from stop 26's end, before any change
  made to read the fourteenth and fifteenth sets' misses, committed on its own; never used to write, tune or train
  anything. Work and school: team and staff-room chats, HR and union messages, minutes, employer reviews, parents'
  groups, pupils' posts, shift chats, a call log; a fifth replies, a third of its attacks look like mentions.
  Its misses were read at stop 28, after its blind runs: a development set now.
- seventeenth held-out (tests/corpora/<lang>/heldout17.yaml): written at stop 28 from stop 27's end, before any change
  made to read the sixteenth set's misses, committed on its own; never used to write, tune or train anything.
  Health, care, faith and leisure: patients' forums and support groups, GP, dentist and ward reviews, a gym, a
  pool, a choir and a theatre group, parish, mosque and synagogue newsletters, a dating app, a book club, a quiz
  team, a museum and an archive; a fifth replies, a third of its attacks look like mentions. Its misses were
  read at stop 28, after its blind run: a development set now.
- eighteenth held-out (tests/corpora/<lang>/heldout18.yaml): written at stop 28 after heldout17's blind run, before
  any change made to read its misses, committed on its own; never used to write, tune or train anything. Travel,
  migration and family: expat, visa and citizenship boards, diaspora and family group chats, a family-history
  board, wedding plans and in-laws, hostel and airline reviews, au pairs, a coach trip, old passenger lists and
  letters home; a fifth replies, a third of its attacks look like mentions. Its misses were read at stop 29, after
  its blind run: a development set now.
- nineteenth held-out (tests/corpora/<lang>/heldout19.yaml): written at stop 29 from stop 28's end, before any change
  made to read the eighteenth set's misses, committed on its own; never used to write, tune or train anything.
  Sport, fandom, gaming, music and nightlife: supporters' forums, league and club chats, game lobbies and a
  streamer's chat, a fan wiki, band and choir chats, festival, venue and nightclub reviews, a pub quiz, referees,
  old match programmes, club minutes and songbooks; a fifth replies, a third of its attacks look like mentions.
  Its misses were read at stop 29, after its blind run: a development set now.
- twentieth held-out (tests/corpora/<lang>/heldout20.yaml): written at stop 29 after heldout19's blind run, before
  any change made to read its misses, committed on its own; never used to write, tune or train anything. Housing,
  neighbours and local services: tenants' and residents' groups, a street's chat, letting agents and landlords,
  council complaints, a planning objection, parking and bins, shops, a library and a bus route, a school gate,
  local history (rate books, street directories, estate maps); a fifth replies, a third of its attacks look like
  mentions. Its misses were read at stop 29, after its blind run: a development set now.
- twenty-first held-out (tests/corpora/<lang>/heldout21.yaml): written at stop 29 after heldout20's blind run,
  before any change made to read its misses, committed on its own; never used to write, tune or train anything.
  Shopping, deliveries, customer service, transport and commuting: marketplace and seller reviews, delivery and
  ride-hailing apps, call centres, shops and a pharmacy, a commuters' forum, a bus drivers' board, car-share and
  cycling groups, a lost-property desk, second-hand selling; old timetables, catalogues, adverts and shop signs; a
  fifth replies, a third of its attacks look like mentions. Its misses were read at stop 30, after its blind run: a
  development set now.
- twenty-second held-out (tests/corpora/<lang>/heldout22.yaml): written at stop 30 from stop 29's end, before any
  change made to read the twenty-first set's misses, committed on its own; never used to write, tune or train
  anything. Politics and civic life: election campaigns and canvassers' chats, council meetings, petitions, protests,
  strikes and union boards, a party forum, letters to a representative, a fact-checking desk, a polling station;
  old leaflets, posters, pamphlets, parliamentary records and union minutes; a fifth replies, a third of its attacks
  look like mentions. Its misses were read at stop 30, after its blind run: a development set now.
- twenty-third held-out (tests/corpora/<lang>/heldout23.yaml): written at stop 30 after the twenty-second set's blind
  run, before any change made to read its misses, committed on its own; never used to write, tune or train
  anything. Private life online: dating apps, an advice column, parenting boards, a creator's comments and live
  chat, a recipe blog, pet owners and a vet, DIY and gardening forums, a dress-resale group, a book club; old
  etiquette books, cookbooks, agony-aunt columns, diaries, baby-name books and magazine adverts; a fifth replies, a
  third of its attacks look like mentions. Its misses were read at stop 30, after its blind run: a development set
  now.
- twenty-fourth held-out (tests/corpora/<lang>/heldout24.yaml): written at stop 30 after the twenty-third set's
  blind run, before any change made to read its misses, committed on its own; never used to write, tune or train
  anything. Tech, money and hobby communities: a programming Q&A site, an issue tracker, repair and PC-building
  forums, a crypto and personal-finance chat, car, motorbike, photography, astronomy, fishing, hiking and
  model-railway clubs, app-store reviews; old trade journals, manuals, club newsletters, catalogues, radio listings
  and adverts; a fifth replies, a third of its attacks look like mentions.

The learned use source is trained on every set but the twenty-fourth held-out
(tests/tools/build_use_model.py), so its figures elsewhere are training figures; its cross-validated figures are in
sense-examples/use-model/model.yaml and printed first. Its cost is measured in the first configuration that runs
it (every context embedded then; `--cache` would make it a cache read): wall time per offered hit. `--groups` runs
only some sets: while developing, leave out the twenty-fourth held-out set, so it stays blind.

`--compare-rules` adds the rules of another prompts folder (say, the last release's, from
`git archive v1 prompts | tar -x -C /tmp/old`) as one more configuration, for a before/after in one run.

Reported per language and overall: the share of mentions whose decision is not_flagged ("cleared"), the share
of mentions not flagged at all (not_flagged or needs_review), the share of attacks flagged, and the share of the
attacks flagged before the rules that the rules leave flagged ("kept": what the rules cost). Targets: cleared
≥ 0.90, attacks kept ≥ 0.95. Attacks with an ambiguous word stay undetermined without a model (needs_review)
with or without the rules, which is why "attacks flagged" is below 1 in both configurations.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from engine.analysis import Analyzer  # noqa: E402
from engine.detector import Detector  # noqa: E402
from engine.embeddings import EmbeddingCache, LazyEmbedder  # noqa: E402
from engine.events import Decision  # noqa: E402
from engine.hits import Hit  # noqa: E402
from engine.paths import shipped_vocabularies  # noqa: E402
from engine.sense_examples import ExampleSource, load_examples  # noqa: E402
from engine.use_model import LearnedUses, UseModel, describe, offered, shipped_use_model  # noqa: E402
from engine.uses import UseDetector, UseReading  # noqa: E402
from engine.vocabulary.loader import load_vocabulary  # noqa: E402
from tests.tools.build_sense_examples import HELD_OUT_FILES  # noqa: E402

CORPORA = ROOT / "tests" / "corpora"
LANGUAGES = ("en", "fr", "el", "de", "nl", "it", "pt")
MENTION_KINDS = {"quoted", "reported", "reclaimed", "historical", "counter-speech"}
ATTACK_KINDS = {"hateful"}
GROUPS = (
    "uses.yaml",
    "older corpora",
    "fresh held-out",
    "second held-out",
    "third held-out",
    "fourth held-out",
    "fifth held-out",
    "sixth held-out",
    "seventh held-out",
    "eighth held-out",
    "ninth held-out",
    "tenth held-out",
    "eleventh held-out",
    "twelfth held-out",
    "thirteenth held-out",
    "fourteenth held-out",
    "fifteenth held-out",
    "sixteenth held-out",
    "seventeenth held-out",
    "eighteenth held-out",
    "nineteenth held-out",
    "twentieth held-out",
    "twenty-first held-out",
    "twenty-second held-out",
    "twenty-third held-out",
    "twenty-fourth held-out",
)
GROUP_OF_FILE = {name: GROUPS[2 + n] for n, name in enumerate(HELD_OUT_FILES)}


@dataclass(frozen=True)
class Item:
    language: str
    text: str
    mention: bool  # False: an attack
    group: str  # one of GROUPS
    kind: str  # the sentence's kind (quoted, reported, ..., hateful); uses.yaml: "mention" or "attack"


def items(languages: tuple[str, ...]) -> list[Item]:
    found = []
    for language in languages:
        for path in sorted((CORPORA / language).glob("*.yaml")):
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
            for sentence in data.get("sentences", []):
                hits = sentence.get("hits") or []
                if path.name == "uses.yaml":
                    uses = {hit["use"] for hit in hits}
                    mention = "attack" not in uses
                    kind = "mention" if mention else "attack"
                    found.append(Item(language, sentence["text"], mention, GROUPS[0], kind))
                elif hits and sentence["kind"] in MENTION_KINDS | ATTACK_KINDS:
                    group = GROUP_OF_FILE.get(path.name, GROUPS[1])
                    mention = sentence["kind"] in MENTION_KINDS
                    found.append(Item(language, sentence["text"], mention, group, sentence["kind"]))
    return found


async def labels(analyzer: Analyzer, batch: list[Item]) -> list[str]:
    out = []
    for item in batch:
        events = await analyzer.collect(item.text, item.language)
        out.append(next(e for e in events if isinstance(e, Decision)).label)
    return out


def share(numerator: int, denominator: int) -> str:
    return f"{numerator / denominator:.2f} ({numerator}/{denominator})" if denominator else "-"


@dataclass
class Row:
    """Counts for one language and configuration; `kept`: attacks flagged here among those flagged before."""

    mentions: int = 0
    cleared: int = 0  # not_flagged
    not_flagged: int = 0  # not_flagged or needs_review
    attacks: int = 0
    flagged: int = 0
    flagged_before: int = 0
    kept: int = 0

    def add(self, mention: bool, label: str, before: str) -> None:
        if mention:
            self.mentions += 1
            self.cleared += label == "not_flagged"
            self.not_flagged += label != "flagged"
            return
        self.attacks += 1
        self.flagged += label == "flagged"
        self.flagged_before += before == "flagged"
        self.kept += before == "flagged" and label == "flagged"

    def cells(self) -> str:
        return " | ".join(
            [
                share(self.cleared, self.mentions),
                share(self.not_flagged, self.mentions),
                share(self.flagged, self.attacks),
                share(self.kept, self.flagged_before),
            ]
        )


DETECTORS: dict[str, Detector] = {}


class TimedUses:
    """The learned use source, timed: wall time per call and the hits it was offered (its cost per hit)."""

    def __init__(self, source: LearnedUses) -> None:
        self.source = source
        self.calls: list[tuple[float, int]] = []  # (seconds, offered hits) of calls that embedded something
        self.timing = True

    async def read(
        self, text: str, hits: Sequence[Hit], language: str, readings: Mapping[str, UseReading]
    ) -> dict[str, UseReading]:
        started = time.perf_counter()
        found = await self.source.read(text, hits, language, readings)
        wanted = len(offered(readings, hits))
        if self.timing and wanted:
            self.calls.append((time.perf_counter() - started, wanted))
        return found


@dataclass(frozen=True)
class Config:
    name: str
    rules: bool | Path  # False: no use rules; True: the shipped ones; a folder: that folder's
    learned: bool = False
    examples: ExampleSource | None = None


def rules_cost(corpus: list[Item], other: Path | None, rounds: int = 7) -> int:
    """Microseconds per hit for the rules to read every hit of the corpus (they run before the first hit event)."""
    readers = {"use rules": UseDetector(ROOT / "prompts")}
    if other is not None:
        readers[f"use rules of {other}"] = UseDetector(other)
    cases = []
    for item in corpus:
        detector = DETECTORS.get(item.language) or DETECTORS.setdefault(
            item.language, Detector(load_vocabulary(shipped_vocabularies() / item.language))
        )
        hits = detector.detect(item.text, item.language).hits
        if hits:
            cases.append((item.text, hits, item.language))
    total = sum(len(hits) for _, hits, _ in cases)
    times: dict[str, list[float]] = {name: [] for name in readers}
    for n in range(rounds):
        for name, reader in readers.items() if n % 2 == 0 else reversed(readers.items()):
            started = time.perf_counter()
            for text, hits, language in cases:
                reader.read(text, hits, language)
            times[name].append((time.perf_counter() - started) / total * 1e6)
    print(f"{total} hits in {len(cases)} texts, {rounds} interleaved rounds")
    for name, values in times.items():
        rounds_text = ", ".join(f"{v:.1f}" for v in values)
        print(f"{name}: {statistics.median(values):.1f} µs per hit at the median ({rounds_text})")
    return 0


def by_kind(name: str, ordered: list[Item], decided: Mapping[str, list[str]], report: dict[str, Any]) -> None:
    """Per configuration, the share of each kind of sentence that ends as it should: a mention cleared
    (not_flagged), an attack flagged. The mentions target names quoted, reported and reclaimed uses."""
    members: dict[str, list[int]] = {}  # kind -> positions in `ordered`
    for n, item in enumerate(ordered):
        if name in ("all", item.group):
            members.setdefault(item.kind, []).append(n)
    kinds = sorted(members, key=lambda k: (k in ATTACK_KINDS, k))
    print(f"\n| config | {' | '.join(kinds)} |")
    print(f"|---|{'---|' * len(kinds)}")
    for config_name, labels_ in decided.items():
        cells = []
        for kind in kinds:
            chosen = members[kind]
            right = sum(labels_[n] == ("not_flagged" if ordered[n].mention else "flagged") for n in chosen)
            cells.append(share(right, len(chosen)))
            report.setdefault(name, {}).setdefault(config_name, {}).setdefault("by_kind", {})[kind] = [
                right,
                len(chosen),
            ]
        print(f"| {config_name} | {' | '.join(cells)} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--languages", default=",".join(LANGUAGES))
    parser.add_argument("--json", type=Path, help="also write the numbers here")
    parser.add_argument(
        "--no-examples", action="store_true", help="leave out the configuration with the example source"
    )
    parser.add_argument("--no-learned", action="store_true", help="leave out the learned use source (engine.use_model)")
    parser.add_argument(
        "--compare-rules", type=Path, help="also run the use rules of this prompts folder (<dir>/<lang>/use.yaml)"
    )
    parser.add_argument("--cache", type=Path, help="an SQLite file keeping context vectors between runs")
    parser.add_argument(
        "--misses",
        type=Path,
        help="write the sentences the last configuration gets wrong here (JSON lines): reading them makes a held-out "
        "set a development set",
    )
    parser.add_argument(
        "--groups",
        default=",".join(GROUPS),
        help="the sets to run, by name (while developing, leave out the blind held-out sets, those the learned use "
        "source is never trained on: NEVER_TRAINED in tests/tools/build_use_model.py)",
    )
    parser.add_argument(
        "--rules-cost",
        action="store_true",
        help="only time the use rules reading every hit of the corpus (and those of --compare-rules), interleaved",
    )
    args = parser.parse_args()
    languages = tuple(code.strip() for code in args.languages.split(",") if code.strip())
    groups = tuple(g.strip() for g in args.groups.split(",") if g.strip())
    unknown = sorted(set(groups) - set(GROUPS))
    if unknown:
        parser.error(f"unknown sets {', '.join(unknown)}; known: {', '.join(GROUPS)}")
    corpus = [item for item in items(languages) if item.group in groups]
    if args.rules_cost:
        return rules_cost(corpus, args.compare_rules)
    no_rules = Path(tempfile.mkdtemp(prefix="unerase-no-use-rules-"))  # a prompts folder without use.yaml
    started = time.perf_counter()
    decided: dict[str, list[str]] = {}  # config -> label per item, in corpus order
    configs = [Config("rules off (before)", False)]
    if args.compare_rules:
        configs.append(Config(f"use rules of {args.compare_rules}", args.compare_rules))
    configs.append(Config("use rules", True))
    embedder = LazyEmbedder()
    cache = EmbeddingCache(embedder, args.cache)
    learned: TimedUses | None = None
    model = None if args.no_learned else UseModel.load(shipped_use_model())
    if model is not None:
        learned = TimedUses(LearnedUses(embedder, model, cache))
        configs.append(Config("use rules + learned uses", True, learned=True))
        print(describe(model))
    if not args.no_examples:
        # What a site without a model runs by default: the rules, the learned uses and the example source
        # (docs/examples.md). The curated examples taken from any sentence benchmarked here are left out, so no
        # sentence decides itself.
        curated, vectors = load_examples()
        texts = [item.text for item in corpus]
        unseen = tuple(e for e in curated if not any(e.context in text for text in texts))
        examples = ExampleSource(embedder, unseen, vectors)
        examples.cache = cache
        cache.seed(vectors)
        name = " + learned uses" if learned is not None else ""
        configs.append(
            Config(
                f"use rules{name} + examples ({len(unseen)} of {len(curated)} held out)",
                True,
                learned is not None,
                examples,
            )
        )
    for config in configs:
        decided[config.name] = []
        for language in languages:
            detector = DETECTORS.get(language) or DETECTORS.setdefault(
                language, Detector(load_vocabulary(shipped_vocabularies() / language))
            )
            if isinstance(config.rules, Path):
                uses = UseDetector(config.rules)
            else:
                uses = UseDetector(ROOT / "prompts" if config.rules else no_rules)
            source = learned if config.learned else None
            analyzer = Analyzer(detector, precedents=config.examples, uses=uses, use_source=source)
            decided[config.name] += asyncio.run(labels(analyzer, [i for i in corpus if i.language == language]))
        if learned is not None and config.learned:
            learned.timing = False  # the first run embedded every context: later runs read the cache
    ordered = [i for language in languages for i in corpus if i.language == language]
    report: dict[str, Any] = {}
    for name in (*groups, "all"):
        print(f"\n## {name}\n")
        print("| language | config | mentions cleared | mentions not flagged | attacks flagged | attacks kept |")
        print("|---|---|---|---|---|---|")
        for config_name in decided:
            rows = {language: Row() for language in (*languages, "all")}
            for n, item in enumerate(ordered):
                if name != "all" and item.group != name:
                    continue
                for row in (rows[item.language], rows["all"]):
                    row.add(item.mention, decided[config_name][n], decided["rules off (before)"][n])
            for language, row in rows.items():
                print(f"| {'**all**' if language == 'all' else language} | {config_name} | {row.cells()} |")
                report.setdefault(name, {}).setdefault(config_name, {})[language] = row.__dict__
        by_kind(name, ordered, decided, report)
    if learned is not None and learned.calls:
        per_hit = sorted(seconds / hits * 1000 for seconds, hits in learned.calls)
        hits = sum(h for _, h in learned.calls)
        print(
            f"\nlearned uses, first run (contexts embedded): {hits} hits offered in {len(learned.calls)} analyses, "
            f"{statistics.median(per_hit):.1f} ms per offered hit at the median, "
            f"p95 {per_hit[int(0.95 * (len(per_hit) - 1))]:.1f} ms"
        )
        report["learned_cost_ms_per_hit"] = {"median": statistics.median(per_hit), "calls": len(per_hit)}
    if args.misses:
        last = list(decided)[-1]
        with args.misses.open("w", encoding="utf-8") as out:
            for n, item in enumerate(ordered):
                label, before = decided[last][n], decided["rules off (before)"][n]
                wrong = label != "not_flagged" if item.mention else before == "flagged" and label != "flagged"
                if wrong:
                    row = {"group": item.group, "language": item.language, "mention": item.mention}
                    out.write(json.dumps({**row, "decision": label, "text": item.text}, ensure_ascii=False) + "\n")
    print(f"\n{len(corpus)} sentences, {time.perf_counter() - started:.1f} s")
    cache.close()
    if args.json:
        args.json.write_text(json.dumps(report, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
