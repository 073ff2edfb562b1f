// The served file itself: no markup-parsing DOM APIs, small enough to embed, and inert outside a browser.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { test } from "node:test";
import vm from "node:vm";
import { gzipSync } from "node:zlib";

const url = new URL("../unerase-widget.js", import.meta.url);
const source = readFileSync(url, "utf8");
const BUDGET = 12 * 1024;

test("never parses strings as HTML or code", () => {
  for (const api of ["innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "createContextualFragment",
    "DOMParser", "eval(", "new Function", "setTimeout(\"", "setHTMLUnsafe"]) {
    assert.ok(!source.includes(api), `the widget uses ${api}`);
  }
});

test(`is at most ${BUDGET} bytes gzipped (level 9) as served`, () => {
  // the server drops whole-line comments and indentation (compact() in web/routes/widget.py)
  const served = source.split("\n").filter((l) => !l.trimStart().startsWith("//")).map((l) => l.trimStart()).join("\n");
  const size = gzipSync(Buffer.from(served, "utf8"), { level: 9 }).length;
  assert.ok(size <= BUDGET, `${size} bytes gzipped; the budget is ${BUDGET}`);
});

test("exports its helpers to CommonJS and starts nothing without a document", () => {
  const sandbox = { module: { exports: {} }, console };
  vm.runInNewContext(source, sandbox, { filename: "unerase-widget.js" });
  const names = Object.keys(sandbox.module.exports);
  for (const name of ["pickLanguage", "strings", "fnv1a", "chunk", "cpToUtf16Index", "segments", "safeUrl",
    "buttonLabel", "collectPosts", "checkPosts"]) {
    assert.ok(names.includes(name), name);
  }
  assert.equal(sandbox.unerase, undefined, "no page API without a page");
});

test("defines no globals when loaded as a plain script", () => {
  const sandbox = {};
  vm.runInNewContext(source, sandbox);
  assert.deepEqual(Object.keys(sandbox), []);
  assert.equal(typeof createRequire(import.meta.url)("../unerase-widget.js").fnv1a, "function");
});

test("keeps links safe: every target=_blank carries rel=noopener noreferrer", () => {
  const blanks = source.match(/target: "_blank"[^}]*/g) || [];
  assert.ok(blanks.length > 0);
  for (const attrs of blanks) assert.match(attrs, /rel: "noopener noreferrer"/);
});
