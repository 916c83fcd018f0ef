// views/config.js: configuration space (§3, §4) as the CPU has seen it. The
// bus scan reads each function's vendor ID (all ones: nothing there); the
// found function's type-0 header is drawn as its 64 bytes, four to a row, each
// field with the last value read or written; and each BAR's sizing: all ones
// written, the size mask read back, the address assigned.

import { render, renderInto } from "../dom.js";
import { hex } from "../format.js";
import { el } from "../vnode.js";

// fieldValues is, for each field of the header layout, the last value an
// access covering the whole field showed: {value (BigInt), seq, write} or null.
export function fieldValues(dev, layout) {
  const out = {};
  const accesses = Object.entries(dev.regs).map(([reg, a]) => ({ reg: Number(reg), ...a })).sort((a, b) => a.seq - b.seq);
  for (const f of layout.fields) {
    out[f.name] = null;
    for (const a of accesses) {
      if (a.reg > f.offset || a.reg + a.size < f.offset + f.size) continue;
      const shift = BigInt(8 * (f.offset - a.reg));
      out[f.name] = { value: (a.val >> shift) & ((1n << BigInt(8 * f.size)) - 1n), seq: a.seq, write: a.write };
    }
  }
  return out;
}

// bdfText is bus:device.function for a BDF number.
function bdfText(n) {
  return (n >> 8).toString(16).padStart(2, "0") + ":" + ((n >> 3) & 31).toString(16).padStart(2, "0") + "." + (n & 7);
}

// sizeText is a BAR size as people say it.
export function sizeText(n) {
  if (n == null) return "?";
  if (n >= 1 << 20 && n % (1 << 20) === 0) return n / (1 << 20) + " MiB";
  if (n >= 1024 && n % 1024 === 0) return n / 1024 + " KiB";
  return n + " bytes";
}

// focus is the function the picture shows: the one present function that has
// had the most configuration accesses.
export function focus(st) {
  let best = null;
  for (const [n, d] of Object.entries(st.cfg.devs)) {
    if (!d.present) continue;
    const k = Object.keys(d.regs).length;
    if (!best || k > best.k) best = { n: Number(n), d, k };
  }
  return best;
}

