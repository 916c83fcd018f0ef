// views/monitor.js: a QEMU-style monitor console; every command runs on the
// machine as it was just after the current event (the server re-executes the
// run to the position).

import { h } from "../dom.js";

// refused tells whether a command is one of the widget's own controls, which
// the console does not pass on.
export function refused(line) { return /^(step|back|cont|c|quit|q)\b/.test(line); }

// History is the console's command history, walked with the arrow keys.
export class History {
  constructor() { this.lines = []; this.at = 0; }

  // add records a command (not twice in a row) and goes past the newest.
  add(line) {
    if (this.lines[this.lines.length - 1] !== line) this.lines.push(line);
    this.at = this.lines.length;
  }

  // up is the command before the current one; at the oldest it stays there.
  up() {
    if (this.at > 0) this.at--;
    return this.lines[this.at];
  }

  // down is the command after the current one, "" past the newest.
  down() {
    if (this.at < this.lines.length) this.at++;
    return this.lines[this.at] || "";
  }
}

export function mount(w, panel) {
  const out = h("pre", { class: "sw-monitor-out", "aria-live": "polite", tabindex: "0",
    "aria-label": "Monitor output" });
  const input = h("input", { type: "text", class: "sw-monitor-in", placeholder: "info rings",
    autocomplete: "off", spellcheck: "false", "aria-label": "Monitor command" });
  const history = new History();
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
    history.add(line);
    const seq = w.pos;
    say("(seq " + seq + ") > " + line, "sw-monitor-cmd");
    if (refused(line)) {
      say("Use the widget's own controls to move through the run.", "sw-monitor-err");
      return;
    }
    w.conn.inspect(line, seq).then((o) => say(o || "(no output)"), (e) => say("error: " + e.message, "sw-monitor-err"));
  };
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter") { e.preventDefault(); run(input.value); input.value = ""; }
    else if (e.key === "ArrowUp") { if (history.at > 0) input.value = history.up(); e.preventDefault(); }
    else if (e.key === "ArrowDown") { input.value = history.down(); e.preventDefault(); }
  });
  const form = h("div", { class: "sw-monitor-bar" }, h("span", { class: "sw-prompt", "aria-hidden": "true" }, "(sacc)"), input,
    h("button", { type: "button", class: "sw-btn", onclick: () => { run(input.value); input.value = ""; input.focus(); } }, "Run"));
  panel.append(out, form);
  return { update() {} };
}
