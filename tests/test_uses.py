"""Use versus mention (engine/uses.py, prompts/<lang>/use.yaml) and what the decision makes of it.

The corpus files tests/corpora/<lang>/uses.yaml, written by the team, say for every hit how a careful reader
reads its use; the detector must agree on each one. Analyses run in vocabulary-only mode against the shipped
vocabularies, or with the scripted backend (not a model) where a model's verdict overrules the rules.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest
import yaml

from engine.analysis import Analyzer, BackendRouter
from engine.cache import MemoryCache
from engine.decision import decide
from engine.detector import Detector
from engine.events import Decision, Event, Explanation, HitFound, Targeting, Verdict
from engine.llm.backend import Message
from engine.paths import PROJECT_ROOT, shipped_vocabularies
from engine.prompts import Prompts
from engine.uses import MENTIONS, USES, UseDetector, UseRules, UseRulesError, fold
from engine.vocabulary.loader import load_vocabulary

from .support.scripted_backend import ScriptedLLMBackend, default_answer, stage_of

CORPORA = Path(__file__).resolve().parent / "corpora"
LANGUAGES = ("en", "fr", "el", "de", "nl", "it", "pt")
_DETECTORS: dict[str, Detector] = {}


def detector_for(language: str) -> Detector:
    if language not in _DETECTORS:
        _DETECTORS[language] = Detector(load_vocabulary(shipped_vocabularies() / language))
    return _DETECTORS[language]


def corpus(language: str) -> list[dict]:  # type: ignore[type-arg]
    data = yaml.safe_load((CORPORA / language / "uses.yaml").read_text(encoding="utf-8"))
    assert data["language"] == language
    return list(data["sentences"])


CASES = [
    pytest.param(language, n, sentence, id=f"{language}#{n}")
    for language in LANGUAGES
    for n, sentence in enumerate(corpus(language), start=1)
]
USE_DETECTOR = UseDetector(PROJECT_ROOT / "prompts")


@pytest.mark.parametrize(("language", "number", "sentence"), CASES)
def test_use_detector_reads_every_corpus_hit_as_a_careful_reader(language: str, number: int, sentence: dict) -> None:  # type: ignore[type-arg]
    text = sentence["text"]
    hits = detector_for(language).detect(text, language).hits
    readings = USE_DETECTOR.read(text, hits, language)
    for expected in sentence["hits"]:
        assert expected["use"] in USES
        found = [h for h in hits if h.surface == expected["surface"] and h.issue.id == expected["issue"]]
        assert found, f"{language}#{number}: {expected['surface']!r} is not a hit of {text!r}"
        reading = readings[found[0].id]
        assert reading.use == expected["use"], (
            f"{language}#{number}: {expected['surface']!r} read as {reading.use} ({reading.cue!r}), "
            f"expected {expected['use']}: {text}"
        )


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_language_has_enough_mentions_reclaimed_uses_and_attacks(language: str) -> None:
    uses = [hit["use"] for sentence in corpus(language) for hit in sentence["hits"]]
    assert sum(u in ("quoted", "reported") for u in uses) >= 20
    assert uses.count("reclaimed") >= 10
    assert uses.count("attack") >= 10


# -- the rules files -------------------------------------------------------------------------------------
@pytest.mark.parametrize("language", LANGUAGES)
def test_every_language_has_its_own_rules(language: str) -> None:
    rules = USE_DETECTOR.rules(language)
    assert rules is not None and rules.quotes and rules.before and rules.after
    assert set(rules.notes) == {"quoted", "reported", "reclaimed", "historical"}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"quotes": ["«"]}, "is not two characters"),
        ({"gap": 9}, "is not a number of words from 0 to 5"),
        ({"before": {"insult": ["x"]}}, "'insult' is not known; accepted: attack, reported, reclaimed, historical"),
        ({"before": {"reported": ["+"]}}, "has no word"),
        ({"notes": {"attack": "x"}}, "notes: attack not known"),
        ({"before": ["called me a"]}, "expected a mapping"),
        ({"sources": {"documents": "register"}}, "sources: expected a mapping with documents"),
        ({"sources": {"documents": ["register"], "before_year": 3000}}, "before_year 3000 is not a year"),
        ({"sources": {"documents": ["register"], "eras": ["!"]}}, "sources.eras: a phrase has no word"),
        ({"self_reference": {"as": ["as"]}}, "self_reference: expected a mapping with the lists as and first_person"),
        ({"self_reference": {"as": ["as"], "first_person": ["we"], "words": 0}}, "words 0 is not a number"),
        ({"vocative_quotes": "yes"}, "vocative_quotes: 'yes' is not true or false"),
        ({"stance": "i'm not racist"}, "stance: expected a list of phrases"),
        ({"stance": ["!"]}, "stance: a phrase has no word"),
        ({"own_words": "my sign"}, "own_words: expected a list of phrases"),
        ({"frames": [""]}, "frames: a phrase has no word"),
        ({"speech": {"verbs": ["said"]}}, "speech: expected a mapping with the lists verbs, that and writer"),
        ({"speech": {"verbs": ["said"], "that": ["that"], "reach": 12}}, "reach 12 is not a number of words"),
        ({"speech": {"verbs": ["!"], "that": ["that"]}}, "speech.verbs: a phrase has no word"),
        # YAML reads an unquoted French "on" as true: refused, not read as the word "True"
        ({"speech": {"verbs": ["dit"], "that": ["que"], "writer": [True]}}, "True is not a phrase"),
        ({"stance": [False]}, "stance: False is not a phrase"),
        ({"replies": ["wrote"]}, "replies: expected a mapping with the lists wrote, quoting and agree"),
        ({"replies": {"quoting": ["quote from"]}}, "replies: expected a mapping with the lists wrote"),
        ({"replies": {"wrote": ["wrote"], "agree": ["?"]}}, "replies.agree: a phrase has no word"),
        ({"group_names": ["race"]}, "group_names: expected a mapping with the list conventional"),
        ({"speech": {"verbs": ["said"], "that": ["that"], "naming": "called"}}, "speech.naming: expected a list"),
        ({"group_names": {"conventional": ["race"], "caps": True}}, "group_names: expected a mapping"),
        ({"group_names": {"conventional": ["nationality"]}}, "conventional: nationality not known; accepted"),
    ],
)
def test_bad_rules_are_refused_with_the_reason(data: dict, message: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(UseRulesError, match=message):
        UseRules.from_dict(data, "en", "use.yaml")


def test_the_rules_are_part_of_the_prompt_version(tmp_path: Path) -> None:
    root = tmp_path / "prompts"
    shutil.copytree(PROJECT_ROOT / "prompts", root)
    before = Prompts(root).version
    rules = root / "en" / "use.yaml"
    rules.write_text(rules.read_text(encoding="utf-8") + "\n# one more line\n", encoding="utf-8")
    assert Prompts(root).version != before


# -- reading single hits ---------------------------------------------------------------------------------
def read(text: str, surface: str, language: str = "en") -> tuple[str, str]:
    hits = [h for h in detector_for(language).detect(text, language).hits if h.surface == surface]
    assert hits, f"{surface!r} is not a hit of {text!r}"
    reading = USE_DETECTOR.read(text, hits, language)[hits[0].id]
    return reading.use, reading.cue


def test_quotation_marks_of_every_style_and_scare_quotes() -> None:
    for text in ('He wrote "kike" on the door.', "He wrote “kike” on the door.", "He wrote «kike» on the door."):
        assert read(text, "kike")[0] == "quoted"
    assert read("Someone painted 'kike' on the door.", "kike") == ("quoted", "quotation marks")
    # an apostrophe inside a word opens no quotation; a quotation closed before the hit does not hold it
    assert read("Don't be such a kike, it's late.", "kike")[0] == "attack"
    assert read('He said "hello" and then kike.', "kike")[0] == "attack"
    # scare quotes aimed at someone are an attack
    assert read('You "kike", get out.', "kike") == ("attack", "You")  # the cue as the text writes it


def test_the_nearest_cue_decides_and_a_sentence_end_stops_it() -> None:
    assert read("They called me a dirty kike.", "kike") == ("reported", "called me a")
    assert read("They called me a liar. You kike.", "kike")[0] == "attack"
    assert read("I'm not a faggot, you are.", "faggot")[0] == "attack"


@pytest.mark.parametrize(
    ("language", "text", "surface"),
    [
        ("en", "that strike left us crippled for a week or more", "crippled"),  # an object "us" reclaims nothing
        ("fr", "Regarde-moi ce bougnoule qui traîne devant la gare.", "bougnoule"),  # "moi" here is no first person
        ("it", "Quei deputati sono ascari del governo.", "ascari"),  # "sono" is also "they are"
        # a verb of speaking reports only the words right after it, not whatever follows it in the sentence
        ("en", "I yelled at those wetbacks to get off my land.", "wetbacks"),
        ("fr", "Je veux dire que les bougnoules n'ont rien à faire ici.", "bougnoules"),
    ],
)
def test_words_that_only_look_like_first_person_cues_leave_an_attack(language: str, text: str, surface: str) -> None:
    assert read(text, surface, language)[0] == "attack"


@pytest.mark.parametrize(
    ("language", "text", "surface", "cue"),
    [
        ("en", "A 1912 harbour ledger records three coolies hired to unload the steamer.", "coolies", "records"),
        ("en", "The colonial archive holds a list of mulatto children baptised at the fort.", "mulatto", "archive"),
        ("fr", "Le registre de 1887 mentionne deux mulâtres employés au port.", "mulâtres", "registre"),
        ("de", "Im Kirchenbuch von 1890 steht die Mulattin ohne Vornamen.", "Mulattin", "kirchenbuch"),
        ("nl", "Een krant uit 1921 noemt de koelies van de suikerfabriek bij naam.", "koelies", "krant"),
        ("it", "Un giornale del 1936 pubblicò la foto degli ascari in parata.", "ascari", "giornale"),
        ("pt", "Um jornal de 1930 chama cafres aos carregadores do porto.", "cafres", "jornal"),
        ("el", "Σε μια εφημερίδα του 1925 οι οικογένειες λέγονται τουρκόσποροι.", "τουρκόσποροι", "εφημεριδα"),
    ],
)
def test_an_old_source_named_before_the_hit_makes_it_historical(
    language: str, text: str, surface: str, cue: str
) -> None:
    assert read(text, surface, language) == ("historical", cue)


@pytest.mark.parametrize(
    "text",
    [
        "The 2024 report proves the coolies at the docks are stealing.",  # a recent year is no old source
        "My diary is full of lazy coolies.",  # a document without a year or an era
        "You coolies, the 1912 ledger was right about you.",  # an attack cue before the hit wins
        "The coolies stole everything, as the 1912 ledger shows.",  # the source must come before the hit
    ],
)
def test_a_year_or_a_document_alone_or_an_attack_cue_leaves_an_attack(text: str) -> None:
    assert read(text, "coolies")[0] == "attack"


@pytest.mark.parametrize(
    ("language", "text", "surface"),
    [
        ("en", "Mission photograph, c. 1890: two mulatto orphans in front of the chapel.", "mulatto"),
        ("de", "Postkarte aus dem Kolonialarchiv, ca. 1912: Eingeborene beim Bau der Bahnlinie.", "Eingeborene"),
    ],
)
def test_a_full_stop_before_a_number_ends_no_sentence(language: str, text: str, surface: str) -> None:
    """A caption's date abbreviation ("c. 1890") keeps the document word and the year in the hit's sentence."""
    assert read(text, surface, language)[0] == "historical"
    # a full stop before a word still ends the sentence: the old source stays in the one before
    assert read(text.replace(":", ". Now", 1), surface, language)[0] == "attack"


def test_a_cue_marked_to_follow_a_noun_phrase_reaches_past_a_few_words() -> None:
    assert read("Wetback jokes at work is not banter.", "Wetback") == ("reported", "is not banter")
    # without the "+" an after cue must follow the hit at once
    assert read("Wetback jokes at work is a slur.", "Wetback")[0] == "attack"
    assert read("Wetback is a slur.", "Wetback") == ("reported", "is a slur")


@pytest.mark.parametrize(
    ("language", "text", "surface"),
    [
        # a group said to *be* the quoted word: scare quotes, not a quotation
        ("en", 'They are all "faggots" and they know it.', "faggots"),
        ("fr", "Ils sont tous des « pédés », tout le monde le sait.", "pédés"),
        ("de", "Das sind alle „Kanaken“, das weiß jeder.", "Kanaken"),
        ("nl", 'Het zijn allemaal "flikkers", dat weet iedereen.', "flikkers"),
        ("it", "Sono tutti «froci», lo sanno tutti.", "froci"),
        ("pt", "São todos «paneleiros», toda a gente sabe.", "paneleiros"),
        ("el", "Είναι όλοι «πούστηδες», το ξέρουν όλοι.", "πούστηδες"),
        # a saying, a replacement and a "don't call me" followed by an insult are no mentions
        ("en", "As they say, once a wetback always a wetback.", "wetback"),
        ("en", "Instead of wetbacks we should hire locals.", "wetbacks"),
        ("fr", "Au lieu de bougnoules, embauchez des gens d'ici.", "bougnoules"),
        ("en", "Those kikes were called worse by my grandfather and he was right.", "kikes"),
        # "als" / "como" also compare: "just like the other ..." is no first-person "as a ..."
        ("nl", "Weer een nieuwe buurman, net als die andere kutmarokkanen hier.", "kutmarokkanen"),
        ("pt", "Chegou mais uma família, como os outros ciganos da rua.", "ciganos"),
        # scare quotes after "so-called" or a demonstrative: the writer points at people, quoting no one
        ("en", 'The so-called "wetbacks" on our street never pay for anything.', "wetbacks"),
        ("en", 'Those "faggots" from the gym want a parade now.', "faggots"),
        ("fr", "Ces « bougnoules » du troisième font encore du bruit.", "bougnoules"),
        ("fr", "Les soi-disant « pédés » du club ont encore gagné.", "pédés"),
        ("de", "Diese „Kanaken“ vom Kiosk schon wieder.", "Kanaken"),
        ("de", "Die „Kanaken“ vom Kiosk schon wieder.", "Kanaken"),
        ("nl", 'Die "flikkers" van de sportschool willen nu een optocht.', "flikkers"),
        ("nl", 'Die zogenaamde "flikkers" van de sportschool willen nu een optocht.', "flikkers"),
        ("it", "Quei «froci» della palestra vogliono pure la parata.", "froci"),
        ("pt", "Esses «paneleiros» do ginásio querem agora uma marcha.", "paneleiros"),
        ("el", "Αυτοί οι «πούστηδες» από το γυμναστήριο θέλουν και παρέλαση.", "πούστηδες"),
        # a naming the writer endorses is no report
        ("en", "My uncle is right to call them wetbacks, look at the wages.", "wetbacks"),
        ("fr", "Il a raison de les traiter de bougnoules, regarde le quartier.", "bougnoules"),
        ("nl", "Hij heeft gelijk als hij ze flikkers noemt.", "flikkers"),
        ("it", "Ha ragione a chiamarli froci, guarda come si vestono.", "froci"),
    ],
)
def test_attacks_that_look_like_mentions_stay_attacks(language: str, text: str, surface: str) -> None:
    assert read(text, surface, language)[0] == "attack"


@pytest.mark.parametrize(
    ("language", "text", "surface"),
    [
        # a quoted word alone between commas, addressed to someone (issue 15)
        ("en", 'Keep dreaming, "spastic", nobody picks you first.', "spastic"),
        ("en", 'Good luck with that, "wetback".', "wetback"),
        ("fr", "Rentre chez toi, « bougnoule ».", "bougnoule"),
        ("de", "Träum weiter, „Spast“, dich wählt keiner.", "Spast"),
        ("nl", "Blijf maar dromen, „flikker”.", "flikker"),
        ("it", "Sogna pure, «frocio», nessuno ti sceglie.", "frocio"),
        ("pt", "Continua a sonhar, «paneleiro».", "paneleiro"),
        ("el", "Όνειρα γλυκά, «πούστη».", "πούστη"),
        # the writer's endorsement after the hit: no report of an old habit
        ("en", "Back in 1958 the club kept the wops out and they were right.", "wops"),
        ("fr", "En 1958 le club refusait les bougnoules, et il avait bien raison.", "bougnoules"),
        ("de", "1958 ließ der Verein keine Kanaken rein, und er hatte völlig recht.", "Kanaken"),
        ("nl", "In 1958 hield de club de kutmarokkanen buiten en had groot gelijk.", "kutmarokkanen"),
        ("it", "Nel 1958 il circolo teneva fuori i terroni, e aveva ragione.", "terroni"),
        ("pt", "Em 1958 o clube não aceitava ciganos, e tinha toda a razão.", "ciganos"),
        ("el", "Το 1958 ο σύλλογος δεν έβαζε γύφτους, και είχε απόλυτο δίκιο.", "γύφτους"),
        # a naming held against the reader for good, or the word the writer endorses
        ("en", "Say what you like about reclaiming it, you'll always be a dyke to me.", "dyke"),
        ("it", "Puoi dire quello che vuoi, rimani un frocio.", "frocio"),
        ("nl", "Het juiste woord voor die buurman is flikker, punt.", "flikker"),
        ("de", "Das richtige Wort für den Typen ist Kanake, Schluss.", "Kanake"),
    ],
)
def test_addressed_endorsed_and_lasting_namings_are_attacks(language: str, text: str, surface: str) -> None:
    use, cue = read(text, surface, language)
    assert use == "attack" and cue, f"{text!r}: {use} ({cue!r})"


@pytest.mark.parametrize(
    ("text", "surface"),
    [
        # a list of quoted words is no address
        ('The filter now blocks "gyppo", "pikey", "tinker" and a dozen more.', "pikey"),
        ('The filter now blocks "gyppo", "pikey", "tinker".', "tinker"),
        # a reporting verb before the comma, or a word named as a word earlier in the sentence
        ('Then the man at the till muttered, "paki".', "paki"),
        ('The word in the 1920 caption, "darkie", is printed without comment.', "darkie"),
        # a quotation that holds more than the word
        ('Nice try, "stupid spastic".', "spastic"),
    ],
)
def test_quotations_that_address_no_one_stay_mentions(text: str, surface: str) -> None:
    use, cue = read(text, surface)
    assert use in MENTIONS, f"{text!r}: {use} ({cue!r})"


@pytest.mark.parametrize(
    ("language", "text", "surface"),
    [
        ("en", "Lot 42: painted tin golliwog, one arm loose, sold as seen.", "golliwog"),
        ("fr", "Lot 42 : tirelire en tôle en forme de négrillon, peinture usée.", "négrillon"),
        ("de", "Los 42: Blechdose mit Mohrenkopf-Motiv, leicht verbeult.", "Mohrenkopf"),
        ("nl", "Kavel 42: sigarenkistje met een negertje op het deksel, scharnier los.", "negertje"),
        ("it", "Lotto 42: scatola di latta con un moretto dipinto, coperchio ammaccato.", "moretto"),
        ("pt", "Lote 42: caixa de lata com um pretinho pintado, tampa amolgada.", "pretinho"),
        ("el", "Λαχνός 42: τενεκεδένιο κουτί με ζωγραφισμένο αραπάκι, το καπάκι στραβωμένο.", "αραπάκι"),
    ],
)
def test_a_catalogue_entry_that_opens_the_sentence_is_historical(language: str, text: str, surface: str) -> None:
    assert read(text, surface, language)[0] == "historical"


@pytest.mark.parametrize(
    ("language", "text", "surface"),
    [
        # the writer's stance in the hit's sentence or the next one names the evidence of an attack
        ("en", "I'm not racist, but the gyppos at the end of the lane leave rubbish everywhere.", "gyppos"),
        ("en", "Another spastic holding up the queue at the post office. I stand by it.", "spastic"),
        ("fr", "Je ne suis pas raciste, mais les bougnoules du bâtiment C font du bruit.", "bougnoules"),
        ("de", "Ich bin kein Rassist, aber die Kanaken am Bahnhof nerven.", "Kanaken"),
        ("nl", "Die kutmarokkanen bij de ingang weer. Ik blijf erbij.", "kutmarokkanen"),
        ("it", "Non sono razzista, ma i terroni del piano di sotto urlano sempre.", "terroni"),
        ("pt", "Não sou racista, mas os ciganos da rua de baixo fazem barulho.", "ciganos"),
        ("el", "Δεν είμαι ρατσιστής, αλλά οι γύφτοι στη γωνία κάνουν φασαρία.", "γύφτοι"),
        # one person said to be the quoted word: scare quotes
        ("en", 'The new supply teacher is a "spastic", honestly.', "spastic"),
        ("it", "Il vicino del quarto piano è un «terrone» e si vede.", "terrone"),
    ],
)
def test_the_writers_stance_and_a_person_said_to_be_the_quoted_word_are_attacks(
    language: str, text: str, surface: str
) -> None:
    use, cue = read(text, surface, language)
    assert use == "attack" and cue, f"{text!r}: {use} ({cue!r})"


@pytest.mark.parametrize(
    ("language", "text", "surface"),
    [
        # the writer's own quotation, first person singular
        ("en", 'My note under his wiper: "park properly, spastic". He can read it twice.', "spastic"),
        ("fr", "Ma réponse sous son post : « retourne au bled, bougnoule ».", "bougnoule"),
        ("de", "Ich hab ihm gesagt: „Verschwinde, Kanake.“", "Kanake"),
        ("nl", "Mijn reactie onder de foto: ‘flikker blijft flikker’.", "flikker"),
        ("it", "«Torna al sud, terrone»: te lo scrivo qui, così lo leggono tutti.", "terrone"),
        ("pt", "A minha resposta no grupo: «cala-te, cigano».", "cigano"),
        ("el", "Του είπα «άντε γύφτο» μπροστά σε όλους.", "γύφτο"),
        # a quotation followed by the writer's stance in the next sentence
        ("en", 'Shouted "gyppo" at the van as it went past. I\'d say it again.', "gyppo"),
        # the writer names someone so
        ("nl", "Tegen die nieuwe collega zeg ik gewoon flikker.", "flikker"),
        ("en", "I call him the office spastic, to his face.", "spastic"),
    ],
)
def test_the_writers_own_words_are_attacks(language: str, text: str, surface: str) -> None:
    use, cue = read(text, surface, language)
    assert use == "attack" and cue, f"{text!r}: {use} ({cue!r})"


@pytest.mark.parametrize(
    ("text", "surface"),
    [
        # the writer quotes someone else, or quotes to object: no own words
        ('My son asked me what "paki" means after school today.', "paki"),
        ('I told him "don\'t call me a paki" and walked off.', "paki"),
        ('"Stop calling people pikeys", I wrote under the post. I stand by it.', "pikeys"),
        # the writer's own post, about someone else's words
        ('My post about the neighbour who called me a "paki" got removed.', "paki"),
        ('I said the man at the till had called me a "paki" before I paid.', "paki"),
        # a group's own banner is no first person singular
        ('Our banner for Saturday: "Dykes against the far right".', "Dykes"),
    ],
)
def test_quotations_that_are_not_the_writers_own_words_stay_mentions(text: str, surface: str) -> None:
    use, cue = read(text, surface)
    assert use in MENTIONS, f"{text!r}: {use} ({cue!r})"


@pytest.mark.parametrize(
    ("language", "text", "surface"),
    [
        (
            "en",
            "According to two witnesses, the driver told the family that gyppos were not welcome on his bus.",
            "gyppos",
        ),
        ("fr", "Selon la plainte, le voisin traitait la famille de bougnoules depuis des mois.", "bougnoules"),
        ("de", "Laut Anklage soll der Mann die Kassiererin mehrfach als Kanakin beschimpft haben.", "Kanakin"),
        ("nl", "Volgens het proces-verbaal schreeuwde de man flikker naar twee jongens op het perron.", "flikker"),
        ("it", "Il tassista è stato condannato perché trattava i clienti stranieri da vu cumprà.", "vu cumprà"),
        ("pt", "Segundo a denúncia, o gerente chamava a funcionária de macaca à frente dos clientes.", "macaca"),
        ("el", "Σύμφωνα με την καταγγελία, ο ιδιοκτήτης έλεγε γύφτους τους ενοικιαστές.", "γύφτους"),
    ],
)
def test_a_report_frame_before_the_hit_makes_it_reported(language: str, text: str, surface: str) -> None:
    assert read(text, surface, language)[0] == "reported"


@pytest.mark.parametrize(
    ("language", "text", "surface"),
    [
        ("en", "The bouncer told my cousin and his mates that no more pakis were getting in tonight.", "pakis"),
        ("en", "Our neighbour keeps asking the postman whether the gyppos at number 9 have moved out yet.", "gyppos"),
        ("fr", "Le gardien a expliqué à ma mère qu'il ne voulait pas de bougnoules dans l'ascenseur.", "bougnoules"),
        ("de", "Der Trainer hat den Eltern erzählt, dass in seiner Mannschaft kein Kanake spielt.", "Kanake"),
        ("nl", "Een buurman vroeg de wijkagent of die flikker van hiernaast al was opgepakt.", "flikker"),
        ("it", "Il capocantiere ha detto davanti a tutti che il terrone nuovo non sa tenere la pala.", "terrone"),
        ("pt", "A senhoria disse ao meu irmão que não aluga a ciganos, nem com fiador.", "ciganos"),
        ("el", "Ο ταξιτζής είπε στη φίλη μου ότι γύφτους δεν παίρνει στο αμάξι του.", "γύφτους"),
    ],
)
def test_indirect_speech_of_another_speaker_is_reported(language: str, text: str, surface: str) -> None:
    use, cue = read(text, surface, language)
    assert use == "reported" and "…" in cue, f"{text!r}: {use} ({cue!r})"


@pytest.mark.parametrize(
    ("language", "text", "surface"),
    [
        # the writer's own claim
        ("en", "I told the whole street that the gyppos at number 9 steal bikes.", "gyppos"),
        ("nl", "Ik zei gisteren al tegen iedereen dat die flikker van hiernaast niet te vertrouwen is.", "flikker"),
        # the report, then the writer's endorsement
        ("en", "My grandad always said that gyppos can't be trusted, and he was right.", "gyppos"),
        ("fr", "Mon oncle disait que les bougnoules ne s'intègrent jamais. Il avait raison.", "bougnoules"),
        # an impersonal saying is no other speaker's report
        ("pt", "No bairro diz-se que cigano não paga renda.", "cigano"),
        ("de", "Früher sagte man, dass ein Kanake nie pünktlich ist.", "Kanake"),
        ("fr", "On dit que les bougnoules ne paient jamais.", "bougnoules"),
    ],
)
def test_the_writers_own_claim_an_endorsed_report_and_a_saying_stay_attacks(
    language: str, text: str, surface: str
) -> None:
    assert read(text, surface, language)[0] == "attack", text


@pytest.mark.parametrize(
    ("language", "text", "surface", "use"),
    [
        (
            "en",
            "Kew, August 1911: forty coolies landed from the steamer and were marched to the depot.",
            "coolies",
            "historical",
        ),
        (
            "de",
            "Kiel, Mai 1921: Ankunft von sechzig Zigeunern am Güterbahnhof, Unterbringung in Baracken.",
            "Zigeunern",
            "historical",
        ),
        # a recent year, a long heading, or a colon after the hit: no dated heading
        ("en", "Street party, August 2024: forty coolies turned up and ate everything.", "coolies", "attack"),
        ("en", "Forty coolies turned up at the street party, August 1911: nothing changes.", "coolies", "attack"),
    ],
)
def test_a_short_dated_heading_before_the_hit_makes_it_historical(
    language: str, text: str, surface: str, use: str
) -> None:
    assert read(text, surface, language)[0] == use, text


def test_a_dated_heading_is_named_to_readers_by_its_year() -> None:
    # the cue stands in brackets in the decision's reasons: "(1911)", not "(1911:)"
    text = "Kew, August 1911: forty coolies landed from the steamer and were marched to the depot."
    assert read(text, "coolies") == ("historical", "1911")


def test_the_writers_agreement_after_a_quotation_or_a_report_makes_it_an_attack() -> None:
    assert read('The sticker on the lamp post says "gyppos out", and honestly it has a point.', "gyppos")[0] == "attack"
    assert read("The MP said on the radio that gyppos never pay tax, and I agree with him.", "gyppos")[0] == "attack"
    # agreement with someone else, in the next sentence, is not read as the writer's endorsement of a quotation
    text = 'He sprayed "gyppos out" on the shelter. The council has a point about cameras.'
    assert read(text, "gyppos")[0] == "quoted"


def test_a_dictionary_entry_names_the_word_and_praise_or_authorship_makes_a_quotation_the_writers() -> None:
    assert read("Nota per il glossario, voce terrone: da marcare come spregiativo.", "terrone", "it")[0] == "reported"
    assert read("Draft for the style guide, entry gyppo: mark as offensive.", "gyppo")[0] == "reported"
    text = 'Our MP on the radio last night: "no more gyppos in this town." Finally someone with a spine.'
    assert read(text, "gyppos")[0] == "attack"
    assert read("Biglietto scritto da me: «al terrone del terzo piano, auguri».", "terrone", "it")[0] == "attack"


@pytest.mark.parametrize(
    ("language", "text", "surface", "use"),
    [
        # the word handed back to the one who used it: "…, you call them"
        ("en", "Pikeys, you call them. My neighbours have run the same garage for thirty years.", "Pikeys", "reported"),
        (
            "de",
            "Kanaken, schreiben Sie. Meine Nachbarn führen seit dreißig Jahren dieselbe Werkstatt.",
            "Kanaken",
            "reported",
        ),
        # a quotation the writer made: the writer's own words
        ("en", 'I designed the flyer myself: "no pikeys past this gate". Printing two hundred.', "pikeys", "attack"),
        ("pt", "Criei um grupo chamado «ciganos fora do bairro» e já somos oitenta.", "ciganos", "attack"),
    ],
)
def test_the_readers_word_handed_back_is_reported_and_a_quotation_the_writer_made_is_theirs(
    language: str, text: str, surface: str, use: str
) -> None:
    assert read(text, surface, language)[0] == use, text


def test_a_frame_is_no_institution_and_a_stance_comes_first() -> None:
    # "according to my gran" is no institutional frame
    assert read("According to my gran, the gyppos down the lane steal bikes.", "gyppos")[0] == "attack"
    assert read("I'm not racist, but according to the police the gyppos did it.", "gyppos")[0] == "attack"


def test_a_catalogue_entry_counts_from_the_start_of_its_paragraph() -> None:
    text = (
        "Lot 88. Painted tin money box, c. 1920. A golliwog holding a coin slot, paint loss.\nSold to a private buyer."
    )
    assert read(text, "golliwog")[0] == "historical"
    assert read("Reply to lot 88. A golliwog on my doorstep again.", "golliwog")[0] == "attack"


def test_a_stance_never_turns_a_recognised_mention_into_an_attack() -> None:
    # "called me a" is a cue: the stance phrase does not overrule it
    assert read("I'm not racist, he said, and then called me a paki.", "paki")[0] == "reported"
    assert read('I still mean it: "spastic" is a word we should drop.', "spastic")[0] != "attack"


def test_a_lot_that_is_no_catalogue_entry_leaves_an_attack() -> None:
    assert read("A lot of golliwogs moved in next door.", "golliwogs")[0] == "attack"
    assert read("Lot of golliwogs in this town, 42 at least.", "golliwogs")[0] == "attack"


@pytest.mark.parametrize(
    ("language", "text", "surface", "cue"),
    [
        # issue 15: the slur is the word said, heard, thrown at someone or written somewhere
        ("en", "A stranger hissed faggot at my brother outside the cinema.", "faggot", "hissed"),
        ("en", "We came home to find wetback sprayed across the garage door.", "wetback", "sprayed across"),
        ("en", "My neighbour mutters something about kikes whenever the rabbi walks past.", "kikes", "mutters * about"),
        ("en", "The new kid got faggot hurled at him by half the stand.", "faggot", "hurled at"),
        ("fr", "Un supporter a craché bougnoule au défenseur pendant tout le match.", "bougnoule", "craché"),
        ("fr", "On a retrouvé bougnoule gravé sur la portière de sa voiture.", "bougnoule", "gravé"),
        ("fr", "Au collège, j'entendais pédé dans chaque couloir.", "pédé", "entendais"),
        ("el", "Ο γείτονας ψιθύρισε πούστη όταν περάσαμε από δίπλα του.", "πούστη", "ψιθυρισε"),
        ("el", "Βρήκαμε αλβανάρα γραμμένο στον τοίχο της αυλής.", "αλβανάρα", "γραμμενο"),
        ("el", "Μεγάλωσα ακούγοντας γύφτος από τους γείτονες.", "γύφτος", "ακουγοντας"),
        ("de", "Beim Derby hat ein Fan unserem Stürmer Schwuchtel zugerufen.", "Schwuchtel", "zugerufen"),
        ("de", "Jemand hatte Kanake in die Tür geritzt.", "Kanake", "geritzt"),
        ("de", "Der Nachbar flüsterte Kanake, als wir vorbeigingen.", "Kanake", "flüsterte"),
        ("nl", "Een supporter heeft de scheidsrechter flikker toegeroepen.", "flikker", "toegeroepen"),
        ("nl", "Iemand had kutmarokkaan op de voordeur gekalkt.", "kutmarokkaan", "gekalkt"),
        ("nl", "Op straat riepen ze steeds flikker naar mijn neef.", "flikker", "riepen ze"),
        ("it", "Durante la partita un tifoso urlava frocio al portiere.", "frocio", "urlava"),
        ("it", "Sul cancello della scuola abbiamo trovato terrone inciso con un coltello.", "terrone", "inciso"),
        ("it", "Da bambino sentivo terrone ogni giorno in cortile.", "terrone", "sentivo"),
        ("pt", "Na bancada berravam paneleiro ao guarda-redes.", "paneleiro", "berravam"),
        ("pt", "Encontrámos cigano riscado na porta do carro.", "cigano", "riscado"),
        ("pt", "O meu tio ouvia cigano em todas as obras.", "cigano", "ouvia"),
    ],
)
def test_verbs_of_uttering_hearing_and_inscribing_report_the_word(
    language: str, text: str, surface: str, cue: str
) -> None:
    use, found = read(text, surface, language)
    assert use == "reported"
    assert fold(found) == fold(cue)


@pytest.mark.parametrize(
    ("language", "text", "surface"),
    [
        # issue 15: the same verbs' neighbourhood without the word being said or written stays an attack:
        # an adjective in -ing, the slur as the one who shouts, a speech tag after an insult, "as they say"
        ("en", "A crowd of screaming faggots blocked the road again.", "faggots"),
        ("en", "That retard shouted at my kid again.", "retard"),
        ("en", "Filthy kike, he muttered under his breath.", "kike"),
        ("en", "Half the village still thinks of them as painted savages.", "savages"),
        ("en", "The farmer sprayed wetbacks with the hose when they crossed his field.", "wetbacks"),
        ("de", "Verpiss dich, Kanake, rief er über die Straße.", "Kanake"),
        ("de", "Den Kanaken gehört hier gar nichts.", "Kanaken"),
        ("de", "Überall brüllen Kanaken herum.", "Kanaken"),
        ("nl", "Vuile flikker, riep hij over het plein.", "flikker"),
        ("fr", "Le bougnoule qui a crié dans la rue m'a réveillé.", "bougnoule"),
        ("it", "Come dicevano i nonni, i terroni non cambiano mai.", "terroni"),
        ("pt", "Os ciganos gritaram a noite toda.", "ciganos"),
        ("el", "Ο πούστης φώναζε όλη νύχτα στο δρόμο.", "πούστης"),
    ],
)
def test_the_neighbourhood_of_verbs_of_uttering_stays_an_attack(language: str, text: str, surface: str) -> None:
    assert read(text, surface, language)[0] == "attack"


@pytest.mark.parametrize(
    ("language", "text", "surface", "use"),
    [
        ("en", "As dykes we have always had to find our own bars.", "dykes", "reclaimed"),
        ("de", "Als Schwuchteln auf dem Dorf haben wir früh gelernt zu schweigen.", "Schwuchteln", "reclaimed"),
        ("fr", "Comme gouines nous avons toujours dû trouver nos propres bars.", "gouines", "reclaimed"),
        ("it", "Come froci noi abbiamo sempre dovuto trovare i nostri locali.", "froci", "reclaimed"),
        ("pt", "Como fufas nós sempre tivemos de encontrar os nossos bares.", "fufas", "reclaimed"),
        # "as" that means "because", a comma before the pronoun, a pronoun too far, an article: no self-reference
        ("en", "As wetbacks keep coming we must build the wall.", "wetbacks", "attack"),
        ("de", "Als Kanaken hier einzogen, bin ich weggezogen.", "Kanaken", "attack"),
        ("fr", "Comme les bougnoules, je ne travaille jamais le dimanche.", "bougnoules", "attack"),
    ],
)
def test_as_x_we_is_a_self_reference(language: str, text: str, surface: str, use: str) -> None:
    assert read(text, surface, language)[0] == use


@pytest.mark.parametrize(
    ("language", "text", "surface"),
    [
        # "die" before a quotation is "those" only when it opens the sentence; inside one it is a relative pronoun
        ("nl", 'Ik zag de jongen die "flikkers" op de muur schreef.', "flikkers"),
        ("de", "Wir suchen den Mann, der „Kanaken“ an die Wand sprühte.", "Kanaken"),
        ("de", "Es war die „Kanaken“-Parole von damals, die uns alle erschreckte.", "Kanaken"),
    ],
)
def test_a_demonstrative_inside_a_sentence_leaves_a_quotation(language: str, text: str, surface: str) -> None:
    assert read(text, surface, language) == ("quoted", "quotation marks")


@pytest.mark.parametrize(
    ("language", "text", "surface", "use"),
    [
        # stop 25: another user's post quoted in a reply ("> " lines, [quote] blocks, "Dave wrote:") is quoted,
        # whatever its own words; the reply agreeing makes it the writer's attack too
        ("en", "> all the pikeys on our street should be moved on\nThat's a vile thing to write.", "pikeys", "quoted"),
        ("en", "> all the pikeys on our street should be moved on\nThis. Every word.", "pikeys", "attack"),
        ("en", "> all the pikeys on our street should be moved on\nThis is why I left the group.", "pikeys", "quoted"),
        ("en", "Dave wrote:\nall the pikeys on our street should be moved on\n\nReported.", "pikeys", "quoted"),
        ("en", "Dave wrote: the pikeys should be moved on. Couldn't agree more.", "pikeys", "attack"),
        ("en", "[quote=Dave]the pikeys should be moved on[/quote] Reported, mate.", "pikeys", "quoted"),
        ("en", "[quote=Dave]the pikeys should be moved on[/quote] Exactly, and soon.", "pikeys", "attack"),
        ("en", "On 3 May 2026 at 10:02, Dave Smith wrote:\n> the pikeys should go\nHow vile.", "pikeys", "quoted"),
        # the writer's own words, speech with a colon ("as grandad said:" endorses), and the reply's own words
        ("en", "I wrote: all the pikeys on our street should be moved on.", "pikeys", "attack"),
        ("en", "As my grandad said: the pikeys should be moved on.", "pikeys", "attack"),
        ("en", "> the council never listens\nBecause it's run by pikeys.", "pikeys", "attack"),
        ("fr", "Marc a écrit :\nles bougnoules dehors\nSignalé aux modérateurs.", "bougnoules", "quoted"),
        ("fr", "> les bougnoules dehors\nExactement.", "bougnoules", "attack"),
        ("de", "> Alle Zigeuner klauen, das weiß doch jeder.\nSo ein Unsinn, gemeldet.", "Zigeuner", "quoted"),
        ("de", "Horst schrieb:\nAlle Zigeuner klauen.\nSehe ich genauso.", "Zigeuner", "attack"),
        ("nl", "Citaat van Kees: alle zigeuners stelen. Wat een onzin.", "zigeuners", "quoted"),
        ("it", "Marco ha scritto:\ni terroni non hanno voglia di lavorare\nQuoto.", "terroni", "attack"),
        ("it", "Marco ha scritto:\ni terroni non hanno voglia di lavorare\nMa che dici?", "terroni", "quoted"),
        ("pt", "> os ciganos roubam tudo\nQue vergonha escrever isto.", "ciganos", "quoted"),
        ("el", "Ο Νίκος έγραψε:\nοι πούστηδες να φύγουν\nΑναφέρθηκε.", "πούστηδες", "quoted"),
        # "+1" agrees (its sign counts: "1." opening a list does not), and so does a quotation followed by praise
        ("en", "> the pikeys should go\n+1, and their vans too.", "pikeys", "attack"),
        ("en", "> the pikeys should go\n1. They are people. 2. Reported.", "pikeys", "quoted"),
        ("en", 'Dave wrote: "the pikeys should go." Couldn\'t have put it better, Dave.', "pikeys", "attack"),
        ("de", "> die Zigeuner sollen weg\nEndlich sagt's mal einer.", "Zigeuner", "attack"),
        ("it", "Marco ha scritto:\n> i terroni non lavorano\nQuoto tutto.", "terroni", "attack"),
    ],
)
def test_a_quoted_post_in_a_reply_is_quoted_unless_the_reply_agrees(
    language: str, text: str, surface: str, use: str
) -> None:
    assert read(text, surface, language)[0] == use


@pytest.mark.parametrize(
    ("language", "text", "surface", "use"),
    [
        # stop 25: the addressee's claim reported back to them ("@name you say that ...") is reported
        ("pt", "@tiago dizes que os ciganos roubam tudo, mas a padaria é deles há dez anos.", "ciganos", "reported"),
        ("it", "@marco dici che i terroni non lavorano: mio padre ha lavorato cinquant'anni.", "terroni", "reported"),
        ("el", "@takis λες ότι οι πούστηδες δεν παίζουν μπάλα: ο τερματοφύλακάς μας παίζει.", "πούστηδες", "reported"),
        # a moderator's sanction before the hit frames a report
        ("pt", "Três usuários suspensos: passaram o jogo chamando o juiz de boiola.", "boiola", "reported"),
        # a question to others of the writer's own group counts the writer in
        ("en", "Any other crips doing the school run on wheels?", "crips", "reclaimed"),
        # the usual "…": scare quotes predicated of people, not a quotation
        ("it", "Quelli del comitato sono i soliti «radical chic» col Rolex.", "radical chic", "attack"),
        ("pt", "Os da associação são a habitual «esquerda caviar» do bairro.", "esquerda caviar", "attack"),
    ],
)
def test_forum_talk_of_the_eleventh_set(language: str, text: str, surface: str, use: str) -> None:
    assert read(text, surface, language)[0] == use


@pytest.mark.parametrize(
    ("language", "text", "surface", "use"),
    [
        # stop 26: a capital the vocabulary does not write, inside an ordinary sentence: a group's own name
        ("en", "Derby results: the Wenches beat Sheffield 212 to 140 at home.", "Wenches", "reclaimed"),
        ("en", "Recruiting: Raging Fruitcakes, casual raids, late starts.", "Fruitcakes", "reclaimed"),
        ("fr", "Sortie du mardi pour le Club des Croulants : 37 km et trois tartes.", "Croulants", "reclaimed"),
        ("nl", "Fietsclub De Ouwe Lullen rijdt dinsdag weer 37 kilometer.", "Ouwe Lullen", "reclaimed"),
        ("de", "Am Dienstag sind die Alten Säcke vom Radtreff wieder weit gefahren.", "Alten Säcke", "reclaimed"),
        # a heading too short to judge, or one of nouns only, is no ordinary sentence
        ("en", "The Junkie", "Junkie", "attack"),
        # a capital at a sentence's start, after a colon, or in a title-case heading proves nothing
        ("en", "Wenches like her should stay in the kitchen.", "Wenches", "attack"),
        ("en", "Update: Fruitcakes everywhere on this thread again.", "Fruitcakes", "attack"),
        ("en", "Raging Fruitcakes Take Over The Council Again", "Fruitcakes", "attack"),
        # nor does one the vocabulary writes (German nouns), nor one of the categories capitalized in ordinary
        # writing (peoples, religions, parties)
        ("de", "Am Sonntag kicken die Betschwestern wieder nach der Messe.", "Betschwestern", "attack"),
        ("en", "Lovely hotel, ruined by a coachload of Krauts hogging every sunbed.", "Krauts", "attack"),
        # an attack cue nearer the hit still decides
        ("en", "Shut up, you Fruitcakes.", "Fruitcakes", "attack"),
    ],
)
def test_a_capital_the_vocabulary_does_not_write_names_a_group(
    language: str, text: str, surface: str, use: str
) -> None:
    assert read(text, surface, language)[0] == use


@pytest.mark.parametrize(
    ("language", "text", "surface", "use"),
    [
        # stop 26: someone else naming people with the word, in the clause before it, is a report
        ("en", "The coach called the new lads wetbacks in front of the whole squad.", "wetbacks", "reported"),
        ("it", "Il controllore ha dato dello zingaro a mio figlio davanti a tutti.", "zingaro", "reported"),
        ("pt", "O segurança chamou o meu filho de favelado na frente da fila toda.", "favelado", "reported"),
        # the writer naming, an impersonal joke, the writer's endorsement, or a clause break leave an attack
        ("en", "I called them wetbacks to their faces and I would again.", "wetbacks", "attack"),
        ("de", "Wie nennt man einen Kanaken mit Führerschein?", "Kanaken", "attack"),
        ("en", "My uncle is spot on when he calls them wetbacks.", "wetbacks", "attack"),
        ("en", "Mum called: the wetbacks next door are at it again.", "wetbacks", "attack"),
    ],
)
def test_someone_else_naming_people_with_the_word_is_a_report(language: str, text: str, surface: str, use: str) -> None:
    assert read(text, surface, language)[0] == use


@pytest.mark.parametrize(
    ("language", "text", "surface", "use"),
    [
        # stop 26, read from heldout10 and heldout13: the writer is the one named, or names their own group
        ("en", "Third month on nights and I am still the paki of the warehouse to the foreman.", "paki", "reclaimed"),
        ("it", "Siamo due terroni di Lecce in cerca di una stanza vicino al Politecnico.", "terroni", "reclaimed"),
        ("it", "terroni miei, sabato grigliata da me e ognuno porta qualcosa.", "terroni", "reclaimed"),
        ("pt", "minhas bichas, sexta tem jantar lá em casa e ninguém falta.", "bichas", "reclaimed"),
        ("el", "πούστηδες μου, το Σάββατο πάμε για μπάνιο στη Βάρκιζα.", "πούστηδες", "reclaimed"),
        # someone else's naming with the verb at the clause's end, or the speaker named after the word
        ("de", "Der Nachbar hat den Jungen vom dritten Stock vor allen einen Kanaken genannt.", "Kanaken", "reported"),
        ("nl", "Het was de trainer die onze keeper een mongool noemde.", "mongool", "reported"),
        ("it", "Terrone, gli ha detto il controllore davanti a tutta la carrozza.", "Terrone", "reported"),
        ("fr", "Il a passé la soirée à raconter que les voisins étaient des bougnoules.", "bougnoules", "reported"),
        # an old magazine is an old source
        ("fr", "La revue de 1925 traite les habitants de nègres dans la légende.", "nègres", "historical"),
        # a chant the writer sang is the writer's own words
        ("en", 'We chanted "pikey scum" for ninety minutes and we will again on Saturday.', "pikey", "attack"),
    ],
)
def test_shapes_read_from_the_tenth_and_thirteenth_sets(language: str, text: str, surface: str, use: str) -> None:
    assert read(text, surface, language)[0] == use


@pytest.mark.parametrize(
    ("language", "text", "surface", "use"),
    [
        # quote pairs: „…" (a German low mark closed by a straight one)
        (
            "de",
            'Auf dem Zettel am Spind stand „Kanaken raus" in Filzstift, die Schulleitung ermittelt.',
            "Kanaken",
            "quoted",
        ),
        ("nl", 'Op de deur van het kantoor stond „mongolen" met stift, de politie is gebeld.', "mongolen", "quoted"),
        # the speaker vouched for after a report or a quotation: an attack
        (
            "en",
            "My uncle says the pikeys on the common nick everything. He knows what he's talking about.",
            "pikeys",
            "attack",
        ),
        (
            "fr",
            "Mon voisin dit que les romanichels du terrain volent tout. Il sait de quoi il parle.",
            "romanichels",
            "attack",
        ),
        (
            "nl",
            "Mijn buurman zegt dat de zigeuners op het veld alles stelen. Die kan het weten.",
            "zigeuners",
            "attack",
        ),
        ("el", "Ο θείος μου λέει ότι οι γύφτοι του καταυλισμού κλέβουν. Δίκιο έχει.", "γύφτοι", "attack"),
        (
            "de",
            '„Der Stadtrat nannte die Neuen Wirtschaftsflüchtlinge." Treffender geht es nicht.',
            "Wirtschaftsflüchtlinge",
            "attack",
        ),
        # "I'm only repeating what they say" is the writer's stance
        (
            "fr",
            "Je ne fais que répéter ce qu'on dit au marché : ce sont des romanichels, il faut fermer à clé.",
            "romanichels",
            "attack",
        ),
        # a post opening with the hit, then the writer's place or age
        (
            "en",
            "Old crone here, seventy-nine, and the bus cuts mean I cannot get to the surgery.",
            "Old crone",
            "reclaimed",
        ),
        ("nl", "Ouwe taart, 74, Deventer. Zoekt iemand om mee te wandelen op zondag.", "Ouwe taart", "reclaimed"),
        ("it", "Terrone a Milano dal 2011, e il bus notturno non passa mai.", "Terrone", "reclaimed"),
        ("pt", "Sapatona de 45 anos, Braga, à procura de companhia para caminhadas.", "Sapatona", "reclaimed"),
        # the same word opening a sentence that goes on about others stays an attack
        ("en", "Pikeys, 20 of them, camped on the rec again last night.", "Pikeys", "attack"),
        ("en", "Old crones here always moan about the buses.", "Old crones", "attack"),
        # words in capitals written on a wall or a sign are copied: quoted; the writer's own sign stays an attack
        ("en", "Someone has sprayed NO PIKEYS on the wall of the chip shop overnight.", "PIKEYS", "quoted"),
        ("fr", "Quelqu'un a tagué DEHORS LES GITANS sur la porte du gymnase.", "GITANS", "quoted"),
        ("it", "FROCI VIA, scritto col pennarello sul muro della palestra.", "FROCI", "quoted"),
        ("en", "I painted NO PIKEYS on my gate and it stays.", "PIKEYS", "attack"),
        ("en", "NO PIKEYS, NO TRAVELLERS, we have had enough of them on this estate.", "PIKEYS", "attack"),
        # an old directory, a compound that names a register, a year of the 1970s
        (
            "en",
            "The 1902 trade directory lists a mission to the Mohammedans of the docks.",
            "Mohammedans",
            "historical",
        ),
        ("de", "Im Armenhausregister von 1851 stehen viele als Landstreicher.", "Landstreicher", "historical"),
        ("nl", "De raadsnotulen van 1971 noemen de zigeuners aan de Dijkweg.", "zigeuners", "historical"),
        # someone else naming people a few words away, with more verbs; a quoted report agreed with; the word denied
        ("en", "At the meeting the councillor called the new families a bunch of tinkers.", "tinkers", "reported"),
        # the demo's old example sentence: a report of the minister's naming, found by the browser tests
        (
            "en",
            "The minister called every single mother on benefits a welfare queen who has never worked a day.",
            "welfare queen",
            "reported",
        ),
        (
            "en",
            "Every single mother on benefits is a welfare queen who has never worked a day.",
            "welfare queen",
            "attack",
        ),
        ("fr", "Les supporters traitaient notre gardien de macaque à chaque arrêt.", "macaque", "reported"),
        ("pt", "O treinador teria chamado os juniores de mariquinhas no balneário.", "mariquinhas", "reported"),
        ("el", "Ο προπονητής είπε τα παιδιά γυναικούλες μετά την ήττα.", "γυναικούλες", "reported"),
        ("it", "Il bidello ha detto ritardato a Luca davanti alla classe.", "ritardato", "reported"),
        (
            "en",
            '"The residents called the newcomers cockroaches at the meeting." Spot on, for once.',
            "cockroaches",
            "attack",
        ),
        (
            "fr",
            "Personne dans notre club n'est un infirme, nous sommes des joueurs en fauteuil.",
            "infirme",
            "reported",
        ),
        (
            "de",
            "Niemand in unserem Verein ist ein Invalide, wir fahren Rollstuhl und spielen Basketball.",
            "Invalide",
            "reported",
        ),
    ],
)
def test_shapes_read_from_the_fourteenth_and_fifteenth_sets(language: str, text: str, surface: str, use: str) -> None:
    assert read(text, surface, language)[0] == use


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"self_reference": {"as": ["as"], "first_person": ["i"], "opening": ["here"]}}, "expected a mapping with"),
        ({"self_reference": {"as": ["as"], "first_person": ["i"], "opening": {"ages": ["since"]}}}, "number mark #"),
        ({"sources": {"documents": ["register"], "compounds": "yes"}}, "compounds: 'yes' is not true or false"),
        ({"inscriptions": "sprayed"}, "inscriptions: expected a list of phrases"),
    ],
)
def test_bad_rules_of_stop_27_are_refused_with_the_reason(data: dict, message: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(UseRulesError, match=message):
        UseRules.from_dict(data, "en", "use.yaml")


def test_a_sentence_start_cue_is_read_from_the_rules() -> None:
    rules = UseRules.from_dict({"quotes": ['""'], "attack_before_quote": ["^those"]}, "en")
    hits = [h for h in detector_for("en").detect('Those "kikes" again.', "en").hits]
    assert rules.read('Those "kikes" again.', hits[0]).use == "attack"
    hits = [h for h in detector_for("en").detect('I hate those "kikes" posts.', "en").hits]
    assert rules.read('I hate those "kikes" posts.', hits[0]).use == "quoted"


def test_the_word_named_as_the_one_to_replace_is_reported() -> None:
    text = "Please write Mexican workers instead of wetbacks in the minutes."
    assert read(text, "wetbacks") == ("reported", "write * instead of")
    # without a verb of wording, "instead of" names people, not a word
    assert read("We should hire locals instead of wetbacks.", "wetbacks")[0] == "attack"


def test_a_slur_after_do_not_call_me_is_still_an_attack() -> None:
    text = "Don't call me a faggot, you faggot."
    hits = [h for h in detector_for("en").detect(text, "en").hits if h.surface == "faggot"]
    readings = USE_DETECTOR.read(text, hits, "en")
    assert [readings[h.id].use for h in sorted(hits, key=lambda h: h.start)] == ["reported", "attack"]


def test_an_undecided_hit_keeps_its_rules_reading_when_no_rules_exist(tmp_path: Path) -> None:
    (tmp_path / "en").mkdir()
    hits = detector_for("en").detect("We queers are here.", "en").hits
    assert {r.use for r in UseDetector(tmp_path).read("We queers are here.", hits, "en").values()} == {"attack"}


# -- analyses -------------------------------------------------------------------------------------------
def of(events: Sequence[Event], kind: type) -> list:  # type: ignore[type-arg]
    return [e for e in events if isinstance(e, kind)]


@pytest.fixture(scope="module")
def vocabulary_only() -> Analyzer:
    return Analyzer(detector_for("en"))


async def test_a_quoted_slur_is_explained_not_flagged(vocabulary_only: Analyzer) -> None:
    text = 'My grandfather was called a "wetback" at work for thirty years. Please stop posting that word.'
    events = await vocabulary_only.collect(text, "en")
    (hit,) = of(events, HitFound)
    assert hit.to_dict()["use"] == "quoted" and hit.to_dict()["use_cue"] == "quotation marks"
    (verdict,) = of(events, Verdict)
    assert verdict.status == "contentious" and verdict.to_dict()["use"] == "quoted"
    (decision,) = of(events, Decision)
    assert decision.label == "not_flagged" and decision.severity == "none" and decision.categories == ()
    assert decision.to_dict()["uses"] == ["quoted"]
    assert any("“wetback” is quoted" in r and "not held against the author" in r for r in decision.reasons)
    (explanation,) = of(events, Explanation)
    assert explanation.text.startswith("“wetback” is quoted here, not used against anyone")
    assert "Mexican" in explanation.text  # still explained: what the word means and what to say instead


async def test_an_attack_stays_flagged(vocabulary_only: Analyzer) -> None:
    events = await vocabulary_only.collect("Get out of my shop, you wetback.", "en")
    (decision,) = of(events, Decision)
    assert decision.label == "flagged" and "uses" not in decision.to_dict()
    assert of(events, Verdict)[0].to_dict()["use"] == "attack"


async def test_a_reclaimed_ambiguous_word_stays_undetermined_but_is_not_sent_to_review(
    vocabulary_only: Analyzer,
) -> None:
    events = await vocabulary_only.collect("We queers have been organising here since the eighties.", "en")
    (verdict,) = of(events, Verdict)
    assert verdict.status == "undetermined" and verdict.use == "reclaimed"  # honest: nothing decided its sense
    (decision,) = of(events, Decision)
    assert decision.label == "not_flagged" and decision.confidence >= 0.5
    # named in the reasons, honestly undecided; no "About this word" is offered for a sense nothing decided
    assert (
        "“queers” could not be decided, and is used by the author about their own group (reclaimed) (we)"
        in (decision.reasons[0])
    )
    assert decision.uses == ()


async def test_an_undecided_attack_still_goes_to_review_with_its_group(vocabulary_only: Analyzer) -> None:
    events = await vocabulary_only.collect("faggots everywhere", "en")
    (verdict,) = of(events, Verdict)
    assert verdict.status == "undetermined" and verdict.decided_by == "vocabulary"  # never "neutral"
    (decision,) = of(events, Decision)
    assert decision.label == "needs_review" and decision.categories == ("sexual-orientation",)


async def test_the_target_groups_are_those_of_every_contentious_or_undecided_hit(vocabulary_only: Analyzer) -> None:
    events = await vocabulary_only.collect("Those kikes, wetbacks and faggots should leave.", "en")
    (decision,) = of(events, Decision)
    assert decision.label == "flagged"
    assert set(decision.categories) == {"religion", "ethnicity", "migration-colonial-past", "sexual-orientation"}


@pytest.mark.parametrize("disguised", ["f4gg0ts", "f@ggots", "f a g g o t s"])
async def test_disguised_spellings_take_the_slur_s_path(vocabulary_only: Analyzer, disguised: str) -> None:
    events = await vocabulary_only.collect(f"{disguised} everywhere", "en")
    (hit,) = of(events, HitFound)
    assert hit.hit.obfuscated and hit.hit.ambiguous
    (verdict,) = of(events, Verdict)
    assert (verdict.status, verdict.decided_by) == ("contentious", "disguise")
    (decision,) = of(events, Decision)
    assert decision.label == "flagged" and decision.confidence > 0
    # a disguised slur that is reported is still a mention
    events = await vocabulary_only.collect(f"He called me a {disguised} in front of everyone.", "en")
    assert of(events, Decision)[0].label == "not_flagged"


async def test_repeated_letters_alone_are_no_disguise(vocabulary_only: Analyzer) -> None:
    events = await vocabulary_only.collect("faaaggots everywhere", "en")
    (verdict,) = of(events, Verdict)
    assert verdict.status == "undetermined"


def _model_says(verdict: str) -> ScriptedLLMBackend:
    def answer(messages: Sequence[Message]) -> str:
        if stage_of(messages) == "disambiguation":
            return (
                f"<reasoning>read it</reasoning><verdict>{verdict}</verdict>"
                "<explanation>The word is used here against the people it names.</explanation>"
            )
        return default_answer(messages)

    return ScriptedLLMBackend(answer)


async def test_a_model_that_judges_the_use_contentious_overrules_the_rules() -> None:
    analyzer = Analyzer(detector_for("en"), BackendRouter(_model_says("contentious")), cache=MemoryCache())
    events = await analyzer.collect('He wrote "faggot" and meant every letter of it.', "en", mode="thorough")
    assert of(events, HitFound)[0].use == "quoted"  # what the rules read, sent before any model answer
    (verdict,) = of(events, Verdict)
    assert verdict.use == "attack" and verdict.use_cue == "judged by scripted:test"
    assert of(events, Decision)[0].label == "flagged"


async def test_a_neutral_model_verdict_keeps_the_rules_reading() -> None:
    analyzer = Analyzer(detector_for("en"), BackendRouter(_model_says("neutral")), cache=MemoryCache())
    events = await analyzer.collect('He wrote "faggot" on the wall.', "en", mode="thorough")
    (verdict,) = of(events, Verdict)
    assert (verdict.status, verdict.use) == ("neutral", "quoted")
    assert of(events, Decision)[0].label == "not_flagged"


def test_a_flagging_term_free_check_still_flags_a_text_with_a_mention() -> None:
    hits = detector_for("en").detect('They called me a "wetback".', "en").hits
    verdicts = {hits[0].id: Verdict(hits[0].id, "contentious", 0.9, "", "vocabulary", use="reported")}
    targeting = Targeting("hateful", ("ethnicity",), "attacks migrants", confidence=0.8)
    decision = decide(hits, verdicts, targeting, threshold=0.5)
    assert decision.label == "flagged" and decision.categories == ("ethnicity",)
    assert any("is reported" in r for r in decision.reasons)


def test_old_verdict_payloads_read_as_attacks() -> None:
    # a stored stream from before uses existed has no "use": Verdict's default keeps the old meaning
    assert Verdict("h1", "contentious", 0.9, "", "vocabulary").to_dict()["use"] == "attack"


async def test_with_a_model_a_quoted_unambiguous_slur_is_explained_with_its_use() -> None:
    # fast mode: the unambiguous hit is decided by the vocabulary, its use by the rules; the model checks the text
    analyzer = Analyzer(detector_for("en"), BackendRouter(_model_says("contentious")), cache=MemoryCache())
    events = await analyzer.collect('They called me a "wetback" at school for years.', "en")
    (verdict,) = of(events, Verdict)
    assert (verdict.status, verdict.decided_by, verdict.use) == ("contentious", "vocabulary", "quoted")
    assert of(events, Decision)[0].label == "not_flagged"
    (explanation,) = of(events, Explanation)
    assert explanation.text.startswith("“wetback” is quoted here, not used against anyone")


def test_cues_looked_up_by_their_word_next_to_the_hit_are_the_cues_that_reach_it() -> None:
    """UseRules indexes its cues by the word nearest the hit (engine.uses, `_cues_before` and `_cues_after`); every
    corpus hit must meet exactly the cues found by asking each cue in turn, at the same distance."""
    from engine.uses import AFTER_GAP, _distance_before, _sentence_end, _sentence_start, _words

    compared = 0
    for language in LANGUAGES:
        rules = USE_DETECTOR.rules(language)
        assert rules is not None
        for path in sorted((CORPORA / language).glob("*.yaml")):
            for sentence in yaml.safe_load(path.read_text(encoding="utf-8"))["sentences"]:
                text = sentence["text"]
                for hit in detector_for(language).detect(text, language).hits:
                    before = _words(text[_sentence_start(text, hit.start) : hit.start])
                    after = _words(text[hit.end : _sentence_end(text, hit.end)])
                    expected_before = set()
                    for cue in rules.before:
                        distance = _distance_before(before, cue, rules.gap)
                        if distance is not None:
                            expected_before.add((distance, cue))
                    expected_after = set()
                    for cue in rules.after:
                        reach = AFTER_GAP + 1 if cue.gap else 1
                        at = next((d for d in range(reach) if tuple(after[d : d + len(cue.words)]) == cue.words), None)
                        if at is not None:
                            expected_after.add((at, cue))
                    found_before = rules._cues_before(before)
                    nearest_after = {}
                    for distance, cue in rules._cues_after(after):
                        nearest_after.setdefault(cue, distance)
                    assert {(d, c) for d, c in found_before if d == min(x for x, y in found_before if y == c)} == (
                        expected_before
                    ), text
                    assert {(d, c) for c, d in nearest_after.items()} == expected_after, text
                    compared += 1
    assert compared > 2000


@pytest.mark.parametrize(
    ("language", "text", "surface", "use"),
    [
        # the writer signing a notice with the word, at the post's start or after its short heading
        (
            "it",
            "Avviso: la nana del secondo piano chiede gentilmente di lasciare la scala qui, io non ci arrivo.",
            "nana",
            "reclaimed",
        ),
        (
            "pt",
            "A velhota da receção despede-se: trinta anos depois, vou para a reforma e levo o meu agrafador.",
            "velhota",
            "reclaimed",
        ),
        (
            "el",
            "Ο γεροξεκούτης του τμήματος σας χαιρετά, από Δευτέρα είμαι συνταξιούχος, να μου είστε καλά.",
            "γεροξεκούτης",
            "reclaimed",
        ),
        (
            "en",
            "The old crone from payroll says goodbye: after thirty years I am off on Friday.",
            "old crone",
            "reclaimed",
        ),
        ("it", "La nana del secondo piano non sa mai dove ha messo le chiavi.", "nana", "attack"),
        # the writer in a parenthesis right after the word; a parenthesis about others is no such thing
        (
            "en",
            "The two old queens of the box office (yes, that's me and Dev) are on the door tonight.",
            "queens",
            "reclaimed",
        ),
        (
            "de",
            "Die zwei alten Tunten vom Empfang (hallo, das sind Jan und ich) machen heute zu.",
            "Tunten",
            "reclaimed",
        ),
        ("en", "The two old queens of the box office (the ones by the bins) should be sacked.", "queens", "attack"),
        # an introduction: "I'm <name>, …, <word>"; without the name it is no introduction
        ("en", "Hi all, I'm Tomasz, third year, resident autist of the maths building.", "autist", "reclaimed"),
        ("fr", "Salut, moi c'est Léa, master de bio, binoclarde en chef du labo.", "binoclarde", "reclaimed"),
        ("en", "Hi all, I'm tired, third year, and the autist in my lab keeps humming.", "autist", "attack"),
        # the writer owning the word, and the writer's past
        ("it", "Sono Gino, frocio dichiarato dal 1999, e vi aspetto al circolo.", "frocio", "reclaimed"),
        ("pt", "Eu, aleijada com orgulho, pedi a rampa outra vez.", "aleijada", "reclaimed"),
        ("el", "Ήμουν πρεζάκιας δέκα χρόνια, τώρα δουλεύω στο κέντρο.", "πρεζάκιας", "reclaimed"),
        ("it", "Perché sono un ex drogato e so cosa vuol dire.", "drogato", "reclaimed"),
        # who said it, after the reported words; a German report in the subjunctive; a report with no "that"
        ("fr", "Le chauffeur ne voulait pas de romanichels dans son car, d'après lui.", "romanichels", "reported"),
        ("de", "Der Fahrer nehme keine Zigeuner mit, hat er gesagt.", "Zigeuner", "reported"),
        ("de", "Sie wurde abgelehnt, weil sie ein Kopftuchmädchen sei.", "Kopftuchmädchen", "reported"),
        ("en", "The guy at the back said the new tutor only got hired because she's a token dyke.", "dyke", "reported"),
        ("en", "I said the new tutor only got hired because she's a token dyke.", "dyke", "attack"),
        # an attack cue inside someone else's reported clause is theirs
        ("it", "Collega, hai scritto che Luca è un mongoloide nel verbale: va corretto.", "mongoloide", "reported"),
        ("pt", "Colega, escreveste que a Rita é surda-muda, mas ela fala.", "surda-muda", "reported"),
        # the writer named far from the naming verb ("nennt mich … die alte Schachtel")
        (
            "de",
            "Seit Mai nennt mich der Schichtleiter vor allen Neuen im Lager nur noch die alte Schachtel.",
            "alte Schachtel",
            "reported",
        ),
        ("nl", "Sinds mei noemt mijn chef mij waar iedereen bij staat steeds de ouwe taart.", "ouwe taart", "reported"),
        # a report agreed with two sentences later, a quotation the writer still stands by
        (
            "en",
            'The supervisor said the new starters are "scroungers on a day out". Harsh, right? Watch them for an hour'
            " and tell me he's wrong.",
            "scroungers",
            "attack",
        ),
        ("it", "Il capo in riunione: «alla cassa non voglio negre». Brutale, ma ha ragione.", "negre", "attack"),
        (
            "en",
            'The minutes say I "referred to a colleague as a fat cow". I did, and I\'d say it again.',
            "fat cow",
            "attack",
        ),
        (
            "de",
            "Im Protokoll steht, ich hätte „eine Kollegin als Schlampe bezeichnet“. Ja, und ich würd's wieder sagen.",
            "Schlampe",
            "attack",
        ),
        ("en", '"Stop calling people pikeys", I wrote under the post. I stand by it.', "pikeys", "quoted"),
        # an old rule book, copied writing on a whiteboard
        ("fr", "Règlement de 1908 de l'hospice : les aliénés sont comptés chaque soir.", "aliénés", "historical"),
        (
            "en",
            "Someone left a message on the staffroom whiteboard: NO POOFS IN THE CHOIR. It was wiped.",
            "POOFS",
            "quoted",
        ),
    ],
)
def test_shapes_read_from_the_sixteenth_set(language: str, text: str, surface: str, use: str) -> None:
    assert read(text, surface, language)[0] == use


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"self_reference": {"opening": {"signs": "says goodbye"}}}, "signs: expected a list of phrases"),
        ({"self_reference": {"aside": "me"}}, "aside"),
        ({"self_reference": {"as": ["as"], "first_person": ["i"], "introductions": [""]}}, "introductions"),
        ({"speech": {"verbs": ["said"], "that": ["that"], "subjects": 3}}, "subjects"),
    ],
)
def test_bad_rules_of_stop_28_are_refused_with_the_reason(data: dict, message: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(UseRulesError, match=message):
        UseRules.from_dict(data, "en", "use.yaml")


@pytest.mark.parametrize(
    ("language", "text", "surface", "use"),
    [
        # a report with no "that" after the one told; its subject needs words before the hit
        ("en", "Last time the farmer told Jan he didn't want a load of lezzies on his field.", "lezzies", "reported"),
        ("de", "Der Bauer hat zu Jana gesagt, er wolle keine Lesben auf seiner Wiese.", "Lesben", "reported"),
        ("de", "Der Typ sagt zu seinem Kumpel, ich sei der Spacko aus der Klinik.", "Spacko", "reported"),
        # an attack cue far inside someone else's reported clause is still theirs
        (
            "fr",
            "Le fermier a dit à Jeanne qu'il ne voulait pas d'une bande de gouines dans son pré.",
            "gouines",
            "reported",
        ),
        # the word as the kindest of what was said; shouted at the writer
        ("it", "Parlava dei pazienti del giovedì, e pezzenti era la parola più gentile.", "pezzenti", "reported"),
        ("it", "Un contadino ci ha urlato dietro terroni perché il cancello era aperto.", "terroni", "reported"),
        # the writer's group signing a notice in the plural, and an age after the word
        (
            "el",
            "Οι μούμιες της υδρογυμναστικής σας ενημερώνουν ότι την Παρασκευή κερνάμε τσάι, φέρνω εγώ το γλυκό.",
            "μούμιες",
            "reclaimed",
        ),
        ("en", "About me: old fart of 52, happiest with a flask and a map.", "old fart", "reclaimed"),
        # the word taken up from a quotation just before it
        (
            "pt",
            "Ouvi a enfermeira dizer: «o velhote da cama 4 que espere». O velhote da cama 4 é o meu pai.",
            "velhote",
            "quoted",
        ),
        # a page of the old source named in the sentence before
        (
            "en",
            "A 1936 walkers' guide to the dale. Page 40 says the yokels will point the way.",
            "yokels",
            "historical",
        ),
        (
            "de",
            "Ein Reiseführer von 1936. Auf Seite 12 warnt er vor jedem Landstreicher am Bahnhof.",
            "Landstreicher",
            "historical",
        ),
        ("en", "A walkers' guide to the dale. Page 40 says the yokels will point the way.", "yokels", "attack"),
        # agreement: "she wasn't wrong", "dat hij gelijk had", "falou a verdade"; "only passing on what …"
        (
            "en",
            "[quote=Mandy]the nurse said the man in bed two was just a crackhead[/quote]\nShe wasn't wrong. He stank.",
            "crackhead",
            "attack",
        ),
        (
            "nl",
            "Mijn opa zei altijd dat de kaaskoppen gierig waren, en ik denk dat hij gelijk had.",
            "kaaskoppen",
            "attack",
        ),
        (
            "pt",
            "O médico disse que o meu irmão é um cachaceiro. Pela primeira vez alguém falou a verdade.",
            "cachaceiro",
            "attack",
        ),
        ("pt", "Só repassando o que a professora falou: o aluno novo é débil mental.", "débil mental", "attack"),
    ],
)
def test_shapes_read_from_the_seventeenth_set(language: str, text: str, surface: str, use: str) -> None:
    assert read(text, surface, language)[0] == use


def test_a_bad_pages_list_is_refused_with_the_reason() -> None:
    with pytest.raises(UseRulesError, match=r"sources\.pages: expected a list of phrases"):
        UseRules.from_dict({"sources": {"documents": ["guide"], "pages": "page"}}, "en", "use.yaml")


def test_an_echo_repeats_the_quoted_words_not_the_word_alone() -> None:
    """stop 28, tried as a hostile writer would: the word alone taken up after a quotation is the writer's own."""
    text = 'The sign said "no pikeys". The pikeys came anyway and wrecked the field.'
    hits = [h for h in detector_for("en").detect(text, "en").hits if h.surface == "pikeys"]
    readings = USE_DETECTOR.read(text, hits, "en")
    assert [readings[h.id].use for h in hits] == ["quoted", "attack"]
    text = 'The nurse said: "the old crone in bed 4 can wait". The old crone in bed 4 is my mother.'
    hits = [h for h in detector_for("en").detect(text, "en").hits if h.surface == "old crone"]
    readings = USE_DETECTOR.read(text, hits, "en")
    assert [(readings[h.id].use, readings[h.id].cue) for h in hits][1] == ("quoted", "echoes the quotation")


