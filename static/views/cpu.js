// views/cpu.js: the CPU's store buffer. A store waits in the buffer (cpu_store)
// until it drains to memory (cpu_write), and only then can the device see it.
// On x86 stores drain in program order at once; on arm64 they linger and drain
// in any order until a barrier (wmb, mb, writel) empties the buffer. The
// picture: the stores still waiting, in program order; the last ones to land,
// in the order they drained; the last barrier; and every doorbell that reached
// the device while a descriptor it published was still in the buffer.

import { render, renderInto } from "../dom.js";
import { hex, textArgs } from "../format.js";
import { el } from "../vnode.js";

const ROWS = 8;

// fieldAt names what a store writes: the descriptor or completion field at its
// offset in the slot, or the memory it goes to.
export function what(p, st, ds) {
  if (p.ring === "sq" || p.ring === "cq") {
    const layout = p.ring === "sq" ? ds.descriptor : ds.completion;
    const base = p.ring === "sq" ? st.sqPhys : st.cqPhys;
    const off = base == null ? -1 : p.addr - base - layout.size * p.slot;
    const f = off >= 0 ? layout.fields.find((x) => off >= x.offset && off < x.offset + x.size) : null;
    return p.ring.toUpperCase() + " slot " + p.slot + (f ? " " + f.name : "");
  }
  return "memory " + hex(p.addr);
}

// rows is the picture's content as data: the pending stores (oldest first),
// the last landings (oldest first), the barrier, the doorbells that overtook.
export function rows(st, ds) {
  const sb = st.sb;
  const pend = sb.pending.map((p) => ({ seq: p.seq, addr: p.addr, size: p.size, val: p.val, what: what(p, st, ds), ring: p.ring }));
  const landed = sb.landed.map((p) => ({ seq: p.seq, landedSeq: p.landedSeq, addr: p.addr, size: p.size, val: p.val,
    what: what(p, st, ds), order: p.order, outOfOrder: p.outOfOrder, cached: p.cached }));
  return { pending: pend, landed, barrier: sb.barrier, overtakes: sb.overtakes, max: sb.max };
}

// wrap splits text into lines of at most n characters, at spaces.
export function wrap(text, n) {
  const out = [];
  let line = "";
  for (const w of text.split(" ")) {
    if (line && line.length + 1 + w.length > n) { out.push(line); line = w; } else line = line ? line + " " + w : w;
  }
  if (line) out.push(line);
  return out;
}

function storeText(r) {
  return "← " + (r.val != null ? "0x" + r.val.toString(16) : "?") + " (" + r.size + " B)";
}

