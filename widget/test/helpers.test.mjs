// The widget's pure helpers: language choice, strings, hashing, batching, offsets, highlighting, links, posts.
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { describe, test } from "node:test";

const w = createRequire(import.meta.url)("../unerase-widget.js");

describe("pickLanguage", () => {
  test("data-lang wins over the page and the browser", () => {
    assert.equal(w.pickLanguage("fr", "de", "it-IT"), "fr");
  });
  test("falls back to the page, then the browser, then English", () => {
    assert.equal(w.pickLanguage(null, "de-AT", "it-IT"), "de");
    assert.equal(w.pickLanguage("", "", "pt-BR"), "pt");
    assert.equal(w.pickLanguage(undefined, undefined, undefined), "en");
  });
  test("skips languages without a translation", () => {
    assert.equal(w.pickLanguage("ja", "zh-Hant", "nl_NL"), "nl");
    assert.equal(w.pickLanguage("ja", "sv", "ko"), "en");
  });
  test("is case- and space-insensitive", () => {
    assert.equal(w.pickLanguage(" EL ", null, null), "el");
  });
  test("does not mistake object properties for languages", () => {
    assert.equal(w.pickLanguage("constructor", "__proto__", "toString"), "en");
  });
});

describe("strings", () => {
  const languages = ["en", "fr", "el", "de", "nl", "it", "pt"];

  test("every language translates every string, label, severity and category", () => {
    assert.deepEqual(Object.keys(w.TEXTS).sort(), [...languages].sort());
    const keys = Object.keys(w.TEXTS.en).sort();
    for (const lang of languages) {
      const t = w.TEXTS[lang];
      assert.deepEqual(Object.keys(t).sort(), keys, lang);
      assert.equal(t.labels.length, w.LABELS.length, lang);
      assert.equal(t.sevs.length, w.SEVS.length, lang);
      assert.equal(t.cats.length, w.CATS.length, lang);
      for (const key of keys) {
        const value = t[key];
        for (const item of Array.isArray(value) ? value : [value]) assert.ok(item.trim(), `${lang}.${key} is empty`);
      }
    }
  });
  test("languages other than English are really translated", () => {
    for (const lang of languages.filter((l) => l !== "en")) {
      assert.notEqual(w.strings(lang).why, w.strings("en").why, lang);
      assert.notEqual(w.strings(lang).cats.religion, undefined, lang);
    }
  });
  test("maps label, severity and category ids to words", () => {
    const fr = w.strings("fr");
    assert.equal(fr.why, "Pourquoi signalé\u00a0?");
    assert.equal(fr.labels.needs_review, "à vérifier");
    assert.equal(fr.sevs.high, "élevée");
    assert.equal(fr.cats["sexual-orientation"], "orientation sexuelle");
    assert.equal(w.strings("de").cats["migration-colonial-past"], "Migration und koloniale Vergangenheit");
    assert.deepEqual(Object.keys(fr.cats), w.CATS);
  });
  test("an unknown language falls back to English", () => {
    assert.deepEqual(w.strings("xx"), w.strings("en"));
    assert.deepEqual(w.strings(undefined), w.strings("en"));
    assert.equal(w.strings("xx").why, "Why flagged?");
  });
  test("returns a copy, so callers cannot change the table", () => {
    w.strings("en").why = "changed";
    assert.equal(w.strings("en").why, "Why flagged?");
  });
});

describe("fnv1a", () => {
  test("matches the published 32-bit FNV-1a values", () => {
    assert.equal(w.fnv1a(""), "811c9dc5");
    assert.equal(w.fnv1a("a"), "e40c292c");
    assert.equal(w.fnv1a("foobar"), "bf9cf968");
  });
  test("hashes UTF-8 bytes, so non-ASCII text agrees with a byte-level implementation", () => {
    let h = 0x811c9dc5;
    for (const b of Buffer.from("ελληνικά 🙂", "utf8")) h = Number((BigInt(h ^ b) * 16777619n) % 4294967296n) >>> 0;
    assert.equal(w.fnv1a("ελληνικά 🙂"), h.toString(16).padStart(8, "0"));
  });
  test("always gives 8 hex digits and tells texts apart", () => {
    const seen = new Set();
    for (let i = 0; i < 1000; i++) {
      const h = w.fnv1a("post " + i);
      assert.match(h, /^[0-9a-f]{8}$/);
      seen.add(h);
    }
    assert.equal(seen.size, 1000);
  });
});

