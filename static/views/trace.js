// views/trace.js: every event up to the position, filtered by side and by
// words. traceAt() says which rows the list shows at a position; a FilterIndex
// gives the same answer while looking at each event once (a frame of playback
// costs the events it adds, not the whole log), and the list on the page
// follows it incrementally (stepping forward appends rows, stepping back
// removes them), because a run can have many thousands of events.

import { h } from "../dom.js";

const MAX_ROWS = 250;
const PLAYING_ROWS = 24; // the box shows about twenty lines

// matches tells whether an event passes the filter: its side is shown and q
// (lower case) is in its kind or text.
export function matches(ev, filter) {
  const q = filter.q;
  return filter.sides.has(ev.side) && (!q || ev.kind.includes(q) || (ev.text || "").toLowerCase().includes(q));
}

// traceAt is the list at pos: the last MAX_ROWS matching events up to pos, in
// order, how many events match in all, and the note under the filter.
export function traceAt(log, pos, filter, max = MAX_ROWS) {
  const rows = [];
  for (let i = Math.min(pos, log.length); i > 0 && rows.length < max; i--) {
    if (matches(log[i - 1], filter)) rows.push(log[i - 1]);
  }
  rows.reverse();
  let matched = pos;
  if (filter.q || filter.sides.size < filter.all) {
    matched = 0;
    for (let i = 0; i < pos; i++) if (matches(log[i], filter)) matched++;
  }
  return { rows, matched, note: note(pos, matched, rows.length) };
}

// FilterIndex is traceAt for one filter, kept up as the log grows and the
// position moves: it remembers which events match, so each event of a log is
// tested once, and a position anywhere costs a binary search. A new log (a new
// run) starts it again; a log only ever grows at its end.
export class FilterIndex {
  constructor(filter) {
    this.filter = filter;
    this.filtered = !!filter.q || filter.sides.size < filter.all;
    this.log = null;
    this.hits = [];   // indices into log of the matching events, in order
    this.scanned = 0; // log[0..scanned) have been tested
  }

  at(log, pos, max = MAX_ROWS) {
    if (log !== this.log) { this.log = log; this.hits = []; this.scanned = 0; }
    const end = Math.min(pos, log.length);
    for (; this.scanned < end; this.scanned++) {
      if (matches(log[this.scanned], this.filter)) this.hits.push(this.scanned);
    }
    const m = below(this.hits, end);
    const rows = [];
    for (let i = Math.max(0, m - max); i < m; i++) rows.push(log[this.hits[i]]);
    const matched = this.filtered ? m : pos;
    return { rows, matched, note: note(pos, matched, rows.length) };
  }
}

// below counts the numbers in sorted that are less than n.
function below(sorted, n) {
  let lo = 0, hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid] < n) lo = mid + 1; else hi = mid;
  }
  return lo;
}

function note(pos, matched, shown) {
  if (pos === 0) return "No events yet: step or play.";
  if (matched > shown) return "Showing the last " + shown + " of " + matched + " matching events.";
  return matched + " of " + pos + " events shown.";
}

// fill makes li (a row made by newRow) show one event; alt shades every other
// matching event (by its place among the matches, so a line keeps its shade as
// the list scrolls: no :nth-child rule for the browser to work out again on
// every change).
function fill(li, ev, alt) {
  li.dataset.seq = ev.seq;
  li.className = "sw-ev sw-side-" + ev.side + (alt ? " is-alt" : "");
  if (ev.src) li.title = "source: " + ev.src; else li.removeAttribute("title");
  li.removeAttribute("aria-current");
  const [seq, t, kind, text] = li.children;
  seq.textContent = "#" + ev.seq;
  t.textContent = ev.t + " ns";
  kind.textContent = ev.kind;
  text.textContent = ev.text || "";
  return li;
}

function newRow() {
  return h("li", { class: "sw-ev" }, h("span", { class: "sw-ev-seq" }), h("span", { class: "sw-ev-t" }),
    h("span", { class: "sw-ev-kind" }), h("span", { class: "sw-ev-text" }));
}

