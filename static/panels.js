// panels.js: the text views. Registers and memory ask the server (inspect at
// the position: it re-executes the run deterministically); source shows where
// in the Go code the current event came from.

const PLAY_DEBOUNCE = 350; // ms between inspect requests while playing

// asker runs inspect requests for one view: the latest request wins, replies
// for older ones are dropped, and while the widget plays requests are spaced.
function asker(w, L, show) {
  let want = null;   // {line, seq}
  let sent = null;   // key of the request in flight
  let have = null;   // key of what is shown
  const key = (r) => r.line + "@" + r.seq + "#" + w.runId;
  const go = () => {
    if (!want) return;
    const r = want;
    const k = key(r);
    if (k === have || k === sent) return;
    sent = k;
    w.conn.inspect(r.line, r.seq).then((out) => {
      if (sent !== k) return;
      sent = null;
      have = k;
      show(out, r, null);
    }, (err) => {
      if (sent !== k) return;
      sent = null;
      show("", r, err);
    });
  };
  const later = L.debounce(go, PLAY_DEBOUNCE);
  return {
    ask(line, seq) {
      want = { line, seq };
      if (w.playing) later(); else { later.cancel(); go(); }
    },
    forget() { have = null; },
  };
}

function registersView(w, panel, L) {
  const { h } = L;
  const status = h("p", { class: "sw-muted sw-inspect-status", "aria-live": "polite" });
  const pre = h("pre", { class: "sw-text", tabindex: "0", "aria-label": "Device registers" });
  panel.append(h("p", { class: "sw-muted" }, "The device's BAR0 registers just after the current event ",
    "(", h("code", null, "info registers"), "). Changed lines are marked."), status, pre);
  let prev = [];
  const q = asker(w, L, (out, r, err) => {
    if (err) { status.textContent = "Could not ask the machine: " + err.message; return; }
    status.textContent = "At event " + r.seq + ".";
    const lines = out.replace(/\n$/, "").split("\n");
    pre.replaceChildren(...lines.map((l, i) =>
      h("span", { class: prev.length && prev[i] !== l ? "sw-line is-changed" : "sw-line" }, l + "\n")));
    prev = lines;
  });
  return {
    update({ pos }) {
      status.textContent = "Asking the machine for event " + pos + "…";
      q.ask("info registers", pos);
    },
  };
}

// decodes a 32-byte descriptor or a 16-byte completion from dumped rows.
function decodeAt(rows, addr, st, L) {
  const a = Number(addr);
  const words = new Map();
  for (const r of rows) r.words.forEach((wd, i) => words.set(Number(r.addr) + 4 * i, wd));
  const cqBase = st.cqPhys;
  if (cqBase != null && st.cqSize && a >= cqBase && a < cqBase + 16 * st.cqSize) {
    const slot = Math.floor((a - cqBase) / 16);
    const at = cqBase + 16 * slot;
    const wd = [0, 1, 2, 3].map((i) => words.get(at + 4 * i));
    if (wd.some((v) => v == null)) return { title: "CQ slot " + slot + ": not all of it is in this dump" };
    return { title: "Completion in CQ slot " + slot + " at " + L.hex(at), fields: [
      ["req_id", L.hex(wd[0])], ["result_len", String(wd[1])], ["reserved", L.hex(wd[2])],
      ["status", L.hex(wd[3] & 0xffff) + (wd[3] & 0xffff ? " (error)" : " (OK)")],
      ["phase", String((wd[3] >>> 16) & 1) + ((wd[3] >>> 16) & 1 ? " ●" : " ○")]] };
  }
  const sqBase = st.sqPhys;
  let start = a - (a % 32);
  let title = "Descriptor at ";
  if (sqBase != null && st.sqSize && a >= sqBase && a < sqBase + 32 * st.sqSize) {
    const slot = Math.floor((a - sqBase) / 32);
    start = sqBase + 32 * slot;
    title = "Descriptor in SQ slot " + slot + " at ";
  }
  const d = L.decodeDescriptor(rows, BigInt(start));
  if (!d) return { title: title + L.hex(start) + ": the dump does not hold all 32 bytes; dump from this address" };
  return { title: title + L.hex(start), fields: [
    ["src_addr", L.hex(d.src)], ["dst_addr", L.hex(d.dst)], ["length", String(d.len)],
    ["opcode", L.hex(d.opcode) + " " + L.opName(d.opcode)], ["flags", L.hex(d.flags) + (d.flags & 1 ? " (interrupt)" : "")],
    ["req_id", L.hex(d.req_id)]] };
}

