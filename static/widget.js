// widget.js: one live widget: its connection, its event log, the position, the
// playback loop, the tabs and the redraw that keeps every view, the caption
// and the element's data-seq in step with the position.

import { buildControls } from "./controls.js";
import { caption } from "./caption.js";
import { h } from "./dom.js";
import { ns, optionsText, parseOptions } from "./format.js";
import { Connection } from "./proto.js";
import { Timeline } from "./state.js";

const MAX_SPEED = 5000; // events per second for "max"
const CONN_TEXT = {
  idle: "not connected", connecting: "connecting…", connected: "connected", starting: "starting the machine…",
  running: "receiving events…", ended: "run complete", waiting: "connection lost", reconnecting: "reconnecting…",
  closed: "disconnected", failed: "could not start",
};
let widgetCount = 0;

// chooseViews orders a widget's tabs: the views its block asks for (data-views,
// "trace,source"), then the rest of the registry's but the named-only ones
// (a picture of one mechanism is a tab only where a block names it); it opens
// at the first.
export function chooseViews(wanted, views) {
  const names = views.map((v) => v.name);
  const asked = (wanted || "").split(",").map((v) => v.trim()).filter((v) => names.includes(v));
  const order = [...new Set([...asked, ...views.filter((v) => !v.named).map((v) => v.name)])];
  return { order, active: order[0] };
}

// advance is the playback clock: acc events owed so far, dt ms since the last
// frame (at most 250), speed a SPEEDS value. It returns the whole events to
// step now and what is still owed.
export function advance(acc, dt, speed) {
  const rate = speed === "max" ? MAX_SPEED : Number(speed) || 20;
  acc += (Math.min(dt, 250) * rate) / 1000;
  const steps = Math.floor(acc);
  return { steps, acc: acc - steps };
}