describe("chunk", () => {
  test("splits into batches of at most the given size, in order", () => {
    const items = Array.from({ length: 250 }, (_, i) => i);
    const parts = w.chunk(items, 100);
    assert.deepEqual(parts.map((p) => p.length), [100, 100, 50]);
    assert.deepEqual(parts.flat(), items);
  });
  test("an exact multiple has no empty tail, and nothing gives no batches", () => {
    assert.deepEqual(w.chunk([1, 2, 3, 4], 2), [[1, 2], [3, 4]]);
    assert.deepEqual(w.chunk([], 100), []);
  });
});

describe("cpToUtf16Index", () => {
  test("is the identity for text without astral characters", () => {
    const text = "naïve Ελλάδα";
    for (let i = 0; i <= text.length; i++) assert.equal(w.cpToUtf16Index(text, i), i);
  });
  test("counts an emoji as one code point but two UTF-16 units", () => {
    const text = "🙂 hi 👋🏽 you";
    // Python: text[2:4] == "hi", text[5:7] == "👋🏽", text[8:11] == "you"
    assert.equal(text.slice(w.cpToUtf16Index(text, 2), w.cpToUtf16Index(text, 4)), "hi");
    assert.equal(text.slice(w.cpToUtf16Index(text, 5), w.cpToUtf16Index(text, 7)), "👋🏽");
    assert.equal(text.slice(w.cpToUtf16Index(text, 8), w.cpToUtf16Index(text, 11)), "you");
    assert.equal(w.cpToUtf16Index(text, 1), 2);
  });
  test("agrees with iterating code points for every offset", () => {
    const text = "a𝔘b😀😀c\u{1F1EB}\u{1F1F7}d";
    const points = Array.from(text);
    for (let cp = 0; cp <= points.length; cp++) {
      assert.equal(w.cpToUtf16Index(text, cp), points.slice(0, cp).join("").length, `code point ${cp}`);
    }
  });
  test("clamps offsets past the end to the text's length", () => {
    assert.equal(w.cpToUtf16Index("🙂", 5), 2);
    assert.equal(w.cpToUtf16Index("", 3), 0);
  });
});

describe("segments", () => {
  const join = (parts) => parts.map((p) => p.text).join("");
  const marked = (parts) => parts.filter((p) => p.hit).map((p) => [p.text, p.hit.id]);

  test("cuts the text into plain and marked pieces that rebuild it exactly", () => {
    const text = "You are a slur and a word.";
    const parts = w.segments(text, [{ id: "h2", start: 21, end: 25 }, { id: "h1", start: 10, end: 14 }]);
    assert.equal(join(parts), text);
    assert.deepEqual(parts.map((p) => [p.text, p.hit ? p.hit.id : null]), [
      ["You are a ", null], ["slur", "h1"], [" and a ", null], ["word", "h2"], [".", null],
    ]);
  });
  test("uses code-point offsets, so hits after emoji land on the right words", () => {
    const text = "🙂🙂 slur 👋🏽 word";
    const parts = w.segments(text, [{ id: "a", start: 3, end: 7 }, { id: "b", start: 11, end: 15 }]);
    assert.deepEqual(marked(parts), [["slur", "a"], ["word", "b"]]);
    assert.equal(join(parts), text);
  });
  test("drops hits that overlap an earlier or longer one", () => {
    const parts = w.segments("abcdefgh", [
      { id: "inner", start: 2, end: 4 }, { id: "outer", start: 1, end: 6 }, { id: "tail", start: 5, end: 8 },
    ]);
    assert.deepEqual(marked(parts), [["bcdef", "outer"]]);
    assert.equal(join(parts), "abcdefgh");
  });
  test("keeps adjacent hits and hits at both ends", () => {
    const parts = w.segments("abcd", [{ id: "x", start: 0, end: 2 }, { id: "y", start: 2, end: 4 }]);
    assert.deepEqual(parts.map((p) => [p.text, p.hit.id]), [["ab", "x"], ["cd", "y"]]);
  });
  test("ignores empty, reversed, negative, fractional and out-of-range hits", () => {
    const text = "🙂ab";
    const bad = [
      { id: "empty", start: 1, end: 1 }, { id: "reversed", start: 2, end: 1 }, { id: "negative", start: -1, end: 1 },
      { id: "fraction", start: 0.5, end: 2 }, { id: "past", start: 1, end: 4 }, { id: "text", start: "1", end: "2" },
    ];
    assert.deepEqual(w.segments(text, bad), [{ text, hit: null }]);
    assert.deepEqual(marked(w.segments(text, [...bad, { id: "ok", start: 1, end: 3 }])), [["ab", "ok"]]);
  });
  test("does not reorder the caller's list", () => {
    const hits = [{ id: "b", start: 3, end: 4 }, { id: "a", start: 0, end: 1 }];
    w.segments("abcd", hits);
    assert.deepEqual(hits.map((h) => h.id), ["b", "a"]);
  });
  test("no text, no pieces", () => {
    assert.deepEqual(w.segments("", []), []);
  });
});

