// proto.js: the widgets' side of `saccbook serve` (docs/PROTOCOL.md, v1): the
// manifest, and one widget's websocket.
//
// A Connection opens ws(s)://host/ws/session, sends hello, and hands the
// widget what arrives: welcome, events batches (checked for contiguity),
// snapshot, end, error, and for a hello with quirks the baseline's events and
// end (marked run: "baseline") and the diverge message. inspect() returns a
// promise of the monitor output.
// An unexpected close reconnects with backoff and says hello again.

const VERSION = 1;
const BACKOFF = [500, 1000, 2000, 4000, 8000, 15000];

// Where the server offers the manifest, and the version of it this code reads.
const MANIFEST = "/api/v1/manifest";
const MANIFEST_VERSION = 1;

// fetchManifest loads the manifest: what the widgets know of the machine.
export async function fetchManifest() {
  const r = await fetch(MANIFEST, { headers: { Accept: "application/json" } });
  if (!r.ok) throw new Error("the manifest: " + r.status + " " + r.statusText);
  const m = await r.json();
  if (m.v !== MANIFEST_VERSION) throw new Error("the manifest is version " + m.v + "; this page reads version " + MANIFEST_VERSION);
  return m;
}

// backoff is how long to wait before reconnection attempt n (0, 1, …), in ms.
export function backoff(n) { return BACKOFF[Math.min(n, BACKOFF.length - 1)]; }

// retryText says when the next attempt comes and why the socket closed.
export function retryText(wait, code) {
  return "retrying in " + (wait < 1000 ? wait + " ms" : wait / 1000 + " s") + " (close code " + (code || "none") + ")";
}

// route is what a server message does to a connection (conn: its awaitWelcome
// and pending inspect ids, as a Connection has them): the flags it changes, the
// connection state it enters (with detail), the inspect request it settles
// ({id, output} or {id, error}), and which of the widget's handlers it goes to.
// null: the message is ignored. Until the welcome of the latest hello arrives,
// what belongs to an older run is dropped.
export function route(msg, conn) {
  if (!msg || typeof msg.type !== "string") return null;
  switch (msg.type) {
    case "welcome": return { flags: { awaitWelcome: false, attempt: 0 }, state: "running", deliver: "welcome" };
    case "events":
      if (conn.awaitWelcome) return null;
      return { deliver: msg.run === "baseline" ? "baselineEvents" : "events" };
    case "snapshot": return { flags: { awaitWelcome: false }, deliver: "snapshot" };
    case "end":
      if (conn.awaitWelcome) return null;
      if (msg.run === "baseline") return { deliver: "baselineEnd" };
      return { state: "ended", detail: msg.error || "", deliver: "end" };
    case "diverge": return conn.awaitWelcome ? null : { deliver: "diverge" };
    case "inspect": return { settle: { id: msg.id, output: msg.output || "" } };
    case "error": {
      if (msg.id != null && conn.pending.has(msg.id)) return { settle: { id: msg.id, error: msg.message || msg.code } };
      const r = { flags: {}, deliver: "error" };
      if (msg.code === "unsupported-version") r.flags.fatal = msg.message || msg.code;
      if (msg.code === "too-slow") r.flags.attempt = 0;
      if (msg.code === "bad-request" && conn.awaitWelcome) {
        r.flags.awaitWelcome = false;
        r.state = "failed";
      }
      return r;
    }
  }
  return null; // pong, and kinds this client does not know
}

// helloMessage is the hello for params: a scenario with its seed, options and
// quirks (or a recorded exercise run to replay), or a bug hunt's number alone
// (the server builds the learner's run and accepts nothing else with it).
export function helloMessage(p) {
  if (p.hunt) return { type: "hello", v: VERSION, hunt: p.hunt };
  const m = { type: "hello", v: VERSION, scenario: p.scenario, seed: p.seed, options: p.options || {}, quirks: p.quirks || [] };
  // A learner's recorded exercise run: replayed from its record, nothing runs.
  if (p.recorded) { m.run = "recorded"; m.exercise = p.recorded; }
  return m;
}

