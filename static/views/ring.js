// views/ring.js: the ring view. Host memory with the SQ and CQ rows of slots,
// the PCIe link, the device with its doorbell and ring state; the current event
// drawn as an arrow (MMIO, DMA, MSI) crossing the link. picture() draws it as a
// function of the state at a position; mount() puts it on the page.

import { render, renderInto, reducedMotion } from "../dom.js";
import { hex, textArgs } from "../format.js";
import { el } from "../vnode.js";
import { cqEntryState, cqOwner, expectedPhase, sqOwner } from "../state.js";
import { what } from "./cpu.js";

const MAX_SLOTS = 16;

// labelWidth estimates a marker label's width in px (9.5 px bold sans).
export function labelWidth(text) { return 5.6 * [...text].length + 2; }

// fitText is a slot's line of text, squeezed to the slot's width when it would
// overflow into the neighbours' (32-slot rings on a phone).
function fitText(t, x, y, w, size, cls) {
  const need = 0.62 * size * [...t].length;
  const attrs = { x, y, class: cls };
  if (need > w) Object.assign(attrs, { textLength: Math.max(4, w), lengthAdjust: "spacingAndGlyphs" });
  return el("text", attrs, t);
}

// ranStale says whether the device read a descriptor other than what memory
// holds now: a store landed after the fetch (§7.4 broken).
export function ranStale(d) {
  const r = d.read;
  if (!r) return false;
  return (d.req_id != null && d.req_id !== r.req_id) || (d.len != null && d.len !== r.len) ||
    (d.opcode != null && d.opcode !== r.opcode) || (d.flags != null && d.flags !== r.flags);
}

// layout gives every coordinate for a width class, and the points where
// arrows start and end. Wide: host | link | device, left to right, with the
// CPU level with the doorbell and the data buffers below the rings, so that
// MMIO and buffer DMA run straight across. Narrow: host, link, device, top to
// bottom, with the rings at the top and the CPU and buffers just above the link.
export function layout(wide) {
  const mid = (r, side) => side === "right" ? { x: r.x + r.w, y: r.y + r.h / 2 } : side === "left" ? { x: r.x, y: r.y + r.h / 2 }
    : side === "top" ? { x: r.x + r.w / 2, y: r.y } : { x: r.x + r.w / 2, y: r.y + r.h };
  let lay;
  if (wide) {
    const H = 368;
    lay = {
      wide, W: 760, H,
      host: { x: 6, y: 6, w: 480, h: H - 12 }, hostLabel: { x: 14, y: 24 },
      cpu: { x: 300, y: 34, w: 172, h: 44 },
      buf: { x: 64, y: 322, w: 408, h: 32 },
      rows: { x0: 64, x1: 474, sq: 136, cq: 248, slotH: 44, label: 18 },
      link: { x: 496, y: 6, w: 62, h: H - 12, vertical: true },
      dev: { x: 568, y: 6, w: 186, h: H - 12 },
      bell: { x: 580, y: 34, w: 162, h: 44 },
      msi: { x: 580, y: H - 60, w: 162, h: 40 },
      info: { x: 582, y: 104, dy: 19 },
    };
    Object.assign(lay, { cpuOut: mid(lay.cpu, "right"), bufOut: mid(lay.buf, "right"), bellIn: mid(lay.bell, "left"),
      msiOut: mid(lay.msi, "left"), cpuIn: { x: lay.cpu.x + lay.cpu.w, y: lay.cpu.y + lay.cpu.h - 8 },
      cpuSlot: mid(lay.cpu, "bottom"), slotSide: "top" });
    return lay;
  }
  const H = 478;
  lay = {
    wide, W: 360, H,
    host: { x: 4, y: 4, w: 352, h: 302 }, hostLabel: { x: 12, y: 20 },
    cpu: { x: 12, y: 252, w: 160, h: 44 },
    buf: { x: 188, y: 252, w: 160, h: 44 },
    rows: { x0: 40, x1: 350, sq: 66, cq: 174, slotH: 42, label: 10 },
    link: { x: 4, y: 312, w: 352, h: 36, vertical: false },
    dev: { x: 4, y: 354, w: 352, h: 120 },
    bell: { x: 12, y: 376, w: 160, h: 40 },
    msi: { x: 188, y: 376, w: 160, h: 40 },
    info: { x: 14, y: 434, dy: 17, cols: 2 },
  };
  Object.assign(lay, { cpuOut: mid(lay.cpu, "bottom"), bufOut: mid(lay.buf, "bottom"), bellIn: mid(lay.bell, "top"),
    msiOut: mid(lay.msi, "top"), cpuIn: { x: lay.cpu.x + lay.cpu.w - 20, y: lay.cpu.y + lay.cpu.h },
    cpuSlot: mid(lay.cpu, "top"), slotSide: "bottom" });
  return lay;
}