export function picture(st, ev, pos, ds, opts) {
  const wide = opts.wide;
  const W = wide ? 760 : 360;
  const layout = ds.layout("config_header");
  const kids = [];
  // The bus scan: device numbers 0–31 on bus 0.
  const devs = st.cfg.devs;
  let y = 16;
  kids.push(el("text", { x: 8, y, class: "sw-box-label" }, "Bus 0: vendor ID read at each device number"));
  y += 6;
  const cw = wide ? 22 : 10.5;
  for (let d = 0; d < 32; d++) {
    const n = d << 3;
    const f = devs[n];
    const state = !f || f.present == null ? "unread" : f.present ? "present" : "absent";
    const hot = ev && (ev.kind === "pci_cfg_read" || ev.kind === "pci_cfg_write") && ev.args.dev === n;
    kids.push(el("g", { class: ["sw-cfg-dev", "is-" + state, hot && "is-hot"], "data-dev": n, "data-state": state },
      el("title", null, bdfText(n) + ": " + (state === "unread" ? "not read yet" : state === "absent" ? "reads 0xffff: nothing there" : "a function")),
      el("rect", { x: 8 + d * cw, y, width: cw - 2, height: 14, rx: 2 }),
      wide ? el("text", { x: 8 + d * cw + (cw - 2) / 2, y: y + 10.5, class: "sw-cfg-devn" }, d.toString(16)) : null));
  }
  y += 30;
  const fo = focus(st);
  if (!fo) {
    kids.push(el("text", { x: 8, y, class: "sw-muted-text" }, "No function found yet."));
    return el("svg", { class: "sw-cfg", role: "img", viewBox: `0 0 ${W} ${y + 10}` }, kids);
  }
  kids.push(el("text", { x: 8, y, class: "sw-box-label" }, "Function " + fo.d.bdf + ": the type-0 header, 4 bytes a row"));
  y += 8;
  const vals = fieldValues(fo.d, layout);
  const label = 36, bw = wide ? 96 : 78, rh = wide ? 30 : 28;
  const y0 = y;
  const cur = ev && (ev.kind === "pci_cfg_read" || ev.kind === "pci_cfg_write") && ev.args.dev === fo.n ? ev.args : null;
  for (let row = 0; row < layout.size / 4; row++) {
    kids.push(el("text", { x: 8, y: y0 + row * rh + rh / 2 + 4, class: "sw-cfg-off" }, hex(row * 4, 2)));
  }
  for (const f of layout.fields) {
    // Fields never cross a 4-byte row except reserved runs: draw them row by row.
    for (let off = f.offset; off < f.offset + f.size;) {
      const row = Math.floor(off / 4), col = off % 4;
      const n = Math.min(4 - col, f.offset + f.size - off);
      const x = 8 + label + (3 - col - n + 1) * bw; // byte 0 on the right, as the specification draws it
      const yy = y0 + row * rh;
      const v = vals[f.name];
      const hot = cur && cur.reg <= f.offset && cur.reg + cur.size >= f.offset + f.size;
      const first = off === f.offset;
      kids.push(el("g", { class: ["sw-cfg-field", v ? (v.write ? "is-written" : "is-read") : "is-unknown", hot && "is-hot", f.name === "reserved" && "is-reserved"],
        "data-field": f.name },
      el("title", null, f.name + " (offset " + hex(f.offset) + ", " + f.size + " byte" + (f.size > 1 ? "s" : "") + "): " + f.doc +
        (v ? "; " + (v.write ? "written " : "read ") + hex(v.value) + " at event " + v.seq : "; not accessed yet")),
      el("rect", { x: x + 1, y: yy + 1, width: n * bw - 2, height: rh - 2, rx: 3 }),
      first || f.name !== "reserved" ? el("text", { x: x + n * bw / 2, y: yy + 11, class: "sw-cfg-name" }, first ? short(f.name, n * bw) : "") : null,
      first && v ? el("text", { x: x + n * bw / 2, y: yy + 23, class: "sw-cfg-val" }, hex(v.value)) : null));
      off += n;
    }
  }
  y = y0 + (layout.size / 4) * rh + 20;
  // BAR sizing.
  const bars = Object.values(st.cfg.bars).filter((b) => b.dev === fo.n).sort((a, b) => a.reg - b.reg);
  const bx = wide ? 8 + label + 4 * bw + 16 : 8;
  let by = wide ? y0 - 2 : y;
  const bwid = W - bx - 6;
  kids.push(el("text", { x: bx, y: by, class: "sw-box-label" }, "BAR sizing (§4)"));
  by += 6;
  if (!bars.length) kids.push(el("text", { x: bx, y: by + 14, class: "sw-muted-text" }, "not sized yet"));
  for (const b of bars) {
    const name = layout.fields.find((f) => f.offset === b.reg);
    const steps = b.steps;
    const lines = [];
    steps.forEach((s, i) => {
      const prev = steps[i - 1];
      if (s.write && s.val === 0xffffffffn) lines.push(["write all ones", "0xffffffff", s.seq]);
      else if (!s.write && prev && prev.write && prev.val === 0xffffffffn) lines.push(["read the mask", hex(s.val) + " → " + (b.size ? sizeText(b.size) : "no BAR here"), s.seq]);
      else if (s.write && b.size === 0) lines.push(["write back", hex(s.val), s.seq]);
      else if (s.write) lines.push(["assign the address", hex(s.val), s.seq]);
      else lines.push(["read", hex(s.val), s.seq]);
    });
    const mapped = st.cfg.mapped && st.cfg.mapped[Number(name ? name.name.slice(3) : -1)];
    const h = 22 + lines.length * 15 + (mapped ? 15 : 0);
    kids.push(el("g", { class: "sw-cfg-bar", "data-bar": name ? name.name : b.reg },
      el("rect", { x: bx, y: by, width: bwid, height: h, rx: 5 }),
      el("text", { x: bx + 8, y: by + 15, class: "sw-box-label" }, (name ? name.name.toUpperCase() : hex(b.reg)) + (b.size ? ": " + sizeText(b.size) : b.size === 0 ? ": not implemented" : "")),
      lines.map(([what, val, seq], i) => el("text", { x: bx + 8, y: by + 30 + i * 15, class: ["sw-cfg-step", ev && ev.seq === seq && "is-hot"] },
        (i + 1) + ". " + what + ": " + val)),
      mapped ? el("text", { x: bx + 8, y: by + 30 + lines.length * 15, class: "sw-cfg-step is-good" }, "decoding at " + hex(mapped.addr)) : null));
    by += h + 8;
  }
  const H = Math.max(y, by + 4);
  return el("svg", { class: "sw-cfg", role: "img", viewBox: `0 0 ${W} ${H}`, "aria-labelledby": opts.id + "cfg-title" },
    el("title", { id: opts.id + "cfg-title" }, "Configuration space at event " + pos), kids);
}

// short fits a field's name into w px (10 px text).
function short(name, w) {
  const max = Math.floor(w / 6);
  return name.length <= max ? name : name.slice(0, Math.max(3, max - 1)) + "…";
}

export function mount(w, panel, env) {
  const pre = "sw" + w.n + "-";
  const svg = render(el("svg", { class: "sw-cfg" }));
  panel.append(svg);
  return {
    update({ ev, st, wide, pos }) { renderInto(svg, picture(st, ev, pos, env.ds, { id: pre, wide })); },
  };
}
