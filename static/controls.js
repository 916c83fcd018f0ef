// controls.js: a widget's transport bar (play, pause, step, back, reset, the
// scrub bar with its markers and folds, the "next …" jumps, speed) and run
// settings (seed, every option the scenario declares, and the quirks of its
// Break-it box, with the with/without switch of a compared run). The markup
// is the DOM contract of docs/PROTOCOL.md.

import { h, s } from "./dom.js";
import { ns } from "./format.js";
import { nextIn } from "./timeline.js";

export const SPEEDS = [["5", "5 events/s"], ["10", "10 events/s"], ["20", "20 events/s"], ["50", "50 events/s"],
  ["100", "100 events/s"], ["200", "200 events/s"], ["500", "500 events/s"], ["1000", "1000 events/s"],
  ["max", "as fast as possible"]];
let uid = 0;

// optionChoices are the options a scenario of the manifest declares, as the
// selects offer them: [{name, doc, values: [[value, label]], value}], value being
// the widget's setting or the scenario's default.
export function optionChoices(scenario, options) {
  return ((scenario && scenario.options) || []).map((o) => ({
    name: o.name, doc: o.doc,
    values: o.values.map((v) => [v.name, v.doc ? v.name + " (" + v.doc + ")" : v.name]),
    value: o.values.some((v) => v.name === options[o.name]) ? options[o.name] : o.default,
  }));
}

// cpuChoice is the CPU option a scenario takes, as its select offers it; null
// if it takes none.
export function cpuChoice(scenario, options) {
  const c = optionChoices(scenario, options).find((o) => o.name === "cpu");
  return c ? { values: c.values, value: c.value } : null;
}

// quirkChoices are the quirks a scenario is meant to be broken with, in its
// Break-it box's order, with the registry's words: [{name, doc, on}].
export function quirkChoices(scenario, registry, on) {
  const docs = new Map((registry || []).map((q) => [q.name, q.doc]));
  return ((scenario && scenario.quirks) || []).map((name) => ({ name, doc: docs.get(name) || "", on: on.includes(name) }));
}

// setupSummary is the settings panel's line: what is set now. choices are the
// options (optionChoices), on the quirks switched on, offered how many the
// scenario has.
export function setupSummary(choices, on, offered) {
  const opts = choices.map((c) => c.name + "=" + c.value).join(", ");
  const bugs = on.length ? "bug: " + on.join(", ") : offered ? "no bug" : "";
  return [opts, bugs].filter(Boolean).join(" · ");
}

// positionText is the scrub bar's read-out: "41 / 82 · 3785 ns …".
export function positionText(pos, n, ev, ended) {
  return pos + " / " + n + (ev ? " · " + ns(ev.t) : "") + (ended ? "" : n ? " …" : "");
}

// transportOff says which transport buttons do nothing now. They are marked
// aria-disabled, not disabled: a disabled button would drop the keyboard focus,
// and a step pressed before the events arrive is kept for them.
export function transportOff({ pos, n, playing, ended }) {
  return { play: playing, pause: !playing, step: ended && pos >= n, back: pos <= 0, reset: pos <= 0 && !playing };
}

// trackMarks is the picture under the scrub bar, in a 1000-wide box: folds as
// bands, markers as ticks, the divergence as a taller tick.
export function trackMarks({ n, folds, markers, divergeSeq }) {
  const x = (seq) => (n > 0 ? Math.round((1000 * seq) / n * 10) / 10 : 0);
  const out = [];
  for (const f of folds) out.push({ kind: "fold", x: x(f.from - 1), w: Math.max(2, x(f.to) - x(f.from - 1)), title: f.label });
  for (const m of markers) if (m.seq > 0) out.push({ kind: "marker", x: x(m.seq), title: m.label });
  if (divergeSeq > 0) out.push({ kind: "diverge", x: x(divergeSeq), title: "the runs part" });
  return out;
}

