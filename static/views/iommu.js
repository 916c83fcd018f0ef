// views/iommu.js: the IOMMU (§10) as the log tells it. Every DMA the device
// issues with translation on is looked up in the IOTLB; a miss walks four
// levels of page tables (iommu_walk: the table, the index the IOVA selects, the
// entry read there), fills the IOTLB and translates; an access the tables do
// not allow is blocked and logged. The picture: the last walk level by level,
// the IOTLB's entries (one whose page-table entry the CPU has rewritten since
// it was cached is stale: the IOMMU does not watch the tables), and the fault
// log, with the access that was just stopped.

import { render, renderInto } from "../dom.js";
import { hex, textArgs } from "../format.js";
import { el } from "../vnode.js";

// perm names an entry's or a translation's permission bits (r, w, or -).
export function perm(ds, v) {
  const e = ds.layout("pte").field("entry");
  const bit = (name) => BigInt(e.bits.find((b) => b.name === name).mask);
  const x = BigInt(v);
  return ((x & bit("read")) ? "r" : "-") + ((x & bit("write")) ? "w" : "-");
}

// entryAddr is the address an entry points at (the next table, or the page).
export function entryAddr(ds, v) {
  const e = ds.layout("pte").field("entry");
  return BigInt(v) & BigInt(e.bits.find((b) => b.name === "addr").mask);
}

// walkRows is the last walk as rows: level, table, index, entry, what it says.
export function walkRows(st, ds) {
  const w = st.walk;
  if (!w) return null;
  const levels = w.levels.map((l, i) => {
    const p = perm(ds, l.entry);
    const present = p !== "--";
    const last = i === w.levels.length - 1;
    return { level: l.level, table: l.table, index: l.index, entry: l.entry, perm: p, present,
      next: present ? entryAddr(ds, l.entry) : null, leaf: last && w.result && w.result.phys != null, seq: l.seq };
  });
  return { iova: w.iova, seq: w.seq, levels, result: w.result };
}