@pytest.mark.parametrize(
    ("language", "text", "surface"),
    [
        # stop 28, each new reclaimed shape tried as a hostile writer would: the writer is not one of those named
        ("en", "The faggot next door kindly asks us to stop parking there. What a joke.", "faggot"),
        ("it", "La nana del terzo piano chiede gentilmente di non fare rumore. Ma chi si crede di essere?", "nana"),
        ("en", "The pikeys on the common (I saw them myself) nicked three bikes.", "pikeys"),
        ("en", "Those faggots (me and my mates call them that) should be banned.", "faggots"),
        ("en", "I'm Dave, 45, and faggots disgust me.", "faggots"),
        ("en", "Hi, I'm Dave, proud Brit, faggots out.", "faggots"),
        ("it", "Quel frocio dichiarato del vicino fa schifo.", "frocio"),
        ("pt", "Aquela bicha assumida da esquina é um nojo.", "bicha"),
    ],
)
def test_the_new_reclaimed_shapes_leave_a_hostile_writers_words_an_attack(
    language: str, text: str, surface: str
) -> None:
    assert read(text, surface, language)[0] == "attack"


@pytest.mark.parametrize(
    ("language", "text", "surface", "use"),
    [
        # stop 29: the speaker praised for saying it, after a report ("he's the only one talking sense")
        (
            "en",
            "The bouncer told my cousin the whole queue were pikeys, and he's the only one on that door talking sense.",
            "pikeys",
            "attack",
        ),
        (
            "de",
            "Der Trainer hat gesagt, die halbe Mannschaft seien Kanaken, und ehrlich, der Mann redet Klartext.",
            "Kanaken",
            "attack",
        ),
        # agreement with one or two words inside it ("heeft die ouwe gelijk", "hat der Mann recht")
        (
            "nl",
            "Mijn oom noemt ze de kutmarokkanen van de overkant, en voor één keer heeft die ouwe gelijk.",
            "kutmarokkanen",
            "attack",
        ),
        ("de", "Mein Nachbar sagt, die Kanaken klauen, und der Mann hat recht.", "Kanaken", "attack"),
        # asked to stop passing it on
        (
            "en",
            "Mum, please stop forwarding those migrant invasion clips to the group.",
            "migrant invasion",
            "reported",
        ),
        (
            "fr",
            "Papa, arrête de partager ces vidéos sur le grand remplacement, s'il te plaît.",
            "grand remplacement",
            "reported",
        ),
        # a greeting, the writer's name and age; a title naming the writer, then the writer after its colon
        ("de", "Hallo! Sven, 33, typischer Ossi aus Cottbus, ich spiele Bass in der Band.", "Ossi", "reclaimed"),
        (
            "en",
            "Diary of an old fart, week two at the climbing wall: I can now reach the blue hold.",
            "old fart",
            "reclaimed",
        ),
        ("it", "Per dieci anni sono stato il terrone dello spogliatoio.", "terrone", "reclaimed"),
        # reports: a naming verb with words between it and "de", a gerund of saying, a warning
        ("fr", "Un supporter adverse l'a traité trois fois de bougnoule pendant le match.", "bougnoule", "reported"),
        ("el", "Ο πορτιέρης μας έδιωξε λέγοντας ότι η πλέμπα δεν μπαίνει στο VIP.", "πλέμπα", "reported"),
    ],
)
def test_shapes_read_from_the_eighteenth_set(language: str, text: str, surface: str, use: str) -> None:
    assert read(text, surface, language)[0] == use