export class Connection {
  // handlers: {onState(state, detail), onWelcome(msg), onEvents(events, from),
  //            onSnapshot(msg), onEnd(msg), onError(msg),
  //            onBaselineEvents(events, from), onBaselineEnd(msg), onDiverge(msg)}
  constructor(path, handlers) {
    this.path = path || "/ws/session";
    this.handlers = handlers;
    this.ws = null;
    this.params = null;      // the hello we want: {scenario, seed, options, quirks} or {hunt}
    this.run = "";           // the run inspect asks about: "" or "baseline"
    this.nextId = 1;
    this.pending = new Map(); // inspect id -> {resolve, reject}
    this.attempt = 0;
    this.timer = 0;
    this.closing = false;
    this.awaitWelcome = false;
    this.state = "idle";
  }

  url() {
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    return scheme + "//" + location.host + this.path;
  }

  setState(state, detail) {
    this.state = state;
    if (this.handlers.onState) this.handlers.onState(state, detail || "");
  }

  // hello starts (or restarts) the machine: on the open socket, or on a new one.
  hello(params) {
    this.params = params;
    if (this.ws && this.ws.readyState === WebSocket.OPEN) this.sendHello();
    else if (!this.ws || this.ws.readyState > WebSocket.OPEN) this.open();
  }

  sendHello() {
    const p = this.params;
    this.awaitWelcome = true;
    this.failPending("a new run started");
    this.send(helloMessage(p));
    this.setState("starting");
  }

  open() {
    clearTimeout(this.timer);
    this.closing = false;
    this.setState(this.attempt ? "reconnecting" : "connecting");
    let ws;
    try {
      ws = new WebSocket(this.url());
    } catch (e) {
      this.setState("closed", String(e.message || e));
      return;
    }
    this.ws = ws;
    ws.onopen = () => {
      if (ws !== this.ws) return;
      this.setState("connected");
      if (this.params) this.sendHello();
    };
    ws.onmessage = (m) => { if (ws === this.ws) this.receive(m.data); };
    ws.onerror = () => {}; // onclose follows and says what to do
    ws.onclose = (ev) => { if (ws === this.ws) this.closed(ev); };
  }

  closed(ev) {
    this.ws = null;
    this.failPending("the connection closed");
    if (this.closing) { this.setState("closed"); return; }
    if (this.fatal) { this.setState("closed", this.fatal); return; }
    const wait = backoff(this.attempt);
    this.attempt++;
    this.setState("waiting", retryText(wait, ev.code));
    this.timer = setTimeout(() => this.open(), wait);
  }

  // close ends the socket for good (the widget is going away).
  close() {
    this.closing = true;
    clearTimeout(this.timer);
    if (this.ws) this.ws.close(1000, "bye");
  }

  send(msg) {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) return false;
    this.ws.send(JSON.stringify(msg));
    return true;
  }

  // inspect asks for monitor output at an event position, in the run the
  // widget shows (this.run).
  inspect(line, seq) {
    return new Promise((resolve, reject) => {
      const id = this.nextId++;
      const msg = { type: "inspect", v: VERSION, id, seq, line };
      if (this.run) msg.run = this.run;
      if (this.awaitWelcome || !this.send(msg)) {
        reject(new Error("not connected"));
        return;
      }
      this.pending.set(id, { resolve, reject });
    });
  }

  failPending(why) {
    for (const p of this.pending.values()) p.reject(new Error(why));
    this.pending.clear();
  }

  receive(data) {
    let msg;
    try { msg = JSON.parse(data); } catch (e) { return; }
    const r = route(msg, this);
    if (!r) return;
    Object.assign(this, r.flags);
    if (r.state) this.setState(r.state, r.detail);
    if (r.settle) {
      const p = this.pending.get(r.settle.id);
      if (p) {
        this.pending.delete(r.settle.id);
        if (r.settle.error) p.reject(new Error(r.settle.error)); else p.resolve(r.settle.output);
      }
    }
    const hd = this.handlers;
    switch (r.deliver) {
      case "welcome": if (hd.onWelcome) hd.onWelcome(msg); break;
      case "events": if (hd.onEvents) hd.onEvents(msg.events || [], msg.from); break;
      case "snapshot": if (hd.onSnapshot) hd.onSnapshot(msg); break;
      case "end": if (hd.onEnd) hd.onEnd(msg); break;
      case "error": if (hd.onError) hd.onError(msg); break;
      case "baselineEvents": if (hd.onBaselineEvents) hd.onBaselineEvents(msg.events || [], msg.from); break;
      case "baselineEnd": if (hd.onBaselineEnd) hd.onBaselineEnd(msg); break;
      case "diverge": if (hd.onDiverge) hd.onDiverge(msg); break;
    }
  }
}
