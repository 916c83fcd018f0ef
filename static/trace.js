// trace.js: the trace view (every event up to the position, filterable) and
// the monitor (monitor commands run by the server at the position).

const SIDES = ["cpu", "bus", "device", "iommu", "kernel"];
const MAX_ROWS = 250;

function traceView(w, panel, L) {
  const { h } = L;
  const shown = new Set(SIDES);
  const filter = h("input", { type: "search", class: "sw-filter", placeholder: "filter: kind or text",
    "aria-label": "Filter events by kind or text", oninput: () => w.requestRedraw(true) });
  const boxes = SIDES.map((side) => {
    const cb = h("input", { type: "checkbox", checked: true, value: side, onchange: () => {
      if (cb.checked) shown.add(side); else shown.delete(side);
      w.requestRedraw(true);
    } });
    return h("label", { class: "sw-side sw-side-" + side }, cb, " " + side);
  });
  const list = h("ol", { class: "sw-trace", "aria-label": "Events up to the position" });
  const note = h("p", { class: "sw-muted sw-trace-note" });
  list.addEventListener("click", (e) => {
    const li = e.target.closest("li[data-seq]");
    if (li) { w.pause(); w.setPos(Number(li.dataset.seq)); }
  });
  panel.append(h("div", { class: "sw-trace-bar" }, h("fieldset", { class: "sw-sides" },
    h("legend", null, "Sides"), boxes), filter), note, list);

  function row(ev, current) {
    return h("li", { "data-seq": ev.seq, class: ["sw-ev", "sw-side-" + ev.side, current && "is-current"],
      "aria-current": current ? "true" : null, title: ev.src ? "source: " + ev.src : null },
    h("span", { class: "sw-ev-seq" }, "#" + ev.seq),
    h("span", { class: "sw-ev-t" }, ev.t + " ns"),
    h("span", { class: "sw-ev-kind" }, ev.kind),
    h("span", { class: "sw-ev-text" }, ev.text || ""));
  }

  // The list is kept incrementally: stepping or playing forward appends rows,
  // stepping back removes them; a new filter or a long jump rebuilds it.
  let upto = 0;          // events 1..upto have been considered
  let filterKey = null;
  let current = null;    // the highlighted row
  let log = null;
  const match = (ev, q) => shown.has(ev.side) && (!q || ev.kind.includes(q) || (ev.text || "").toLowerCase().includes(q));

  function rebuild(pos, q) {
    const rows = [];
    for (let i = pos; i > 0 && rows.length < MAX_ROWS; i--) {
      const ev = log[i - 1];
      if (match(ev, q)) rows.push(ev);
    }
    rows.reverse();
    list.replaceChildren(...rows.map((ev) => row(ev, false)));
  }

  function prependOlder(q) {
    const first = list.firstElementChild ? Number(list.firstElementChild.dataset.seq) : upto + 1;
    const older = [];
    for (let i = first - 1; i > 0 && list.children.length + older.length < MAX_ROWS; i--) {
      if (match(log[i - 1], q)) older.push(log[i - 1]);
    }
    if (older.length) list.prepend(...older.reverse().map((ev) => row(ev, false)));
  }

  return {
    update({ pos, tl }) {
      const q = filter.value.trim().toLowerCase();
      const key = q + "|" + [...shown].join(",");
      if (tl.log !== log || key !== filterKey || Math.abs(pos - upto) > MAX_ROWS) {
        log = tl.log;
        filterKey = key;
        rebuild(pos, q);
      } else if (pos < upto) {
        let last = list.lastElementChild;
        while (last && Number(last.dataset.seq) > pos) { last.remove(); last = list.lastElementChild; }
        prependOlder(q);
      } else if (pos > upto) {
        const add = [];
        for (let i = upto + 1; i <= pos; i++) if (match(log[i - 1], q)) add.push(row(log[i - 1], false));
        if (add.length) list.append(...add);
        let extra = list.children.length - MAX_ROWS;
        while (extra-- > 0) list.firstElementChild.remove();
      }
      upto = pos;
      if (current) { current.classList.remove("is-current"); current.removeAttribute("aria-current"); current = null; }
      const last = list.lastElementChild;
      if (last && Number(last.dataset.seq) === pos) {
        current = last;
        last.classList.add("is-current");
        last.setAttribute("aria-current", "true");
      }
      let matched = 0;
      if (q || shown.size < SIDES.length) { for (let i = 0; i < pos; i++) if (match(log[i], q)) matched++; } else matched = pos;
      const n = list.children.length;
      note.textContent = pos === 0 ? "No events yet: step or play." :
        matched > n ? "Showing the last " + n + " of " + matched + " matching events." : matched + " of " + pos + " events shown.";
      list.scrollTop = list.scrollHeight;
    },
  };
}

function monitorView(w, panel, L) {
  const { h } = L;
  const out = h("pre", { class: "sw-monitor-out", "aria-live": "polite", tabindex: "0",
    "aria-label": "Monitor output" });
  const input = h("input", { type: "text", class: "sw-monitor-in", placeholder: "info rings",
    autocomplete: "off", spellcheck: "false", "aria-label": "Monitor command" });
  const history = [];
  let hi = 0;
  const say = (text, cls) => {
    out.appendChild(h("span", { class: cls }, text.endsWith("\n") ? text : text + "\n"));
    out.scrollTop = out.scrollHeight;
  };
  say("Monitor commands run on the machine as it was just after the current event:\n" +
    "  info registers · info rings · info pci · info mtree · info iommu · info irq\n" +
    "  xp /8xw 0x100000 (physical) · x /8xw IOVA · help", "sw-muted");
  const run = (line) => {
    line = line.trim();
    if (!line) return;
    if (history[history.length - 1] !== line) history.push(line);
    hi = history.length;
    const seq = w.pos;
    say("(seq " + seq + ") > " + line, "sw-monitor-cmd");
    if (/^(step|back|cont|c|quit|q)\b/.test(line)) {
      say("Use the widget's own controls to move through the run.", "sw-monitor-err");
      return;
    }
    w.conn.inspect(line, seq).then((o) => say(o || "(no output)"), (e) => say("error: " + e.message, "sw-monitor-err"));
  };
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter") { e.preventDefault(); run(input.value); input.value = ""; }
    else if (e.key === "ArrowUp") { if (hi > 0) { hi--; input.value = history[hi]; } e.preventDefault(); }
    else if (e.key === "ArrowDown") { if (hi < history.length) hi++; input.value = history[hi] || ""; e.preventDefault(); }
  });
  const form = h("div", { class: "sw-monitor-bar" }, h("span", { class: "sw-prompt", "aria-hidden": "true" }, "(sacc)"), input,
    h("button", { type: "button", class: "sw-btn", onclick: () => { run(input.value); input.value = ""; input.focus(); } }, "Run"));
  panel.append(out, form);
  return { update() {} };
}

export function install(L) {
  L.views = L.views || {};
  L.views.trace = (w, panel) => traceView(w, panel, L);
  L.views.monitor = (w, panel) => monitorView(w, panel, L);
}
