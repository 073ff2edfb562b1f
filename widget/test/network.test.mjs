// Asking the server: batching, the session memo, and staying quiet (one warning) when the site is refused.
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { describe, test } from "node:test";

const w = createRequire(import.meta.url)("../unerase-widget.js");
const API = "https://unerase.example/api/v1/widget/KEY";

// A sessionStorage stand-in: only getItem/setItem, values kept as the strings the browser would keep
function fakeStorage() {
  const items = new Map();
  return { items, getItem: (k) => (items.has(k) ? items.get(k) : null), setItem: (k, v) => items.set(k, String(v)) };
}

// A server that labels posts by their text and records every request it gets
function fakeServer({ status = 200, answer, showChecked = false } = {}) {
  const calls = [];
  const fetchFn = async (url, init) => {
    const body = JSON.parse(init.body);
    calls.push({ url, init, body });
    if (status !== 200) return answer;
    const results = body.posts.map((p) => ({
      id: p.id, analysis_id: "a-" + p.text, severity: null,
      label: p.text.includes("slur") ? "flagged" : "not_flagged",
      status: p.text.includes("slow") ? "running" : "complete",
    }));
    return new Response(JSON.stringify({ site: { show_checked: showChecked }, results }), { status: 200 });
  };
  return { calls, fetchFn };
}

const posts = (n) => Array.from({ length: n }, (_, i) => ({ id: "p" + i, text: "text " + i }));

// checkPosts with a fresh (or the given) storage; resolves to its answer and the warnings it gave
async function check(input, fetchFn, { storage = fakeStorage(), site = "KEY", lang = null } = {}) {
  const warnings = [];
  const answer = await w.checkPosts(API, input, lang, w.memo(storage, site), fetchFn, (m) => warnings.push(m));
  return { answer, warnings };
}

describe("checkPosts", () => {
  test("sends one POST per 100 posts, with the page language and only ids and texts", async () => {
    const server = fakeServer();
    const input = posts(250).map((p) => Object.assign(p, { el: {} }));
    const { answer, warnings } = await check(input, server.fetchFn, { lang: "fr" });
    assert.deepEqual(server.calls.map((c) => c.body.posts.length), [100, 100, 50]);
    for (const call of server.calls) {
      assert.equal(call.url, API + "/check");
      assert.equal(call.init.method, "POST");
      assert.equal(call.init.headers["Content-Type"], "application/json");
      assert.equal(call.body.lang, "fr");
      assert.deepEqual(Object.keys(call.body.posts[0]), ["id", "text"]);
    }
    assert.equal(answer.results.size, 250);
    assert.equal(answer.results.get("p249").analysis_id, "a-text 249");
    assert.deepEqual(warnings, []);
  });

  test("does not ask again in the same session for finished answers, but does for running ones", async () => {
    const storage = fakeStorage();
    const first = fakeServer();
    const input = [{ id: "1", text: "a slur" }, { id: "2", text: "fine" }, { id: "3", text: "slow slur" }];
    assert.deepEqual((await check(input, first.fetchFn, { storage })).warnings, []);
    assert.equal(first.calls.length, 1);

    // a reload: new ids for the same texts, answered from the memo except the unfinished one
    const second = fakeServer();
    const again = input.map((p) => ({ id: "new-" + p.id, text: p.text }));
    const { answer } = await check(again, second.fetchFn, { storage });
    assert.deepEqual(second.calls.map((c) => c.body.posts.map((p) => p.text)), [["slow slur"]]);
    assert.equal(answer.results.get("new-1").label, "flagged");
    assert.equal(answer.results.get("new-1").id, "new-1");
    assert.equal(answer.results.get("new-2").label, "not_flagged");
    assert.equal(answer.results.get("new-3").status, "running");
  });

  test("keeps the memo per site", async () => {
    const storage = fakeStorage();
    await check(posts(1), fakeServer().fetchFn, { storage });
    const other = fakeServer();
    await check(posts(1), other.fetchFn, { storage, site: "OTHER" });
    assert.equal(other.calls.length, 1);
    assert.ok([...storage.items.keys()].every((k) => k.startsWith("unerase:KEY:") || k.startsWith("unerase:OTHER:")));
  });

  test("remembers the site's show_checked for answers that come from the memo", async () => {
    const storage = fakeStorage();
    const first = await check(posts(1), fakeServer({ showChecked: true }).fetchFn, { storage });
    assert.equal(first.answer.show, true);
    const second = fakeServer();
    const again = await check(posts(1), second.fetchFn, { storage });
    assert.equal(second.calls.length, 0);
    assert.equal(again.answer.show, true);
  });

  test("ignores results for posts it did not send", async () => {
    const fetchFn = async () => new Response(JSON.stringify({
      site: { show_checked: false },
      results: [{ id: "p0", analysis_id: "x", label: "flagged", status: "complete" },
        { id: "stranger", analysis_id: "y", label: "flagged", status: "complete" }],
    }));
    const { answer } = await check(posts(1), fetchFn);
    assert.deepEqual([...answer.results.keys()], ["p0"]);
  });

  test("an unknown site: warns once with the server's detail and gives nothing", async () => {
    const problem = { type: "about:blank", title: "Not Found", status: 404, detail: "no site has the key 'KEY'" };
    const headers = { "Content-Type": "application/problem+json" };
    const server = fakeServer({ status: 404, answer: new Response(JSON.stringify(problem), { status: 404, headers }) });
    const { answer, warnings } = await check(posts(250), server.fetchFn);
    assert.equal(answer, null);
    assert.deepEqual(warnings, ["no site has the key 'KEY'"]);
    assert.equal(server.calls.length, 1, "stops after the first refusal");
  });

  test("a refusal without a problem body still says what happened", async () => {
    const server = fakeServer({ status: 403, answer: new Response("<html>forbidden</html>", { status: 403 }) });
    const { answer, warnings } = await check(posts(1), server.fetchFn);
    assert.equal(answer, null);
    assert.deepEqual(warnings, ["HTTP 403"]);
  });

  test("a refused preflight: the reason is asked for with a plain GET and warned once", async () => {
    const problem = { status: 403, detail: "the origin https://copy.example is not allowed for site 'KEY'" };
    const asked = [];
    const fetchFn = async (url, init) => {
      asked.push([init.method || "GET", url]);
      if (init.method === "POST") throw new TypeError("Failed to fetch"); // what a refused preflight leaves
      return new Response(JSON.stringify(problem), { status: 403 });
    };
    const { answer, warnings } = await check(posts(150), fetchFn);
    assert.equal(answer, null);
    assert.deepEqual(warnings, [problem.detail]);
    assert.deepEqual(asked, [["POST", API + "/check"], ["GET", API + "/site"]]);
    assert.equal(asked.length, 2, "stops after the first refusal");
  });

  test("a network error: one warning naming the server, nothing remembered", async () => {
    const storage = fakeStorage();
    const fetchFn = async () => {
      throw new TypeError("Failed to fetch");
    };
    const { answer, warnings } = await check(posts(150), fetchFn, { storage });
    assert.equal(answer, null);
    assert.equal(warnings.length, 1);
    assert.match(warnings[0], /unerase\.example.*Failed to fetch/);
    assert.equal(storage.items.size, 0);
  });
});

