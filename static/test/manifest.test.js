// The JavaScript names only what the manifest has: every event kind, register
// and view it mentions is in the document the server sends.

import test from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { manifest } from "./fixtures.js";

const root = new URL("../", import.meta.url);
const sources = [
  ...readdirSync(root).filter((f) => f.endsWith(".js")),
  ...readdirSync(new URL("views/", root)).filter((f) => f.endsWith(".js")).map((f) => "views/" + f),
].map((f) => ({ file: f, text: readFileSync(new URL(f, root), "utf8") }));

test("every event kind the code names is a kind of the trace", () => {
  let named = 0;
  for (const { file, text } of sources) {
    for (const m of text.matchAll(/"((?:sacc|iommu|cpu|pci|msi|irq|pio|guest)_[a-z_]+)"/g)) {
      named++;
      assert.ok(manifest.kinds[m[1]], file + " names " + m[1] + ", which is not an event kind");
    }
  }
  assert.ok(named > 50, "the pattern finds the kinds the views name");
});

test("every register the fold names is in the datasheet", () => {
  const names = new Set(manifest.datasheet.registers.flatMap((r) => [r.name, r.hi_name]).filter(Boolean));
  const text = sources.find((s) => s.file === "state.js").text;
  const cases = [...text.matchAll(/case "([A-Z_]+)"/g)].map((m) => m[1]);
  assert.ok(cases.length >= 6);
  for (const c of cases) assert.ok(names.has(c), c);
});

test("every view of the registry is a module with mount, found where the manifest says", async () => {
  for (const v of manifest.views) {
    const mod = await import(new URL(v.module, root));
    assert.equal(typeof mod.mount, "function", v.name);
    if (mod.caption) assert.equal(typeof mod.caption, "function", v.name);
  }
  const files = sources.filter((s) => s.file.startsWith("views/")).map((s) => s.file).sort();
  assert.deepEqual(files, manifest.views.map((v) => v.module).sort());
});

test("no module keeps its own copy of a datasheet fact", () => {
  for (const { file, text } of sources) {
    assert.doesNotMatch(text, /REG_BY_OFFSET|OPCODES|VIEW_ORDER|VIEW_LABELS|SIDES\s*=/, file);
    assert.doesNotMatch(text, /install\(L\)/, file);
  }
});
