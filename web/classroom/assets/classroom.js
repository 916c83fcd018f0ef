// classroom.js: the classroom's pages. The dashboard reloads itself; the
// broadcast page leads (it sends its widget's run and position to the
// server); the follow page follows (its widget moves to the position the
// server last sent, until the student takes over). The widgets are the
// book's own (widget.js), loaded from the book's versioned assets.

const base = document.querySelector("meta[name=saccbook-static]")?.content || "/static/";

// How often the lead looks at its widget, and the follower at its own, in ms.
const TICK = 30;

async function bookEnv() {
  const [{ Datasheet }, { fetchManifest }, widget] = await Promise.all([
    import(base + "datasheet.js"), import(base + "proto.js"), import(base + "widget.js")]);
  const manifest = await fetchManifest();
  const modules = await Promise.all(manifest.views.map((v) => import(new URL(v.module, new URL(base + "saccbook.js", location.href)).href)));
  const views = manifest.views.map((v, i) => ({ ...v, module: modules[i] }));
  return { manifest, mount: widget.mountWidget, env: { ds: new Datasheet(manifest), views } };
}

function optionsAttr(options) {
  return Object.keys(options || {}).sort().map((k) => k + "=" + options[k]).join(",");
}

// configKey is what makes a run: a widget with another key is another run.
function configKey(s) {
  return JSON.stringify([s.scenario, s.seed, optionsAttr(s.options), [...(s.quirks || [])].sort()]);
}

// mountRun replaces holder's widget with one for the run s describes.
function mountRun(book, holder, s) {
  const el = document.createElement("div");
  el.className = "sacc-widget";
  el.dataset.scenario = s.scenario;
  el.dataset.options = optionsAttr(s.options);
  el.dataset.views = "ring,trace,registers";
  holder.replaceChildren(el);
  const w = book.mount(el, book.env);
  el.saccWidget = w;
  if ((s.seed != null && s.seed !== w.seed) || (s.quirks && s.quirks.length)) {
    w.seed = s.seed;
    w.quirks = [...(s.quirks || [])];
    w.rerun();
  }
  return w;
}

function socketURL(path) {
  return (location.protocol === "https:" ? "wss://" : "ws://") + location.host + path;
}

// ---- the dashboard

function dashboard(root) {
  setInterval(async () => {
    try {
      const r = await fetch("/class/", { headers: { Accept: "text/html" }, cache: "no-store" });
      if (!r.ok) return;
      const doc = new DOMParser().parseFromString(await r.text(), "text/html");
      const fresh = doc.getElementById("class-dashboard");
      if (fresh) root.replaceChildren(...fresh.childNodes);
    } catch (e) { /* the next tick tries again */ }
  }, 2000);
}

// ---- the lead

async function lead(root) {
  const book = await bookEnv();
  const select = root.querySelector("[data-action=scenario]");
  const holder = root.querySelector(".class-lead-widget");
  const stateEl = root.querySelector(".class-lead-state");
  for (const sc of book.manifest.scenarios) {
    const o = document.createElement("option");
    o.value = sc.name;
    o.textContent = sc.name + (sc.summary ? " — " + sc.summary : "");
    select.appendChild(o);
  }
  select.value = book.manifest.scenarios.some((s) => s.name === "rings") ? "rings" : book.manifest.scenarios[0].name;
  let w = mountRun(book, holder, { scenario: select.value, seed: 1, options: {}, quirks: [] });
  select.addEventListener("change", () => { w = mountRun(book, holder, { scenario: select.value, seed: 1, options: {}, quirks: [] }); });

  let ws = null, last = "", sent = 0;
  const connect = () => {
    ws = new WebSocket(socketURL("/ws/class/lead"));
    ws.onopen = () => { stateEl.textContent = "broadcasting"; last = ""; };
    ws.onclose = () => { stateEl.textContent = "reconnecting…"; ws = null; setTimeout(connect, 1000); };
  };
  connect();
  setInterval(() => {
    if (!ws || ws.readyState !== WebSocket.OPEN) return;
    const s = { scenario: w.scenario, seed: w.seed, options: { ...w.options }, quirks: [...w.quirks], seq: w.pos, playing: !!w.playing };
    const msg = JSON.stringify(s);
    if (msg === last) return;
    ws.send(msg);
    last = msg;
    root.dataset.sent = String(++sent);
  }, TICK);
}

// ---- the follower

async function follow(root) {
  const book = await bookEnv();
  const holder = root.querySelector(".class-follow-widget");
  const stateEl = root.querySelector(".class-follow-state");
  const takeBtn = root.querySelector("[data-action=take-over]");
  const rejoinBtn = root.querySelector("[data-action=rejoin]");
  let w = null, key = "", latest = null, following = true;

  const apply = () => {
    if (!following || !latest) return;
    const k = configKey(latest);
    if (!w || k !== key) { w = mountRun(book, holder, latest); key = k; }
    w.anchor = null;
    if (w.playing) w.pause();
    const want = latest.seq;
    if (w.pos !== want && (w.timeline.length >= want || w.ended)) w.jump(want);
  };
  const setFollowing = (on) => {
    following = on;
    root.dataset.following = String(on);
    takeBtn.hidden = !on;
    rejoinBtn.hidden = on;
    stateEl.textContent = on ? (latest ? "following the instructor" : "waiting for the instructor…") : "on your own: rejoin to follow again";
    apply();
  };
  takeBtn.addEventListener("click", () => setFollowing(false));
  rejoinBtn.addEventListener("click", () => setFollowing(true));

  const connect = () => {
    const ws = new WebSocket(socketURL("/ws/class/follow"));
    ws.onmessage = (e) => {
      const m = JSON.parse(e.data);
      if (m.type !== "broadcast") return;
      latest = m;
      root.dataset.broadcastN = String(m.n);
      root.dataset.broadcastSeq = String(m.seq);
      if (following) stateEl.textContent = "following the instructor";
      apply();
    };
    ws.onclose = () => { if (following) stateEl.textContent = "reconnecting…"; setTimeout(connect, 1000); };
  };
  connect();
  // The run's events arrive after the position that needs them: keep
  // landing until the widget is where the instructor is.
  setInterval(apply, TICK);
}

// ---- sharing a run

function share(form) {
  const input = form.querySelector("input[type=file]");
  const stateEl = form.querySelector(".class-share-state");
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const file = input.files && input.files[0];
    if (!file) return;
    stateEl.textContent = "sending…";
    try {
      const record = JSON.parse(await file.text());
      const r = await fetch("/api/class/share", {
        method: "POST", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ exercise: record.exercise, record }),
      });
      const text = await r.text();
      form.dataset.shared = r.ok ? "true" : "false";
      stateEl.textContent = r.ok ? "Shared your run of " + record.exercise + " with the instructor." : "Not shared: " + text;
    } catch (err) {
      form.dataset.shared = "false";
      stateEl.textContent = "Not shared: that file is not a recorded run (" + err.message + ")";
    }
  });
}

function start() {
  const d = document.querySelector("[data-role=dashboard]");
  if (d) dashboard(d);
  const l = document.querySelector("[data-role=lead]");
  if (l) lead(l).catch((e) => { l.querySelector(".class-lead-state").textContent = "could not start: " + e.message; });
  const s = document.querySelector("[data-role=share]");
  if (s) share(s);
  const f = document.querySelector("[data-role=follow]");
  if (f) follow(f).catch((e) => { f.querySelector(".class-follow-state").textContent = "could not start: " + e.message; });
}

start();