describe("readerToken", () => {
  test("makes one random token per browser and keeps it", () => {
    const storage = fakeStorage();
    const token = w.readerToken(storage);
    assert.match(token, /^[0-9a-f-]{36}$/);
    assert.equal(w.readerToken(storage), token);
    assert.deepEqual([...storage.items.keys()], ["unerase:reader"]);
    assert.notEqual(w.readerToken(fakeStorage()), token);
  });
  test("gives none where storage is blocked (the server then stands the address in)", () => {
    const blocked = { getItem: () => { throw new Error("SecurityError"); }, setItem: () => {} };
    assert.equal(w.readerToken(blocked), null);
  });
});

describe("memo", () => {
  test("round-trips values under unerase:SITE: keys", () => {
    const storage = fakeStorage();
    const m = w.memo(storage, "S1");
    m.set("x", { a: 1 });
    assert.deepEqual(m.get("x"), { a: 1 });
    assert.deepEqual([...storage.items.keys()], ["unerase:S1:x"]);
    assert.equal(m.get("missing"), null);
  });
  test("survives blocked, full or missing storage", () => {
    const refuse = (name) => () => {
      throw new Error(name);
    };
    const blocked = { getItem: refuse("SecurityError"), setItem: refuse("QuotaExceededError") };
    for (const storage of [blocked, null]) {
      const m = w.memo(storage, "S");
      assert.doesNotThrow(() => m.set("x", 1));
      assert.equal(m.get("x"), null);
    }
    const garbled = fakeStorage();
    garbled.setItem("unerase:S:x", "{not json");
    assert.equal(w.memo(garbled, "S").get("x"), null);
  });
  test("keys texts by hash and length", () => {
    assert.equal(w.textKey("foobar"), "ubf9cf968.6");
    assert.notEqual(w.textKey("a"), w.textKey("b"));
  });
});
