// adversary.js: adversary mode's page. A game is its schedule — the choices made
// so far, 1-based — and the server answers GET /api/v1/adversary/LEVEL?s=SCHEDULE
// with the level and the state after it (docs/PROTOCOL.md, "Adversary mode").
// The page works without this script: every choice is a link to the game one
// choice longer. With it, a click fetches the new state and draws it in place,
// and the address follows, so reload and back work as they do without it.
//
// Everything but mountAdversary is pure: schedules, addresses, and the game as
// a vnode.js tree with the same DOM contract as the server's template.

import { el } from "./vnode.js";
import { renderInto } from "./dom.js";

export const API = "/api/v1/adversary/";

// parseSchedule reads a schedule as the server does: choice numbers from 1 to
// 99, separated by commas or spaces; "" is the empty schedule. It throws on
// anything else.
export function parseSchedule(text) {
  const parts = String(text || "").split(/[\s,]+/).filter(Boolean);
  return parts.map((p, i) => {
    if (!/^[0-9]{1,2}$/.test(p) || Number(p) < 1) throw new Error(`malformed schedule: choice ${i + 1} is ${JSON.stringify(p)}`);
    return Number(p);
  });
}

export function formatSchedule(schedule) { return schedule.join(","); }

// scheduleOf is the schedule an address carries in its ?s=.
export function scheduleOf(href, base = "http://localhost/") {
  return parseSchedule(new URL(href, base).searchParams.get("s") || "");
}

// pageHref is the address of level's game after schedule.
export function pageHref(level, schedule) {
  const s = formatSchedule(schedule);
  return "/adversary/" + encodeURIComponent(level) + (s ? "?s=" + encodeURIComponent(s) : "");
}

// apiHref is where the server answers with the game after schedule.
export function apiHref(level, schedule) {
  const s = formatSchedule(schedule);
  return API + encodeURIComponent(level) + (s ? "?s=" + encodeURIComponent(s) : "");
}

function codes(items, empty) {
  return items && items.length ? items.map((t) => [el("code", null, t), " "]) : empty;
}

// gameTree is the game section's content for a server answer: the driver's
// lines with the current one marked, the machine's state, then the choices
// (or the verdict once the game is over) and the controls. saved is what
// recording the finished game in the learner's progress said, if it was.
export function gameTree(game, saved = "") {
  const st = game.state;
  const level = game.level;
  const schedule = parseSchedule(game.schedule);
  const lines = st.lines.map((t, i) => el("li", {
    class: ["adv-line", i === st.pc && "is-current"], "data-line": i + 1, "aria-current": i === st.pc ? "step" : null,
  }, el("code", null, t)));
  const locals = st.locals.length ? ["; ", st.locals.map((l, i) => [i ? ", " : "", el("code", null, l)])] : null;
  const part = (name, label, kids) => [el("dt", null, label), el("dd", { "data-part": name }, kids)];
  const board = el("div", { class: "adv-board" },
    el("div", { class: "adv-driver" },
      el("h2", null, "The driver"),
      el("ol", { class: "adv-lines" }, lines),
      el("p", { class: "adv-driver-state" }, st.driver, locals)),
    el("dl", { class: "adv-state" },
      part("memory", "Memory", codes(st.memory, "")),
      part("buffer", "Store buffer", codes(st.buffer, "empty")),
      part("posted", "Posted writes", codes(st.posted, "none")),
      part("early", "Loads performed early", st.early.length ? st.early.map((t) => t + " ") : "none"),
      part("device", "Device", st.device),
      part("irq", "Interrupt", st.irq)));
  let next;
  if (st.over) {
    next = [
      el("p", { class: "adv-verdict", role: "status", "data-won": String(st.won) }, st.verdict),
      el("p", { class: "adv-lesson" }, level.lesson),
      saved ? el("p", { class: "adv-saved", role: "status" }, saved) : null,
    ];
  } else {
    next = [
      el("h2", { class: "adv-choices-title" }, "What happens next? ", el("span", { class: "adv-played" }, `(${st.played} choices made)`)),
      el("ol", { class: "adv-choices" }, st.choices.map((t, i) => el("li", null,
        el("a", { class: "adv-choice", "data-choice": i + 1, "data-kind": st.kinds[i], href: pageHref(level.name, [...schedule, i + 1]) }, t)))),
    ];
  }
  const controls = el("p", { class: "adv-controls" },
    schedule.length ? [
      el("a", { class: "adv-undo", href: pageHref(level.name, schedule.slice(0, -1)) }, "Undo the last choice"), " · ",
      el("a", { class: "adv-restart", href: pageHref(level.name, []) }, "Start again"), " · ",
    ] : null,
    el("span", { class: "adv-schedule" }, "Schedule: ", el("code", null, schedule.length ? formatSchedule(schedule) : "none yet")));
  return el("section", {
    class: "adversary-game", "data-level": level.name, "data-schedule": formatSchedule(schedule),
    "data-over": String(st.over), "data-won": String(st.won), "aria-live": "polite",
  }, board, next, controls);
}

// recordForm is the body of the POST that records a finished game: the server
// replays the schedule itself and records the game as it ended.
export function recordForm(token, schedule) {
  return new URLSearchParams({ token, schedule: formatSchedule(schedule), reply: "json" });
}

// gameLink is the game link a click landed on, or null: a choice, undo or
// start again, inside the game section.
export function gameLink(target) {
  const a = target && target.closest ? target.closest("a.adv-choice, a.adv-undo, a.adv-restart") : null;
  return a && a.getAttribute("href") ? a : null;
}

// record posts a finished game for the learner's record and says how it went.
async function record(level, token, schedule) {
  try {
    const r = await fetch("/adversary/" + encodeURIComponent(level) + "/record", { method: "POST", body: recordForm(token, schedule) });
    const text = await r.text();
    let ans;
    try { ans = JSON.parse(text); } catch { ans = { error: text.trim() }; }
    if (!r.ok) throw new Error(ans.error || r.statusText);
    return ans.saved;
  } catch (err) {
    return "Your game could not be recorded: " + (err && err.message ? err.message : err);
  }
}

// mountAdversary takes over a server-drawn game section: the DOM layer of this
// module, and the only part that touches the page.
export function mountAdversary(section) {
  const level = section.dataset.level;
  let busy = false;
  const show = async (schedule, push) => {
    if (busy) return;
    busy = true;
    section.setAttribute("aria-busy", "true");
    try {
      const r = await fetch(apiHref(level, schedule), { headers: { Accept: "application/json" } });
      const game = await r.json();
      if (!r.ok) throw new Error(game.error || r.statusText);
      renderInto(section, gameTree(game));
      if (push) history.pushState({ schedule }, "", pageHref(level, schedule));
      // A game played to its end here goes into the learner's record, once,
      // when the server has one (data-token); going back and forth does not
      // play it again.
      const token = section.dataset.token;
      if (push && token && game.state.over) renderInto(section, gameTree(game, await record(level, token, schedule)));
    } catch (err) {
      const p = document.createElement("p");
      p.className = "adv-problem";
      p.setAttribute("role", "alert");
      p.textContent = "The game could not go on: " + (err && err.message ? err.message : err);
      section.appendChild(p);
    } finally {
      busy = false;
      section.removeAttribute("aria-busy");
    }
  };
  section.addEventListener("click", (ev) => {
    const a = gameLink(ev.target);
    if (!a || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) return;
    ev.preventDefault();
    show(scheduleOf(a.getAttribute("href"), location.href), true);
  });
  window.addEventListener("popstate", () => show(scheduleOf(location.href), false));
  section.dataset.live = "1";
}
