// views/garage.js: the garage view (WORKBOOK.md). Your garage is host memory,
// with two numbered whiteboards (the SQ and the CQ); your neighbour is the
// device, who walks over to read one board and write on the other (DMA); the
// keypad on the garage door is the IOMMU; your house is the kernel; the doorbell
// on the neighbour's house is the SQ_TAIL register. picture() draws the scene
// and says where the two people stand; mount() keeps the people on the page so
// that they walk (a CSS transition) from one spot to the next.

import { render, renderInto, reducedMotion } from "../dom.js";
import { caption as plainCaption, physWhere, where } from "../caption.js";
import { hex, textArgs } from "../format.js";
import { el } from "../vnode.js";

// The scene is drawn for a phone: every text is FONT user units, which is at
// least 12 CSS pixels when the picture is 356 px wide (a 390 px screen), and
// every label fits inside the 400-unit-wide picture. On a wider screen the
// picture grows to its max-width (the style sheet).
const W = 400, TOP = 52, H = 362, GROUND = 328;
export const FONT = 14;        // the size of every text, in user units (the style sheet agrees)
const MONO = 0.602 * FONT;     // the width of a monospaced character
const ROWS = 6;                // rows shown on each board
const ROW_H = 17;
const BOARD = { y: 164, w: 108, sq: 76, cq: 190 };

// Where the two people stand (feet), by what is happening: you on the left
// of a spot, the neighbour on the right, so that they never overlap.
const SPOTS = {
  home: [370, GROUND - 2], street: [330, GROUND - 2], door: [318, GROUND - 2], bell: [326, GROUND - 2],
  sq: [114, GROUND - 4], cq: [228, GROUND - 4], shelf: [171, GROUND - 4], house: [34, GROUND - 2],
  garage: [92, GROUND - 4],
};
const NB_SHIFT = 16;

// caption retells ev in the workbook's metaphor.
export function caption(ev, st, ds) {
  if (!ev) return "Your garage is quiet. Press play or step.";
  const a = ev.args || {};
  const w = physWhere(st, a.addr, ds);
  switch (ev.kind) {
    case "cpu_write":
      if (w.includes("SQ")) return "You write a job on the SQ board," + w.replace(" in SQ", "") + ".";
      if (w.includes("CQ")) return "You wipe a row of the CQ board," + w.replace(" in CQ", "") + ".";
      return "You put something on a shelf in your garage.";
    case "cpu_read": return w.includes("CQ") ? "You glance at the CQ board: is this row's mark this lap's colour?" : "You look at a shelf in your garage.";
    case "cpu_barrier": return "You make sure everything you wrote is really on the board before you go on.";
    case "sacc_doorbell": return "You ring the neighbour's doorbell (jobs up to row " + a.sq_tail + ") and walk away.";
    case "sacc_reg_write": return "You leave a note in the neighbour's letterbox.";
    case "sacc_reg_read": return "You knock and wait at the neighbour's door for an answer.";
    case "sacc_fetch": return "The neighbour walks into your garage and reads row " + a.sq_head + " of the SQ board.";
    case "sacc_desc": return "The job on the board says: " + (textArgs(ev.text).opcode || "") + ", " + a.len + " bytes.";
    case "sacc_dma_read": {
      const at = where(st, a.iova, ds);
      return at ? "The neighbour reads the SQ board," + at.replace(/[()]/g, "").replace(" SQ slot", " row") + "."
        : "The neighbour takes " + a.len + " bytes off a shelf in your garage.";
    }
    case "sacc_dma_write": {
      const at = where(st, a.iova, ds);
      return at ? "The neighbour writes on the CQ board," + at.replace(/[()]/g, "").replace(" CQ slot", " row") + "."
        : "The neighbour puts " + a.len + " bytes on a shelf in your garage.";
    }
    case "sacc_cq_post": return "The neighbour writes the result on row " + a.cq_tail + " of the CQ board, and last its mark in this lap's colour: " +
      (a.phase ? "teal ● (phase 1)." : "pink ○ (phase 0).");
    case "sacc_phase_flip": return "The neighbour starts a new lap of the CQ board: the mark colour changes.";
    case "sacc_cq_full": return "The CQ board is full: the neighbour waits until you free a row.";
    case "sacc_cq_head": return "You tell the neighbour which CQ rows you have read (up to " + a.cq_head + ").";
    case "sacc_idle": return "No new jobs on the SQ board: the neighbour goes home.";
    case "sacc_msix_send": case "msi_deliver": return "The neighbour rings your house's bell: an interrupt.";
    case "irq_entry": return "The lights go on in the house: the kernel handles the interrupt.";
    case "irq_exit": return "The house goes quiet again.";
    case "syscall": return "You ask the house (the kernel) for something: a system call.";
    case "iommu_translate": return "The keypad at the garage door checks the neighbour's code: allowed.";
    case "iommu_fault": return "The keypad refuses the neighbour: that shelf is off limits.";
    case "sacc_enable": case "sacc_ready": return "The neighbour learns where your two boards hang and gets ready.";
    case "sacc_device_error": return "Something went badly wrong: the neighbour stops until reset.";
    case "pci_cfg_read": case "pci_cfg_write": return "The house looks up and down the street to see who lives there (PCI configuration).";
  }
  return plainCaption(ev, st, ds);
}