export function picture(st, ev, pos, ds, opts) {
  const wide = opts.wide;
  const W = wide ? 760 : 360;
  const k = ev ? ev.kind : "";
  const kids = [];
  let y = 18;
  const on = st.iommu.on;
  kids.push(el("text", { x: 8, y, class: "sw-box-label" }, "IOMMU: translation " + (on ? "on" : "off (DMA addresses are physical)") +
    " · " + st.iommu.faults + " fault" + (st.iommu.faults === 1 ? "" : "s") + " so far"));
  y += 12;

  // The hostile (or buggy) access just stopped.
  if (k === "iommu_fault") {
    const ta = textArgs(ev.text);
    kids.push(el("g", { class: "sw-io-blocked" }, el("rect", { x: 4, y, width: W - 8, height: 40, rx: 6 }),
      el("text", { x: 14, y: y + 17, class: "sw-box-label" }, "Blocked: the device's " + (ta.access || "access") + " of " + (ta.iova || hex(ev.args.iova))),
      el("text", { x: 14, y: y + 32 }, (ta.reason || "fault") + " — nothing reached memory; the fault is logged.")));
    y += 48;
  }

  // The walk, level by level.
  const wr = walkRows(st, ds);
  const hit = st.iommu.lastTranslate && wr && st.iommu.lastTranslate.seq > (wr.result ? wr.result.seq : wr.seq);
  y += 8;
  kids.push(el("text", { x: 8, y, class: "sw-box-label" }, wr ? "Last page walk: IOVA " + hex(wr.iova) + " (event " + wr.seq + ")" : "No page walk yet"));
  if (hit) kids.push(el("text", { x: W - 8, y, class: "sw-io-hit", "text-anchor": "end" }, "since then: IOTLB hit, no walk"));
  y += 6;
  if (wr) {
    const bw = wide ? 178 : 344, bh = wide ? 62 : 30;
    wr.levels.forEach((l, i) => {
      const x = wide ? 6 + i * (bw + 8) : 6;
      const yy = wide ? y : y + i * (bh + 6);
      const hot = ev && l.seq === ev.seq;
      kids.push(el("g", { class: ["sw-io-level", !l.present && "is-bad", hot && "is-hot"], "data-level": l.level },
        el("title", null, "level " + l.level + ": entry " + l.index + " of the table at " + hex(l.table) + " reads " + hex(l.entry)),
        el("rect", { x, y: yy, width: bw, height: bh, rx: 5 }),
        wide ? [
          el("text", { x: x + 8, y: yy + 15, class: "sw-box-label" }, "L" + l.level + " [" + l.index + "]"),
          el("text", { x: x + 8, y: yy + 31, class: "sw-io-mono" }, "table " + hex(l.table)),
          el("text", { x: x + 8, y: yy + 47, class: "sw-io-mono" }, l.present ? l.perm + " → " + (l.level === wr.levels.length - 1 && wr.levels.length === 4 ? "page " : "") + hex(l.next) : "not present"),
        ] : [
          el("text", { x: x + 8, y: yy + 19, class: "sw-box-label" }, "L" + l.level + " [" + l.index + "]"),
          el("text", { x: x + 74, y: yy + 19, class: "sw-io-mono" }, l.present ? l.perm + " → " + hex(l.next) : "not present"),
        ]));
    });
    y += wide ? 62 + 18 : wr.levels.length * 36 + 12;
    const r = wr.result;
    kids.push(el("text", { x: 8, y, class: ["sw-io-result", r && r.fault && "is-bad"] },
      !r ? "walking…" : r.fault ? "Result: fault, " + r.fault : "Result: phys " + hex(r.phys) + " " + perm(ds, r.perm) + " (cached in the IOTLB)"));
    y += 10;
  }

  // The IOTLB.
  y += 18;
  const stale = st.tlb.filter((e) => e.stale).length;
  kids.push(el("text", { x: 8, y, class: "sw-box-label" }, "IOTLB: " + st.tlb.length + " entr" + (st.tlb.length === 1 ? "y" : "ies") +
    (stale ? ", " + stale + " stale" : "") + " (most recently used first)"));
  y += 6;
  const shown = st.tlb.slice(0, wide ? 8 : 6);
  shown.forEach((e, i) => {
    const yy = y + i * 20;
    const hot = ev && (e.used === ev.seq || e.seq === ev.seq || e.staleSeq === ev.seq);
    kids.push(el("g", { class: ["sw-io-tlb", e.stale && "is-stale", hot && "is-hot"], "data-iova": e.iova, "data-stale": e.stale ? "1" : "0" },
      el("title", null, "cached at event " + e.seq + " from the entry at " + hex(e.pte) + (e.stale ? "; that entry was rewritten at event " + e.staleSeq +
        (e.nowVal != null ? " (now " + hex(e.nowVal) + ")" : "") + ", and the IOMMU still uses the old translation until INVALIDATE" : "")),
      el("rect", { x: 6, y: yy, width: W - 12, height: 17, rx: 3 }),
      el("text", { x: 14, y: yy + 12, class: "sw-io-mono" }, "iova " + hex(e.iova) + " → phys " + hex(e.phys) + " " + perm(ds, e.perm)),
      e.stale ? el("text", { x: W - 12, y: yy + 12, class: "sw-io-stale", "text-anchor": "end" }, wide ? "stale: page table changed at event " + e.staleSeq : "stale") : null));
  });
  if (!st.tlb.length) kids.push(el("text", { x: 14, y: y + 12, class: "sw-muted-text" }, on ? "empty" : "not used: translation is off"));
  if (st.tlb.length > shown.length) kids.push(el("text", { x: 14, y: y + shown.length * 20 + 12, class: "sw-muted-text" }, "… " + (st.tlb.length - shown.length) + " more"));
  y += Math.max(1, shown.length + (st.tlb.length > shown.length ? 1 : 0)) * 20 + 14;

  // The fault log.
  y += 8;
  kids.push(el("text", { x: 8, y, class: "sw-box-label" }, "Fault log" + (st.faultLog.length ? "" : ": empty")));
  st.faultLog.slice(-5).forEach((f, i) => {
    y += 17;
    kids.push(el("text", { x: 14, y, class: ["sw-io-fault", ev && f.seq === ev.seq && "is-hot"] },
      "event " + f.seq + ": " + f.access + " of " + hex(f.iova) + " — " + f.reason));
  });
  y += 10;
  return el("svg", { class: "sw-iommu-view", role: "img", viewBox: `0 0 ${W} ${y}`, "aria-labelledby": opts.id + "io-title",
    "data-tlb": st.tlb.length, "data-stale": stale, "data-faults": st.iommu.faults },
  el("title", { id: opts.id + "io-title" }, "The IOMMU at event " + pos), kids);
}

export function mount(w, panel, env) {
  const pre = "sw" + w.n + "-";
  const svg = render(el("svg", { class: "sw-iommu-view" }));
  panel.append(render(el("p", { class: "sw-muted" }, "The IOMMU between the device and memory: page walks, the IOTLB, the fault log.")), svg);
  return {
    update({ ev, st, wide, pos }) { renderInto(svg, picture(st, ev, pos, env.ds, { id: pre, wide })); },
  };
}
