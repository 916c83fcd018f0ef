// views/bypass.js: kernel bypass as three places. The process has an address
// space of its own: the pages the kernel mapped into it (proc_map, from mmap(2)
// or anonymous memory) are the only memory it can touch, and the doorbell page
// among them is device memory. The kernel is entered only by a system call. The
// device sees doorbells and DMA. On the fast path the process writes
// descriptors into its own pages and rings the doorbell with a plain store:
// doorbells and completions pile up while the system-call count stands still.

import { render, renderInto } from "../dom.js";
import { hex, textArgs } from "../format.js";
import { el } from "../vnode.js";

// place says where an event happened: "process", "kernel" or "device". A
// CPU-side event is the kernel's when the code behind it (src) is the kernel
// or the driver, and the process's otherwise; without a source line it is
// the process's when a process exists.
export function place(ev, st) {
  if (!ev) return null;
  if (ev.side === "kernel") return "kernel";
  if (ev.kind === "proc_map") return "kernel";
  if (ev.side === "cpu" || (ev.src && ev.side !== "device")) {
    if (ev.src) return /^sacc\/(kernel|driver)\//.test(ev.src) ? "kernel" : "process";
    return Object.keys(st.procs).length ? "process" : "kernel";
  }
  if (ev.kind === "sacc_doorbell" || ev.kind === "sacc_reg_write") {
    // An MMIO write is the CPU's: whose code made it is in src.
    if (ev.src) return /^sacc\/(kernel|driver)\//.test(ev.src) ? "kernel→device" : "process→device";
  }
  return "device";
}

// pageName says what a mapped page is: the doorbell page, a ring, or memory.
export function pageName(m, st, ds) {
  if (m.mmio) return "doorbell page (MMIO)";
  const page = (a) => (a == null ? null : Math.floor(a / ds.pageSize) * ds.pageSize);
  if (page(st.sqPhys) === m.phys) return "SQ ring";
  if (page(st.cqPhys) === m.phys) return "CQ ring";
  return "memory";
}

// summary is the picture's content as data.
export function summary(st) {
  const procs = Object.values(st.procs);
  const last = st.sys.last;
  return {
    procs,
    syscalls: st.syscalls,
    byName: st.sys.byName,
    last,
    fastDoorbells: last ? st.doorbells - last.doorbellsBefore : st.doorbells,
    fastCompletions: last ? st.completions - last.completionsBefore : st.completions,
  };
}

export function picture(st, ev, pos, ds, opts) {
  const wide = opts.wide;
  const W = wide ? 760 : 360;
  const S = summary(st);
  const where = place(ev, st);
  const kids = [];
  const colW = wide ? 244 : 352;
  const nmaps = S.procs.reduce((n, p) => n + p.maps.length, 0);
  const H = wide ? 46 + 16 * Math.max(4, Math.min(11, nmaps)) : 46 + 16 * Math.max(3, Math.min(6, nmaps));
  const boxes = [["process", "Process" + (S.procs.length ? " (pid " + S.procs.map((p) => p.pid).join(", ") + ")" : "")],
    ["kernel", "Kernel"], ["device", "SACC device"]];
  boxes.forEach(([name, label], i) => {
    const x = wide ? 4 + i * (colW + 8) : 4;
    const y = wide ? 4 : 4 + i * (H + 10);
    const hot = where && where.split("→").includes(name);
    kids.push(el("g", { class: ["sw-bp-place", "sw-bp-" + name, hot && "is-hot"], "data-place": name },
      el("rect", { x, y, width: colW, height: H, rx: 6 }),
      el("text", { x: x + 8, y: y + 18, class: "sw-box-label" }, label)));
    const line = (k, t, cls) => kids.push(el("text", { x: x + 10, y: y + 38 + k * 16, class: cls || "sw-bp-line" }, t));
    if (name === "process") {
      const maps = S.procs.flatMap((p) => p.maps);
      if (!maps.length) line(0, "no process has mapped anything yet", "sw-muted-text");
      maps.slice(-(wide ? 11 : 6)).forEach((m, k) => {
        kids.push(el("g", { class: ["sw-bp-map", m.mmio && "is-mmio", ev && m.seq === ev.seq && "is-new"] },
          el("title", null, "user address " + hex(m.va) + " maps physical " + hex(m.phys) + " (event " + m.seq + ")"),
          el("text", { x: x + 10, y: y + 38 + k * 16, class: "sw-bp-line" }, hex(m.va) + " → " + pageName(m, st, ds))));
      });
    } else if (name === "kernel") {
      line(0, S.syscalls + " system call" + (S.syscalls === 1 ? "" : "s") + " so far");
      const names = Object.entries(S.byName).map(([n, c]) => n + " ×" + c).join(", ");
      if (names) line(1, names);
      if (S.last) line(2, "last: " + S.last.nr + " at event " + S.last.seq);
      if (ev && ev.kind === "syscall") line(3, "now: " + (textArgs(ev.text).nr || "a system call") + " — the process waits", "sw-bp-now");
    } else {
      line(0, st.doorbells + " doorbell" + (st.doorbells === 1 ? "" : "s") + ", " + st.completions + " completion" + (st.completions === 1 ? "" : "s"));
      if (where === "process→device") line(1, "now: the process rings the doorbell", "sw-bp-now");
      else if (where === "kernel→device") line(1, "now: the kernel writes a register", "sw-bp-now");
      else if (ev && ev.side === "device") line(1, "now: " + ev.kind.replace(/^sacc_/, ""), "sw-bp-now");
    }
  });
  const y = wide ? H + 30 : 3 * (H + 10) + 20;
  const fast = S.fastDoorbells > 0 && S.last;
  const since = S.last ? "Since the last system call (event " + S.last.seq + "):" : "No system call yet.";
  const counts = S.last ? S.fastDoorbells + " doorbell" + (S.fastDoorbells === 1 ? "" : "s") + ", " + S.fastCompletions +
    " completion" + (S.fastCompletions === 1 ? "" : "s") + ", 0 system calls" : "";
  const lines = wide ? [[since + " " + counts, "sw-bp-fast"]] : [[since, "sw-bp-fast"], [counts, "sw-bp-fast"]];
  if (fast) lines.push(...(wide ? [["the fast path: plain loads and stores to mapped pages, no kernel in the way", "sw-muted-text"]]
    : [["the fast path: plain loads and stores to", "sw-muted-text"], ["mapped pages, no kernel in the way", "sw-muted-text"]]));
  lines.forEach(([t, cls], i) => { if (t) kids.push(el("text", { x: 8, y: y + i * 16, class: [cls, fast && cls === "sw-bp-fast" && "is-good"] }, t)); });
  const end = y + lines.length * 16;
  return el("svg", { class: "sw-bypass", role: "img", viewBox: `0 0 ${W} ${end + 8}`, "aria-labelledby": opts.id + "bp-title",
    "data-syscalls": S.syscalls, "data-fast-doorbells": S.fastDoorbells, "data-place": where || "" },
  el("title", { id: opts.id + "bp-title" }, "Process, kernel and device at event " + pos), kids);
}

export function mount(w, panel, env) {
  const pre = "sw" + w.n + "-";
  const svg = render(el("svg", { class: "sw-bypass" }));
  panel.append(svg);
  return {
    update({ ev, st, wide, pos }) { renderInto(svg, picture(st, ev, pos, env.ds, { id: pre, wide })); },
  };
}
