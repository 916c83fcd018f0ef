// views/memory.js: memory at the position, as the monitor dumps it (the server
// re-executes the run to the position): physical memory with `xp`, or DMA
// addresses through the IOMMU with `x`, the way the device sees them. The
// view always says which of the two a dump is, and a ring's DMA address is
// never dumped as if it were physical. Choosing a row decodes the descriptor or
// completion there, field by field, from the manifest's layouts.

import { h } from "../dom.js";
import { asker, statusWords } from "../inspect.js";
import { bytesAt, hex, parseDump } from "../format.js";

// Fields shown in decimal; every other field is shown in hex.
const DECIMAL = new Set(["length", "result_len"]);

// SPACES are the two kinds of address a dump can start at: the monitor command
// for each, and how the view names it.
export const SPACES = {
  xp: { name: "physical", command: "xp", label: "physical (xp)", say: "Physical memory at " },
  x: { name: "DMA", command: "x", label: "DMA address, through the IOMMU (x)", say: "DMA address " },
};

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

// ringsIn is where the SQ and CQ start in an address space: physical addresses
// (where the log has shown them) for xp, the DMA addresses the rings were
// programmed with for x.
function ringsIn(st, space) {
  return space === "x" ? { sq: st.sqBase, cq: st.cqBase } : { sq: st.sqPhys, cq: st.cqPhys };
}

// decodeAt decodes the descriptor (or, inside the CQ, the completion) that holds
// address addr of the space the rows were dumped from ("xp" physical, "x" DMA),
// from dumped rows: {title, fields: [[name, text]]}, or just a title saying what
// is missing.
export function decodeAt(rows, addr, st, ds, space = "xp") {
  const a = Number(addr);
  const C = ds.completion, D = ds.descriptor;
  const at0 = space === "x" ? "DMA address " : "";
  const rings = ringsIn(st, space);
  const cqSlot = C.slot(rings.cq, st.cqSize, a);
  if (cqSlot >= 0) {
    const at = rings.cq + C.size * cqSlot;
    const bytes = bytesAt(rows, BigInt(at), C.size);
    if (!bytes) return { title: "CQ slot " + cqSlot + ": not all of it is in this dump" };
    const v = C.decode(bytes);
    return { title: "Completion in CQ slot " + cqSlot + " at " + at0 + hex(at),
      fields: C.fields.map((f) => [f.name, formatField(C, f, v[f.name], ds)]) };
  }
  let start = a - (a % D.size);
  let title = "Descriptor at " + at0;
  const sqSlot = D.slot(rings.sq, st.sqSize, a);
  if (sqSlot >= 0) {
    start = rings.sq + D.size * sqSlot;
    title = "Descriptor in SQ slot " + sqSlot + " at " + at0;
  }
  const bytes = bytesAt(rows, BigInt(start), D.size);
  if (!bytes) return { title: title + hex(start) + ": the dump does not hold all " + D.size + " bytes; dump from this address" };
  const v = D.decode(bytes);
  return { title: title + hex(start), fields: D.fields.map((f) => [f.name, formatField(D, f, v[f.name], ds)]) };
}

// ringTarget is where the view dumps to show a ring ("sq" or "cq"): {space,
// addr, note}, the note saying how the ring's DMA address and its physical
// address relate; or {problem} when the ring cannot be dumped yet. space forces
// an address space; without it the view dumps physical memory when the ring's
// physical address is known and the DMA address through the IOMMU otherwise.
export function ringTarget(st, ring, space) {
  const R = ring.toUpperCase();
  const dma = ring === "sq" ? st.sqBase : st.cqBase;
  const phys = ring === "sq" ? st.sqPhys : st.cqPhys;
  if (dma == null) return { problem: "The " + R + "'s address is not known at this position yet: step on, or type an address." };
  if (!st.iommu.on) {
    return { space: space || "xp", addr: dma, note: "the " + R + " (its DMA address " + hex(dma) + " is its physical address: the IOMMU is off)" };
  }
  if (space === "x" || (space == null && phys == null)) {
    return { space: "x", addr: dma, note: "the " + R +
      (phys != null ? ", at physical " + hex(phys) : "; its physical address shows once the IOMMU has translated this one") };
  }
  if (phys == null) {
    return { problem: "The " + R + "'s physical address is not known yet: the IOMMU has not translated its DMA address " +
      hex(dma) + ". Dump it as a DMA address (x)." };
  }
  return { space: "xp", addr: phys, note: "the " + R + ", whose DMA address is " + hex(dma) + " (the IOMMU maps it here)" };
}

// defaultAddress is the address the view dumps for a ring unless the reader
// typed one (the SQ, unless the widget asks for the CQ), "" if not known yet.
export function defaultAddress(st, ring = "sq") {
  const t = ringTarget(st, ring);
  return t.problem ? "" : hex(t.addr);
}

// dumpRequest is the monitor command for what the reader typed in a space, or a
// sentence saying what to type instead.
export function dumpRequest(typed, space = "xp") {
  const v = typed.trim();
  const sp = SPACES[space] || SPACES.xp;
  if (/^(0x[0-9a-f]+|[0-9]+)$/i.test(v)) return { line: sp.command + " /32xw " + v };
  return { problem: v ? "Type an address such as 0x100000." :
    "No address to dump at this position yet: type one, or step on." };
}