function house(x, y, wd, cls, lines, lit) {
  const ht = GROUND - y;
  return el("g", { class: "sw-house " + cls + (lit ? " is-lit" : "") },
    el("path", { class: "sw-roof", d: `M${x - 4} ${y} L${x + wd / 2} ${y - 28} L${x + wd + 4} ${y} Z` }),
    el("rect", { class: "sw-wall", x, y, width: wd, height: ht }),
    el("rect", { class: "sw-window", x: x + wd / 2 - 11, y: y + 12, width: 22, height: 18 }),
    lines.map((t, i) => el("text", { x: x + wd / 2, y: y + 56 + i * 18, "text-anchor": "middle",
      class: i ? "sw-g-small" : "sw-g-label" }, t)));
}

// rowText is a board row's text, without "0x" when it would not fit in room
// user units.
function rowText(parts, room) {
  const full = parts.join(" ");
  if (full.length * MONO <= room) return full;
  return parts.map((p) => p.replace(/^0x/, "")).join(" ");
}

// board draws the SQ or CQ whiteboard: up to ROWS rows around the slot that just
// changed (or the tail).
function board(which, st, ds) {
  const x = BOARD[which], y = BOARD.y, wd = BOARD.w, ht = ROWS * ROW_H + 4;
  const n = which === "sq" ? st.sqSize : st.cqSize;
  const R = which.toUpperCase();
  const heading = el("text", { x: x + wd / 2, y: y - 6, "text-anchor": "middle", class: "sw-g-label" }, R + " board");
  const g = el("g", { class: "sw-board" },
    el("rect", { class: "sw-board-frame", x, y, width: wd, height: ht, rx: 3 }), heading);
  if (!n) {
    g.kids.push(el("text", { x: x + wd / 2, y: y + ht / 2 + 5, "text-anchor": "middle", class: "sw-g-small" }, "blank"));
    return g;
  }
  const changed = st.changed && st.changed.ring === which ? st.changed.slot : -1;
  const focus = changed >= 0 ? changed : which === "sq" ? st.sqTail : st.cqTail;
  const from = n <= ROWS ? 0 : Math.max(0, Math.min(n - ROWS, focus - ROWS / 2));
  const to = Math.min(n, from + ROWS);
  const head = which === "sq" ? st.sqHead : st.cqHead;
  const tail = which === "sq" ? st.sqTail : st.cqTail;
  const owned = (tail - head + n) % n;
  const idxW = String(n - 1).length * MONO;
  const tx = x + 5 + idxW + 5;
  for (let i = from; i < to; i++) {
    const ry = y + 2 + (i - from) * ROW_H;
    let parts = [], cls = "sw-brow";
    if (which === "sq") {
      const d = st.sq[i] || {};
      if (d.req_id != null || d.opcode != null) parts = [d.req_id != null ? hex(d.req_id) : "?", ds.opShort(d)];
      else if (d.written) parts = ["written"];
      if ((i - head + n) % n < owned) cls += " is-device";
    } else {
      const e = st.cq[i] || {};
      if (e.posted) parts = [e.phase ? "●" : "○", hex(e.req_id), e.status ? "✗" : "✓"];
      if (e.posted) cls += e.phase ? " is-p1" : " is-p0";
    }
    if (i === changed) cls += " is-changed";
    g.kids.push(el("g", { class: cls },
      el("rect", { x: x + 2, y: ry, width: wd - 4, height: ROW_H - 1 }),
      el("text", { x: x + 5, y: ry + ROW_H - 4, class: "sw-brow-n" }, String(i)),
      el("text", { x: tx, y: ry + ROW_H - 4, class: "sw-brow-t" }, rowText(parts, x + wd - 3 - tx))));
  }
  if (n > ROWS) {
    // a long ring: say which rows are shown, in the heading
    const full = R + " " + from + "–" + (to - 1) + " of " + n;
    heading.kids = [full.length <= 12 ? full : R + " " + from + "–" + (to - 1)];
    heading.attrs.class = "sw-g-small sw-g-strong";
  }
  return g;
}

