// inspect.js: inspect requests for one view (docs/PROTOCOL.md, "inspect"): the
// latest request wins, replies for older ones are dropped, and while the widget
// plays, requests are spaced.

import { debounce } from "./dom.js";

const PLAY_DEBOUNCE = 350; // ms between inspect requests while playing

// asker runs w's inspect requests and hands each answer to show(out, request, err).
export function asker(w, show) {
  let want = null;   // {line, seq}
  let sent = null;   // key of the request in flight
  let have = null;   // key of what is shown
  const key = (r) => r.line + "@" + r.seq + "#" + w.runId;
  const go = () => {
    if (!want) return;
    const r = want;
    const k = key(r);
    if (k === have || k === sent) return;
    sent = k;
    w.conn.inspect(r.line, r.seq).then((out) => {
      if (sent !== k) return;
      sent = null;
      have = k;
      show(out, r, null);
    }, (err) => {
      if (sent !== k) return;
      sent = null;
      show("", r, err);
    });
  };
  const later = debounce(go, PLAY_DEBOUNCE);
  return {
    ask(line, seq) {
      want = { line, seq };
      if (w.playing) later(); else { later.cancel(); go(); }
    },
    forget() { have = null; },
  };
}
