// views/registers.js: the device's BAR0 registers just after the current event,
// as the monitor's `info registers` prints them (the server re-executes the run
// to the position), with the lines that changed since the last answer marked.

import { h } from "../dom.js";
import { asker, statusWords } from "../inspect.js";

// The monitor command this view runs.
export const COMMAND = "info registers";

// markChanges splits monitor output into lines, each marked changed when it
// differs from the same line of the previous output (none on the first).
export function markChanges(prev, out) {
  const lines = out.replace(/\n$/, "").split("\n");
  return lines.map((text, i) => ({ text, changed: prev.length > 0 && prev[i] !== text }));
}

// WORDS are the view's status lines (inspect.js, statusWords).
export const WORDS = {
  asking: (r) => "Asking the machine for event " + r.seq + "…",
  answered: (r) => "At event " + r.seq + ".",
  failed: (r, message) => "Could not ask the machine for event " + r.seq + ": " + message + ".",
};

export function mount(w, panel) {
  const status = h("p", { class: "sw-muted sw-inspect-status", "aria-live": "polite" });
  const pre = h("pre", { class: "sw-text", tabindex: "0", "aria-label": "Device registers" });
  panel.append(h("p", { class: "sw-muted" }, "The device's BAR0 registers just after the current event ",
    "(", h("code", null, COMMAND), "). Changed lines are marked."), status, pre);
  let prev = [];
  const q = asker(w, {
    show(out) {
      const lines = markChanges(prev, out);
      pre.replaceChildren(...lines.map((l) => h("span", { class: l.changed ? "sw-line is-changed" : "sw-line" }, l.text + "\n")));
      prev = lines.map((l) => l.text);
    },
    status(st) {
      const t = statusWords(st, WORDS);
      if (status.textContent !== t) status.textContent = t; // redraws come every frame while playing
    },
  });
  return {
    update({ pos }) { q.ask(COMMAND, pos); },
  };
}