function memoryView(w, panel, L) {
  const { h } = L;
  let typed = false;
  const addr = h("input", { type: "text", class: "sw-addr", spellcheck: "false", autocomplete: "off",
    placeholder: "0x100000", "aria-label": "Physical address to dump", inputmode: "text" });
  addr.addEventListener("input", () => { typed = addr.value.trim() !== ""; });
  addr.addEventListener("keydown", (e) => { if (e.key === "Enter") { e.preventDefault(); refresh(); } });
  const pick = (which) => h("button", { type: "button", class: "sw-btn", onclick: () => {
    const st = w.timeline.stateAt(w.pos);
    const v = which === "sq" ? st.sqPhys : st.cqPhys;
    if (v != null) { addr.value = L.hex(v); typed = which !== "sq"; refresh(); }
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
    const r = decodeAt(rows, chosen, cur.st, L);
    decoded.replaceChildren(h("h4", null, r.title),
      r.fields ? h("dl", null, r.fields.map(([k, v]) => [h("dt", null, k), h("dd", null, v)])) : null);
  }

  const q = asker(w, L, (out, r, err) => {
    if (err) { status.textContent = "Could not read memory: " + err.message; table.replaceChildren(); return; }
    rows = L.parseDump(out);
    status.textContent = "Physical memory at " + r.line.split(" ").pop() + ", at event " + r.seq + ".";
    if (!rows.length) { table.replaceChildren(h("pre", { class: "sw-text" }, out)); return; }
    table.replaceChildren(...rows.map((row) => {
      const a = Number(row.addr);
      const el = h("button", { type: "button", class: "sw-dump-row" + (chosen === a ? " is-chosen" : ""),
        title: "Decode the descriptor (or completion) at " + L.hex(a) },
      h("span", { class: "sw-dump-addr" }, L.hex(a, 8)), row.words.map((wd) => h("span", { class: "sw-dump-word" }, L.hex(wd, 8))));
      const choose = () => {
        chosen = a;
        for (const x of table.children) x.classList.toggle("is-chosen", x === el);
        showDecoded();
      };
      el.addEventListener("click", choose);
      return el;
    }));
    showDecoded();
  });

  function refresh() {
    const v = addr.value.trim();
    if (!/^(0x[0-9a-f]+|[0-9]+)$/i.test(v)) {
      status.textContent = v ? "Type an address such as 0x100000." :
        "The SQ's address is not known at this position yet: type an address, or step on.";
      return;
    }
    status.textContent = "Reading memory at event " + cur.pos + "…";
    q.ask("xp /32xw " + v, cur.pos);
  }

  return {
    update({ pos, st }) {
      cur = { st, pos };
      if (!typed) {
        const def = st.sqPhys != null ? st.sqPhys : st.sqBase;
        addr.value = def != null ? L.hex(def) : "";
      }
      refresh();
      showDecoded();
    },
  };
}

// The server offers the Go sources that events point at under /source/; each
// file is fetched once.
const sourceCache = new Map();

function fetchSource(file) {
  if (!sourceCache.has(file)) {
    sourceCache.set(file, fetch("/source/" + file).then((r) => (r.ok ? r.text() : null)).catch(() => null));
  }
  return sourceCache.get(file);
}

// showLines fills pre with the lines around line, the line itself marked.
function showLines(pre, file, line, h) {
  if (!line) return;
  fetchSource(file).then((text) => {
    if (!text) { pre.replaceChildren(); return; }
    const lines = text.split("\n");
    const from = Math.max(1, line - 3), to = Math.min(lines.length, line + 3);
    const rows = [];
    for (let n = from; n <= to; n++) {
      rows.push(h("span", { class: n === line ? "sw-src-row is-current" : "sw-src-row" },
        String(n).padStart(4, " ") + "  " + lines[n - 1]));
    }
    pre.replaceChildren(...rows);
  });
}

function sourceView(w, panel, L) {
  const { h } = L;
  const body = h("div", { class: "sw-source", "aria-live": "polite" });
  panel.append(h("p", { class: "sw-muted" }, "The line of Go code that caused the current event, or the last ",
    "CPU-side event before it, and the code lines just before."), body);
  return {
    update({ pos, ev, tl }) {
      const hit = ev && ev.src ? ev : tl.lastWith(pos, (e) => e.side === "cpu" && e.src);
      if (!hit) {
        body.replaceChildren(h("p", { class: "sw-muted" }, pos ? "No source line is known for any event up to here." : "Step to the first event."));
        return;
      }
      const trail = [];
      let seen = new Set([hit.src]);
      for (let i = hit.seq - 1; i > 0 && trail.length < 6; i--) {
        const e = tl.log[i - 1];
        if (e.src && !seen.has(e.src)) { seen.add(e.src); trail.push(e); }
      }
      const [file, line] = hit.src.split(/:(?=\d+$)/);
      const code = h("pre", { class: "sw-src-code" });
      showLines(code, file, Number(line), h);
      body.replaceChildren(
        h("p", { class: "sw-src-main" }, h("code", null, file), line ? h("span", { class: "sw-src-line" }, ":" + line) : null),
        code,
        h("p", null, (hit === ev ? "This event (#" + hit.seq + "): " : "The last CPU-side event (#" + hit.seq + "): "),
          h("code", null, hit.kind), " ", hit.text || ""),
        trail.length ? h("h4", null, "Earlier source lines") : null,
        trail.length ? h("ol", { class: "sw-src-trail" }, trail.map((e) =>
          h("li", null, h("code", null, e.src), " — #" + e.seq + " " + e.kind))) : null);
    },
  };
}

export function install(L) {
  L.views = L.views || {};
  L.views.registers = (w, panel) => registersView(w, panel, L);
  L.views.memory = (w, panel) => memoryView(w, panel, L);
  L.views.source = (w, panel) => sourceView(w, panel, L);
}