@pytest.mark.parametrize(
    ("language", "text", "surface"),
    [
        # stop 29, each new shape tried as a hostile writer would
        ("en", "Hi Tom, you absolute faggot.", "faggot"),
        ("de", "Hallo! Peter, 45, typischer Kanake aus Neukölln, klaut alles.", "Kanake"),
        ("en", "Diary of a gypsy: he stole my bike again.", "gypsy"),
        ("en", "Stop sharing our country with scroungers.", "scroungers"),
        ("en", "I was the target of gypsies last night.", "gypsies"),
        ("it", "Sono la feccia, gli zingari.", "zingari"),
        ("pt", "Ele era o pior dos ciganos.", "ciganos"),
        ("de", "Jeder Mensch hat das Recht, die Kanaken zu hassen.", "Kanaken"),
        ("en", "My people are sick of gypsies.", "gypsies"),
    ],
)
def test_the_shapes_of_stop_29_leave_a_hostile_writers_words_an_attack(language: str, text: str, surface: str) -> None:
    assert read(text, surface, language)[0] == "attack"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"self_reference": {"opening": {"titles": ["diary of a"]}}}, "titles: needs the list writer"),
        ({"self_reference": {"greetings": "hi"}}, "greetings: expected a list of phrases"),
        ({"agreement": ["*"]}, "agreement: a phrase has no word"),
    ],
)
def test_bad_rules_of_stop_29_are_refused_with_the_reason(data: dict, message: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(UseRulesError, match=message):
        UseRules.from_dict(data, "en", "use.yaml")


@pytest.mark.parametrize(
    ("language", "text", "surface", "use"),
    [
        # stop 29: a quoted post or a quotation agreed with in other words ("nothing to add", "μεγάλα λόγια")
        (
            "en",
            "[quote=Gaz]their keeper is a proper poof[/quote]\nFirst true thing you've posted. Watch him dive.",
            "poof",
            "attack",
        ),
        ("fr", "Le président du club : « des tapettes, tous ». Rien à ajouter, président.", "tapettes", "attack"),
        ("el", "Ο προπονητής: «δεν θέλω γυναικούλες στην άμυνα». Μεγάλα λόγια, κόουτς.", "γυναικούλες", "attack"),
        (
            "pt",
            "O porteiro diz que a pretalhada não entra no bar. Está certo, devia ser em todo o lado.",
            "pretalhada",
            "attack",
        ),
        # asked to stop calling someone by the word, in the first person plural too
        ("en", "can we stop calling the new drummer the retard, even as a joke?", "retard", "reported"),
        ("fr", "on peut arrêter d'appeler Léo l'autiste à chaque fausse note ?", "autiste", "reported"),
        # the word said or sung by someone else; the writer's team named by it; "the … who … was me"
        ("en", "A lad on the terrace yelled something about poofs and got thrown out.", "poofs", "reported"),
        ("pt", "Somos os farofeiros do campeonato e jogamos às quintas.", "farofeiros", "reclaimed"),
        ("it", "Il terrone che ti ha offerto il caffè in trasferta ero io.", "terrone", "reclaimed"),
        # a title before a name does not end the sentence; a page in the third word; an old songbook; „…“ in Dutch
        ("pt", "O treinador chamou o Sr. Abílio de maricas à frente de todos.", "maricas", "reported"),
        (
            "el",
            "Βρήκαμε ένα τετράδιο του 1975. Στη δεύτερη σελίδα είναι ένα σύνθημα για τους κουκουέδες.",
            "κουκουέδες",
            "historical",
        ),
        ("de", "Im Liederheft von 1952 steht eine Strophe über die Polacken von der Zeche.", "Polacken", "historical"),
        ("nl", "De portier zei: „Geen invaliden na middernacht.“ We gingen naar huis.", "invaliden", "quoted"),
    ],
)
def test_shapes_read_from_the_nineteenth_set(language: str, text: str, surface: str, use: str) -> None:
    assert read(text, surface, language)[0] == use


@pytest.mark.parametrize(
    ("language", "text", "surface"),
    [
        # stop 29, the nineteenth set's shapes tried as a hostile writer would
        ("en", "The gypsies stole the bike, and the one who called the police was me.", "gypsies"),
        ("en", "The faggot who keyed my car wasn't me, it was you.", "faggot"),
        ("en", "Stop calling them refugees, they are the invaders.", "invaders"),
        ("en", "We are the victims of gypsies.", "gypsies"),
        ("en", "Why is a troon allowed in the women's changing room?", "troon"),
        ("en", "Mr. Smith is a faggot.", "faggot"),
        ("fr", "Le coach a glissé que les tapettes restent au vestiaire, et franchement rien à ajouter.", "tapettes"),
        ("fr", "Samedi : appeler la mairie pour les niaks du 8 qui étendent leur linge sur la grille.", "niaks"),
    ],
)
def test_the_nineteenth_sets_shapes_leave_a_hostile_writers_words_an_attack(
    language: str, text: str, surface: str
) -> None:
    assert read(text, surface, language)[0] == "attack"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"self_reference": {"was_me": {"end": ["was me"]}}}, "was_me: expected a mapping with the lists who and end"),
        ({"self_reference": {"was_me": ["was me"]}}, "was_me: expected a mapping"),
        ({"speech": {"verbs": ["said"], "that": ["that"], "stop": "stop"}}, "speech.stop: expected a list"),
    ],
)
def test_bad_rules_of_stop_29_round_two_are_refused_with_the_reason(
    data: dict,  # type: ignore[type-arg]
    message: str,
) -> None:
    with pytest.raises(UseRulesError, match=message):
        UseRules.from_dict(data, "en", "use.yaml")