// follow makes list show rows (events in seq order; base is the place of the
// first among all matching events) with the fewest changes: rows that left
// either end are taken off, new ones added at either end, made from the rows
// taken off when there are some (while playing, every frame moves the whole
// list on: its lines are used again rather than built again).
function follow(list, rows, base) {
  const seqOf = (li) => Number(li.dataset.seq);
  const spare = [];
  const make = (k) => fill(spare.pop() || newRow(), rows[k], (base + k) % 2 === 1);
  const first = rows.length ? rows[0].seq : Infinity, last = rows.length ? rows[rows.length - 1].seq : -Infinity;
  while (list.firstElementChild && seqOf(list.firstElementChild) < first) spare.push(list.removeChild(list.firstElementChild));
  while (list.lastElementChild && seqOf(list.lastElementChild) > last) spare.push(list.removeChild(list.lastElementChild));
  if (!rows.length) return;
  const lo = list.firstElementChild ? seqOf(list.firstElementChild) : Infinity;
  const hi = list.lastElementChild ? seqOf(list.lastElementChild) : -Infinity;
  // rows[0..older) go before the rows still there, rows[newer..] after them
  // (all of them, when none is left).
  let older = 0, newer = 0;
  if (list.firstElementChild) {
    newer = rows.length;
    while (older < rows.length && rows[older].seq < lo) older++;
    while (newer > 0 && rows[newer - 1].seq > hi) newer--;
  }
  const build = (from, to) => { const f = document.createDocumentFragment(); for (let k = from; k < to; k++) f.appendChild(make(k)); return f; };
  if (older) list.prepend(build(0, older));
  if (newer < rows.length) list.append(build(newer, rows.length));
}

export function mount(w, panel, env) {
  const sides = env.ds.sides;
  const shown = new Set(sides);
  const filterInput = h("input", { type: "search", class: "sw-filter", placeholder: "filter: kind or text",
    "aria-label": "Filter events by kind or text", oninput: () => w.requestRedraw(true) });
  const boxes = sides.map((side) => {
    const cb = h("input", { type: "checkbox", checked: true, value: side, onchange: () => {
      if (cb.checked) shown.add(side); else shown.delete(side);
      w.requestRedraw(true);
    } });
    return h("label", { class: "sw-side sw-side-" + side }, cb, " " + side);
  });
  const list = h("ol", { class: "sw-trace", "aria-label": "Events up to the position" });
  // The list scrolls in a box that starts, and stays, at its bottom (a
  // column-reverse flex box): the newest event shows without the view
  // measuring the list on every frame to scroll it.
  const scroller = h("div", { class: "sw-trace-scroll" }, list);
  const noteEl = h("p", { class: "sw-muted sw-trace-note" });
  list.addEventListener("click", (e) => {
    const li = e.target.closest("li[data-seq]");
    if (li) { w.pause(); w.setPos(Number(li.dataset.seq)); }
  });
  panel.append(h("div", { class: "sw-trace-bar" }, h("fieldset", { class: "sw-sides" },
    h("legend", null, "Sides"), boxes), filterInput), noteEl, scroller);

  let log = null, filterKey = null, current = null, index = null;
  return {
    update({ pos, tl }) {
      const q = filterInput.value.trim().toLowerCase();
      const key = q + "|" + [...shown].join(",");
      // A new run or a new filter changes rows in the middle: start the list again.
      if (tl.log !== log || key !== filterKey) {
        list.replaceChildren();
        log = tl.log;
        filterKey = key;
        index = new FilterIndex({ q, sides: new Set(shown), all: sides.length });
      }
      // While playing, a short list: every frame may move all of it on.
      const at = index.at(tl.log, pos, w.playing ? PLAYING_ROWS : MAX_ROWS);
      follow(list, at.rows, at.matched - at.rows.length);
      if (current) { current.classList.remove("is-current"); current.removeAttribute("aria-current"); current = null; }
      const last = list.lastElementChild;
      if (last && Number(last.dataset.seq) === pos) {
        current = last;
        last.classList.add("is-current");
        last.setAttribute("aria-current", "true");
      }
      if (noteEl.textContent !== at.note) noteEl.textContent = at.note;
    },
  };
}
