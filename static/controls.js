// controls.js: a widget's transport bar (play, pause, step, back, reset, the
// scrub bar, speed) and run settings (seed, and the CPU model for a scenario
// that takes one).

import { h, s } from "./dom.js";
import { ns } from "./format.js";

export const SPEEDS = [["5", "5 events/s"], ["20", "20 events/s"], ["100", "100 events/s"],
  ["500", "500 events/s"], ["max", "as fast as possible"]];
let uid = 0;

// cpuChoice is the CPU option a scenario of the manifest takes, as the select
// offers it: {values: [[value, label]], value}; null if it takes none.
export function cpuChoice(scenario, options) {
  const o = scenario && scenario.options.find((x) => x.name === "cpu");
  if (!o) return null;
  const values = o.values.map((v) => [v.name, v.doc ? v.name + " (" + v.doc + ")" : v.name]);
  const value = o.values.some((v) => v.name === options.cpu) ? options.cpu : o.default;
  return { values, value };
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

function icon(kind) {
  // Small inline SVG icons: no fonts or images to fetch.
  const paths = {
    play: "M4 2 L14 8 L4 14 Z",
    pause: "M4 2 H7 V14 H4 Z M9 2 H12 V14 H9 Z",
    step: "M3 2 L11 8 L3 14 Z M12 2 H14 V14 H12 Z",
    back: "M13 2 L5 8 L13 14 Z M2 2 H4 V14 H2 Z",
    reset: "M2 2 H4 V14 H2 Z M14 2 L6 8 L14 14 Z",
  };
  return s("svg", { viewBox: "0 0 16 16", width: 14, height: 14, "aria-hidden": "true", focusable: "false" },
    s("path", { d: paths[kind] }));
}

// buildControls makes the controls for widget w; update() mirrors its state.
export function buildControls(w, scenario) {
  const id = "sw" + (++uid);
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

  const range = h("input", {
    type: "range", min: 0, max: 0, value: 0, step: 1, class: "sw-scrub", id: id + "-scrub",
    "aria-label": "Event position", oninput: () => w.seek(Number(range.value)),
  });
  const pos = h("output", { class: "sw-pos", for: id + "-scrub", "aria-live": "off" }, "0 / 0");

  const speed = h("select", { class: "sw-speed", id: id + "-speed", "aria-label": "Playback speed",
    onchange: () => w.setSpeed(speed.value) },
  SPEEDS.map(([v, label]) => h("option", { value: v }, label)));
  speed.value = String(w.speed);

  const seed = h("input", { type: "number", min: 0, step: 1, value: w.seed, class: "sw-seed", id: id + "-seed",
    inputmode: "numeric", "aria-label": "Seed" });
  seed.addEventListener("change", () => {
    const n = Math.floor(Number(seed.value));
    if (Number.isFinite(n) && n >= 0) w.setSeed(n);
    else seed.value = w.seed;
  });

  const choice = cpuChoice(scenario, w.options);
  const cpu = choice && h("select", { class: "sw-cpu", id: id + "-cpu", "aria-label": "CPU model",
    onchange: () => w.setCpu(cpu.value) },
  choice.values.map(([v, label]) => h("option", { value: v }, label)));
  if (cpu) cpu.value = choice.value;

  const settings = h("div", { class: "sw-settings" },
    h("label", { class: "sw-field", for: id + "-speed" }, h("span", null, "Speed"), speed),
    h("label", { class: "sw-field", for: id + "-seed" }, h("span", null, "Seed"), seed),
    cpu ? h("label", { class: "sw-field", for: id + "-cpu" }, h("span", null, "CPU"), cpu) : null);

  const el = h("div", { class: "sw-controls", role: "group", "aria-label": "Playback" },
    h("div", { class: "sw-transport" }, reset, back, play, pause, step),
    h("div", { class: "sw-scrubber" }, range, pos),
    settings);

  let last = "";
  function update() {
    const n = w.timeline.length;
    const key = [w.pos, n, w.playing, w.ended, w.seed, w.speed].join(",");
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
    el.classList.toggle("is-playing", w.playing);
  }

  return { el, update };
}