@pytest.mark.parametrize(
    ("language", "text", "surface", "use"),
    [
        # stop 29: a report the writer believes ("I believe every word he says", "je le crois sur parole")
        (
            "en",
            "The concierge says the landlord is moving rapefugees into flat 9, and I believe every word he says.",
            "rapefugees",
            "attack",
        ),
        ("fr", "Le gardien dit que des muzz vont arriver au 3e, et je le crois sur parole.", "muzz", "attack"),
        # two writers introducing themselves by name; a profile under a heading, with an age
        ("nl", "Hoi buren! Wij zijn Lea en Ines, twee potten van in de dertig, net verhuisd.", "potten", "reclaimed"),
        (
            "it",
            "Profilo su Vicini di Casa: Ornella, 58 anni, zitella per scelta, presto il trapano.",
            "zitella",
            "reclaimed",
        ),
        ("it", "ciao mamme sono la zoppa della 3B, arrivo tardi domani.", "zoppa", "reclaimed"),
        # others writing about the word, answered
        (
            "pt",
            "Debaixo da notícia há quem escreva sobre imigrantes ilegais. As famílias tinham todas autorização.",
            "imigrantes ilegais",
            "reported",
        ),
    ],
)
def test_shapes_read_from_the_twentieth_set(language: str, text: str, surface: str, use: str) -> None:
    assert read(text, surface, language)[0] == use


