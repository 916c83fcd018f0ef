// views/source.js: the line of Go code behind the current event, or behind the
// last CPU-side event before it, with the code around it and the source lines of
// the events just before. The server offers the Go sources under /source/.

import { h } from "../dom.js";

// sourceAt finds what the view shows at pos: the event whose source line it is
// (hit; null if none is known yet), that line's file and number, and up to six
// earlier events with other source lines, newest first.
export function sourceAt(log, pos, ev) {
  let hit = ev && ev.src ? ev : null;
  for (let i = Math.min(pos, log.length); !hit && i > 0; i--) {
    const e = log[i - 1];
    if (e.side === "cpu" && e.src) hit = e;
  }
  if (!hit) return { hit: null };
  const trail = [];
  const seen = new Set([hit.src]);
  for (let i = hit.seq - 1; i > 0 && trail.length < 6; i--) {
    const e = log[i - 1];
    if (e.src && !seen.has(e.src)) { seen.add(e.src); trail.push(e); }
  }
  const [file, line] = hit.src.split(/:(?=\d+$)/);
  return { hit, file, line: Number(line) || 0, trail };
}

// linesAround is the lines of text from three before line to three after it,
// numbered, the line itself marked current.
export function linesAround(text, line) {
  const lines = text.split("\n");
  const out = [];
  for (let n = Math.max(1, line - 3); n <= Math.min(lines.length, line + 3); n++) {
    out.push({ n, text: String(n).padStart(4, " ") + "  " + lines[n - 1], current: n === line });
  }
  return out;
}

// Each file is fetched once.
const sourceCache = new Map();

function fetchSource(file) {
  if (!sourceCache.has(file)) {
    sourceCache.set(file, fetch("/source/" + file).then((r) => (r.ok ? r.text() : null)).catch(() => null));
  }
  return sourceCache.get(file);
}

// showLines fills pre with the lines around line of file.
function showLines(pre, file, line) {
  if (!line) return;
  fetchSource(file).then((text) => {
    if (!text) { pre.replaceChildren(); return; }
    pre.replaceChildren(...linesAround(text, line).map((l) =>
      h("span", { class: l.current ? "sw-src-row is-current" : "sw-src-row" }, l.text)));
  });
}

export function mount(w, panel) {
  const body = h("div", { class: "sw-source", "aria-live": "polite" });
  panel.append(h("p", { class: "sw-muted" }, "The line of Go code that caused the current event, or the last ",
    "CPU-side event before it, and the code lines just before."), body);
  return {
    update({ pos, ev, tl }) {
      const at = sourceAt(tl.log, pos, ev);
      if (!at.hit) {
        body.replaceChildren(h("p", { class: "sw-muted" }, pos ? "No source line is known for any event up to here." : "Step to the first event."));
        return;
      }
      const { hit, file, line, trail } = at;
      const code = h("pre", { class: "sw-src-code" });
      showLines(code, file, line);
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