// spots says where you and the neighbour stand for an event.
export function spots(ev, st, ds) {
  let me = "garage", nb = "home";
  if (st.inIrq) me = "house";
  if (!ev) return [me, nb];
  const a = ev.args || {};
  const D = ds.descriptor, C = ds.completion;
  switch (ev.kind) {
    case "cpu_write":
      me = D.slot(st.sqPhys, st.sqSize, a.addr) >= 0 ? "sq" : C.slot(st.cqPhys, st.cqSize, a.addr) >= 0 ? "cq" : "garage";
      break;
    case "cpu_read": me = C.slot(st.cqPhys, st.cqSize, a.addr) >= 0 ? "cq" : "garage"; break;
    case "sacc_doorbell": case "sacc_reg_write": case "sacc_reg_read": case "sacc_cq_head":
    case "pci_cfg_read": case "pci_cfg_write": me = "bell"; break;
    case "syscall": case "irq_entry": me = "house"; break;
    case "sacc_fetch": case "sacc_desc": nb = "sq"; break;
    case "sacc_cq_post": nb = "cq"; break;
    case "sacc_dma_read": case "sacc_dma_write":
      nb = D.slot(st.sqBase, st.sqSize, a.iova) >= 0 ? "sq" : C.slot(st.cqBase, st.cqSize, a.iova) >= 0 ? "cq" : "shelf";
      break;
    case "iommu_fault": case "iommu_translate": case "iommu_iotlb_hit": case "iommu_iotlb_miss": nb = "door"; break;
    case "sacc_msix_send": case "msi_deliver": nb = "street"; break;
  }
  return [me, nb];
}

// place is where a person stands at a spot: the feet's coordinates.
function place(spot, shift) {
  const [x, y] = SPOTS[spot] || SPOTS.home;
  return { spot, x: x + shift, y };
}

// picture draws the garage at position pos (ev the event there, st the state
// after it): the scene, and where you and the neighbour stand.
export function picture(st, ev, pos, ds) {
  const k = ev ? ev.kind : "";
  const houseLit = st.inIrq || k === "syscall" || k === "irq_entry";
  const keypad = !st.iommu.on ? "is-off" : k === "iommu_fault" ? "is-bad" : /^iommu_(translate|iotlb)/.test(k) ? "is-good" : "";
  const ringing = k === "sacc_doorbell";
  const msi = k === "sacc_msix_send" || k === "msi_deliver";
  const [me, nb] = spots(ev, st, ds);
  const data = /sacc_dma_(read|write)/.test(k) && nb === "shelf";
  const scene = [
    el("rect", { class: "sw-sky", x: 0, y: TOP, width: W, height: GROUND - TOP }),
    el("rect", { class: "sw-ground", x: 0, y: GROUND, width: W, height: H - GROUND }),
    house(4, GROUND - 126, 60, "sw-kernel", ["house", "(kernel)"], houseLit),
    // your bell: the neighbour rings it with an interrupt
    el("g", { class: "sw-ybell" + (msi ? " is-ringing" : "") },
      el("title", null, "your bell: an interrupt (MSI-X)"),
      el("circle", { cx: 54, cy: GROUND - 32, r: 5 }),
      msi ? el("path", { class: "sw-waves", d: `M61 ${GROUND - 42} q5 10 0 20` }) : null),
    // the garage: host memory
    el("g", { class: "sw-garage-bldg" },
      el("path", { class: "sw-roof", d: "M64 114 L187 86 L310 114 Z" }),
      el("rect", { class: "sw-wall", x: 70, y: 114, width: 234, height: GROUND - 114 }),
      el("text", { x: 187, y: 78, "text-anchor": "middle", class: "sw-g-label" }, "your garage (host memory)")),
    el("g", { class: "sw-shelf" + (data ? " is-active" : "") },
      el("rect", { x: 76, y: 120, width: 222, height: 20 }),
      el("text", { x: 187, y: 135, "text-anchor": "middle", class: "sw-g-small" }, "shelves: data buffers")),
    board("sq", st, ds),
    board("cq", st, ds),
    // the door and its keypad: the IOMMU
    el("rect", { class: "sw-door", x: 302, y: GROUND - 72, width: 4, height: 72 }),
    el("g", { class: "sw-keypad " + keypad },
      el("title", null, "the keypad: the IOMMU" + (st.iommu.on ? "" : " (off: every address is let through)")),
      el("rect", { x: 310, y: GROUND - 88, width: 14, height: 20, rx: 2 }),
      st.iommu.on ? null : el("text", { x: 310, y: GROUND - 94, class: "sw-g-small" }, "off")),
    house(338, GROUND - 126, 58, "sw-nhouse", ["device"], false),
    el("g", { class: "sw-nbell" + (ringing ? " is-ringing" : "") },
      el("title", null, "the neighbour's doorbell: the SQ_TAIL register"),
      el("circle", { cx: 346, cy: GROUND - 32, r: 5 }),
      ringing ? el("path", { class: "sw-waves", d: `M339 ${GROUND - 42} q-5 10 0 20` }) : null,
      ringing ? el("text", { x: 346, y: GROUND - 44, "text-anchor": "middle", class: "sw-g-small" }, "ding!") : null),
  ];
  return {
    scene,
    you: place(me, 0),
    neighbour: place(nb, nb === "home" || nb === "door" || nb === "street" ? 0 : NB_SHIFT),
    stopped: k === "iommu_fault" || st.error,
    title: "The garage at event " + pos,
    desc: caption(ev, st, ds),
  };
}