@pytest.mark.parametrize(
    ("language", "text", "surface", "use"),
    [
        # stop 29, the twentieth set's shapes tried as a hostile writer would, and a report the writer doubts
        ("en", "We're Tom and Dave, and those faggots next door should move.", "faggots", "attack"),
        ("de", "Wir sind Tom und Jan, und die Kanaken von nebenan sollen weg.", "Kanaken", "attack"),
        ("it", "Loro sono i terroni del quartiere.", "terroni", "attack"),
        ("it", "C'è chi parla di immigrati clandestini e ha ragione.", "immigrati clandestini", "attack"),
        ("en", "He called me a faggot on the bus. I believe him when he says he's sorry.", "faggot", "reported"),
    ],
)
def test_the_twentieth_sets_shapes_tried_as_a_hostile_writer_would(
    language: str, text: str, surface: str, use: str
) -> None:
    assert read(text, surface, language)[0] == use


@pytest.mark.parametrize(
    ("language", "text", "surface", "use"),
    [
        # stop 29: a team word after the word makes a team's name, wherever it stands and whatever its category
        ("it", "La squadra si chiama Polentoni United e giochiamo il martedì.", "Polentoni", "reclaimed"),
        ("en", "Lezzies United, Thursday five-a-side, are short a keeper.", "Lezzies", "reclaimed"),
        # but a team named against the group is no name the group chose, and the everyday words name no team
        ("en", "Team name for the summer league is sorted: No Benders FC.", "Benders", "attack"),
        ("en", "The Gypsies team up to nick bikes every summer.", "Gypsies", "attack"),
        ("en", "Those Pikeys army-crawl through the hedge at night.", "Pikeys", "attack"),
    ],
)
def test_a_team_word_after_the_word_names_a_team(language: str, text: str, surface: str, use: str) -> None:
    assert read(text, surface, language)[0] == use


