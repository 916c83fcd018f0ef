// format.js: numbers and times as the widgets print them, and the pieces of
// server text they read (event text, option lists, monitor dumps).

// hex formats a number as 0x…; BigInt works too, and strings of hex pass through.
export function hex(v, width) {
  if (v == null) return "?";
  if (typeof v === "string") return v;
  let t = (typeof v === "bigint" ? v : Math.trunc(v)).toString(16);
  if (width) t = t.padStart(width, "0");
  return "0x" + t;
}

// textArgs parses an event's text ("reg=SQ_SIZE size=4 val=0x8") into strings by
// name; the text has exact values where JSON numbers may not.
export function textArgs(text) {
  const out = {};
  if (!text) return out;
  for (const part of text.split(/\s+/)) {
    const i = part.indexOf("=");
    if (i > 0) out[part.slice(0, i)] = part.slice(i + 1);
  }
  return out;
}

// big parses "0x…" or a decimal string exactly; null if it is neither.
export function big(str) {
  try { return BigInt(str); } catch (e) { return null; }
}

// exact is an event argument as a BigInt: from the text when it has the argument
// (exact beyond 2^53), else from the JSON number.
export function exact(ev, name) {
  const t = big(textArgs(ev.text)[name]);
  if (t != null) return t;
  const v = ev.args ? ev.args[name] : null;
  return v == null ? null : BigInt(Math.trunc(v));
}

// parseOptions reads data-options: "cpu=arm64,irq=on".
export function parseOptions(str) {
  const out = {};
  for (const part of (str || "").split(",")) {
    const p = part.trim();
    if (!p) continue;
    const i = p.indexOf("=");
    if (i > 0) out[p.slice(0, i).trim()] = p.slice(i + 1).trim();
    else out[p] = "on";
  }
  return out;
}

// optionsText is the options as a widget's title shows them: " (cpu=arm64, irq=on)".
export function optionsText(options) {
  const opts = Object.entries(options).map(([k, v]) => k + "=" + v).join(", ");
  return opts ? " (" + opts + ")" : "";
}

// ns formats a virtual time in nanoseconds.
export function ns(t) {
  if (t == null) return "";
  if (t < 10000) return t + " ns";
  if (t < 10000000) return (t / 1000).toFixed(t < 100000 ? 2 : 1) + " µs";
  return (t / 1e6).toFixed(2) + " ms";
}

// parseDump reads monitor output of "xp /Nxw ADDR": lines "ADDR: 0x… 0x… …".
// It returns the rows (address as BigInt, 32-bit words as Numbers) in order.
export function parseDump(text) {
  const rows = [];
  for (const line of (text || "").split("\n")) {
    const m = /^\s*(?:0x)?([0-9a-fA-F]+):\s*((?:0x[0-9a-fA-F]+\s*)+)/.exec(line);
    if (!m) continue;
    const words = m[2].trim().split(/\s+/).map((w) => parseInt(w, 16) >>> 0);
    rows.push({ addr: BigInt("0x" + m[1]), words, line });
  }
  return rows;
}

// bytesAt gathers n bytes at addr (a BigInt) from dumped rows of little-endian
// words; null if the rows do not cover all of them.
export function bytesAt(rows, addr, n) {
  const bytes = new Map();
  for (const r of rows) {
    r.words.forEach((w, i) => {
      for (let j = 0; j < 4; j++) bytes.set(r.addr + BigInt(4 * i + j), (w >>> (8 * j)) & 0xff);
    });
  }
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) {
    const b = bytes.get(addr + BigInt(i));
    if (b == null) return null;
    out[i] = b;
  }
  return out;
}