describe("safeUrl", () => {
  test("accepts http and https links", () => {
    assert.equal(w.safeUrl("https://example.org/a?b=1#c"), "https://example.org/a?b=1#c");
    assert.equal(w.safeUrl(" http://example.org "), "http://example.org/");
  });
  test("refuses other schemes, relative links and plain citations", () => {
    for (const url of ["javascript:alert(1)", "JaVaScRiPt:alert(1)", "data:text/html,<b>x</b>", "vbscript:x",
      "ftp://example.org/", "file:///etc/passwd", "/relative/path", "//example.org/x", "Smith (2019), p. 4", "",
      null]) {
      assert.equal(w.safeUrl(url), null, String(url));
    }
  });
});

describe("buttonLabel", () => {
  test("the server's button, in the UI language", () => {
    const fr = w.strings("fr");
    assert.equal(w.buttonLabel({ label: "flagged", button: "why" }, fr), "Pourquoi signalé\u00a0?");
    assert.equal(w.buttonLabel({ label: "not_flagged", button: "about" }, fr), "À propos de ce mot");
    assert.equal(w.buttonLabel({ label: "needs_review", button: "words" }, w.strings("de")), "Über diese Wörter");
    assert.equal(w.buttonLabel({ label: "needs_review", button: "review" }, w.strings("en")), "Under review");
  });
  test("no button where the server says none: an undecided post shows nothing by default", () => {
    const en = w.strings("en");
    for (const button of [null, "unknown", "__proto__"]) {
      assert.equal(w.buttonLabel({ label: "needs_review", button }, en), null, String(button));
    }
  });
  test("an answer without a button gets none", () => {
    for (const label of ["flagged", "needs_review", "not_flagged", "pending", undefined]) {
      assert.equal(w.buttonLabel({ label }, w.strings("fr")), null);
    }
  });
});

describe("collectPosts", () => {
  const element = (attrs, textContent) => ({ textContent, getAttribute: (n) => (n in attrs ? attrs[n] : null) });

  test("takes data-unerase-text over the element's text, and trims", () => {
    const posts = w.collectPosts([
      element({ "data-unerase-text": "  given text " }, "shown text"),
      element({}, "\n  shown text\n"),
    ], 1);
    assert.deepEqual(posts.map((p) => p.text), ["given text", "shown text"]);
  });
  test("uses data-unerase-id, else numbers posts in document order from the given start", () => {
    const posts = w.collectPosts([element({ "data-unerase-id": "c42" }, "a"), element({}, "b"), element({}, "c")], 7);
    assert.deepEqual(posts.map((p) => p.id), ["c42", "post-8", "post-9"]);
  });
  test("skips empty posts without reusing their numbers, and keeps the element", () => {
    const els = [element({}, "  "), element({ "data-unerase-text": "" }, "ignored"), element({}, "text")];
    const posts = w.collectPosts(els, 1);
    assert.equal(posts.length, 1);
    assert.equal(posts[0].id, "post-3");
    assert.equal(posts[0].el, els[2]);
  });
  test("cuts ids to the 200 characters the server accepts", () => {
    assert.equal(w.collectPosts([element({ "data-unerase-id": "x".repeat(300) }, "t")], 1)[0].id.length, 200);
  });
});

