// views/memory.js: physical memory at the position, as the monitor's `xp` dumps
// it (the server re-executes the run to the position); choosing a row decodes
// the descriptor or completion there, field by field, from the manifest's
// layouts.

import { h } from "../dom.js";
import { asker } from "../inspect.js";
import { bytesAt, hex, parseDump } from "../format.js";

// Fields shown in decimal; every other field is shown in hex.
const DECIMAL = new Set(["length", "result_len"]);

// formatField shows one decoded field (v a BigInt) of a layout.
export function formatField(layout, f, v, ds) {
  switch (f.name) {
    case "opcode": return hex(v) + " " + ds.opName(v);
    case "status": return hex(v) + (v ? " (error)" : " (OK)");
    case "phase": {
      const p = (v & BigInt(layout.bits("phase", "phase").mask)) ? 1 : 0;
      return String(p) + (p ? " ●" : " ○");
    }
  }
  if (DECIMAL.has(f.name)) return String(v);
  const set = (f.bits || []).filter((b) => v & BigInt(b.mask)).map((b) => b.name);
  return hex(v) + (set.length ? " (" + set.join(", ") + ")" : "");
}

// decodeAt decodes the descriptor (or, inside the CQ, the completion) that holds
// physical address addr, from dumped rows: {title, fields: [[name, text]]}, or
// just a title saying what is missing.
export function decodeAt(rows, addr, st, ds) {
  const a = Number(addr);
  const C = ds.completion, D = ds.descriptor;
  const cqSlot = C.slot(st.cqPhys, st.cqSize, a);
  if (cqSlot >= 0) {
    const at = st.cqPhys + C.size * cqSlot;
    const bytes = bytesAt(rows, BigInt(at), C.size);
    if (!bytes) return { title: "CQ slot " + cqSlot + ": not all of it is in this dump" };
    const v = C.decode(bytes);
    return { title: "Completion in CQ slot " + cqSlot + " at " + hex(at),
      fields: C.fields.map((f) => [f.name, formatField(C, f, v[f.name], ds)]) };
  }
  let start = a - (a % D.size);
  let title = "Descriptor at ";
  const sqSlot = D.slot(st.sqPhys, st.sqSize, a);
  if (sqSlot >= 0) {
    start = st.sqPhys + D.size * sqSlot;
    title = "Descriptor in SQ slot " + sqSlot + " at ";
  }
  const bytes = bytesAt(rows, BigInt(start), D.size);
  if (!bytes) return { title: title + hex(start) + ": the dump does not hold all " + D.size + " bytes; dump from this address" };
  const v = D.decode(bytes);
  return { title: title + hex(start), fields: D.fields.map((f) => [f.name, formatField(D, f, v[f.name], ds)]) };
}

// defaultAddress is where the view dumps unless the reader typed an address: the
// SQ, where the log shows it.
export function defaultAddress(st) {
  const def = st.sqPhys != null ? st.sqPhys : st.sqBase;
  return def != null ? hex(def) : "";
}

// dumpRequest is the monitor command for what the reader typed, or a sentence
// saying what to type instead.
export function dumpRequest(typed) {
  const v = typed.trim();
  if (/^(0x[0-9a-f]+|[0-9]+)$/i.test(v)) return { line: "xp /32xw " + v };
  return { problem: v ? "Type an address such as 0x100000." :
    "The SQ's address is not known at this position yet: type an address, or step on." };
}

export function mount(w, panel, env) {
  const ds = env.ds;
  let typed = false;
  const addr = h("input", { type: "text", class: "sw-addr", spellcheck: "false", autocomplete: "off",
    placeholder: "0x100000", "aria-label": "Physical address to dump", inputmode: "text" });
  addr.addEventListener("input", () => { typed = addr.value.trim() !== ""; });
  addr.addEventListener("keydown", (e) => { if (e.key === "Enter") { e.preventDefault(); refresh(); } });
  const pick = (which) => h("button", { type: "button", class: "sw-btn", onclick: () => {
    const st = w.timeline.stateAt(w.pos);
    const v = which === "sq" ? st.sqPhys : st.cqPhys;
    if (v != null) { addr.value = hex(v); typed = which !== "sq"; refresh(); }
  } }, which.toUpperCase());
  const status = h("p", { class: "sw-muted sw-inspect-status", "aria-live": "polite" });
  const table = h("div", { class: "sw-dump", role: "group", "aria-label": "Memory dump; choose a row to decode it" });
  const decoded = h("div", { class: "sw-decoded", "aria-live": "polite" });
  panel.append(
    h("div", { class: "sw-mem-bar" },
      h("label", { class: "sw-field" }, h("span", null, "xp /32xw"), addr),
      h("button", { type: "button", class: "sw-btn", onclick: () => refresh() }, "Dump"), pick("sq"), pick("cq")),
    status, table, decoded);
  let rows = [];
  let chosen = null;
  let cur = { st: null, pos: 0 };

  function showDecoded() {
    if (chosen == null || !cur.st) { decoded.replaceChildren(h("p", { class: "sw-muted" }, "Choose a row to decode the descriptor (or completion) there.")); return; }
    const r = decodeAt(rows, chosen, cur.st, ds);
    decoded.replaceChildren(h("h4", null, r.title),
      r.fields ? h("dl", null, r.fields.map(([k, v]) => [h("dt", null, k), h("dd", null, v)])) : null);
  }

  const q = asker(w, (out, r, err) => {
    if (err) { status.textContent = "Could not read memory: " + err.message; table.replaceChildren(); return; }
    rows = parseDump(out);
    status.textContent = "Physical memory at " + r.line.split(" ").pop() + ", at event " + r.seq + ".";
    if (!rows.length) { table.replaceChildren(h("pre", { class: "sw-text" }, out)); return; }
    table.replaceChildren(...rows.map((row) => {
      const a = Number(row.addr);
      const btn = h("button", { type: "button", class: "sw-dump-row" + (chosen === a ? " is-chosen" : ""),
        title: "Decode the descriptor (or completion) at " + hex(a) },
      h("span", { class: "sw-dump-addr" }, hex(a, 8)), row.words.map((wd) => h("span", { class: "sw-dump-word" }, hex(wd, 8))));
      btn.addEventListener("click", () => {
        chosen = a;
        for (const x of table.children) x.classList.toggle("is-chosen", x === btn);
        showDecoded();
      });
      return btn;
    }));
    showDecoded();
  });

  function refresh() {
    const req = dumpRequest(addr.value);
    if (req.problem) { status.textContent = req.problem; return; }
    status.textContent = "Reading memory at event " + cur.pos + "…";
    q.ask(req.line, cur.pos);
  }

  return {
    update({ pos, st }) {
      cur = { st, pos };
      if (!typed) addr.value = defaultAddress(st);
      refresh();
      showDecoded();
    },
  };
}