// WORDS are the view's status lines (inspect.js, statusWords); a request carries
// the space and what the address is (note) beside line and seq.
export const WORDS = {
  asking: (r) => "Reading memory at event " + r.seq + "…",
  answered: (r) => {
    const sp = SPACES[r.line.split(" ")[0]] || SPACES.xp;
    return sp.say + r.line.split(" ").pop() + (r.line.startsWith("x ") ? " (x: through the IOMMU, as the device sees it)" : " (xp)") +
      ", at event " + r.seq + (r.note ? ": " + r.note : "") + ".";
  },
  failed: (r, message) => "Could not read memory at event " + r.seq + ": " + message + ".",
};

// ox is a dumped number as eight hex digits after a "0x" that a narrow
// screen leaves out (the style sheet), so that a row of four words fits.
function ox(v) { return [h("span", { class: "sw-0x" }, "0x"), hex(v, 8).slice(2)]; }

export function mount(w, panel, env) {
  const ds = env.ds;
  const first = (w.root && w.root.dataset.memory) === "cq" ? "cq" : "sq";
  let follow = first;   // the ring the view follows, or null once the reader typed an address
  let space = null;     // the space the reader chose, or null: the ring's
  const sid = "sw" + w.n + "-memspace";
  const spaceSel = h("select", { class: "sw-memspace", id: sid, "aria-label": "Address space" },
    Object.entries(SPACES).map(([k, sp]) => h("option", { value: k }, sp.label)));
  const cmd = h("span", { class: "sw-memcmd" }, "xp /32xw");
  const addr = h("input", { type: "text", class: "sw-addr", spellcheck: "false", autocomplete: "off",
    placeholder: "0x100000", "aria-label": "Address to dump", inputmode: "text" });
  addr.addEventListener("input", () => { follow = addr.value.trim() === "" ? first : null; });
  addr.addEventListener("keydown", (e) => { if (e.key === "Enter") { e.preventDefault(); refresh(true); } });
  spaceSel.addEventListener("change", () => { space = spaceSel.value; refresh(true); });
  const pick = (ring) => h("button", { type: "button", class: "sw-btn", "data-ring": ring, onclick: () => {
    follow = ring;
    space = null;
    refresh(true);
  } }, ring.toUpperCase());
  const status = h("p", { class: "sw-muted sw-inspect-status", "aria-live": "polite" });
  const table = h("div", { class: "sw-dump", role: "group", "aria-label": "Memory dump; choose a row to decode it" });
  const decoded = h("div", { class: "sw-decoded", "aria-live": "polite" });
  panel.append(
    h("div", { class: "sw-mem-bar" },
      h("label", { class: "sw-field", for: sid }, h("span", null, "Address"), spaceSel),
      h("label", { class: "sw-field" }, cmd, addr),
      h("button", { type: "button", class: "sw-btn", onclick: () => refresh(true) }, "Dump"), pick("sq"), pick("cq")),
    status, table, decoded);
  let rows = [];
  let rowsSpace = "xp";
  let chosen = null;
  let cur = { st: null, pos: 0 };
  let said = "";
  const say = (t) => { if (t !== said) { said = t; status.textContent = t; } };

  let decodedFor = null;
  function showDecoded() {
    // Drawn again only when what it shows can have changed: redraws come every frame.
    const key = chosen == null || !cur.st ? "none" : chosen + "|" + cur.st.seq;
    if (key === decodedFor) return;
    decodedFor = key;
    if (chosen == null || !cur.st) { decoded.replaceChildren(h("p", { class: "sw-muted" }, "Choose a row to decode the descriptor (or completion) there.")); return; }
    const r = decodeAt(rows, chosen, cur.st, ds, rowsSpace);
    decoded.replaceChildren(h("h4", null, r.title),
      r.fields ? h("dl", null, r.fields.map(([k, v]) => [h("dt", null, k), h("dd", null, v)])) : null);
  }

  const q = asker(w, {
    show(out, r) {
      rows = parseDump(out);
      rowsSpace = r.line.split(" ")[0] === "x" ? "x" : "xp";
      decodedFor = null;
      table.dataset.space = rowsSpace;
      if (!rows.length) { table.replaceChildren(h("pre", { class: "sw-text" }, out)); showDecoded(); return; }
      table.replaceChildren(...rows.map((row) => {
        const a = Number(row.addr);
        const btn = h("button", { type: "button", class: "sw-dump-row" + (chosen === a ? " is-chosen" : ""),
          title: "Decode the descriptor (or completion) at " + (rowsSpace === "x" ? "DMA address " : "") + hex(a) },
        h("span", { class: "sw-dump-addr" }, ox(a)), row.words.map((wd) => h("span", { class: "sw-dump-word" }, ox(wd))));
        btn.addEventListener("click", () => {
          chosen = a;
          for (const x of table.children) x.classList.toggle("is-chosen", x === btn);
          showDecoded();
        });
        return btn;
      }));
      showDecoded();
    },
    status(st) { say(statusWords(st, WORDS)); },
  });

  // target is what to dump now: {line, note} or {problem}.
  function target() {
    if (follow && cur.st) {
      const t = ringTarget(cur.st, follow, space);
      if (t.problem) return t;
      addr.value = hex(t.addr);
      spaceSel.value = t.space;
      return { ...dumpRequest(addr.value, t.space), note: t.note };
    }
    const sp = space || "xp";
    spaceSel.value = sp;
    return dumpRequest(addr.value, sp);
  }

  function refresh(retry) {
    const req = target();
    cmd.textContent = SPACES[spaceSel.value].command + " /32xw";
    addr.setAttribute("aria-label", (spaceSel.value === "x" ? "DMA address" : "Physical address") + " to dump");
    if (req.problem) { q.drop(); say(req.problem); return; }
    q.ask(req.line, cur.pos, retry, req.note);
  }

  return {
    update({ pos, st }) {
      cur = { st, pos };
      refresh(false);
      showDecoded();
    },
  };
}
