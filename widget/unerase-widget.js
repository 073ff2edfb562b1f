/* unerase widget: puts a "Why flagged?" button beside each flagged forum post and explains it in a panel.
   A forum embeds it with <script src="https://HOST/widget.js" data-site="KEY" async></script> (widget/README.md).
   Every node is built with createElement/textContent: post text and server data are never parsed as markup.
   Pure helpers are exported for node's test runner; the page part only starts when a document exists. */
(function () {
  "use strict";
  // currentScript is only set while this file first runs, so it is captured before anything is awaited
  const me = typeof document !== "undefined" ? document.currentScript : null;

  const CATS = ("gender sexual-orientation race ethnicity religion political-affiliation socioeconomic-status " +
    "occupation age disability addiction physical-appearance migration-colonial-past other").split(" ");
  const LABELS = ["flagged", "not_flagged", "needs_review"];
  const SEVS = ["none", "slight", "moderate", "high"];

  // labels, sevs and cats are lists in the order of LABELS, SEVS and CATS above
  const TEXTS = {
    en: {
      why: "Why flagged?", review: "Under review", about: "About this word", words: "About these words",
      checked: "✓ checked", close: "Close", loading: "Loading…",
      failed: "Sorry, the explanation could not be loaded.", post: "The post", found: "Words found",
      explanation: "Explanation", decision: "Decision", sev: "severity", targets: "Targets", instead: "Alternatives",
      sources: "Sources", neutral: "Used here in a neutral sense", unsure: "Meaning uncertain",
      aimed: "Read as aimed at people", helpful: "Helpful",
      wrong: "This is wrong", comment: "What is wrong? (optional)", send: "Send", thanks: "Thanks for your feedback.",
      sendFailed: "Sorry, your feedback could not be sent.",
      conf: "Confidence", sure: ["very sure", "fairly sure", "not very sure", "unsure"],
      labels: ["flagged", "not flagged", "needs review"], sevs: ["none", "slight", "moderate", "high"],
      cats: ["gender", "sexual orientation", "race", "ethnicity", "religion", "political affiliation",
        "socioeconomic status", "occupation", "age", "disability", "addiction", "physical appearance",
        "migration and colonial past", "other"],
    },
    fr: {
      why: "Pourquoi signalé\u00a0?", review: "En cours d’examen", about: "À propos de ce mot",
      words: "À propos de ces mots", checked: "✓ vérifié", close: "Fermer",
      loading: "Chargement…", failed: "Désolé, l’explication n’a pas pu être chargée.", post: "Le message",
      found: "Termes relevés", explanation: "Explication", decision: "Décision", sev: "gravité", targets: "Vise",
      instead: "Alternatives", sources: "Sources", neutral: "Employé ici dans un sens neutre", unsure: "Sens incertain",
      aimed: "Lu comme visant des personnes",
      helpful: "Utile", wrong: "C’est une erreur", comment: "Qu’est-ce qui ne va pas\u00a0? (facultatif)",
      send: "Envoyer", thanks: "Merci pour votre retour.", sendFailed: "Désolé, votre retour n’a pas pu être envoyé.",
      conf: "Confiance", sure: ["très sûr", "assez sûr", "peu sûr", "incertain"],
      labels: ["signalé", "non signalé", "à vérifier"], sevs: ["aucune", "légère", "modérée", "élevée"],
      cats: ["genre", "orientation sexuelle", "race", "origine ethnique", "religion", "opinion politique",
        "statut socio-économique", "profession", "âge", "handicap", "addiction", "apparence physique",
        "migration et passé colonial", "autre"],
    },
    el: {
      why: "Γιατί επισημάνθηκε;", review: "Υπό έλεγχο", about: "Για τη λέξη",
      words: "Για τις λέξεις", checked: "✓ ελέγχθηκε", close: "Κλείσιμο", loading: "Φόρτωση…",
      failed: "Δυστυχώς η εξήγηση δεν φορτώθηκε.", post: "Η ανάρτηση", found: "Όροι που βρέθηκαν",
      explanation: "Εξήγηση", decision: "Απόφαση", sev: "σοβαρότητα", targets: "Αφορά", instead: "Εναλλακτικές",
      sources: "Πηγές", neutral: "Χρησιμοποιείται εδώ με ουδέτερη σημασία", unsure: "Αβέβαιη σημασία",
      aimed: "Διαβάζεται ως στραμμένο κατά ανθρώπων",
      helpful: "Χρήσιμο", wrong: "Αυτό είναι λάθος", comment: "Τι είναι λάθος; (προαιρετικό)", send: "Αποστολή",
      thanks: "Ευχαριστούμε για τα σχόλιά σας.", sendFailed: "Δυστυχώς τα σχόλιά σας δεν στάλθηκαν.",
      conf: "Βεβαιότητα", sure: ["πολύ σίγουρο", "αρκετά σίγουρο", "όχι πολύ σίγουρο", "αβέβαιο"],
      labels: ["επισημάνθηκε", "δεν επισημάνθηκε", "προς έλεγχο"], sevs: ["καμία", "μικρή", "μέτρια", "υψηλή"],
      cats: ["φύλο", "σεξουαλικός προσανατολισμός", "φυλή", "εθνοτική καταγωγή", "θρησκεία", "πολιτική τοποθέτηση",
        "κοινωνικοοικονομική θέση", "επάγγελμα", "ηλικία", "αναπηρία", "εξάρτηση", "εξωτερική εμφάνιση",
        "μετανάστευση και αποικιακό παρελθόν", "άλλο"],
    },
    de: {
      why: "Warum markiert?", review: "Wird geprüft", about: "Über dieses Wort", words: "Über diese Wörter",
      checked: "✓ geprüft", close: "Schließen",
      loading: "Wird geladen…",
      failed: "Die Erklärung konnte leider nicht geladen werden.", post: "Der Beitrag", found: "Gefundene Begriffe",
      explanation: "Erklärung", decision: "Entscheidung", sev: "Schweregrad", targets: "Betrifft",
      instead: "Alternativen", sources: "Quellen", neutral: "Hier in neutraler Bedeutung verwendet",
      unsure: "Bedeutung unklar",
      aimed: "Gelesen als gegen Menschen gerichtet", helpful: "Hilfreich", wrong: "Das ist falsch", comment: "Was ist falsch? (optional)",
      send: "Senden", thanks: "Danke für Ihre Rückmeldung.",
      sendFailed: "Die Rückmeldung konnte leider nicht gesendet werden.",
      conf: "Sicherheit", sure: ["sehr sicher", "ziemlich sicher", "nicht sehr sicher", "unsicher"],
      labels: ["markiert", "nicht markiert", "wird geprüft"], sevs: ["keiner", "gering", "mittel", "hoch"],
      cats: ["Geschlecht", "sexuelle Orientierung", "rassistische Zuschreibung", "ethnische Zugehörigkeit",
        "Religion", "politische Zugehörigkeit", "sozialer Status", "Beruf", "Alter", "Behinderung", "Sucht",
        "Aussehen", "Migration und koloniale Vergangenheit", "Sonstiges"],
    },
    nl: {
      why: "Waarom gemarkeerd?", review: "Wordt beoordeeld", about: "Over dit woord", words: "Over deze woorden",
      checked: "✓ gecontroleerd", close: "Sluiten",
      loading: "Laden…", failed: "De uitleg kon helaas niet worden geladen.", post: "Het bericht",
      found: "Gevonden woorden", explanation: "Uitleg", decision: "Beslissing", sev: "ernst", targets: "Betreft",
      instead: "Alternatieven", sources: "Bronnen", neutral: "Hier in neutrale betekenis gebruikt",
      unsure: "Betekenis onzeker",
      aimed: "Gelezen als gericht tegen mensen", helpful: "Nuttig", wrong: "Dit klopt niet",
      comment: "Wat klopt er niet? (optioneel)", send: "Versturen", thanks: "Bedankt voor je feedback.",
      sendFailed: "Je feedback kon helaas niet worden verstuurd.",
      conf: "Zekerheid", sure: ["zeer zeker", "vrij zeker", "niet erg zeker", "onzeker"],
      labels: ["gemarkeerd", "niet gemarkeerd", "wordt beoordeeld"], sevs: ["geen", "licht", "matig", "ernstig"],
      cats: ["gender", "seksuele oriëntatie", "ras", "etniciteit", "religie", "politieke voorkeur",
        "sociaaleconomische status", "beroep", "leeftijd", "beperking", "verslaving", "uiterlijk",
        "migratie en koloniaal verleden", "overig"],
    },
    it: {
      why: "Perché segnalato?", review: "In revisione", about: "Su questa parola", words: "Su queste parole",
      checked: "✓ verificato", close: "Chiudi",
      loading: "Caricamento…",
      failed: "Spiacenti, non è stato possibile caricare la spiegazione.", post: "Il messaggio",
      found: "Termini trovati", explanation: "Spiegazione", decision: "Decisione", sev: "gravità", targets: "Riguarda",
      instead: "Alternative", sources: "Fonti", neutral: "Usato qui in senso neutro", unsure: "Significato incerto",
      aimed: "Letto come rivolto contro delle persone",
      helpful: "Utile", wrong: "È sbagliato", comment: "Cosa non va? (facoltativo)", send: "Invia",
      thanks: "Grazie per il tuo riscontro.", sendFailed: "Spiacenti, non è stato possibile inviare il riscontro.",
      conf: "Certezza", sure: ["molto sicuro", "abbastanza sicuro", "poco sicuro", "incerto"],
      labels: ["segnalato", "non segnalato", "da verificare"], sevs: ["nessuna", "lieve", "moderata", "alta"],
      cats: ["genere", "orientamento sessuale", "razza", "etnia", "religione", "orientamento politico",
        "condizione socioeconomica", "professione", "età", "disabilità", "dipendenza", "aspetto fisico",
        "migrazione e passato coloniale", "altro"],
    },
    pt: {
      why: "Motivo da sinalização", review: "Em análise", about: "Sobre esta palavra",
      words: "Sobre estas palavras", checked: "✓ verificado", close: "Fechar", loading: "Aguarde…",
      failed: "Não foi possível carregar a explicação.", post: "A mensagem", found: "Termos encontrados",
      explanation: "Explicação", decision: "Decisão", sev: "gravidade", targets: "Visa", instead: "Alternativas",
      sources: "Fontes", neutral: "Usado aqui em sentido neutro", unsure: "Sentido incerto",
      aimed: "Lido como dirigido contra pessoas", helpful: "Útil",
      wrong: "Isto está errado", comment: "O que está errado? (opcional)", send: "Enviar",
      thanks: "Obrigado pelo seu comentário.", sendFailed: "Não foi possível enviar o comentário.",
      conf: "Confiança", sure: ["muito seguro", "bastante seguro", "pouco seguro", "incerto"],
      labels: ["sinalizado", "não sinalizado", "em análise"], sevs: ["nenhuma", "ligeira", "moderada", "elevada"],
      cats: ["género", "orientação sexual", "raça", "etnia", "religião", "filiação política",
        "estatuto socioeconómico", "profissão", "idade", "deficiência", "dependência", "aparência física",
        "migração e passado colonial", "outro"],
    },
  };

  const has = (obj, key) => Object.prototype.hasOwnProperty.call(obj, key);
  const primary = (tag) => String(tag || "").trim().toLowerCase().split(/[-_]/)[0];

  // The first of the script's data-lang, the page's lang and the browser's language that has a translation
  function pickLanguage(dataLang, htmlLang, navLang) {
    for (const tag of [dataLang, htmlLang, navLang]) if (has(TEXTS, primary(tag))) return primary(tag);
    return "en";
  }

  // UI strings of one language, English for anything missing; labels, sevs and cats become id -> words
  function strings(lang) {
    const en = TEXTS.en;
    const s = Object.assign({}, en, has(TEXTS, lang) ? TEXTS[lang] : {});
    const byId = (ids, words, fallback) => Object.fromEntries(ids.map((id, i) => [id, words[i] || fallback[i]]));
    s.labels = byId(LABELS, s.labels, en.labels);
    s.sevs = byId(SEVS, s.sevs, en.sevs);
    s.cats = byId(CATS, s.cats, en.cats);
    return s;
  }

  const word = (map, id) => (has(map, id) ? map[id] : String(id));

  // A confidence in words, in the demo page's bands (web/render.py CONFIDENCE_BANDS): it is the model's or the
  // rules' own estimate, not a measured probability, so the number is only offered on demand (title, screen readers)
  const band = (c) => [0.9, 0.75, 0.5, -1].findIndex((floor) => c >= floor);
  // the vocabulary, the words around a term and a disguised spelling all give constant numbers: nothing to state
  const stated = (c, by) => c > 0 && !["vocabulary", "sense-cues", "disguise", ""].includes(String(by || ""));
  function sureness(c, by, s) {
    if (!stated(c, by)) return null;
    const n = s.conf + " " + Math.round(c * 100) + " %";
    return el("span", { class: "c", title: n }, s.sure[band(c)], el("span", { class: "sr" }, " (" + n + ")"));
  }

  // A decision's confidence is worth stating when something beyond the rules decided a term or the term-free check;
  // with a model configured but failing, the decision rests on the vocabulary's constants alone
  const decided = (v) => !!v && v.status !== "undetermined" && stated(1, v.decided_by);
  const beyondRules = (doc) => (doc.hits || []).some((h) => decided(h.verdict)) || decided(doc.targeting);

  // The suggested terms a suggestion note does not already name (engine/explain.py fresh_alternatives): "Say X…"
  // followed by "Alternatives: X" tells the reader the same thing twice
  function freshAlternatives(note, terms) {
    const said = String(note || "").toLowerCase();
    return [...new Set(terms || [])].filter((t) => !said.includes(String(t).toLowerCase()));
  }

  // 32-bit FNV-1a of the UTF-8 bytes, as 8 hex digits: a short cache key, not a security measure
  function fnv1a(text) {
    let h = 0x811c9dc5;
    for (const b of new TextEncoder().encode(text)) h = Math.imul(h ^ b, 0x01000193);
    return (h >>> 0).toString(16).padStart(8, "0");
  }

  function chunk(items, size) {
    const out = [];
    for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
    return out;
  }

  // The server counts characters as Python does (code points); JS strings index UTF-16 units
  function cpToUtf16Index(text, cp) {
    let i = 0;
    for (; cp > 0 && i < text.length; cp--) i += text.codePointAt(i) > 0xffff ? 2 : 1;
    return i;
  }

  // The text cut into plain ({hit: null}) and marked ({hit}) pieces in order; hits that overlap an earlier,
  // longer one or fall outside the text are left out so every character appears exactly once
  function segments(text, hits) {
    const length = Array.from(text).length;
    const valid = hits.filter((h) => Number.isInteger(h.start) && Number.isInteger(h.end) &&
      h.start >= 0 && h.start < h.end && h.end <= length);
    valid.sort((a, b) => a.start - b.start || b.end - a.end);
    const out = [];
    let at = 0;
    let reached = 0;
    for (const hit of valid) {
      if (hit.start < reached) continue;
      const from = cpToUtf16Index(text, hit.start);
      const to = cpToUtf16Index(text, hit.end);
      if (from > at) out.push({ text: text.slice(at, from), hit: null });
      out.push({ text: text.slice(from, to), hit });
      at = to;
      reached = hit.end;
    }
    if (at < text.length) out.push({ text: text.slice(at), hit: null });
    return out;
  }

  // Only web links become <a href>; "javascript:", "data:" and plain citations stay text
  function safeUrl(url) {
    try {
      const u = new URL(String(url).trim());
      return u.protocol === "http:" || u.protocol === "https:" ? u.href : null;
    } catch (e) {
      return null;
    }
  }

  const buttonLabel = (r, s) => (["why", "about", "words", "review"].includes(r.button) ? s[r.button] : null);

  // A post's text as its readers see its blocks: paragraphs and line breaks become new lines, white space inside a
  // line is one space, and every line of a quoted post (<blockquote>) opens with "> ", so that the server reads it
  // as another user's words (prompts/<lang>/use.yaml, `replies`); scripts, styles and templates are no text
  const BLOCKS = new Set(["ADDRESS", "ARTICLE", "ASIDE", "BR", "DD", "DIV", "DL", "DT", "FIGCAPTION", "FIGURE",
    "FOOTER", "H1", "H2", "H3", "H4", "H5", "H6", "HEADER", "HR", "LI", "OL", "P", "PRE", "SECTION", "TABLE", "TR",
    "UL"]);
  const NO_TEXT = new Set(["SCRIPT", "STYLE", "TEMPLATE", "NOSCRIPT"]);
  function postText(el) {
    if (!el.childNodes) return el.textContent || "";
    const parts = [];
    const walk = (node, pre) => {
      for (const child of node.childNodes) {
        if (child.nodeType === 3) parts.push(pre ? child.data : child.data.replace(/\s+/g, " "));
        if (child.nodeType !== 1 || NO_TEXT.has(child.tagName)) continue;
        if (child.tagName === "BLOCKQUOTE") {
          const lines = postText(child).split("\n").filter((line) => line);
          parts.push("\n" + lines.map((line) => "> " + line).join("\n") + "\n");
          continue;
        }
        const block = BLOCKS.has(child.tagName);
        if (block) parts.push("\n");
        walk(child, pre || child.tagName === "PRE");
        if (block) parts.push("\n");
      }
    };
    walk(el, false);
    return parts.join("").split("\n").map((line) => line.trim()).filter((line) => line).join("\n");
  }

  // A post's first eight words in quotation marks, for its button's description: the reply's own words, not
  // those of a post it quotes ("> " lines), unless it holds nothing else
  function opening(text) {
    const own = text.split("\n").filter((line) => !line.startsWith(">")).join(" ").trim();
    const words = (own || text).split(/\s+/);
    return "“" + words.slice(0, 8).join(" ") + (words.length > 8 ? "…”" : "”");
  }

  // Marked elements as posts: text from data-unerase-text, else the element's text; id from data-unerase-id,
  // else "post-N" counted from `first` in document order; empty posts are skipped (the server refuses them)
  function collectPosts(elements, first) {
    const posts = [];
    let n = first;
    for (const el of elements) {
      const attr = el.getAttribute("data-unerase-text");
      const text = (attr !== null ? attr : postText(el)).trim();
      const id = (el.getAttribute("data-unerase-id") || "post-" + n).slice(0, 200);
      // a post's own lang (not the page's): multilingual threads mark each post
      const scope = el.closest && el.closest("[lang]");
      const lang = scope && scope !== scope.ownerDocument.documentElement ? primary(scope.getAttribute("lang")) : "";
      n += 1;
      if (text) posts.push(lang ? { id, text, el, lang } : { id, text, el });
    }
    return posts;
  }

  // This session's answers, under "unerase:SITE:…"; a browser that refuses storage simply asks the server again
  function memo(storage, site) {
    const key = (name) => "unerase:" + site + ":" + name;
    return {
      get(name) {
        try {
          return JSON.parse(storage.getItem(key(name)));
        } catch (e) {
          return null;
        }
      },
      set(name, value) {
        try {
          storage.setItem(key(name), JSON.stringify(value));
        } catch (e) { /* full or blocked: only the reuse is lost */ }
      },
    };
  }

  const textKey = (text) => "u" + fnv1a(text) + "." + text.length;

  // Why a response failed, in the server's words when it sent problem+json
  async function problem(res) {
    let body = null;
    try {
      body = await res.json();
    } catch (e) { /* not JSON */ }
    return (body && (body.detail || body.title)) || "HTTP " + res.status;
  }

  const sendJson = (fetchFn, url, data) => fetchFn(url, {
    method: "POST", credentials: "omit", headers: { "Content-Type": "application/json" }, body: JSON.stringify(data),
  });

  // Labels for posts: finished answers from this session's memo, the rest in one request per 100 posts.
  // Resolves to {show, results: Map post id -> result}, or to null after one warning when the server refuses
  // the site or cannot be reached (the page then shows nothing at all).
  async function checkPosts(api, posts, lang, store, fetchFn, warn) {
    const results = new Map();
    const todo = [];
    for (const post of posts) {
      const known = store.get(textKey(post.text));
      if (known) results.set(post.id, Object.assign({}, known, { id: post.id }));
      else todo.push(post);
    }
    let show = store.get("show") === true;
    for (const part of chunk(todo, 100)) {
      let body;
      try {
        const sent = part.map((p) => (p.lang ? { id: p.id, text: p.text, lang: p.lang } : { id: p.id, text: p.text }));
        const res = await sendJson(fetchFn, api + "/check", { lang, posts: sent });
        if (!res.ok) {
          warn(await problem(res));
          return null;
        }
        body = await res.json();
      } catch (e) {
        // a refused preflight hides why; GET …/site (no preflight) tells
        const res = await fetchFn(api + "/site", { credentials: "omit" }).catch(() => null);
        warn(res && !res.ok ? await problem(res) : "no answer from " + api + " (" + e.message + ")");
        return null;
      }
      show = !!(body.site && body.site.show_checked);
      store.set("show", show);
      const texts = new Map(part.map((p) => [p.id, p.text]));
      for (const r of body.results || []) {
        if (!texts.has(r.id)) continue;
        results.set(r.id, r);
        // running answers may still change, so only finished ones are remembered
        if (r.status === "complete") {
          store.set(textKey(texts.get(r.id)), { analysis_id: r.analysis_id, label: r.label, severity: r.severity,
            status: r.status, button: r.button });
        }
      }
    }
    return { show, results };
  }

  // Lives in each shadow root; :host resets inherited styles so the forum's CSS cannot reach in
  const CSS = `:host{all:initial;display:block;margin:.3em 0;font:14px/1.45 system-ui,sans-serif;color:#1f2328;
overflow-wrap:anywhere}
[hidden]{display:none!important}
.sr{position:absolute;width:1px;height:1px;overflow:hidden;clip-path:inset(50%)}
button{font:inherit;color:inherit;cursor:pointer}
.b{font-size:.85em;padding:.1em .7em;border:1px solid #b35900;border-radius:1em;background:#fff4e5;color:#7a3d00;
transition:background .15s}
.b:hover{background:#ffe3bf}
.r{border-color:#6e7781;background:#f6f8fa;color:#424a53}
:focus-visible{outline:2px solid #0969da;outline-offset:2px}
.p{margin-top:.4em;max-width:40em;padding:.6em .9em;border:1px solid #d0d7de;border-radius:8px;background:#fff;
box-shadow:0 2px 8px rgba(0,0,0,.12)}
.h{display:flex;justify-content:space-between;align-items:center;gap:1em}
h2{font-size:1em;margin:0}
h3{font-size:.8em;text-transform:uppercase;letter-spacing:.04em;color:#57606a;margin:.8em 0 .2em}
.x{font-size:1.3em;line-height:1;border:0;background:none;padding:0 .3em}
blockquote{margin:0;padding:.3em .6em;border-left:3px solid #d0d7de;white-space:pre-wrap}
mark{background:#ffd8a8;color:inherit;border-radius:2px}
mark.n{background:#e4e4e4}
p{margin:.3em 0}
ul{margin:.2em 0;padding-left:1.2em}
summary{cursor:pointer}
.k,.m,.ok{color:#57606a;font-size:.9em}.c{text-decoration:underline dotted;cursor:help}
.e{color:#b42318}
a{color:#0969da}
.fb{display:flex;flex-wrap:wrap;gap:.5em;margin-top:.8em}
.fb button{padding:.2em .7em;border:1px solid #d0d7de;border-radius:6px;background:#f6f8fa}
label{display:block;width:100%}
textarea{display:block;box-sizing:border-box;width:100%;margin-top:.2em;font:inherit;color:inherit;background:inherit}
@media (prefers-color-scheme:dark){:host{color:#e6edf3}.p{background:#161b22;border-color:#30363d}
.b{background:#3d2300;color:#ffc680;border-color:#9e5a00}.b:hover{background:#552f00}
.r,.fb button{background:#21262d;color:#c9d1d9;border-color:#484f58}mark{background:#7a4a00}mark.n{background:#30363d}
.k,.m,.ok,h3{color:#8b949e}a{color:#58a6ff}.e{color:#ff7b72}}
@media (prefers-reduced-motion:reduce){*{transition:none!important;animation:none!important}}`;

  function el(tag, attrs, ...kids) {
    const node = document.createElement(tag);
    for (const name in attrs) node.setAttribute(name, attrs[name]);
    node.append(...kids);
    return node;
  }
  // a curator's, user's or model's words in their own bidi isolate: a U+202E in them cannot reverse what follows
  const iso = (text) => el("bdi", {}, String(text));

  let warned = false;
  const warnOnce = (message) => {
    if (!warned) console.warn("unerase: " + message);
    warned = true;
  };

  // One hit as a disclosure: the words and what they target up front, the vocabulary's information inside
  function hitItem(h, s) {
    const v = h.verdict || {};
    const d = el("details", { "data-id": h.id },
      el("summary", {}, el("b", {}, iso(h.surface || "")),
        ...(h.term && h.term !== h.surface ? [" → ", iso(h.term)] : [])));
    const cats = (h.categories || []).map((c) => word(s.cats, c)).join(", ");
    if (cats) d.append(el("p", { class: "k" }, s.targets + ": " + cats));
    if (v.status === "neutral" || v.status === "undetermined") {
      d.append(el("p", { class: "k" }, v.status === "neutral" ? s.neutral : s.unsure));
    }
    // the words that made the use rules read an attack ("nothing to add" after a quotation), as the statement says
    if (v.status === "contentious" && v.use === "attack" && v.use_cue) {
      d.append(el("p", { class: "k" }, s.aimed + ": ", iso(v.use_cue)));
    }
    const sure = v.status !== "undetermined" && sureness(v.confidence, v.decided_by, s);
    if (sure) d.append(el("p", { class: "k" }, s.conf + ": ", sure));
    // a verdict "decided by the vocabulary" only restates the description, which follows anyway
    const why = v.decided_by === "vocabulary" ? "" : v.explanation;
    for (const text of [why, h.description, h.suggestion_note]) if (text) d.append(el("p", {}, String(text)));
    const instead = freshAlternatives(h.suggestion_note, h.suggested_terms).flatMap((t, i) => (i ? [", ", iso(t)] : [iso(t)]));
    if (instead.length) d.append(el("p", {}, s.instead + ": ", ...instead));
    const sources = (h.sources || []).map((src) => {
      const href = safeUrl(src);
      const link = href && el("a", { href, target: "_blank", rel: "noopener noreferrer" }, String(src));
      return el("li", {}, link || String(src));
    });
    if (sources.length) d.append(el("p", { class: "k" }, s.sources + ":"), el("ul", {}, ...sources));
    return d;
  }

  // one random token per reader, so a repeated vote counts once
  function readerToken(storage) {
    try {
      storage = storage || localStorage;
      let t = storage.getItem("unerase:reader");
      if (!t) storage.setItem("unerase:reader", (t = crypto.randomUUID()));
      return t;
    } catch {
      return null;
    }
  }

  // "Helpful" / "This is wrong" (with an optional comment), then a thank-you that takes the focus
  function feedback(ctx, analysisId, postId) {
    const s = ctx.s;
    const yes = el("button", { type: "button" }, s.helpful);
    const no = el("button", { type: "button" }, s.wrong);
    const box = el("div", { class: "fb" }, yes, no);
    let comment = null;
    async function send(helpful) {
      const text = comment ? comment.value.trim() : "";
      box.querySelectorAll("button").forEach((b) => (b.disabled = true));
      try {
        const res = await sendJson(fetch, ctx.api + "/feedback", { analysis_id: analysisId, post_id: postId, helpful,
          comment: helpful ? null : text || null, reader: readerToken() });
        if (!res.ok) throw new Error(await problem(res));
        const thanks = el("p", { role: "status", tabindex: "-1" }, s.thanks);
        box.replaceChildren(thanks);
        thanks.focus();
      } catch (e) {
        box.querySelectorAll("button").forEach((b) => (b.disabled = false));
        if (!box.querySelector(".e")) box.append(el("p", { class: "e", role: "status" }, s.sendFailed));
      }
    }
    yes.addEventListener("click", () => send(true));
    no.addEventListener("click", () => {
      if (comment) return comment.focus();
      comment = el("textarea", { rows: "2", maxlength: "2000" });
      const submit = el("button", { type: "button" }, s.send);
      submit.addEventListener("click", () => send(false));
      box.append(el("label", {}, s.comment, comment), submit);
      comment.focus();
    });
    return box;
  }

  // Fills a panel from an analysis document and keeps it current as stream events arrive.
  // A finished check's label wins over the analysis's own: the site's threshold may have deferred it to review.
  function view(body, doc, ctx, result, postId, live, said) {
    const s = ctx.s;
    doc.hits = doc.hits || [];
    doc.errors = doc.errors || [];
    const quote = el("blockquote", doc.language ? { lang: doc.language, dir: "auto" } : { dir: "auto" });
    const foundTitle = el("h3", {}, s.found);
    const list = el("div", {});
    const explainTitle = el("h3", {}, s.explanation);
    const explanation = el("p", {});
    const decision = el("p", {});
    const errors = el("div", { class: "e" });
    let streamed = "";
    // the explanation comes first; each hit's vocabulary details wait, folded, below it
    body.replaceChildren(el("h3", {}, s.post), quote, explainTitle, explanation, foundTitle, list, decision, errors,
      feedback(ctx, result.analysis_id, postId));

    function drawHits() {
      const open = new Set(Array.from(list.children).filter((d) => d.open).map((d) => d.getAttribute("data-id")));
      list.replaceChildren(...doc.hits.map((h) => {
        const item = hitItem(h, s);
        item.open = open.has(h.id);
        return item;
      }));
      foundTitle.hidden = list.hidden = !doc.hits.length;
      quote.replaceChildren(...segments(String(doc.text || ""), doc.hits).map((p) => (p.hit
        ? el("mark", { title: String(p.hit.term || ""), class: (p.hit.verdict || {}).status === "neutral" ? "n" : "" },
          p.text)
        : p.text)));
    }
    function drawExplanation() {
      const text = (doc.explanation && doc.explanation.text) || streamed;
      explanation.textContent = text || (live ? s.loading : "");
      explainTitle.hidden = explanation.hidden = !text && !live;
    }
    function drawDecision() {
      const d = doc.decision;
      if (!d || result.button === "words") return decision.replaceChildren();
      const label = result.status === "complete" ? result.label : d.label;
      if (live) said.textContent = s.decision + ": " + word(s.labels, label);
      const cats = (d.categories || []).map((c) => word(s.cats, c)).join(", ");
      const sure = label !== "needs_review" && sureness(d.confidence, beyondRules(doc) ? "model" : "", s);
      decision.replaceChildren(el("b", {}, s.decision + ": "), word(s.labels, label) +
        (d.severity && d.severity !== "none" ? " · " + s.sev + ": " + word(s.sevs, d.severity) : "") +
        (cats ? " · " + s.targets + ": " + cats : ""), ...(sure ? [" · " + s.conf + ": ", sure] : []));
    }
    // one line per message: two stages failing the same way (a model that is down) read as one
    const drawErrors = () => errors.replaceChildren(...[...new Set(doc.errors.filter((e) => !e.stage)
      .map((e) => String(e.message || "")))].map((m) => el("p", {}, m)));
    drawHits();
    drawExplanation();
    drawDecision();
    drawErrors();
    return {
      hit(h) {
        const i = doc.hits.findIndex((x) => x.id === h.id);
        if (i < 0) doc.hits.push(h);
        else doc.hits[i] = Object.assign({}, doc.hits[i], h); // a replayed hit keeps the verdict already known
        drawHits();
      },
      verdict(v) {
        const h = doc.hits.find((x) => x.id === v.hit_id);
        if (h) h.verdict = v;
        drawHits();
      },
      delta(d) {
        streamed += d.text || "";
        drawExplanation();
      },
      explanation(x) {
        doc.explanation = x;
        drawExplanation();
      },
      decision(d) {
        doc.decision = d;
        drawDecision();
      },
      error(e) {
        // the stream replays from the start, so errors already in the document come again
        if (doc.errors.some((x) => x.message === e.message && x.stage === e.stage)) return;
        doc.errors.push(e);
        drawErrors();
      },
      done() {
        live = false;
        drawExplanation();
      },
    };
  }

  // Streams an unfinished analysis into its panel until "done", which every stream ends with
  function follow(ctx, id, doc, v, ended) {
    const source = new EventSource(ctx.api + "/analyses/" + encodeURIComponent(id) + "/events");
    const stop = () => {
      source.close();
      ended();
      v.done();
    };
    const handlers = {
      hit: v.hit, verdict: v.verdict, "explanation-delta": v.delta, explanation: v.explanation,
      decision: v.decision, error: v.error,
      targeting: (t) => (doc.targeting = t), // whether the decision's confidence is stated (beyondRules)
      done() {
        doc.status = "complete";
        ctx.docs.set(id, doc);
        stop();
      },
    };
    for (const name in handlers) {
      source.addEventListener(name, (e) => {
        // an "error" without data is the connection failing; left open, EventSource would reconnect and replay
        if (e.data === undefined) return stop(), v.error({ message: ctx.s.failed });
        let data;
        try {
          data = JSON.parse(e.data);
        } catch (x) {
          return;
        }
        handlers[name](data);
      });
    }
    return source;
  }

  // The button and its panel right after one post, in their own shadow root; null when there is nothing to show
  function mount(ctx, post, result, show) {
    const s = ctx.s;
    const label = buttonLabel(result, s);
    if (!label && !(show && result.label === "not_flagged")) return null;
    // lang lets screen readers speak the UI strings in the reader's language rather than the page's
    const host = el("span", { "data-unerase-widget": result.label, lang: ctx.ui });
    const root = host.attachShadow({ mode: "open" });
    root.append(el("style", {}, CSS));
    if (!label) {
      root.append(el("span", { class: "ok" }, s.checked));
      return { host, label: result.label, isOpen: () => false };
    }
    const author = post.el.getAttribute("data-unerase-author");
    const about = el("span", { id: "d", hidden: "" }, (author ? author + ": " : "") + opening(post.text));
    const button = el("button", { type: "button", class: result.label === "flagged" ? "b" : "b r",
      "aria-expanded": "false", "aria-controls": "p", "aria-describedby": "d" }, label);
    const said = el("p", { class: "sr", "aria-live": "polite" });
    const title = el("h2", { id: "t", tabindex: "-1" }, label);
    const closer = el("button", { type: "button", class: "x", "aria-label": s.close, title: s.close }, "×");
    const body = el("div", {});
    const panel = el("div", { id: "p", class: "p", role: "dialog", "aria-modal": "false", "aria-labelledby": "t",
      hidden: "" }, el("div", { class: "h" }, title, closer), body, said);
    root.append(button, about, panel);
    let source = null;
    let loaded = false;
    let tickets = 0; // a load that finishes after its panel was closed or reopened finds a newer ticket and stops

    async function load(ticket) {
      body.replaceChildren(el("p", { class: "m" }, s.loading));
      const id = result.analysis_id;
      let doc = ctx.docs.get(id);
      if (!doc) {
        try {
          const res = await fetch(ctx.api + "/analyses/" + encodeURIComponent(id), { credentials: "omit" });
          if (!res.ok) throw new Error(await problem(res));
          doc = await res.json();
        } catch (e) {
          if (ticket === tickets) {
            body.replaceChildren(el("p", { class: "e" }, s.failed));
            loaded = false; // opening again retries
          }
          return;
        }
        if (ticket !== tickets) return;
      }
      const live = doc.status === "pending" || doc.status === "running";
      const v = view(body, doc, ctx, result, post.id, live, said);
      if (live) source = follow(ctx, id, doc, v, () => (source = null));
      else ctx.docs.set(id, doc);
    }
    function open() {
      panel.hidden = false;
      button.setAttribute("aria-expanded", "true");
      title.focus();
      if (!loaded) {
        loaded = true;
        load(++tickets);
      }
    }
    function close() {
      panel.hidden = true;
      button.setAttribute("aria-expanded", "false");
      if (source) source.close();
      source = null;
      // an unfinished analysis is fetched again on reopening; a finished one stays as drawn
      if (!ctx.docs.has(result.analysis_id)) {
        loaded = false;
        tickets++;
      }
      button.focus();
    }
    button.addEventListener("click", () => (panel.hidden ? open() : close()));
    closer.addEventListener("click", close);
    root.addEventListener("keydown", (e) => {
      if (e.key === "Escape" && !panel.hidden) {
        e.stopPropagation();
        close();
      }
    });
    return { host, label: result.label, isOpen: () => !panel.hidden };
  }

  // Shows a post's answer; an answer that changed label replaces the old one unless its panel is being read
  function place(ctx, post, result, show) {
    const old = ctx.placed.get(post.el);
    if (old && (old.label === result.label || old.isOpen())) return;
    if (old) old.host.remove();
    const made = mount(ctx, post, result, show);
    if (made) {
      post.el.after(made.host);
      ctx.placed.set(post.el, made);
    } else ctx.placed.delete(post.el);
  }

  async function update(ctx, posts, round) {
    const answer = await checkPosts(ctx.api, posts, ctx.lang, ctx.store, fetch, warnOnce);
    if (!answer) return;
    const running = [];
    for (const post of posts) {
      const result = answer.results.get(post.id);
      if (!result) continue;
      place(ctx, post, result, answer.show || ctx.showAttr);
      if (result.status !== "complete") running.push(post);
    }
    // analyses the server had not finished are asked about again, a few times, further apart each time
    if (running.length && round < 5) setTimeout(() => update(ctx, running, round + 1), 2000 * 2 ** round);
  }

  // Analyses every marked element not seen before; pages that add posts later call window.unerase.scan()
  function scan(ctx) {
    const fresh = Array.from(document.querySelectorAll("[data-unerase]")).filter((e) => !ctx.seen.has(e));
    fresh.forEach((e) => ctx.seen.add(e));
    const posts = collectPosts(fresh, ctx.count);
    ctx.count += fresh.length;
    return posts.length ? update(ctx, posts, 0) : Promise.resolve();
  }

  function start() {
    const tag = me || document.querySelector("script[data-site][src*='widget']");
    const site = tag && tag.getAttribute("data-site");
    if (!site) return warnOnce("the widget's <script> tag needs a data-site attribute with the site key");
    let storage = null;
    try {
      storage = window.sessionStorage; // reading it throws where storage is blocked
    } catch (e) { /* no memo then */ }
    const page = document.documentElement.getAttribute("lang");
    const ui = pickLanguage(tag.getAttribute("data-lang"), page, navigator.language);
    const ctx = {
      ui,
      api: new URL(tag.src, location.href).origin + "/api/v1/widget/" + encodeURIComponent(site),
      s: strings(ui),
      lang: primary(page) || null,
      showAttr: tag.getAttribute("data-show-checked") === "true",
      store: memo(storage, site),
      docs: new Map(), // finished analysis documents, so reopening a panel does not fetch again
      placed: new WeakMap(),
      seen: new WeakSet(),
      count: 1,
    };
    window.unerase = { scan: () => scan(ctx), text: postText };
    scan(ctx);
  }

  if (typeof document !== "undefined") {
    if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
    else start();
  }
  if (typeof module === "object" && module.exports) {
    module.exports = { TEXTS, CATS, LABELS, SEVS, pickLanguage, strings, fnv1a, chunk, cpToUtf16Index, segments,
      safeUrl, buttonLabel, postText, opening, collectPosts, memo, textKey, checkPosts, readerToken, band, stated, beyondRules,
      freshAlternatives };
  }
})();