describe("postText", () => {
  const text = (data) => ({ nodeType: 3, data });
  const tag = (tagName, ...childNodes) => ({ nodeType: 1, tagName, childNodes });

  test("paragraphs and line breaks are lines, and white space inside a line is one space", () => {
    const post = tag("DIV", tag("P", text("\n  First   line")), tag("P", text("second"), tag("BR"), text("third  ")));
    assert.equal(w.postText(post), "First line\nsecond\nthird");
  });
  test("a quoted post's lines open with \"> \", and the reply follows on its own line", () => {
    const quote = tag("BLOCKQUOTE", tag("P", text("Dave wrote:")), tag("P", text("all of them should go")));
    const post = tag("DIV", quote, text("Reported to the moderators."));
    assert.equal(w.postText(post), "> Dave wrote:\n> all of them should go\nReported to the moderators.");
  });
  test("inline elements join their words; scripts and styles are no text; <pre> keeps its lines", () => {
    const post = tag("DIV", text("a "), tag("EM", text("quoted")), text(" word"), tag("SCRIPT", text("x=1")),
      tag("PRE", text("line one\n  line two")));
    assert.equal(w.postText(post), "a quoted word\nline one\nline two");
  });
  test("an element without child nodes gives its text", () => {
    assert.equal(w.postText({ textContent: "plain" }), "plain");
  });
});

describe("opening", () => {
  test("a button is described by the post's first eight words", () => {
    assert.equal(w.opening("one two three four five six seven eight nine"), "“one two three four five six seven eight…”");
    assert.equal(w.opening("short post"), "“short post”");
  });
  test("a reply is described by its own words, not by the post it quotes", () => {
    assert.equal(w.opening("> Dave wrote:\n> all of them\nReported to the mods."), "“Reported to the mods.”");
    assert.equal(w.opening("> only a quote"), "“> only a quote”");
  });
});

describe("confidence in words", () => {
  test("bands as the demo page does: 0.9, 0.75 and 0.5 are the floors", () => {
    const words = (c) => w.strings("en").sure[w.band(c)];
    assert.deepEqual([1, 0.9, 0.899, 0.75, 0.7, 0.5, 0.49, 0.01].map(words), ["very sure", "very sure",
      "fairly sure", "fairly sure", "not very sure", "not very sure", "unsure", "unsure"]);
    assert.equal(w.strings("fr").sure[w.band(0.8)], "assez sûr");
    assert.equal(w.strings("el").sure[w.band(0.95)], "πολύ σίγουρο");
  });
  test("every language has the four bands' words", () => {
    for (const lang of Object.keys(w.TEXTS)) {
      assert.equal(w.TEXTS[lang].sure.length, 4, lang);
      assert.equal(new Set(w.TEXTS[lang].sure).size, 4, lang);
    }
  });
  test("is stated for models, precedents, labelled examples and moderators only", () => {
    for (const by of ["openai:gpt-test", "cache", "precedent", "examples", "moderator"]) assert.ok(w.stated(0.8, by), by);
    // the rules' constant numbers say nothing, and neither does no number
    for (const by of ["vocabulary", "sense-cues", "disguise", "", undefined]) assert.ok(!w.stated(0.9, by), String(by));
    assert.ok(!w.stated(0, "openai:gpt-test"));
    assert.ok(!w.stated(undefined, "precedent"));
  });
});

describe("freshAlternatives", () => {
  test("leaves out what the suggestion note already names, ignoring case", () => {
    assert.deepEqual(w.freshAlternatives("Say Roma, or Sinti.", ["roma", "Sinti", "Romani people"]), ["Romani people"]);
  });
  test("keeps every term, once, without a note", () => {
    assert.deepEqual(w.freshAlternatives(null, ["disabled person", "disabled person", "wheelchair user"]),
      ["disabled person", "wheelchair user"]);
    assert.deepEqual(w.freshAlternatives("", undefined), []);
  });
});

describe("beyondRules (whether a decision's confidence is stated)", () => {
  const verdict = (status, decided_by) => ({ verdict: { status, decided_by, confidence: 0.9 } });
  test("a term or the term-free check decided by a model, precedents or examples counts", () => {
    assert.ok(w.beyondRules({ hits: [verdict("contentious", "openai:gpt-test")] }));
    assert.ok(w.beyondRules({ hits: [verdict("neutral", "precedent")] }));
    assert.ok(w.beyondRules({ hits: [], targeting: { status: "not_hateful", decided_by: "cache" } }));
  });
  test("the vocabulary's constants and a model that could not decide do not", () => {
    // a model configured but failing: the terms stay undetermined or are decided by the vocabulary alone
    const failed = { hits: [verdict("contentious", "vocabulary"), verdict("undetermined", "openai:gpt-test")],
      targeting: { status: "undetermined", decided_by: "openai:gpt-test" } };
    assert.ok(!w.beyondRules(failed));
    assert.ok(!w.beyondRules({ hits: [verdict("contentious", "disguise"), verdict("neutral", "sense-cues")] }));
    assert.ok(!w.beyondRules({}));
  });
});
