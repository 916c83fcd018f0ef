// views/registers.js: the device's BAR0 registers just after the current event,
// as the monitor's `info registers` prints them (the server re-executes the run
// to the position), with the lines that changed since the last answer marked.

import { h } from "../dom.js";
import { asker } from "../inspect.js";

// The monitor command this view runs.
export const COMMAND = "info registers";

// markChanges splits monitor output into lines, each marked changed when it
// differs from the same line of the previous output (none on the first).
export function markChanges(prev, out) {
  const lines = out.replace(/\n$/, "").split("\n");
  return lines.map((text, i) => ({ text, changed: prev.length > 0 && prev[i] !== text }));
}

export function mount(w, panel) {
  const status = h("p", { class: "sw-muted sw-inspect-status", "aria-live": "polite" });
  const pre = h("pre", { class: "sw-text", tabindex: "0", "aria-label": "Device registers" });
  panel.append(h("p", { class: "sw-muted" }, "The device's BAR0 registers just after the current event ",
    "(", h("code", null, COMMAND), "). Changed lines are marked."), status, pre);
  let prev = [];
  const q = asker(w, (out, r, err) => {
    if (err) { status.textContent = "Could not ask the machine: " + err.message; return; }
    status.textContent = "At event " + r.seq + ".";
    const lines = markChanges(prev, out);
    pre.replaceChildren(...lines.map((l) => h("span", { class: l.changed ? "sw-line is-changed" : "sw-line" }, l.text + "\n")));
    prev = lines.map((l) => l.text);
  });
  return {
    update({ pos }) {
      status.textContent = "Asking the machine for event " + pos + "…";
      q.ask(COMMAND, pos);
    },
  };
}
