// garage.js: the garage view (WORKBOOK.md). Your garage is host memory, with
// two numbered whiteboards (the SQ and the CQ); your neighbour is the device,
// who walks over to read one board and write on the other (DMA); the keypad on
// the garage door is the IOMMU; your house is the kernel; the doorbell on the
// neighbour's house is the SQ_TAIL register.

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

function inRing(base, size, n, addr) {
  return base != null && addr != null && addr >= base && addr < base + size * n ? Math.floor((addr - base) / size) : -1;
}

function garageView(w, panel, L) {
  const { s } = L;
  const pre = "sw" + w.n + "-g-";
  const svg = s("svg", { class: "sw-garage", viewBox: `0 ${TOP} ${W} ${H - TOP}`, role: "img",
    "aria-labelledby": pre + "title " + pre + "desc" });
  const scene = s("g");
  const title = s("title", { id: pre + "title" }, "The garage");
  const desc = s("desc", { id: pre + "desc" });

  function person(cls, label, right) {
    // drawn with its feet at (0, 0); moved with a CSS transform
    return s("g", { class: "sw-person " + cls },
      s("circle", { cx: 0, cy: -33, r: 5.5 }),
      s("path", { d: "M0 -27 V-12 M0 -23 L-7 -15 M0 -23 L7 -15 M0 -12 L-6 0 M0 -12 L6 0" }),
      s("text", { x: right ? 9 : -9, y: -3, "text-anchor": right ? "start" : "end" }, label));
  }
  const you = person("sw-you", "you", false);
  const neighbour = person("sw-neighbour", "neighbour", true);
  svg.append(title, desc, scene, you, neighbour);
  panel.append(svg);

  function place(g, spot, shift) {
    const [x0, y] = SPOTS[spot] || SPOTS.home;
    const x = x0 + shift;
    g.style.transform = `translate(${x}px, ${y}px)`;
    g.dataset.spot = spot;
  }

  function house(x, y, wd, ht, cls, label, lit) {
    return s("g", { class: "sw-house " + cls + (lit ? " is-lit" : "") },
      s("path", { class: "sw-roof", d: `M${x - 6} ${y} L${x + wd / 2} ${y - 30} L${x + wd + 6} ${y} Z` }),
      s("rect", { class: "sw-wall", x, y, width: wd, height: ht }),
      s("rect", { class: "sw-window", x: x + 10, y: y + 14, width: 22, height: 18 }),
      s("rect", { class: "sw-window", x: x + wd - 32, y: y + 14, width: 22, height: 18 }),
      s("text", { x: x + wd / 2, y: y + 52, "text-anchor": "middle", class: "sw-g-label" }, label[0]),
      s("text", { x: x + wd / 2, y: y + 66, "text-anchor": "middle", class: "sw-g-small" }, label[1]));
  }

  function board(x, y, wd, ht, which, st) {
    const n = which === "sq" ? st.sqSize : st.cqSize;
    const g = s("g", { class: "sw-board" },
      s("rect", { class: "sw-board-frame", x, y, width: wd, height: ht, rx: 3 }),
      s("text", { x: x + wd / 2, y: y - 5, "text-anchor": "middle", class: "sw-g-label" },
        which === "sq" ? "SQ board" : "CQ board"));
    if (!n) {
      g.appendChild(s("text", { x: x + wd / 2, y: y + ht / 2, "text-anchor": "middle", class: "sw-g-small" }, "blank"));
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
        text = d.req_id != null || d.opcode != null ? (d.req_id != null ? L.hex(d.req_id) : "?") + " " + L.opShort(d) : "";
        if ((i - head + n) % n < owned) cls += " is-device";
      } else {
        const e = st.cq[i] || {};
        text = e.posted ? (e.phase ? "● " : "○ ") + L.hex(e.req_id) + (e.status ? " ✗" : " ✓") : "";
        if (e.posted) cls += e.phase ? " is-p1" : " is-p0";
      }
      if (i === changed) cls += " is-changed";
      g.appendChild(s("g", { class: cls },
        s("rect", { x: x + 2, y: ry, width: wd - 4, height: rh - 1 }),
        s("text", { x: x + 6, y: ry + rh - 6, class: "sw-brow-n" }, String(i)),
        s("text", { x: x + 20, y: ry + rh - 6, class: "sw-brow-t" }, text)));
    }
    if (n > ROWS) {
      // a long ring: say which rows are shown, in the title
      const t = g.querySelector("text");
      t.textContent = which.toUpperCase() + " " + from + "–" + (to - 1) + " of " + n;
      t.setAttribute("class", "sw-g-small sw-g-strong");
    }
    return g;
  }

  function spots(ev, st) {
    let me = "garage", nb = "home";
    if (st.inIrq) me = "house";
    if (!ev) return [me, nb];
    const a = ev.args || {};
    switch (ev.kind) {
      case "cpu_write":
        me = inRing(st.sqPhys, 32, st.sqSize, a.addr) >= 0 ? "sq" : inRing(st.cqPhys, 16, st.cqSize, a.addr) >= 0 ? "cq" : "garage";
        break;
      case "cpu_read": me = inRing(st.cqPhys, 16, st.cqSize, a.addr) >= 0 ? "cq" : "garage"; break;
      case "sacc_doorbell": case "sacc_reg_write": case "sacc_reg_read": case "sacc_cq_head":
      case "pci_cfg_read": case "pci_cfg_write": me = "bell"; break;
      case "syscall": case "irq_entry": me = "house"; break;
      case "sacc_fetch": case "sacc_desc": nb = "sq"; break;
      case "sacc_cq_post": nb = "cq"; break;
      case "sacc_dma_read": case "sacc_dma_write":
        nb = inRing(st.sqBase, 32, st.sqSize, a.iova) >= 0 ? "sq" : inRing(st.cqBase, 16, st.cqSize, a.iova) >= 0 ? "cq" : "shelf";
        break;
      case "iommu_fault": case "iommu_translate": case "iommu_iotlb_hit": case "iommu_iotlb_miss": nb = "door"; break;
      case "sacc_msix_send": case "msi_deliver": nb = "street"; break;
    }
    return [me, nb];
  }

  return {
    update({ ev, st, pos }) {
      const k = ev ? ev.kind : "";
      svg.classList.toggle("sw-anim", !L.reducedMotion());
      const houseLit = st.inIrq || k === "syscall" || k === "irq_entry";
      const keypad = !st.iommu.on ? "is-off" : k === "iommu_fault" ? "is-bad" : /^iommu_(translate|iotlb)/.test(k) ? "is-good" : "";
      const ringing = k === "sacc_doorbell";
      const msi = k === "sacc_msix_send" || k === "msi_deliver";
      const data = /sacc_dma_(read|write)/.test(k) && spots(ev, st)[1] === "shelf";
      scene.replaceChildren(
        s("rect", { class: "sw-sky", x: 0, y: TOP, width: W, height: GROUND - TOP }),
        s("rect", { class: "sw-ground", x: 0, y: GROUND, width: W, height: H - GROUND }),
        house(8, 160, 76, GROUND - 160, "sw-kernel", ["house", "(kernel)"], houseLit),
        // your bell: the neighbour rings it with an interrupt
        s("g", { class: "sw-ybell" + (msi ? " is-ringing" : "") },
          s("circle", { cx: 74, cy: 250, r: 5 }),
          msi ? s("path", { class: "sw-waves", d: "M62 240 q-6 10 0 20 M56 236 q-9 14 0 28" }) : null),
        // the garage: host memory
        s("g", { class: "sw-garage-bldg" },
          s("path", { class: "sw-roof", d: `M86 110 L176 78 L266 110 Z` }),
          s("rect", { class: "sw-wall", x: 92, y: 110, width: 168, height: GROUND - 110 }),
          s("text", { x: 176, y: 100, "text-anchor": "middle", class: "sw-g-label" }, "your garage (host memory)")),
        s("g", { class: "sw-shelf" + (data ? " is-active" : "") },
          s("rect", { x: 98, y: 116, width: 156, height: 12 }),
          s("text", { x: 176, y: 125, "text-anchor": "middle", class: "sw-g-small" }, "shelves: data buffers")),
        board(100, 146, 76, 108, "sq", st),
        board(180, 146, 76, 108, "cq", st),
        // the door and its keypad: the IOMMU
        s("rect", { class: "sw-door", x: 258, y: 220, width: 4, height: GROUND - 220 }),
        s("g", { class: "sw-keypad " + keypad },
          s("title", null, "the keypad: the IOMMU" + (st.iommu.on ? "" : " (off: every address is let through)")),
          s("rect", { x: 266, y: 206, width: 14, height: 20, rx: 2 }),
          s("text", { x: 264, y: 200, class: "sw-g-small" }, "keypad"),
          st.iommu.on ? null : s("text", { x: 266, y: 238, class: "sw-g-small" }, "off")),
        house(316, 160, 76, GROUND - 160, "sw-nhouse", ["neighbour", "(device)"], false),
        s("g", { class: "sw-nbell" + (ringing ? " is-ringing" : "") },
          s("circle", { cx: 322, cy: 250, r: 5 }),
          ringing ? s("path", { class: "sw-waves", d: "M334 240 q6 10 0 20 M340 236 q9 14 0 28" }) : null,
          s("text", { x: 322, y: 240, "text-anchor": "middle", class: "sw-g-small" }, ringing ? "ding!" : "bell")),
      );
      const [me, nb] = spots(ev, st);
      place(you, me, 0);
      place(neighbour, nb, nb === "home" || nb === "door" || nb === "street" ? 0 : NB_SHIFT);
      neighbour.classList.toggle("is-stopped", k === "iommu_fault" || st.error);
      title.textContent = "The garage at event " + pos;
      desc.textContent = L.garageCaption(ev, st, L);
    },
  };
}

export function install(L) {
  L.views = L.views || {};
  L.views.garage = (w, panel) => garageView(w, panel, L);
}
