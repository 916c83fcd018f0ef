// inspect.js: inspect requests for one view (docs/PROTOCOL.md, "inspect").
//
// The life of a view's requests is a pure state machine, inspectNext(), with the
// status line the view shows as a function of its state, inspectStatus(): the
// line says "asking" only while an answer can still come, and turns into the
// answer, an error, or a wait for the next run in every path (answer, error,
// a new run, a move to another position, a dropped connection). asker() is the
// thin shell around it that talks to the connection: one request in flight at a
// time, the latest wanted one next, spaced while the widget plays.

const PLAY_SPACING = 350; // ms between inspect requests while playing

// keyOf names a request: {line, seq, run}. run is the widget's run number; a
// request of an older run can never be the wanted one again.
export function keyOf(r) { return r ? r.line + "@" + r.seq + "#" + r.run : ""; }

const same = (a, b) => a != null && b != null && keyOf(a) === keyOf(b);

// initialInspect is a view that has asked for nothing yet.
export function initialInspect() {
  return { want: null, sent: null, shown: null, failed: null };
}

// inspectNext is the state after act:
//   {type: "ask", req, retry, playing}  the view wants req (retry: ask again
//                              even if it failed; playing: the widget plays on);
//   {type: "sent", req}        req went to the server;
//   {type: "answer", req}      the server answered req;
//   {type: "error", req, message}  req failed (the server said so, the
//                              connection closed, or it was not connected);
//   {type: "restart", req}     req was dropped because a new run is starting;
//   {type: "drop"}             the view wants nothing (it shows something else).
// State: want (the request the view wants), sent (the one in flight), shown
// (the one whose answer is on the page), failed ({req, message} of the wanted
// one), waiting (true while a new run is starting). Requests without a run
// (run == null: no run has started yet) are never sent.
export function inspectNext(s, act) {
  switch (act.type) {
    case "ask": {
      const keep = s.failed && same(s.failed.req, act.req) && !act.retry;
      const waiting = s.waiting && act.req.run === (s.want && s.want.run);
      return { ...s, want: act.req, failed: keep ? s.failed : null, waiting, playing: !!act.playing };
    }
    case "sent": return { ...s, sent: act.req };
    case "answer": {
      if (!same(s.sent, act.req)) return s;
      const r = { ...s, sent: null };
      // An answer for an older position of the same run is still shown (while
      // playing, every answer is for a position the widget has left); one of an
      // older run never is.
      if (!r.want || act.req.run !== r.want.run) return r;
      return { ...r, shown: act.req, failed: same(act.req, r.want) ? null : r.failed };
    }
    case "error": {
      if (!same(s.sent, act.req)) return s;
      const r = { ...s, sent: null };
      return same(act.req, r.want) ? { ...r, failed: { req: act.req, message: act.message } } : r;
    }
    case "restart": {
      if (!same(s.sent, act.req) && !same(s.want, act.req)) return s;
      return { ...s, sent: same(s.sent, act.req) ? null : s.sent, waiting: true };
    }
    case "drop": return { ...s, want: null, shown: null, failed: null, waiting: false };
  }
  return s;
}

// inspectDue is the request to send now, or null: the wanted one, unless one is
// in flight, it is already shown, it failed, or no run has started.
export function inspectDue(s) {
  const w = s.want;
  if (!w || s.sent || s.waiting || w.run == null) return null;
  if (same(w, s.shown)) return null;
  if (s.failed && same(s.failed.req, w)) return null;
  return w;
}

// inspectStatus is what the status line says, as {kind, req, message}: kind
// "idle" (nothing wanted), "waiting" (no run yet, or a new one is starting),
// "asking" (an answer for req will come), "answered" (req's answer is shown),
// "following" (the widget plays: the answer shown is for req, an earlier
// position of the run, and the view asks again as it goes) or "failed" (req
// failed with message).
export function inspectStatus(s) {
  const w = s.want;
  if (!w) return { kind: "idle" };
  if (s.failed && same(s.failed.req, w)) return { kind: "failed", req: w, message: s.failed.message };
  if (same(w, s.shown)) return { kind: "answered", req: w };
  if (w.run == null || s.waiting) return { kind: "waiting", req: w };
  if (s.playing && s.shown && s.shown.run === w.run) return { kind: "following", req: s.shown };
  return { kind: "asking", req: w };
}

// statusWords turns a status into the sentence under a view's title, with the
// view's own words for an answer and for what it asks.
export function statusWords(st, words) {
  switch (st.kind) {
    case "idle": return "";
    case "waiting": return "Waiting for the machine to start…";
    case "asking": return words.asking(st.req);
    case "answered": case "following": return words.answered(st.req);
    case "failed": return words.failed(st.req, st.message);
  }
  return "";
}

// asker runs w's inspect requests (w: {conn, runId, playing}); show(out, req) puts
// an answer on the page, status(st) the status (inspectStatus) whenever it may
// have changed.
export function asker(w, { show, status }) {
  let s = initialInspect();
  let timer = 0;
  let lastSent = -Infinity;
  const now = () => (typeof performance !== "undefined" ? performance.now() : Date.now());
  const tell = () => status(inspectStatus(s));
  const pump = () => {
    const r = inspectDue(s);
    if (!r) return;
    const wait = w.playing ? lastSent + PLAY_SPACING - now() : 0;
    if (wait > 0) {
      if (!timer) timer = setTimeout(() => { timer = 0; pump(); }, wait);
      return;
    }
    lastSent = now();
    s = inspectNext(s, { type: "sent", req: r });
    w.conn.inspect(r.line, r.seq).then((out) => {
      const before = s.shown;
      s = inspectNext(s, { type: "answer", req: r });
      if (s.shown === r && before !== r) show(out, r);
      tell();
      pump();
    }, (err) => {
      // A hello in flight drops every request: the new run's first redraw asks again.
      const restarting = w.conn.awaitWelcome && r.run === w.runId;
      s = inspectNext(s, restarting ? { type: "restart", req: r } : { type: "error", req: r, message: err.message });
      tell();
      pump();
    });
  };
  return {
    // ask wants the answer of line at seq, in the widget's current run; note
    // rides along with the request to the view's words.
    ask(line, seq, retry = false, note = undefined) {
      const req = { line, seq, run: w.runId == null ? null : w.runId };
      if (note != null) req.note = note;
      s = inspectNext(s, { type: "ask", req, retry, playing: w.playing });
      tell();
      pump();
    },
    // drop wants nothing: the view shows something that needs no answer.
    drop() {
      s = inspectNext(s, { type: "drop" });
      tell();
    },
  };
}