def test_an_endorsed_report_or_naming_carries_the_endorsement_as_its_cue() -> None:
    """stop 29: it was an attack with no cue, offered to the learned source, and readers saw no reason."""
    text = "Mijn buurman zei dat de gelukszoekers hier alleen voor de uitkering komen, en hij heeft gelijk."
    assert read(text, "gelukszoekers", "nl") == ("attack", "heeft gelijk")
    text = "The councillor called the twins pikeys at the meeting, and he's right."
    assert read(text, "pikeys", "en") == ("attack", "he's right")
    assert read("The councillor called the twins pikeys at the meeting.", "pikeys", "en")[0] == "reported"


@pytest.mark.parametrize(
    ("language", "text", "surface", "use"),
    [
        # stop 30, read from heldout21: what follows a verb of saying and a comma was said
        (
            "de",
            "Der Fahrer hat mir die ganze Fahrt erzählt, in Neukölln würden nur noch Asylanten wohnen.",
            "Asylanten",
            "reported",
        ),
        (
            "it",
            "La guardia non l'ha fatto entrare perché, gli ha detto, i vu cumprà rubano con gli zaini.",
            "vu cumprà",
            "reported",
        ),
        (
            "el",
            "Τον έβαλε να αφήσει το σακίδιο γιατί, του είπε, οι λαθρομετανάστες κλέβουν με αυτά.",
            "λαθρομετανάστες",
            "reported",
        ),
        (
            "pt",
            "Mandou-o deixar a mochila porque, segundo ele, os ciganos escondem lá as coisas.",
            "ciganos",
            "reported",
        ),
        # the verb and the writer told, then the clause with no "that"
        ("en", "The driver spent the ride telling me Leicester had been taken over by pakis.", "pakis", "reported"),
        # new verbs of saying
        ("en", "The driver ranted for ten minutes that whoever scratched his car was a gyppo.", "gyppo", "reported"),
        ("nl", "De chauffeur heeft een uur lopen zeuren dat zijn buurman een spleetoog is.", "spleetoog", "reported"),
        (
            "it",
            "Ha disdetto il passaggio scrivendogli che con un ricchione in macchina non ci sale.",
            "ricchione",
            "reported",
        ),
        # a profile under a heading whose word ends a compound
        ("de", "Fahrerprofil: Jonas, 29, bekennende Tunte, Auto immer frisch gesaugt.", "Tunte", "reclaimed"),
        (
            "en",
            "Silver Wheels club: we are a bunch of coffin dodgers who like garden centres.",
            "coffin dodgers",
            "reclaimed",
        ),
        ("fr", "Entre nous on s'appelle les larbins à vélo, en attendant d'être mieux payés.", "larbins", "reclaimed"),
        # the endorsements they read
        (
            "en",
            "My cabbie reckoned the rank is full of illegal immigrants. I'd say he's bang on.",
            "illegal immigrants",
            "attack",
        ),
        (
            "pt",
            "O taxista disse-me: «a Amadora agora é só pretalhada». E disse bem, digo-vos eu.",
            "pretalhada",
            "attack",
        ),
        ("pt", "O meu vizinho diz que os mitras roubam tudo, e ele é que sabe.", "mitras", "attack"),
        # stop 30, read from heldout22: the word as the subject of a verb in the first person plural
        ("el", "Οι γριές της γειτονιάς πήγαμε όλες μαζί στη συνεδρίαση.", "γριές", "reclaimed"),
        ("pt", "amanhã RGA às 14h e os comunas da AE estamos à porta desde as 13h.", "comunas", "reclaimed"),
        ("it", "Sabato i terroni del quartiere portiamo la passata alla festa.", "terroni", "reclaimed"),
        # a profile that opens with the writer's full name and age
        (
            "de",
            "Mia Kowalczyk, 29, Kampflesbe mit Lastenrad, im Mieterbeirat. Kommt vorbei und streitet mit mir.",
            "Kampflesbe",
            "reclaimed",
        ),
        (
            "nl",
            "Noor Hazelhoff, 29, pot met een bakfiets, in de huurderscommissie. Zaterdag sta ik bij de markt.",
            "pot",
            "reclaimed",
        ),
        # asked to drop the word; shouted at the writers; new verbs of saying
        (
            "en",
            "Rob, enough with remoaners every time Europe comes up. Half your listeners voted remain.",
            "remoaners",
            "reported",
        ),
        (
            "fr",
            "Julien, tu peux lâcher les sans-dents à chaque fois qu'on parle de la ruralité ?",
            "sans-dents",
            "reported",
        ),
        (
            "nl",
            "Ruud, kun je de wappies een keer weglaten als het over de boerenprotesten gaat?",
            "wappies",
            "reported",
        ),
        (
            "de",
            "Auf der Brücke hat uns eine Gruppe die ganze Strecke Schwuchteln hinterhergebrüllt.",
            "Schwuchteln",
            "reported",
        ),
        (
            "en",
            "Counter-protesters followed us the whole march shouting about towelheads going home.",
            "towelheads",
            "reported",
        ),
        ("it", "Al civico 12 un signore ha risposto dal citofono che ai piddini non apre.", "piddini", "reported"),
        # hearsay met with no surprise, a generalization after scare quotes, an old saying borne out
        (
            "en",
            "My cousin says half the postal votes came from muzzie households. Doesn't surprise me in the slightest.",
            "muzzie",
            "attack",
        ),
        (
            "nl",
            "Mijn zwager zegt dat de helft van de volmachten van allochtonen komt. Verbaast me niks.",
            "allochtonen",
            "attack",
        ),
        ("en", '> The group voted the subsidy through\n\n"tankies" in fleeces, the lot of them.', "tankies", "attack"),
        (
            "el",
            "Παλιά έλεγαν ότι ο Τούρκος δεν γίνεται ποτέ Ρωμιός, και σήμερα το βλέπουμε με τους βουλευτές.",
            "Τούρκος",
            "attack",
        ),
        ("it", "Tirchio come un ebreo, diceva mia nonna, e su certa gente aveva proprio ragione.", "ebreo", "attack"),
        # stop 30, read from heldout23: the word itself as what someone else said or typed, right after the verb
        (
            "de",
            "Ab der zweiten Runde macht er das Handgelenk und sagt Schwuchtel so laut, dass der Kellner es hört.",
            "Schwuchtel",
            "reported",
        ),
        ("en", "Mods: anyone typing feminazi at Jess gets a timeout, no warning.", "feminazi", "reported"),
        ("fr", "Modos : tous ceux qui écrivent féminazie à Jess prennent un timeout.", "féminazie", "reported"),
        # someone else's belief told, a child asking what the word means, written under each post
        (
            "en",
            "Before anyone had looked at the camera the chair had decided gypsies took the copper pipe.",
            "gypsies",
            "reported",
        ),
        ("el", "Χθες γύρισε από το διάλειμμα και με ρώτησε τι σημαίνει μογγολάκι.", "μογγολάκι", "reported"),
        (
            "de",
            "Derselbe Account hat unter jeden Kommentar Fotze drunter geschrieben, über vierzig Mal.",
            "Fotze",
            "reported",
        ),
        (
            "el",
            "Στα σχόλια του μπλογκ μου δεν θα τη λέμε ρωσοπόντια, θα τη λέμε με το όνομά της.",
            "ρωσοπόντια",
            "reported",
        ),
        # a dot before a comma ends no sentence: the old book's page is in the same run of sentences as its year
        (
            "pt",
            "Manual de Civilidade, Lisboa, 1953, 198 pp., brochura. No capítulo VII fala da criada de servir.",
            "criada de servir",
            "historical",
        ),
        # the report explains the writer's trouble; an old saying still true
        (
            "en",
            "Her husband says half the beds are anchor babies. Explains why I waited eleven hours for a bed.",
            "anchor babies",
            "attack",
        ),
        (
            "nl",
            "Zijn vrouw zegt dat de bedden vol liggen met importbruiden. Verklaart waarom ik elf uur heb gewacht.",
            "importbruiden",
            "attack",
        ),
    ],
)
def test_shapes_read_from_the_sets_of_stop_30(language: str, text: str, surface: str, use: str) -> None:
    assert read(text, surface, language)[0] == use


