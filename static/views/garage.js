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

const W = 400, H = 330, GROUND = 300, TOP = 62;
const ROWS = 8;

// Where the two people stand (feet), by what is happening: you on the left
// of a spot, the neighbour on the right, so that they never overlap.
const SPOTS = {
  home: [338, GROUND - 2], street: [290, GROUND - 2], sq: [138, GROUND - 4], cq: [218, GROUND - 4],
  shelf: [178, GROUND - 4], door: [282, GROUND - 2], bell: [300, GROUND - 2], house: [46, GROUND - 2],
  garage: [104, GROUND - 4],
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
    case "sacc_cq_post": return "The neighbour writes the result on row " + a.cq_tail + " of the CQ board, mark colour " +
      (a.phase ? "● (lap colour 1)" : "○ (lap colour 0)") + " last.";
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

function house(x, y, wd, ht, cls, label, lit) {
  return el("g", { class: "sw-house " + cls + (lit ? " is-lit" : "") },
    el("path", { class: "sw-roof", d: `M${x - 6} ${y} L${x + wd / 2} ${y - 30} L${x + wd + 6} ${y} Z` }),
    el("rect", { class: "sw-wall", x, y, width: wd, height: ht }),
    el("rect", { class: "sw-window", x: x + 10, y: y + 14, width: 22, height: 18 }),
    el("rect", { class: "sw-window", x: x + wd - 32, y: y + 14, width: 22, height: 18 }),
    el("text", { x: x + wd / 2, y: y + 52, "text-anchor": "middle", class: "sw-g-label" }, label[0]),
    el("text", { x: x + wd / 2, y: y + 66, "text-anchor": "middle", class: "sw-g-small" }, label[1]));
}

// board draws the SQ or CQ whiteboard: up to ROWS rows around the slot that just
// changed (or the tail).
function board(x, y, wd, ht, which, st, ds) {
  const n = which === "sq" ? st.sqSize : st.cqSize;
  const heading = el("text", { x: x + wd / 2, y: y - 5, "text-anchor": "middle", class: "sw-g-label" },
    which === "sq" ? "SQ board" : "CQ board");
  const g = el("g", { class: "sw-board" },
    el("rect", { class: "sw-board-frame", x, y, width: wd, height: ht, rx: 3 }), heading);
  if (!n) {
    g.kids.push(el("text", { x: x + wd / 2, y: y + ht / 2, "text-anchor": "middle", class: "sw-g-small" }, "blank"));
    return g;
  }
  const changed = st.changed && st.changed.ring === which ? st.changed.slot : -1;
  const focus = changed >= 0 ? changed : which === "sq" ? st.sqTail : st.cqTail;
  const from = n <= ROWS ? 0 : Math.max(0, Math.min(n - ROWS, focus - ROWS / 2));
  const to = Math.min(n, from + ROWS);
  const rh = (ht - 4) / ROWS;
  const head = which === "sq" ? st.sqHead : st.cqHead;
  const tail = which === "sq" ? st.sqTail : st.cqTail;
  const owned = (tail - head + n) % n;
  for (let i = from; i < to; i++) {
    const ry = y + 2 + (i - from) * rh;
    let text, cls = "sw-brow";
    if (which === "sq") {
      const d = st.sq[i] || {};
      text = d.req_id != null || d.opcode != null ? (d.req_id != null ? hex(d.req_id) : "?") + " " + ds.opShort(d) : "";
      if ((i - head + n) % n < owned) cls += " is-device";
    } else {
      const e = st.cq[i] || {};
      text = e.posted ? (e.phase ? "● " : "○ ") + hex(e.req_id) + (e.status ? " ✗" : " ✓") : "";
      if (e.posted) cls += e.phase ? " is-p1" : " is-p0";
    }
    if (i === changed) cls += " is-changed";
    g.kids.push(el("g", { class: cls },
      el("rect", { x: x + 2, y: ry, width: wd - 4, height: rh - 1 }),
      el("text", { x: x + 6, y: ry + rh - 6, class: "sw-brow-n" }, String(i)),
      el("text", { x: x + 20, y: ry + rh - 6, class: "sw-brow-t" }, text)));
  }
  if (n > ROWS) {
    // a long ring: say which rows are shown, in the heading
    heading.kids = [which.toUpperCase() + " " + from + "–" + (to - 1) + " of " + n];
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
    house(8, 160, 76, GROUND - 160, "sw-kernel", ["house", "(kernel)"], houseLit),
    // your bell: the neighbour rings it with an interrupt
    el("g", { class: "sw-ybell" + (msi ? " is-ringing" : "") },
      el("circle", { cx: 74, cy: 250, r: 5 }),
      msi ? el("path", { class: "sw-waves", d: "M62 240 q-6 10 0 20 M56 236 q-9 14 0 28" }) : null),
    // the garage: host memory
    el("g", { class: "sw-garage-bldg" },
      el("path", { class: "sw-roof", d: `M86 110 L176 78 L266 110 Z` }),
      el("rect", { class: "sw-wall", x: 92, y: 110, width: 168, height: GROUND - 110 }),
      el("text", { x: 176, y: 100, "text-anchor": "middle", class: "sw-g-label" }, "your garage (host memory)")),
    el("g", { class: "sw-shelf" + (data ? " is-active" : "") },
      el("rect", { x: 98, y: 116, width: 156, height: 12 }),
      el("text", { x: 176, y: 125, "text-anchor": "middle", class: "sw-g-small" }, "shelves: data buffers")),
    board(100, 146, 76, 108, "sq", st, ds),
    board(180, 146, 76, 108, "cq", st, ds),
    // the door and its keypad: the IOMMU
    el("rect", { class: "sw-door", x: 258, y: 220, width: 4, height: GROUND - 220 }),
    el("g", { class: "sw-keypad " + keypad },
      el("title", null, "the keypad: the IOMMU" + (st.iommu.on ? "" : " (off: every address is let through)")),
      el("rect", { x: 266, y: 206, width: 14, height: 20, rx: 2 }),
      el("text", { x: 264, y: 200, class: "sw-g-small" }, "keypad"),
      st.iommu.on ? null : el("text", { x: 266, y: 238, class: "sw-g-small" }, "off")),
    house(316, 160, 76, GROUND - 160, "sw-nhouse", ["neighbour", "(device)"], false),
    el("g", { class: "sw-nbell" + (ringing ? " is-ringing" : "") },
      el("circle", { cx: 322, cy: 250, r: 5 }),
      ringing ? el("path", { class: "sw-waves", d: "M334 240 q6 10 0 20 M340 236 q9 14 0 28" }) : null,
      el("text", { x: 322, y: 240, "text-anchor": "middle", class: "sw-g-small" }, ringing ? "ding!" : "bell")),
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

function person(cls, label, right) {
  // drawn with its feet at (0, 0); moved with a CSS transform
  return el("g", { class: "sw-person " + cls },
    el("circle", { cx: 0, cy: -33, r: 5.5 }),
    el("path", { d: "M0 -27 V-12 M0 -23 L-7 -15 M0 -23 L7 -15 M0 -12 L-6 0 M0 -12 L6 0" }),
    el("text", { x: right ? 9 : -9, y: -3, "text-anchor": right ? "start" : "end" }, label));
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
  panel.append(svg);
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
