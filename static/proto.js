// proto.js: the widgets' side of `saccbook serve` (docs/PROTOCOL.md, v1): the
// manifest, and one widget's websocket.
//
// A Connection opens ws(s)://host/ws/session, sends hello, and hands the
// widget what arrives: welcome, events batches (checked for contiguity),
// snapshot, end, error. inspect() returns a promise of the monitor output.
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

export class Connection {
  // handlers: {onState(state, detail), onWelcome(msg), onEvents(events, from),
  //            onSnapshot(msg), onEnd(msg), onError(msg)}
  constructor(path, handlers) {
    this.path = path || "/ws/session";
    this.handlers = handlers;
    this.ws = null;
    this.params = null;      // the hello we want: {scenario, seed, options}
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
    this.send({ type: "hello", v: VERSION, scenario: p.scenario, seed: p.seed, options: p.options || {} });
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
    const wait = BACKOFF[Math.min(this.attempt, BACKOFF.length - 1)];
    this.attempt++;
    this.setState("waiting", "retrying in " + (wait < 1000 ? wait + " ms" : wait / 1000 + " s") +
      " (close code " + (ev.code || "none") + ")");
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

  // inspect asks for monitor output at an event position.
  inspect(line, seq) {
    return new Promise((resolve, reject) => {
      const id = this.nextId++;
      if (this.awaitWelcome || !this.send({ type: "inspect", v: VERSION, id, seq, line })) {
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
    if (!msg || typeof msg.type !== "string") return;
    const hd = this.handlers;
    switch (msg.type) {
      case "welcome":
        this.awaitWelcome = false;
        this.attempt = 0;
        this.setState("running");
        if (hd.onWelcome) hd.onWelcome(msg);
        break;
      case "events":
        if (!this.awaitWelcome && hd.onEvents) hd.onEvents(msg.events || [], msg.from);
        break;
      case "snapshot":
        this.awaitWelcome = false;
        if (hd.onSnapshot) hd.onSnapshot(msg);
        break;
      case "end":
        if (this.awaitWelcome) break;
        this.setState("ended", msg.error || "");
        if (hd.onEnd) hd.onEnd(msg);
        break;
      case "inspect": {
        const p = this.pending.get(msg.id);
        if (p) { this.pending.delete(msg.id); p.resolve(msg.output || ""); }
        break;
      }
      case "pong":
        break;
      case "error": {
        const p = msg.id != null && this.pending.get(msg.id);
        if (p) {
          this.pending.delete(msg.id);
          p.reject(new Error(msg.message || msg.code));
          break;
        }
        if (msg.code === "unsupported-version") this.fatal = msg.message || msg.code;
        if (msg.code === "too-slow") this.attempt = 0;
        if (msg.code === "bad-request" && this.awaitWelcome) {
          this.awaitWelcome = false;
          this.setState("failed");
        }
        if (hd.onError) hd.onError(msg);
        break;
      }
    }
  }
}