// person is drawn with its feet at (0, 0) and moved with a CSS transform; its
// label sits under the feet (you) or over the head and to the left (the
// neighbour, who stands furthest right), so that the two never cover each
// other and no label leaves the picture, even half-way along a walk. At home, in
// front of the house that says "device", the neighbour needs no label (the
// style sheet hides it).
function person(cls, label, above) {
  return el("g", { class: "sw-person " + cls },
    el("circle", { cx: 0, cy: -33, r: 5.5 }),
    el("path", { d: "M0 -27 V-12 M0 -23 L-7 -15 M0 -23 L7 -15 M0 -12 L-6 0 M0 -12 L6 0" }),
    above ? el("text", { x: 10, y: -45, "text-anchor": "end" }, label) : el("text", { x: 0, y: 17, "text-anchor": "middle" }, label));
}

// legend says what the small things in the scene stand for, and the colours.
function legend() {
  const item = (cls, sym, text) => el("span", { class: "sw-legend-item" },
    cls ? el("span", { class: "sw-key " + cls, "aria-hidden": "true" }, sym) : null, (cls ? " " : "") + text);
  return el("p", { class: "sw-legend sw-garage-legend" },
    item("sw-key-iommu", "", "keypad: the IOMMU"),
    item(null, "", "the device's doorbell: SQ_TAIL"),
    item("sw-key-kernel", "", "your bell: an interrupt"),
    item("sw-key-driver", "", "you: the driver"),
    item("sw-key-device", "", "the neighbour: the device, and a job it has taken"),
    item("sw-key-p1", "●", "phase 1"), item("sw-key-p0", "○", "phase 0"), item("sw-key-changed", "", "just changed"));
}

// mount puts the garage in a widget's panel.
export function mount(w, panel, env) {
  const pre = "sw" + w.n + "-g-";
  const svg = render(el("svg", { class: "sw-garage", viewBox: `0 ${TOP} ${W} ${H - TOP}`, role: "img",
    "aria-labelledby": pre + "title " + pre + "desc" }));
  const scene = render(el("g"), true);
  const title = render(el("title", { id: pre + "title" }, "The garage"), true);
  const desc = render(el("desc", { id: pre + "desc" }), true);
  const you = render(person("sw-you", "you", false), true);
  const neighbour = render(person("sw-neighbour", "neighbour", true), true);
  svg.append(title, desc, scene, you, neighbour);
  panel.append(svg, render(legend()));
  const stand = (g, p) => {
    g.style.transform = `translate(${p.x}px, ${p.y}px)`;
    g.dataset.spot = p.spot;
  };
  return {
    update({ ev, st, pos }) {
      const p = picture(st, ev, pos, env.ds);
      svg.classList.toggle("sw-anim", !reducedMotion());
      renderInto(scene, el("g", null, p.scene));
      stand(you, p.you);
      stand(neighbour, p.neighbour);
      neighbour.classList.toggle("is-stopped", p.stopped);
      title.textContent = p.title;
      desc.textContent = p.desc;
    },
  };
}