@pytest.mark.parametrize(
    ("language", "text", "surface"),
    [
        # stop 30, each new shape tried as a hostile writer would: the writer's own words stay an attack
        ("en", "Like my dad always said, the pakis ruined this town and nobody will admit it.", "pakis"),
        ("de", "Wie mein Opa immer sagte, Zigeuner klauen.", "Zigeuner"),
        ("nl", "Zoals mijn opa altijd zei, die zigeuners jatten alles.", "zigeuners"),
        ("de", "Mein Nachbar meinte, die Kanaken sollten alle raus, und er hat völlig recht.", "Kanaken"),
        ("it", "Mio zio ha detto, i terroni rubano, e ha ragione.", "terroni"),
        ("en", "My neighbour told me pakis are taking over and honestly he's not wrong.", "pakis"),
        ("en", "Nobody warned me I was letting the flat to a gang of jigaboos.", "jigaboos"),
        (
            "nl",
            "Die heb ik op de clubavond verteld, en met kerst vertel ik hem weer: komt een zigeuner een café binnen.",
            "zigeuner",
        ),
        ("fr", "« Merci patron », qu'elle a dit, la négresse, quand je lui ai filé ses vingt euros.", "négresse"),
        (
            "de",
            "Gut, dass mein Schwager sagt, die Kopftuchmädchen kriegen frei. Gut, dass er das mal laut sagt.",
            "Kopftuchmädchen",
        ),
        ("en", "Hi, I'm Dave, 45, big queer hater, that's me.", "queer"),
        ("it", "Scrivendo che i terroni sono tutti ladri, il sindaco ha detto la verità.", "terroni"),
        ("nl", "Hij zeurde dat de zigeuners zijn fiets hadden gejat, en gelijk heeft hij.", "zigeuners"),
        # stop 30, the twenty-second set's shapes tried as a hostile writer would
        ("el", "Τους γύφτους τους διώξαμε από τη γειτονιά.", "γύφτους"),
        ("el", "Οι γύφτοι της πλατείας θα τους διώξουμε αύριο.", "γύφτοι"),
        ("el", "Οι γύφτοι και εμείς δεν ταιριάζουμε.", "γύφτοι"),
        ("pt", "Vi os ciganos e fomos embora logo.", "ciganos"),
        ("it", "I terroni li cacciamo tutti dal quartiere.", "terroni"),
        ("nl", "Kees Dekker, 61, vuile flikker, woont naast me en ik wil hem weg.", "flikker"),
        ("nl", "Kees Dekker, 61, flikker, woont naast me en ik wil hem weg.", "flikker"),
        ("nl", "Mag je tegenwoordig nog zeggen dat die kopvodden altijd chagrijnig kijken?", "kopvodden"),
        ("en", "As my nan always said, gooks will eat anything that moves.", "gooks"),
        ("en", "They sent us three more Polacks who can't read a pick list.", "Polacks"),
        ("en", "I said faggot and I meant it.", "faggot"),
        ("de", "Er sagt Kanaken und hat recht damit.", "Kanaken"),
        ("en", "The council has decided gypsies must leave by Friday, and about time.", "gypsies"),
    ],
)
def test_the_shapes_of_stop_30_leave_a_hostile_writers_words_an_attack(language: str, text: str, surface: str) -> None:
    assert read(text, surface, language)[0] == "attack"