// keyAction is what a key press on the widget does, or null: target is the
// element it went to ({tagName, role}).
export function keyAction(key, target) {
  const tag = target && target.tagName;
  if (tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA") return null;
  const onButton = tag === "BUTTON" || tag === "SUMMARY" || tag === "A";
  const onTab = target && target.role === "tab";
  if ((key === " " || key === "Spacebar") && !onButton) return "toggle";
  if (onTab) return null;
  return { ArrowRight: "step", ArrowLeft: "back", Home: "reset" }[key] || null;
}

// tabKey is the tab a key moves to from tab i of n, or -1.
export function tabKey(key, i, n) {
  switch (key) {
    case "ArrowRight": return (i + 1) % n;
    case "ArrowLeft": return (i - 1 + n) % n;
    case "Home": return 0;
    case "End": return n - 1;
  }
  return -1;
}

// move is where step, back and reset go from a position: {pos, target}, target
// being a position past the events received so far, to land on when they arrive
// (0: none). s: {pos, target, n (events received), ended}.
export function move(action, s) {
  const clamp = (p) => Math.max(0, Math.min(Math.floor(p), s.n));
  switch (action) {
    case "step": {
      const p = Math.max(s.pos, s.target) + 1;
      return { pos: clamp(p), target: p > s.n && !s.ended ? p : s.target };
    }
    case "back": return { pos: clamp(s.pos - 1), target: 0 };
    case "reset": return { pos: 0, target: 0 };
  }
  return { pos: s.pos, target: s.target };
}

// landing is the position to go to now that n events have arrived (or the run
// ended), for a widget waiting to reach target; null while it must wait.
export function landing(target, n, ended) {
  if (!target || (n < target && !ended)) return null;
  return Math.min(target, n);
}

// connText is the connection's state in words.
export function connText(state, detail) {
  return state === "ended" && detail ? "run failed" : (CONN_TEXT[state] || state) + (detail ? ": " + detail : "");
}

// captionText is the caption line: "#41 · 3785 ns — " and the view's words.
export function captionText(ev, words) {
  return (ev ? "#" + ev.seq + " · " + ns(ev.t) + " — " : "") + words;
}

class Widget {
  // env: {ds (the Datasheet), views (the registry's views with their modules)}.
  constructor(root, env) {
    this.env = env;
    this.root = root;
    this.n = ++widgetCount;
    this.scenario = root.dataset.scenario || "job";
    this.options = parseOptions(root.dataset.options);
    this.seed = 1;
    this.speed = "20";
    this.timeline = new Timeline(env.ds);
    this.pos = 0;
    this.target = Math.max(0, parseInt(root.dataset.seq, 10) || 0); // where the author opens the run
    this.playing = false;
    this.ended = false;
    this.views = {};
    this.modules = new Map(env.views.map((v) => [v.name, v]));
    const chosen = chooseViews(root.dataset.views, env.views);
    this.viewOrder = chosen.order;
    this.active = chosen.active;
    this.build();
    this.conn = new Connection(root.dataset.shared ? "/ws/shared/" + encodeURIComponent(root.dataset.shared) : "/ws/session", {
      onState: (st, detail) => this.connState(st, detail),
      onWelcome: (m) => this.welcome(m),
      onEvents: (evs, from) => this.events(evs, from),
      onSnapshot: (m) => { this.timeline.clear(); this.events(m.events || [], 1); if (m.ended) this.finish(null); },
      onEnd: (m) => this.finish(m),
      onError: (m) => this.showError(m.message || m.code, m.code),
    });
    this.hello(false);
    this.redraw();
  }

  build() {
    const root = this.root;
    root.replaceChildren();
    root.classList.add("sw");
    root.setAttribute("tabindex", "0");
    root.setAttribute("role", "region");
    root.setAttribute("aria-label", "Live run of the " + this.scenario + " scenario");
    root.setAttribute("aria-keyshortcuts", "Space ArrowRight ArrowLeft Home");
    root.dataset.seq = "0";

    this.connEl = h("span", { class: "sw-conn", "data-state": "idle", role: "status" }, CONN_TEXT.idle);
    this.optsEl = h("span", { class: "sw-opts" });
    this.showOptions();
    const head = h("div", { class: "sw-head" },
      h("span", { class: "sw-title" }, h("span", { class: "sw-badge" }, "live"), " ", this.scenario, this.optsEl),
      this.connEl);
    this.controls = buildControls(this, this.env.ds.scenario(this.scenario));
    this.errorEl = h("p", { class: "sw-error", role: "alert", hidden: true });

    this.tabs = {};
    this.panels = {};
    const tablist = h("div", { class: "sw-tabs", role: "tablist", "aria-label": "Views" });
    const panels = h("div", { class: "sw-panels" });
    for (const name of this.viewOrder) {
      const tid = "sw" + this.n + "-tab-" + name;
      const pid = "sw" + this.n + "-panel-" + name;
      const tab = h("button", { type: "button", role: "tab", id: tid, class: "sw-tab", "data-view": name,
        "aria-controls": pid, "aria-selected": "false", tabindex: "-1", onclick: () => this.activate(name) },
      this.modules.get(name).label);
      tab.addEventListener("keydown", (e) => this.tabKey(e, name));
      const panel = h("div", { role: "tabpanel", id: pid, class: "sw-panel sw-panel-" + name,
        "aria-labelledby": tid, hidden: true });
      this.tabs[name] = tab;
      this.panels[name] = panel;
      tablist.appendChild(tab);
      panels.appendChild(panel);
    }
    this.captionEl = h("p", { class: "sw-caption", "aria-live": "polite" });
    this.narrativeEl = h("details", { class: "sw-narrative", hidden: true });
    const hint = h("p", { class: "sw-hint" }, "Keys (click the widget first): ",
      h("kbd", null, "Space"), " play/pause · ", h("kbd", null, "→"), " step · ",
      h("kbd", null, "←"), " back · ", h("kbd", null, "Home"), " start");
    root.append(head, this.controls.el, this.errorEl, tablist, panels, this.captionEl, hint, this.narrativeEl);
    root.addEventListener("keydown", (e) => this.key(e));
    this.activate(this.active, false);
    if (typeof ResizeObserver === "function") {
      let wide = null;
      new ResizeObserver(() => {
        const w = root.clientWidth >= 620;
        if (w !== wide) { wide = w; root.classList.toggle("sw-wide", w); this.requestRedraw(true); }
      }).observe(root);
    }
  }

  // ---- the connection

  hello(fresh) {
    const o = { ...this.options };
    this.conn.hello({ scenario: this.scenario, seed: this.seed, options: o });
    if (fresh) { this.pause(); this.target = 0; }
  }

  connState(state, detail) {
    if (state === "waiting" || state === "reconnecting") {
      // Come back to the same place once the rerun's events arrive: runs are
      // deterministic for a seed.
      if (this.timeline.length) this.target = Math.max(this.target, this.pos);
    }
    this.connEl.dataset.state = state;
    this.connEl.textContent = connText(state, detail);
  }

  welcome(m) {
    this.runId = (this.runId || 0) + 1;
    this.timeline.clear();
    this.ended = false;
    this.pos = 0;
    this.hideError();
    this.narrativeEl.hidden = true;
    this.narrativeEl.replaceChildren();
    this.endMessage = null; // the run's end (views that chart its results read it)
    if (m.kinds) this.kinds = m.kinds;
    this.requestRedraw(true);
  }

  events(evs, from) {
    if (!this.timeline.append(evs, from)) {
      this.showError("the event stream skipped from " + (this.timeline.length + 1) + " to " + from + "; starting again");
      this.hello(false);
      return;
    }
    this.applyTarget();
    this.requestRedraw();
  }

  applyTarget() {
    const t = landing(this.target, this.timeline.length, this.ended);
    if (t == null) return;
    this.target = 0;
    this.setPos(t);
  }

  finish(m) {
    this.ended = true;
    this.endMessage = m || null;
    this.applyTarget();
    if (m) this.showNarrative(m);
    this.requestRedraw(true);
  }

  showNarrative(m) {
    const lines = (m.log || []).filter((l) => l.trim());
    const kids = [h("summary", null, "What the run reported" + (lines.length ? " (" + lines.length + " lines)" : ""))];
    if (lines.length) kids.push(h("ul", null, lines.map((l) => h("li", null, l.replace(/^#\s*/, "")))));
    if (m.error) kids.push(h("p", { class: "sw-run-error" }, "The run failed: " + m.error));
    kids.push(h("p", { class: "sw-muted" }, (m.seq || 0) + " events, " + ns(m.t) + " of virtual time."));
    this.narrativeEl.replaceChildren(...kids);
    this.narrativeEl.open = lines.length <= 8 || !!m.error;
    this.narrativeEl.hidden = false;
  }

  showError(text, code) {
    this.errorEl.textContent = (code === "session-failed" ? "The machine failed: " : "") + text;
    this.errorEl.hidden = false;
  }

  hideError() { this.errorEl.hidden = true; this.errorEl.textContent = ""; }

  // ---- settings

  setSeed(n) { if (n !== this.seed) { this.seed = n; this.hello(true); } }
  setCpu(cpu) { if (cpu !== this.options.cpu) { this.options.cpu = cpu; this.showOptions(); this.hello(true); } }

  showOptions() { this.optsEl.textContent = optionsText(this.options); }
  setSpeed(v) { this.speed = v; this.requestRedraw(true); }

  // ---- position and playback

  setPos(p) {
    const n = this.timeline.length;
    p = Math.max(0, Math.min(Math.floor(p), n));
    if (p === this.pos) return;
    this.pos = p;
    // Discrete moves draw at once, so data-seq, the caption and the views
    // agree as soon as the click or key has been handled.
    if (!this.playing) this.redraw();
  }

  seek(p) {
    if (p > this.timeline.length && !this.ended) this.target = p;
    this.setPos(p);
  }

  action(name) {
    switch (name) {
      case "play": this.play(); break;
      case "pause": this.pause(); break;
      case "toggle": if (this.playing) this.pause(); else this.play(); break;
      case "step": case "back": case "reset": {
        this.pause();
        const m = move(name, { pos: this.pos, target: this.target, n: this.timeline.length, ended: this.ended });
        this.target = m.target;
        this.setPos(m.pos);
        break;
      }
    }
    if (!this.playing) { this.dirty = true; this.redraw(); }
  }

  play() {
    if (this.playing) return;
    if (this.ended && this.pos >= this.timeline.length) this.pos = 0;
    this.playing = true;
    this.acc = 0;
    this.lastTick = 0;
    this.tick = this.tick || ((now) => this.frame(now));
    this.raf = requestAnimationFrame(this.tick);
    this.captionEl.setAttribute("aria-live", "off");
  }

  pause() {
    if (!this.playing) return;
    this.playing = false;
    cancelAnimationFrame(this.raf);
    this.captionEl.setAttribute("aria-live", "polite");
    this.dirty = true;
    this.redraw();
  }

  frame(now) {
    if (!this.playing) return;
    const dt = this.lastTick ? now - this.lastTick : 0;
    this.lastTick = now;
    const { steps, acc } = advance(this.acc, dt, this.speed);
    this.acc = acc;
    const n = this.timeline.length;
    if (steps > 0) this.pos = Math.min(n, this.pos + steps);
    if (this.pos >= n && this.ended) {
      this.playing = false;
      this.captionEl.setAttribute("aria-live", "polite");
    }
    this.redraw();
    if (this.playing) this.raf = requestAnimationFrame(this.tick);
  }

  // ---- keyboard

  key(e) {
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    const t = e.target;
    const act = keyAction(e.key, t && { tagName: t.tagName, role: t.getAttribute && t.getAttribute("role") });
    if (!act) return;
    e.preventDefault();
    this.action(act);
  }

  tabKey(e, name) {
    const j = tabKey(e.key, this.viewOrder.indexOf(name), this.viewOrder.length);
    if (j < 0) return;
    e.preventDefault();
    e.stopPropagation();
    this.activate(this.viewOrder[j]);
    this.tabs[this.viewOrder[j]].focus();
  }

  // ---- views

  activate(name, redraw = true) {
    this.active = name;
    for (const v of this.viewOrder) {
      const on = v === name;
      this.tabs[v].setAttribute("aria-selected", String(on));
      this.tabs[v].tabIndex = on ? 0 : -1;
      this.panels[v].hidden = !on;
    }
    if (!this.views[name]) this.views[name] = this.modules.get(name).module.mount(this, this.panels[name], this.env);
    this.root.dataset.view = name;
    if (redraw) this.requestRedraw(true);
  }

  requestRedraw(force) {
    if (force) this.dirty = true;
    if (this.playing || this.pending) return; // the playback loop redraws every frame
    this.pending = requestAnimationFrame(() => { this.pending = 0; this.redraw(); });
  }

  redraw() {
    const pos = Math.min(this.pos, this.timeline.length);
    this.pos = pos;
    const st = this.timeline.stateAt(pos);
    const ev = this.timeline.event(pos);
    this.root.dataset.seq = String(ev ? ev.seq : 0);
    this.controls.update();
    const key = pos + "/" + this.timeline.length + "/" + this.active + "/" + this.ended;
    if (key === this.drawn && !this.dirty) return;
    this.drawn = key;
    this.dirty = false;
    const tell = this.modules.get(this.active).module.caption || caption;
    this.captionEl.textContent = captionText(ev, tell(ev, st, this.env.ds));
    const view = this.views[this.active];
    if (view) {
      try {
        view.update({ pos, ev, st, tl: this.timeline, widget: this, wide: this.root.classList.contains("sw-wide") });
      } catch (err) {
        this.showError("the " + this.active + " view failed: " + err.message);
        if (window.console) console.warn(err);
      }
    }
  }
}

// mountWidget brings a .sacc-widget element to life.
export function mountWidget(el, env) { return new Widget(el, env); }