function windowFor(n, focus) {
  if (n <= MAX_SLOTS) return [0, n];
  const start = Math.max(0, Math.min(n - MAX_SLOTS, focus - MAX_SLOTS / 2));
  return [start, start + MAX_SLOTS];
}

// picture draws the rings at position pos: ev is the event there (null at 0) and
// st the state just after it; opts: {id (prefix of element ids), wide, anim
// (animate the arrows)}.
export function picture(st, ev, pos, ds, opts) {
  const pre = opts.id;
  const add = (g, node) => { g.kids.push(node); return node; };
  const inRange = (layout, base, n, addr) => layout.slot(base, n, addr);

  function defs() {
    const mk = (id, cls) => el("marker", { id: pre + id, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7,
      markerHeight: 7, orient: "auto-start-reverse" }, el("path", { d: "M0 0 L10 5 L0 10 z", class: cls }));
    return el("defs", null, mk("a-mmio", "sw-ah-mmio"), mk("a-dma", "sw-ah-dma"), mk("a-msi", "sw-ah-msi"),
      mk("a-cpu", "sw-ah-cpu"), mk("a-cfg", "sw-ah-cfg"));
  }

  function box(r, cls, label, sub) {
    return el("g", { class: cls },
      el("rect", { x: r.x, y: r.y, width: r.w, height: r.h, rx: 6 }),
      label ? el("text", { x: r.x + 8, y: r.y + 17, class: "sw-box-label" }, label) : null,
      sub ? el("text", { x: r.x + 8, y: r.y + r.h - 9, class: "sw-box-sub" }, sub) : null);
  }

  // slots draws one ring's row and returns each visible slot's rectangle by index.
  function slots(g, lay, which, st) {
    const n = which === "sq" ? st.sqSize : st.cqSize;
    const R = lay.rows;
    const y = R[which];
    const out = {};
    add(g, el("text", { x: R.label, y: y + R.slotH / 2 + 5, class: "sw-row-label" }, which.toUpperCase()));
    if (!n) {
      add(g, el("text", { x: R.x0, y: y + R.slotH / 2 + 4, class: "sw-muted-text" },
        "not set up yet (" + which.toUpperCase() + "_SIZE unknown)"));
      return out;
    }
    const head = which === "sq" ? st.sqHead : st.cqHead;
    const tail = which === "sq" ? st.sqTail : st.cqTail;
    const changed = st.changed && st.changed.ring === which ? st.changed.slot : -1;
    const cls0 = [];
    const [from, to] = windowFor(n, changed >= 0 ? changed : tail);
    const count = to - from;
    const sw = Math.min(60, Math.floor((R.x1 - R.x0) / count));
    const compact = sw < 40;
    if (compact) cls0.push("is-compact");
    const pendingBySlot = {}, pendingText = {};
    if (which === "sq") {
      for (const p of st.sb.pending) {
        if (p.ring !== "sq") continue;
        pendingBySlot[p.slot] = (pendingBySlot[p.slot] || 0) + 1;
        const f = what(p, st, ds).replace(/^SQ slot \d+ ?/, "") || "bytes";
        (pendingText[p.slot] = pendingText[p.slot] || []).push(f + " ← 0x" + (p.val != null ? p.val.toString(16) : "?"));
      }
    }
    for (let i = from; i < to; i++) {
      const x = R.x0 + (i - from) * sw;
      const r = { x: x + 1, y, w: sw - 2, h: R.slotH };
      out[i] = r;
      const cls = ["sw-slot", ...cls0];
      let lines = [];
      let title;
      const badges = [];
      // data-owner and data-entry say what the colours say, for tools and tests.
      const data = { "data-ring": which, "data-slot": i };
      if (which === "sq") {
        const own = sqOwner(st, i);
        data["data-owner"] = own;
        cls.push(own === "device" ? "is-device" : own === "written" ? "is-written" : "is-driver");
        const d = st.sq[i] || {};
        const whose = own === "device" ? " The device owns it: published by the doorbell, not yet completed (§7.1)."
          : own === "written" ? " The driver is writing it: stored, not yet published by the doorbell."
            : " Free: the driver's" + (d.done ? "; memory still holds the last lap's descriptor." : ".");
        if (d.req_id != null || d.opcode != null) {
          const op = d.opName || ds.opName(d.opcode != null ? d.opcode : 0);
          lines = [d.req_id != null ? (compact ? d.req_id.toString(16) : hex(d.req_id)) : "?", ds.opShort(d)];
          title = "SQ slot " + i + ": req_id " + lines[0] + ", " + op + ", " + (d.len != null ? d.len + " bytes" : "length ?") +
            (d.src ? ", src " + d.src : "") + (d.dst ? ", dst " + d.dst : "") + "." + whose;
          if (d.read && ranStale(d)) {
            cls.push("is-ranstale");
            badges.push(["!", "sw-badge-bad"]);
            title += " The device read something else: req_id " + hex(d.read.req_id) + ", " + ds.opName(d.read.opcode) +
              ", " + d.read.len + " bytes — the doorbell overtook the descriptor.";
          }
        } else if (d.unknown) {
          lines = ["new", "?"];
          title = "SQ slot " + i + ": written in one bulk store; the trace shows its contents when the device reads it." + whose;
        } else {
          lines = ["—"];
          title = "SQ slot " + i + ": empty." + whose;
        }
        if (own === "free" && d.done) cls.push("is-old");
        if (d.overtaken && own === "device") { badges.push(["!", "sw-badge-bad"]); cls.push("is-overtaken"); title += " Published while its stores were still in the store buffer."; }
        if (pendingBySlot[i]) { badges.push([String(pendingBySlot[i]), "sw-badge-pending"]); title += " Still in the store buffer, not in memory: " + pendingText[i].join(", ") + "."; }
      } else {
        const e = st.cq[i] || {};
        const state = cqEntryState(st, i);
        data["data-owner"] = cqOwner(st, i);
        data["data-entry"] = state;
        data["data-phase"] = e.phase;
        const want = expectedPhase(st, i);
        if (e.posted || state === "new") {
          cls.push(e.phase ? "is-p1" : "is-p0");
          if (state === "stale") cls.push("is-stale");
          lines = compact ? [e.phase ? "●" : "○", state === "stale" ? "old" : e.status ? "e" + e.status.toString(16) : e.req_id.toString(16)]
            : [(e.phase ? "● " : "○ ") + hex(e.req_id), state === "stale" ? "stale" : e.status ? "err " + hex(e.status) : "ok"];
          if (e.status) cls.push("is-err");
          title = "CQ slot " + i + ": req_id " + hex(e.req_id) + ", status " + hex(e.status) + ", phase " + e.phase +
            (want == null ? "" : state === "new" ? "; the driver expects phase " + want + " here: new to it"
              : "; the driver expects phase " + want + " here: last lap's entry, not new");
        } else {
          cls.push("is-empty");
          lines = ["○", "—"];
          title = "CQ slot " + i + ": not written by the device (phase 0)" + (want == null ? "" : "; the driver expects phase " + want + " here");
        }
        title += cqOwner(st, i) === "driver" ? ". Posted, not yet returned with CQ_HEAD (§7.3)." : ".";
      }
      if (i === changed) cls.push("is-changed");
      const sg = el("g", { class: cls, ...data },
        el("title", null, title),
        el("rect", { x: r.x, y: r.y, width: r.w, height: r.h, rx: 4 }),
        el("text", { x: r.x + r.w / 2, y: y - 4, class: "sw-slot-index" }, compact && count > 16 && i % 2 ? "" : String(i)));
      lines.forEach((t, k) => add(sg, fitText(t, r.x + r.w / 2, y + 17 + k * 15, r.w - 4, k ? 9.5 : 10.5, k ? "sw-slot-sub" : "sw-slot-main")));
      badges.forEach(([t, bc], k) => {
        const bx = r.x + r.w - 5 - k * 11, by = r.y + 5;
        add(sg, el("g", { class: "sw-badge " + bc }, el("circle", { cx: bx, cy: by, r: 5.5 }), el("text", { x: bx, y: by + 3 }, t)));
      });
      add(g, sg);
    }
    // Which slots the window shows, under the row's name, where nothing else is.
    if (count < n) {
      add(g, el("text", { x: R.label, y: y + R.slotH / 2 + 18, class: "sw-window-text" }, from + "–" + (to - 1)));
      add(g, el("text", { x: R.label, y: y + R.slotH / 2 + 29, class: "sw-window-text" }, "of " + n));
    }
    // Index markers: above the row the consumers' heads, below it the tails.
    // Markers on the same slot share one label; labels that would overlap go
    // on a second line.
    const above = [], below = [];
    const mark = (list, idx, label, cls) => { if (idx >= from && idx < to) list.push({ idx, label, cls }); };
    if (which === "sq") { mark(above, head, "head", "sw-m-head"); mark(below, tail, "tail", "sw-m-tail"); }
    else {
      const drv = st.drv.known ? st.drv : null;
      if (drv && drv.head === head) mark(above, head, (compact ? "head" : "CQ_HEAD") + " · driver " + (drv.phase ? "●" : "○"), "sw-m-head sw-m-driver-" + drv.phase);
      else {
        mark(above, head, "CQ_HEAD", "sw-m-head");
        if (drv) mark(above, drv.head, "driver " + (drv.phase ? "●" : "○"), "sw-m-driver sw-m-driver-" + drv.phase);
      }
      mark(below, tail, "tail " + (st.phase ? "●" : "○"), "sw-m-tail sw-m-phase-" + st.phase);
    }
    const place = (list, isBelow) => {
      const placed = [];
      for (const m of list.sort((a, b) => a.idx - b.idx)) {
        const r = out[m.idx];
        const cx = r.x + r.w / 2;
        const half = labelWidth(m.label) / 2;
        let line = 0;
        while (placed.some((p) => p.line === line && Math.abs(p.cx - cx) < p.half + half + 3)) line++;
        placed.push({ cx, half, line });
        const yy = isBelow ? y + R.slotH + 3 : y - 27;
        const tri = isBelow ? `M${cx} ${yy} l-5 8 h10 z` : `M${cx} ${yy + 8} l-5 -8 h10 z`;
        const ty = isBelow ? yy + 19 + line * 11 : yy - 3 - line * 11;
        const lx = Math.max(R.x0 - 20 + half, Math.min(lay.rows.x1 + 4 - half, cx));
        add(g, el("g", { class: "sw-marker " + m.cls }, el("path", { d: tri }), el("text", { x: lx, y: ty }, m.label)));
      }
    };
    place(above, false);
    place(below, true);
    return out;
  }

  // across is where an arrow from p meets the device (or the host) across the link.
  function across(lay, p, toDevice) {
    if (lay.link.vertical) return { x: toDevice ? lay.dev.x : lay.host.x + lay.host.w, y: p.y };
    return { x: p.x, y: toDevice ? lay.dev.y : lay.host.y + lay.host.h };
  }

  // arrow draws from -> to; bend (-1 up, 1 down) makes it leave a slot
  // vertically first, so that it does not run over the slot's neighbours.
  function arrow(g, from, to, kind, label, lay, bend, inside) {
    let d;
    if (inside) {
      const my = (from.y + to.y) / 2;
      d = `M${from.x} ${from.y} C${from.x} ${my} ${to.x} ${my} ${to.x} ${to.y}`;
    } else if (bend) {
      const c1 = { x: from.x, y: from.y + bend * 36 };
      d = `M${from.x} ${from.y} C${c1.x} ${c1.y} ${(c1.x + to.x) / 2} ${to.y} ${to.x} ${to.y}`;
    } else if (lay.link.vertical) {
      const mx = (from.x + to.x) / 2;
      d = `M${from.x} ${from.y} C${mx} ${from.y} ${mx} ${to.y} ${to.x} ${to.y}`;
    } else {
      const my = (from.y + to.y) / 2;
      d = `M${from.x} ${from.y} C${from.x} ${my} ${to.x} ${my} ${to.x} ${to.y}`;
    }
    add(g, el("path", { d, class: "sw-arrow sw-flow sw-arrow-" + kind, "marker-end": `url(#${pre}a-${kind})` }));
    if (label) {
      const L0 = lay.link;
      const lx = L0.vertical ? L0.x + L0.w / 2 : (from.x + to.x) / 2;
      const ly = L0.vertical ? (from.y + to.y) / 2 - 6 : L0.y + L0.h / 2 + 4;
      const t = el("text", { x: lx, y: ly, class: "sw-arrow-label sw-arrow-label-" + kind, "text-anchor": "middle" }, label);
      add(g, t);
    }
  }

  // arrowTo draws an arrow that arrives at a slot vertically (the mirror of a
  // bent arrow leaving it).
  function arrowTo(g, from, to, kind, label, lay) {
    if (!to.bend) { arrow(g, from, to, kind, label, lay); return; }
    const c2 = { x: to.x, y: to.y + to.bend * 36 };
    const d = `M${from.x} ${from.y} C${(c2.x + from.x) / 2} ${from.y} ${c2.x} ${c2.y} ${to.x} ${to.y}`;
    add(g, el("path", { d, class: "sw-arrow sw-flow sw-arrow-" + kind, "marker-end": `url(#${pre}a-${kind})` }));
    if (label) {
      const lk = lay.link;
      add(g, el("text", { x: lk.x + lk.w / 2, y: from.y - 6, class: "sw-arrow-label sw-arrow-label-" + kind, "text-anchor": "middle" }, label));
    }
  }

  function slotPoint(rects, idx, lay, out) {
    const r = rects[idx];
    if (!r) return null;
    if (lay.link.vertical) return { x: r.x + r.w / 2, y: out === "top" ? r.y : r.y + r.h, bend: out === "top" ? -1 : 1 };
    return { x: r.x + r.w / 2, y: r.y + r.h };
  }

  function drawEvent(g, ev, st, lay, sqR, cqR) {
    if (!ev) return;
    const a = ev.args || {};
    const ta = textArgs(ev.text);
    const { cpuOut, bufOut } = lay;
    const bell = lay.bellIn, msi = lay.msiOut;
    const memPoint = (iova) => {
      let i = inRange(ds.descriptor, st.sqBase, st.sqSize, iova);
      if (i >= 0 && sqR[i]) return slotPoint(sqR, i, lay, "top");
      i = inRange(ds.completion, st.cqBase, st.cqSize, iova);
      if (i >= 0 && cqR[i]) return slotPoint(cqR, i, lay, "bottom");
      return bufOut;
    };
    const devIn = (p) => across(lay, p, true);
    switch (ev.kind) {
      case "sacc_doorbell": arrow(g, cpuOut, bell, "mmio", "SQ_TAIL=" + a.sq_tail, lay); break;
      case "sacc_reg_write": case "sacc_cq_head": arrow(g, cpuOut, devIn(cpuOut), "mmio", "MMIO write" + (ta.reg ? " " + ta.reg : ""), lay); break;
      case "sacc_reg_read": arrow(g, devIn(cpuOut), cpuOut, "mmio", "MMIO read " + (ta.reg || ""), lay); break;
      case "pci_cfg_read": case "pci_cfg_write": arrow(g, cpuOut, devIn(cpuOut), "cfg", "config " + (ev.kind === "pci_cfg_read" ? "read" : "write"), lay); break;
      case "sacc_fetch": {
        const p = slotPoint(sqR, a.sq_head % (st.sqSize || 1), lay, "top");
        if (p) arrow(g, p, devIn(p), "dma", "fetch", lay, lay.link.vertical ? -1 : 0);
        break;
      }
      case "sacc_dma_read": { const p = memPoint(a.iova); arrow(g, p, devIn(p), "dma", "DMA read " + a.len + " B", lay, p.bend); break; }
      case "sacc_dma_write": { const p = memPoint(a.iova); arrowTo(g, devIn(p), p, "dma", "DMA write " + a.len + " B", lay); break; }
      case "sacc_cq_post": {
        const p = slotPoint(cqR, a.cq_tail % (st.cqSize || 1), lay, "bottom");
        if (p) arrowTo(g, devIn(p), p, "dma", "completion", lay);
        break;
      }
      case "sacc_msix_send": case "msi_deliver": arrow(g, msi, lay.cpuIn, "msi", "MSI-X" + (a.vector != null ? " vec " + a.vector : ""), lay); break;
      case "cpu_write": case "cpu_read": {
        let r = null;
        const i = inRange(ds.descriptor, st.sqPhys, st.sqSize, a.addr);
        if (i >= 0) r = sqR[i];
        else {
          const j = inRange(ds.completion, st.cqPhys, st.cqSize, a.addr);
          if (j >= 0) r = cqR[j];
        }
        if (!r) break;
        const top = { x: r.x + r.w / 2, y: lay.slotSide === "top" ? r.y : r.y + r.h };
        const c = lay.cpuSlot;
        if (ev.kind === "cpu_write") arrow(g, c, top, "cpu", null, lay, 0, true); else arrow(g, top, c, "cpu", null, lay, 0, true);
        break;
      }
    }
  }

  function cpuText(ev, st) {
    if (st.inIrq) return "in the IRQ handler";
    if (!ev) return "idle";
    const ta = textArgs(ev.text);
    switch (ev.kind) {
      case "cpu_write": return "store lands " + ta.addr;
      case "cpu_store": return "store " + ta.addr + " → buffer (" + ta.pending + ")";
      case "driver_cq": return "driver: next CQ " + ta.head + ", phase " + ta.phase;
      case "cpu_read": return "load " + ta.addr;
      case "cpu_barrier": return ta.op || "barrier";
      case "syscall": return "syscall " + (ta.nr || "");
      case "irq_exit": return "IRQ done";
      case "sacc_reg_write": case "sacc_doorbell": return "MMIO write";
      case "sacc_reg_read": return "MMIO read (waits)";
    }
    return ev.side === "cpu" ? ev.kind : "";
  }

  function deviceInfo(st) {
    const status = st.error ? "ERROR " + hex(st.errCode) + ": halted" : st.stalled ? "STALLED: CQ full" :
      st.ready ? "READY" : st.enabled ? "enabling…" : "not enabled";
    return [
      ["status", status, st.error ? "bad" : st.stalled ? "warn" : st.ready ? "good" : ""],
      ["sq_head", st.sqHead + (st.busy ? " (in the device)" : st.sqHead === st.sqTail ? " (= tail: idle)" : " (next fetch)")],
      ["cq_tail", st.cqTail + " (next post)"],
      ["phase", (st.phase ? "● 1" : "○ 0"), st.phase ? "p1" : "p0"],
      ["working", !st.busy ? "—" : st.busy.req_id == null ? "fetching SQ slot " + st.busy.slot :
        "req " + hex(st.busy.req_id) + (st.busy.opcode != null ? " " + ds.opName(st.busy.opcode) : "")],
    ];
  }

  const lay = layout(opts.wide);
  const title = el("title", { id: pre + "ring-title" }, "Rings at event " + pos);
  const desc = el("desc", { id: pre + "ring-desc" },
    `SQ ${st.sqSize} slots, head ${st.sqHead}, tail ${st.sqTail}; CQ ${st.cqSize} slots, tail ${st.cqTail}, CQ_HEAD ${st.cqHead}, device phase ${st.phase}.`);
  const g = el("g");
  const k = ev ? ev.kind : "";
  add(g, box(lay.host, "sw-host", null));
  add(g, el("text", { x: lay.hostLabel.x, y: lay.hostLabel.y, class: "sw-box-label" }, "Host: CPU and memory"));
  add(g, box(lay.cpu, "sw-cpu" + (st.inIrq || k === "irq_entry" || k === "msi_deliver" ? " is-hot" : "") + (ev && ev.side === "cpu" ? " is-active" : ""),
    "CPU", cpuText(ev, st)));
  // the store buffer, inside the CPU: one square per store not yet visible
  if (st.sb.pending.length) {
    const n = st.sb.pending.length, shown = Math.min(n, 10);
    const sbg = el("g", { class: "sw-sb-mini" }, el("title", null, n + " store(s) in the CPU's store buffer: the device cannot see them yet"),
      el("text", { x: lay.cpu.x + 40, y: lay.cpu.y + 16 }, "buffer"));
    for (let k = 0; k < shown; k++) add(sbg, el("rect", { x: lay.cpu.x + 78 + k * 8, y: lay.cpu.y + 8, width: 6, height: 9, rx: 1 }));
    if (n > shown) add(sbg, el("text", { x: lay.cpu.x + 80 + shown * 8, y: lay.cpu.y + 16 }, "+" + (n - shown)));
    add(g, sbg);
  }
  add(g, el("g", { class: "sw-buf" + (/sacc_dma_(read|write)/.test(k) ? " is-active" : "") },
    el("rect", { x: lay.buf.x, y: lay.buf.y, width: lay.buf.w, height: lay.buf.h, rx: 6 }),
    el("text", { x: lay.buf.x + 8, y: lay.buf.y + (lay.wide ? 20 : 17), class: "sw-box-label" }, "data buffers"),
    lay.wide ? el("text", { x: lay.buf.x + 104, y: lay.buf.y + 20, class: "sw-box-sub" }, "(input and output, in host memory)")
      : el("text", { x: lay.buf.x + 8, y: lay.buf.y + lay.buf.h - 9, class: "sw-box-sub" }, "in host memory")));
  // the link, with the IOMMU at its host end when translation is on
  const lk = lay.link;
  const link = el("g", { class: "sw-link" }, el("rect", { x: lk.x, y: lk.y, width: lk.w, height: lk.h, rx: 4 }),
    lk.vertical
      ? el("text", { x: lk.x + lk.w / 2, y: lk.y + lk.h - 10, "text-anchor": "middle", class: "sw-link-label" }, "PCIe link")
      : el("text", { x: lk.x + 8, y: lk.y + 14, class: "sw-link-label" }, "PCIe link"));
  add(g, link);
  if (st.iommu.on) {
    // the IOMMU: a gate at the host end of the link that every DMA passes
    const cls = k === "iommu_fault" ? " is-bad" : /^iommu_(translate|iotlb)/.test(k) ? " is-good" : "";
    const r = lk.vertical ? { x: lk.x + 3, y: lk.y + 84, w: 13, h: lk.h - 120 } : { x: lk.x + 4, y: lk.y + 3, w: lk.w - 8, h: 11 };
    const tx = lk.vertical ? r.x + 10 : r.x + r.w - 6;
    const ty = lk.vertical ? r.y + r.h / 2 : r.y + 9;
    add(g, el("g", { class: "sw-iommu" + cls }, el("title", null, "IOMMU: translates the device's addresses" +
      (st.iommu.faults ? "; " + st.iommu.faults + " faults so far" : "")),
    el("rect", { x: r.x, y: r.y, width: r.w, height: r.h, rx: 3 }),
    el("text", { x: tx, y: ty, "text-anchor": lk.vertical ? "middle" : "end",
      transform: lk.vertical ? `rotate(-90 ${tx} ${ty})` : null }, k === "iommu_fault" ? "IOMMU: blocked!" : "IOMMU")));
  }
  add(g, box(lay.dev, "sw-dev" + (st.error ? " is-bad" : ""), lay.wide ? "SACC device" : null));
  if (!lay.wide) add(g, el("text", { x: lay.dev.x + lay.dev.w - 8, y: lay.dev.y + 14, "text-anchor": "end", class: "sw-box-label" }, "SACC device"));
  const ringing = k === "sacc_doorbell";
  add(g, el("g", { class: "sw-bell" + (ringing ? " is-ringing" : "") },
    el("rect", { x: lay.bell.x, y: lay.bell.y, width: lay.bell.w, height: lay.bell.h, rx: 6 }),
    el("path", { class: "sw-bell-icon", d: `M${lay.bell.x + 16} ${lay.bell.y + 28} h16 l-3 -4 v-7 a5 5 0 0 0 -10 0 v7 z M${lay.bell.x + 22} ${lay.bell.y + 30} a2 2 0 0 0 4 0 z` }),
    el("text", { x: lay.bell.x + 40, y: lay.bell.y + 17, class: "sw-box-label" }, ringing ? "doorbell rings!" : "doorbell"),
    el("text", { x: lay.bell.x + 40, y: lay.bell.y + 33, class: "sw-box-sub" }, "SQ_TAIL = " + st.sqTail)));
  const msiOn = k === "sacc_msix_send" || k === "msi_deliver";
  add(g, box(lay.msi, "sw-msi" + (msiOn ? " is-active" : "") + (st.pending ? " is-pending" : ""), "MSI-X",
    st.pending ? "pending (masked)" : st.msis + " sent"));
  const info = deviceInfo(st);
  info.forEach(([name, val, cls], i) => {
    const col = lay.info.cols ? i % lay.info.cols : 0;
    const row = lay.info.cols ? Math.floor(i / lay.info.cols) : i;
    const x = lay.info.x + col * 172;
    const y = lay.info.y + row * lay.info.dy;
    add(g, el("text", { x, y, class: "sw-info" }, el("tspan", { class: "sw-info-name" }, name + " "),
      el("tspan", { class: "sw-info-val" + (cls ? " is-" + cls : "") }, val)));
  });
  const sqR = slots(g, lay, "sq", st);
  const cqR = slots(g, lay, "cq", st);
  drawEvent(g, ev, st, lay, sqR, cqR);
  return el("svg", { class: ["sw-ring", opts.anim && "sw-anim"], role: "img", "aria-labelledby": pre + "ring-title " + pre + "ring-desc",
    "data-sq-head": st.sqHead, "data-sq-tail": st.sqTail, "data-cq-head": st.cqHead, "data-cq-tail": st.cqTail, "data-phase": st.phase,
    "data-driver-head": st.drv.known ? st.drv.head : "", "data-driver-phase": st.drv.known ? st.drv.phase : "",
    viewBox: `0 0 ${lay.W} ${lay.H}` }, title, desc, defs(), g);
}

// legend explains the slots' colours and symbols.
function legend() {
  const item = (cls, sym, text) => el("span", { class: "sw-legend-item" }, el("span", { class: "sw-key " + cls, "aria-hidden": "true" }, sym), " " + text);
  return el("p", { class: "sw-legend" },
    item("sw-key-driver", "", "SQ slot free (the driver's)"), item("sw-key-written", "", "written, not yet published"),
    item("sw-key-device", "", "SQ slot the device owns"), item("sw-key-pending", "2", "stores still in the store buffer"),
    item("sw-key-p1", "●", "phase 1"), item("sw-key-p0", "○", "phase 0"), item("sw-key-stale", "○", "last lap's entry (stale)"),
    item("sw-key-changed", "", "just changed"));
}

// mount puts the ring view in a widget's panel.
export function mount(w, panel, env) {
  const pre = "sw" + w.n + "-";
  const svg = render(el("svg", { class: "sw-ring", role: "img", "aria-labelledby": pre + "ring-title " + pre + "ring-desc" }));
  panel.append(svg, render(legend()));
  return {
    update({ ev, st, wide, pos }) {
      renderInto(svg, picture(st, ev, pos, env.ds, { id: pre, wide, anim: !reducedMotion() && !w.playing }));
    },
  };
}

