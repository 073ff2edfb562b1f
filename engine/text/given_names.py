"""Common given names for the seven languages, compiled by the unerase team.

A given name beside a capitalized vocabulary word is evidence of a person's name that does not
depend on capitalization alone, so it holds in title-case headings, all-caps text and German,
where capitals say nothing. The lists are facts (common names), kept short and free of names
that are also everyday words of the language (English Will, Rose, Mark; Italian Bianca; Dutch
Roos), which would turn a heading's ordinary word into a "name". One set serves every language:
texts name people from everywhere.

Checked with `tests/test_names.py`; the public name datasets on PyPI were either unmaintained
or under licences that do not fit (gender-guesser, 2016, GPL data), hence our own lists.
"""

from __future__ import annotations

from engine.text.normalize import strip_marks

_EN = """
aaron adam alan albert alexander alfred alice alison amanda amelia amy andrew angela anna anne
anthony arthur barbara benjamin bernard betty brian carol caroline catherine charles charlotte
christine christopher claire daniel david deborah dennis donald dorothy douglas edward eleanor
elizabeth emily emma eric ethel evelyn fiona fred frederick gary george gerald gordon graham
harold harry helen henry howard hugh ian isabel jack jacob james jane janet jason jean jennifer
jeremy jessica joan john jonathan joseph joshua judith julia karen kate katherine keith kenneth
kevin laura lawrence leonard linda lisa louise lucy margaret maria martha martin mary matthew
megan michael nancy nicholas nigel oliver olivia pamela patricia patrick paul peter philip rachel
raymond rebecca richard robert roger ronald ruth samuel sandra sarah sharon simon sophie stephen
steven susan thomas timothy tracy walter william fred tom tim ted jim liz sam
"""

_FR = """
adèle adrien agnès alain alexandre alexis amélie andré anne-marie antoine arnaud aurélie bernadette
bertrand brigitte bruno camille catherine cécile céline charles chantal christian christophe claude
clément colette corinne damien denis didier dominique édouard élise émile émilie éric étienne
fabrice florence françois françoise frédéric gabriel geneviève georges gérard gilles guillaume
hélène henri hugues isabelle jacqueline jacques jean jean-claude jean-luc jean-paul jean-pierre
jeanne jérôme joël josé josette julien juliette laurent léa léon louis lucie luc madeleine manon
marc marcel margaux marguerite marie marie-claire martine mathieu maurice michel michèle monique
nathalie nicolas odile olivier pascal patrice philippe pierre raymond renée rené sandrine
sébastien serge simone solange stéphane sylvie thierry valérie véronique vincent xavier yves yvette
"""

_DE = """
oscar oskar
andreas anja anke annette bernd birgit brigitte christa christian christina claudia dagmar daniela
detlef dieter dirk doris elke erika felix florian franz friedrich gabriele georg gerd gerhard
gisela gudrun günter günther hannelore hans hans-peter heike heinrich heinz helga helmut herbert
hildegard holger horst ilse ingrid irmgard jan jannik jens joachim jochen johann johannes jörg
jürgen karin karl karl-heinz katharina klaus kerstin konrad lars lukas manfred margarete marion
markus martina matthias michaela monika niklas norbert otto petra rainer ralf regina reinhard
renate rolf sabine sebastian siegfried silke stefan stephanie susanne sven thorsten tobias torsten
udo ulrich ulrike ursula uwe volker waltraud werner wilhelm wolfgang
"""

_NL = """
anouk annemiek arjen bart bas bram cor corrie daan dirk-jan evert fenna femke freek gerrit
geert gert gijs hanneke hendrik henk hennie ineke jaap jacobus jan-willem janneke jannes jeroen
joost joris karel kees klaas koen lieke lotte maarten marieke marijke mirjam niels nienke pieter
piet pim ria rutger ruud sander sanne sjoerd stijn teun thijs tineke wendy wim wouter willem
"""

_IT = """
ada aldo bruno dino franco gino guido renato sandro ugo livia ornella rita
alessandra alessandro alessia andrea angelo anna antonella antonio barbara beatrice carlo carla
caterina chiara claudio cristina daniele davide domenico elena elisa emanuele enrico enzo fabio
federica federico filippo francesca francesco gabriele giacomo gianluca gianni giorgio giovanna
giovanni giulia giulio giuseppe giuseppina ilaria lorenzo luca lucia luigi manuela marco maria
mario marta massimo matteo maurizio michele monica nicola paola paolo pietro raffaele riccardo
roberta roberto rosaria salvatore sergio silvia simona simone stefania stefano tommaso valentina
vincenzo vittorio
"""

_PT = """
adriana afonso alexandre alice ana andré antónio antônio beatriz bruno caio camila carla carlos
catarina cláudia daniel diogo duarte eduardo fernanda fernando filipa francisca francisco gabriel
gonçalo guilherme gustavo helena henrique inês isabel joana joão jorge josé júlia leonor luís luiz
luísa manuel mariana marcelo márcia marta miguel nuno patrícia paula paulo pedro rafael raquel
ricardo rita rodrigo rui sandra sara sérgio sofia susana tiago tomás vasco
"""

_EL = """
αθανάσιος αθηνά αικατερίνη αλέξανδρος αλεξάνδρα ανδρέας αναστασία άννα αντώνης αντώνιος αργύρης
βασίλειος βασίλης βασιλική γεώργιος γιώργος γιάννης γιαννης δημήτρης δημήτριος δέσποινα ελένη
ελευθέριος ευάγγελος ευαγγελία ειρήνη ζωή θανάσης θεόδωρος θοδωρής ιωάννης κατερίνα κώστας
κωνσταντίνος λευτέρης μαρία μαρίνα μιχάλης μιχαήλ νίκος νικόλαος ντίνα ξανθή όλγα παναγιώτης
παναγιώτα παύλος πέτρος σοφία σπύρος σταύρος σωτήρης σωτηρία τάσος φώτης χαράλαμπος χρήστος
χριστίνα
"""

GIVEN_NAMES: frozenset[str] = frozenset(
    name.casefold() for block in (_EN, _FR, _DE, _NL, _IT, _PT, _EL) for name in block.split()
)


# Greek names are declined (Γιώργος, του Γιώργου, τον Γιώργο) and written without accents in
# capitals: they are compared by their stem without accents.
_GREEK_ENDINGS = ("ου", "οσ", "ησ", "ασ", "ο", "η", "α", "ε")  # after casefold: ς is σ


def _greek_stem(word: str) -> str:
    word = strip_marks(word.casefold())
    for ending in _GREEK_ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            return word[: -len(ending)]
    return word


_GREEK_STEMS: frozenset[str] = frozenset(_greek_stem(name) for name in _EL.split())


def is_given_name(word: str) -> bool:
    """A capitalized word that is a common given name (Marco, Andreas, Νίκος, Γιώργου)."""
    if not word[:1].isupper():
        return False
    folded = word.casefold()
    if folded in GIVEN_NAMES:
        return True
    return "\u0370" <= folded[:1] <= "\u03ff" and _greek_stem(folded) in _GREEK_STEMS