// picture draws the store buffer at position pos (ev the event there, st the
// state after it); opts: {id, wide}.
export function picture(st, ev, pos, ds, opts) {
  const R = rows(st, ds);
  const wide = opts.wide;
  const W = wide ? 760 : 360;
  const colW = wide ? 372 : 352;
  const rowH = 19;
  const k = ev ? ev.kind : "";
  const kids = [];
  const col = (x, y, title, sub, list, cls, mark) => {
    const g = [el("text", { x: x + 8, y: y + 18, class: "sw-box-label" }, title),
      el("text", { x: x + 8, y: y + 33, class: "sw-sb-sub" }, sub)];
    const shown = list.slice(-ROWS);
    shown.forEach((r, i) => {
      const yy = y + 44 + i * rowH;
      const hot = mark(r);
      g.push(el("g", { class: ["sw-sb-row", cls, hot && "is-hot", r.outOfOrder && "is-reordered", r.ring === "sq" && "is-sq", r.cached && "is-cached"] },
        el("title", null, "store at event " + r.seq + " to " + hex(r.addr) + " " + storeText(r) + ", " + r.what +
          (r.landedSeq ? "; landed at event " + r.landedSeq + (r.cached ? " into a dirty cache line (DMA does not see it yet)" : "") +
            (r.outOfOrder ? ", before an older store: out of program order" : "") : "; not visible to the device yet")),
        el("rect", { x: x + 6, y: yy, width: colW - 12, height: rowH - 3, rx: 3 }),
        el("text", { x: x + 12, y: yy + 12, class: "sw-sb-n" }, r.order ? String(r.order) : "#" + r.seq),
        el("text", { x: x + 52, y: yy + 12, class: "sw-sb-what" }, r.cached ? r.what.replace(/^memory /, "") + " → cache" : r.what),
        el("text", { x: x + colW - 10, y: yy + 12, class: "sw-sb-val" }, storeText(r))));
    });
    if (list.length > ROWS) g.push(el("text", { x: x + 8, y: y + 44 + ROWS * rowH + 8, class: "sw-muted-text" }, "… and " + (list.length - ROWS) + " more"));
    if (!list.length) g.push(el("text", { x: x + 12, y: y + 56, class: "sw-muted-text" }, cls === "is-pending" ? "empty: every store has drained" : "nothing has drained yet"));
    return g;
  };
  // Boxes as tall as their lists (side by side: the longer of the two).
  const fit = (n) => 44 + Math.max(1, Math.min(ROWS, n)) * rowH + (n > ROWS ? 18 : 8);
  const H1 = wide ? fit(Math.max(R.pending.length, R.landed.length)) : fit(R.pending.length);
  const H2 = wide ? H1 : fit(R.landed.length);
  const cur = ev && ev.seq;
  kids.push(el("rect", { x: 2, y: 2, width: colW, height: H1, rx: 6, class: "sw-sb-box" }));
  kids.push(...col(2, 2, "Store buffer: " + R.pending.length + " waiting", "program order; the device cannot see these",
    R.pending, "is-pending", (r) => r.seq === cur));
  const x2 = wide ? colW + 14 : 2, y2 = wide ? 2 : H1 + 10;
  kids.push(el("rect", { x: x2, y: y2, width: colW, height: H2, rx: 6, class: "sw-sb-box sw-sb-mem" }));
  kids.push(...col(x2, y2, "Drained", "numbered in drain order (to memory, or to the cache)", R.landed, "is-landed", (r) => r.landedSeq === cur));
  let y = y2 + H2 + 22;
  const n = wide ? 118 : 56;
  const para = (text, cls, attrs) => {
    const g = el("g", { class: cls, ...attrs });
    for (const line of wrap(text, n)) { g.kids.push(el("text", { x: 8, y }, line)); y += 16; }
    kids.push(g);
    return g;
  };
  const b = R.barrier;
  para(b ? "Last barrier: " + b.op + " at event " + b.seq + (b.op === "rmb" ? " (orders loads; drains nothing)" : ", drained " + b.drained + " store(s)")
    : "No barrier yet: on arm64 only a wmb, mb or writel empties the buffer.", ["sw-sb-barrier", k === "cpu_barrier" && "is-hot"]);
  y += 4;
  const ot = R.overtakes;
  if (ot.length) {
    const last = ot[ot.length - 1];
    const slots = last.slots.map((s) => "slot " + s.slot + " (" + s.stores + " store" + (s.stores > 1 ? "s" : "") + ")").join(", ");
    const g = para("Doorbell overtook the descriptor" + (ot.length > 1 ? " (" + ot.length + " times)" : "") + ": at event " + last.seq +
      " the device was told about " + slots + " while those stores were still in the buffer: it can fetch what memory held before.",
    ["sw-sb-overtake", k === "sacc_doorbell" && cur === last.seq && "is-hot"]);
    g.kids.unshift(el("title", null, "§7.4: each descriptor must be visible in memory before the doorbell that publishes it"));
  } else {
    para("No doorbell has overtaken a descriptor.", "sw-muted-text");
  }
  if (k === "cpu_store" || k === "cpu_write" || k === "cpu_store_cached") {
    const ta = textArgs(ev.text);
    y += 4;
    para((k === "cpu_store" ? "Now: a store enters the buffer, " : k === "cpu_write" ? "Now: a store lands in memory, " : "Now: a store drains into the cache, ") + ta.addr, "sw-sb-now");
  }
  return el("svg", { class: "sw-sb", role: "img", viewBox: `0 0 ${W} ${y + 6}`, "aria-labelledby": opts.id + "sb-title",
    "data-pending": R.pending.length, "data-overtakes": ot.length },
  el("title", { id: opts.id + "sb-title" }, "The CPU's store buffer at event " + pos + ": " + R.pending.length + " store(s) waiting"),
  kids);
}

export function mount(w, panel, env) {
  const pre = "sw" + w.n + "-";
  const svg = render(el("svg", { class: "sw-sb" }));
  panel.append(render(el("p", { class: "sw-muted" }, "Stores wait in the CPU's store buffer until they drain to memory; only then can the device read them.")), svg);
  return {
    update({ ev, st, wide, pos }) { renderInto(svg, picture(st, ev, pos, env.ds, { id: pre, wide })); },
  };
}