def test_the_writers_own_word_for_themselves_used_again_stays_theirs() -> None:
    """stop 30, read from heldout21: a later hit of the same entry that no cue explains is the writer's word again;
    pointed at others ("those …"), or after a hit that was not the writer's, it stays an attack."""
    cases = [
        (
            "el",
            "Στη βάρδια είμαι ο κοντοστούπης, το έχω δεχτεί. Απόψε κερνάει ο κοντοστούπης.",
            "κοντοστούπης",
            ["reclaimed", "reclaimed"],
        ),
        (
            "it",
            "Il banchetto delle Zitelle del Sabato: io e mia sorella, due zitelle di settant'anni, vendiamo vestiti.",
            None,
            ["reclaimed", "reclaimed"],
        ),
        ("en", "I'm a queer and those queers at the parade disgust me.", None, ["reclaimed", "attack"]),
        ("en", "The queer next door shouted at us. The queer should move.", None, ["attack", "attack"]),
    ]
    for language, text, surface, uses in cases:
        hits = sorted(detector_for(language).detect(text, language).hits, key=lambda h: h.start)
        hits = [h for h in hits if surface is None or h.surface == surface]
        readings = USE_DETECTOR.read(text, hits, language)
        assert [readings[h.id].use for h in hits] == uses, text
    text = "Στη βάρδια είμαι ο κοντοστούπης, το έχω δεχτεί. Απόψε κερνάει ο κοντοστούπης."
    hits = sorted(detector_for("el").detect(text, "el").hits, key=lambda h: h.start)
    assert USE_DETECTOR.read(text, hits, "el")[hits[-1].id].cue == "the writer's own word for themselves, used again"


def test_a_bad_endorsing_list_is_refused_with_the_reason() -> None:
    with pytest.raises(UseRulesError, match=r"speech\.endorsing"):
        UseRules.from_dict({"speech": {"verbs": ["said"], "that": ["that"], "endorsing": "as"}}, "en", "use.yaml")


def test_bad_we_verbs_settings_are_refused_with_the_reason() -> None:
    with pytest.raises(UseRulesError, match=r"self_reference\.we_verbs: expected a mapping"):
        UseRules.from_dict({"self_reference": {"we_verbs": {"subjects": ["οι"]}}}, "el", "use.yaml")
    with pytest.raises(UseRulesError, match=r"self_reference\.opening\.others"):
        UseRules.from_dict({"self_reference": {"opening": {"here": ["here"], "others": "he"}}}, "en", "use.yaml")