function icon(kind) {
  // Small inline SVG icons: no fonts or images to fetch.
  const paths = {
    play: "M4 2 L14 8 L4 14 Z",
    pause: "M4 2 H7 V14 H4 Z M9 2 H12 V14 H9 Z",
    step: "M3 2 L11 8 L3 14 Z M12 2 H14 V14 H12 Z",
    back: "M13 2 L5 8 L13 14 Z M2 2 H4 V14 H2 Z",
    reset: "M2 2 H4 V14 H2 Z M14 2 L6 8 L14 14 Z",
    next: "M2 3 L8 8 L2 13 Z M8 3 L14 8 L8 13 Z",
  };
  return s("svg", { viewBox: "0 0 16 16", width: 14, height: 14, "aria-hidden": "true", focusable: "false" },
    s("path", { d: paths[kind] }));
}

// buildControls makes the controls for widget w; update() mirrors its state.
// env: {ds (the Datasheet)}; scenario: the manifest's entry for w's scenario.
export function buildControls(w, scenario, env) {
  const id = "sw" + (++uid);
  const ds = env.ds;
  const btn = (action, label, text) => h("button", {
    type: "button", class: "sw-btn sw-" + action, "data-action": action, "aria-label": label,
    title: label + ({ play: " (Space)", pause: " (Space)", step: " (→)", back: " (←)", reset: " (Home)" })[action],
    onclick: () => w.action(action),
  }, icon(action), h("span", { class: "sw-btn-text" }, text));

  const play = btn("play", "Play", "Play");
  const pause = btn("pause", "Pause", "Pause");
  const step = btn("step", "Step forward one event", "Step");
  const back = btn("back", "Back one event", "Back");
  const reset = btn("reset", "Reset to the start", "Reset");

  // The "next …" jumps, one per kind of the manifest's timeline.
  const jumps = ((ds.manifest.timeline && ds.manifest.timeline.jumps) || []).map((j) => {
    const b = h("button", { type: "button", class: "sw-btn sw-next", "data-action": "next", "data-kind": j.kind,
      "aria-label": j.label, title: j.label + ": " + j.doc, onclick: () => w.next(j.kind) },
    icon("next"), h("span", { class: "sw-btn-text" }, j.kind));
    return { kind: j.kind, b };
  });
  const jumpBar = h("div", { class: "sw-jumps", role: "group", "aria-label": "Jump to the next event of a kind" },
    jumps.map((j) => j.b));

  const range = h("input", {
    type: "range", min: 0, max: 0, value: 0, step: 1, class: "sw-scrub", id: id + "-scrub",
    "aria-label": "Event position", oninput: () => w.seek(Number(range.value)),
  });
  const track = s("svg", { class: "sw-track", viewBox: "0 0 1000 10", preserveAspectRatio: "none", "aria-hidden": "true", focusable: "false" });
  const pos = h("output", { class: "sw-pos", for: id + "-scrub", "aria-live": "off" }, "0 / 0");
  const markerBar = h("div", { class: "sw-markers", role: "group", "aria-label": "Points of interest", hidden: true });

  const speed = h("select", { class: "sw-speed", id: id + "-speed", "aria-label": "Playback speed",
    onchange: () => w.setSpeed(speed.value, true) },
  SPEEDS.map(([v, label]) => h("option", { value: v }, label)));
  speed.value = String(w.speed);

  const seed = h("input", { type: "number", min: 0, step: 1, value: w.seed, class: "sw-seed", id: id + "-seed",
    inputmode: "numeric", "aria-label": "Seed" });
  seed.addEventListener("change", () => {
    const n = Math.floor(Number(seed.value));
    if (Number.isFinite(n) && n >= 0) w.setSeed(n);
    else seed.value = w.seed;
  });

  // One select per option the scenario declares.
  const choices = optionChoices(scenario, w.options);
  const selects = choices.map((c) => {
    const sel = h("select", { class: "sw-opt" + (c.name === "cpu" ? " sw-cpu" : ""), id: id + "-opt-" + c.name,
      "data-option": c.name, "aria-label": c.doc || c.name, title: c.doc,
      onchange: () => w.setOption(c.name, sel.value) },
    c.values.map(([v, label]) => h("option", { value: v }, label)));
    sel.value = c.value;
    return { name: c.name, sel, field: h("label", { class: "sw-field", for: id + "-opt-" + c.name, title: c.doc },
      h("span", null, c.name === "cpu" ? "CPU" : c.name), sel) };
  });

  // One checkbox per quirk of the Break-it box.
  const quirkBoxes = quirkChoices(scenario, ds.manifest.quirks, w.quirks).map((q) => {
    const cb = h("input", { type: "checkbox", id: id + "-quirk-" + q.name, "data-quirk": q.name, checked: q.on,
      onchange: () => w.setQuirk(q.name, cb.checked) });
    return { name: q.name, cb, field: h("label", { class: "sw-quirk", for: id + "-quirk-" + q.name },
      cb, " ", h("code", null, q.name), q.doc ? h("span", { class: "sw-quirk-doc" }, ": " + q.doc) : null) };
  });

  const summaryText = h("span", { class: "sw-setup-now" });
  const setup = selects.length || quirkBoxes.length ? h("details", { class: "sw-setup" },
    h("summary", null, h("span", { class: "sw-setup-title" }, quirkBoxes.length ? "Options and bugs" : "Options"), " ", summaryText),
    selects.length ? h("div", { class: "sw-options", role: "group", "aria-label": "Scenario options" }, selects.map((x) => x.field)) : null,
    quirkBoxes.length ? h("fieldset", { class: "sw-quirks" }, h("legend", null, "Break it: switch a bug on"),
      quirkBoxes.map((x) => x.field)) : null) : null;

  // A compared run: which of the two runs the views show, and where they part.
  const showWith = h("button", { type: "button", class: "sw-btn sw-show", "data-show": "with", "aria-pressed": "true",
    onclick: () => w.show("with") }, "with the bug");
  const showWithout = h("button", { type: "button", class: "sw-btn sw-show", "data-show": "without", "aria-pressed": "false",
    onclick: () => w.show("without") }, "without");
  const divergeEl = h("p", { class: "sw-diverge", role: "status" });
  const compare = h("div", { class: "sw-compare", hidden: true },
    h("div", { class: "sw-show-bar", role: "group", "aria-label": "The run shown" }, h("span", null, "Show the run"), showWith, showWithout),
    divergeEl);

  // A hunt's seed is the variant's: there is nothing to choose.
  const settings = h("div", { class: "sw-settings" },
    h("label", { class: "sw-field", for: id + "-speed" }, h("span", null, "Speed"), speed),
    // A recorded run is replayed as it was, and a hunt's seed is the
    // learner's variant's: no seed to choose.
    w.hunt || w.recorded ? null : h("label", { class: "sw-field", for: id + "-seed" }, h("span", null, "Seed"), seed));

  const el = h("div", { class: "sw-controls", role: "group", "aria-label": "Playback" },
    h("div", { class: "sw-transport" }, reset, back, play, pause, step),
    h("div", { class: "sw-scrubber" }, h("div", { class: "sw-scrub-wrap" }, range, track), pos),
    markerBar, jumpBar, settings, setup, compare);

  let last = "", lastMarks = "", lastMarkers = "", lastSetup = "", lastCompare = "";
  function update() {
    const n = w.timeline.length;
    const run = w.shown();
    const key = [w.pos, n, w.playing, w.ended, w.seed, w.speed, w.showing, w.runId, w.stamp].join(",");
    if (key === last) return;
    last = key;
    if (range.max !== String(n)) range.max = String(n);
    if (range.value !== String(w.pos)) range.value = String(w.pos);
    range.setAttribute("aria-valuetext", "event " + w.pos + " of " + n);
    const ev = w.timeline.event(w.pos);
    pos.textContent = positionText(w.pos, n, ev, w.ended);
    const off = transportOff({ pos: w.pos, n, playing: w.playing, ended: w.ended });
    for (const [name, b] of Object.entries({ play, pause, step, back, reset })) b.setAttribute("aria-disabled", String(off[name]));
    play.setAttribute("aria-pressed", String(w.playing));
    if (document.activeElement !== seed) seed.value = String(w.seed);
    if (document.activeElement !== speed && speed.value !== String(w.speed)) speed.value = String(w.speed);
    el.classList.toggle("is-playing", w.playing);

    for (const j of jumps) {
      const seqs = run.jumps[j.kind] || [];
      j.b.hidden = w.ended && seqs.length === 0;
      j.b.setAttribute("aria-disabled", String(!nextIn(seqs, w.pos)));
    }

    const divergeSeq = w.diverge && w.diverge.seq ? w.diverge.seq : 0;
    const marks = [n, run.fx.list.length, run.markers.map((m) => m.seq).join("."), divergeSeq].join("/");
    if (marks !== lastMarks) {
      lastMarks = marks;
      track.replaceChildren(...trackMarks({ n, folds: run.fx.list, markers: run.markers, divergeSeq }).map((m) =>
        m.kind === "fold" ? s("rect", { class: "sw-track-fold", x: m.x, y: 3, width: m.w, height: 4 }, s("title", null, m.title)) :
          s("rect", { class: "sw-track-" + m.kind, x: m.x - 2, y: 0, width: 4, height: 10 }, s("title", null, m.title))));
      const shown = run.markers.filter((m) => m.seq > 0);
      if (divergeSeq) shown.push({ name: "diverge", label: "the runs part", seq: divergeSeq, kind: "" });
      shown.sort((a, b) => a.seq - b.seq);
      markerBar.replaceChildren(...shown.map((m) => h("button", {
        type: "button", class: "sw-btn sw-marker" + (m.name === "diverge" ? " is-diverge" : ""), "data-marker": m.name,
        "data-marker-seq": m.seq, title: "Go to #" + m.seq + (m.kind ? " (" + m.kind + ")" : ""),
        onclick: () => w.jump(m.seq) }, m.label, h("span", { class: "sw-marker-seq" }, " #" + m.seq))));
      markerBar.hidden = shown.length === 0;
      lastMarkers = "";
    }
    const cur = String(w.pos);
    if (cur !== lastMarkers) {
      lastMarkers = cur;
      for (const b of markerBar.children) {
        const on = b.dataset.markerSeq === cur;
        b.classList.toggle("is-current", on);
        if (on) b.setAttribute("aria-current", "true"); else b.removeAttribute("aria-current");
        // In a row that scrolls sideways (a phone), keep the current marker in view.
        if (on && markerBar.scrollWidth > markerBar.clientWidth) {
          markerBar.scrollLeft = Math.max(0, b.offsetLeft - markerBar.offsetLeft - 24);
        }
      }
    }

    const now = setupSummary(optionChoices(scenario, w.options), w.quirks, quirkBoxes.length) + "|" + w.quirks.join(",");
    if (setup && now !== lastSetup) {
      lastSetup = now;
      summaryText.textContent = now.split("|")[0];
      for (const x of selects) {
        const v = optionChoices(scenario, w.options).find((c) => c.name === x.name).value;
        if (x.sel.value !== v) x.sel.value = v;
      }
      for (const x of quirkBoxes) x.cb.checked = w.quirks.includes(x.name);
    }

    const cmp = w.compareText ? [w.compareText, w.showing, w.quirks.join(",")].join("|") : "";
    if (cmp !== lastCompare) {
      lastCompare = cmp;
      compare.hidden = !w.compareText;
      divergeEl.textContent = w.compareText || "";
      showWith.textContent = "with " + w.quirks.join(" and ");
      showWith.setAttribute("aria-pressed", String(w.showing !== "without"));
      showWithout.setAttribute("aria-pressed", String(w.showing === "without"));
      showWithout.textContent = "without";
    }
  }

  // The settings panel starts open where there is room, closed on a phone.
  function layout(wide) {
    if (setup && setup.dataset.laidOut !== "1") { setup.open = wide; setup.dataset.laidOut = "1"; }
  }

  return { el, update, layout };
}
