// util.js: small helpers shared by every module: building HTML and SVG
// elements without innerHTML (the page's CSP forbids inline style, and text from
// the server must never become markup), number formatting, and parsing the
// pieces of event text the views need.

const SVGNS = "http://www.w3.org/2000/svg";

function append(node, kids) {
  for (const k of kids) {
    if (k == null || k === false) continue;
    if (Array.isArray(k)) append(node, k);
    else if (k instanceof Node) node.appendChild(k);
    else node.appendChild(document.createTextNode(String(k)));
  }
  return node;
}

function setAttrs(node, attrs) {
  if (!attrs) return node;
  for (const [k, v] of Object.entries(attrs)) {
    if (v == null || v === false) continue;
    if (k === "class") node.setAttribute("class", Array.isArray(v) ? v.filter(Boolean).join(" ") : v);
    else if (k === "text") node.textContent = v;
    else if (k.startsWith("on") && typeof v === "function") node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  return node;
}

// h builds an HTML element: h("button", {class: "x", onclick: f}, "label").
export function h(tag, attrs, ...kids) {
  return append(setAttrs(document.createElement(tag), attrs), kids);
}

// s builds an SVG element.
export function s(tag, attrs, ...kids) {
  return append(setAttrs(document.createElementNS(SVGNS, tag), attrs), kids);
}

// hex formats a number as 0x…; BigInt and strings of hex pass through.
function hex(v, width) {
  if (v == null) return "?";
  if (typeof v === "string") return v;
  let t = (typeof v === "bigint" ? v : Math.trunc(v)).toString(16);
  if (width) t = t.padStart(width, "0");
  return "0x" + t;
}

// textArgs parses an event's text ("reg=SQ_SIZE size=4 val=0x8") into strings by
// name; the text has exact values where JSON numbers may not.
function textArgs(text) {
  const out = {};
  if (!text) return out;
  for (const part of text.split(/\s+/)) {
    const i = part.indexOf("=");
    if (i > 0) out[part.slice(0, i)] = part.slice(i + 1);
  }
  return out;
}

// big parses "0x…" or a decimal string exactly.
function big(str) {
  try { return BigInt(str); } catch (e) { return null; }
}

// parseOptions reads data-options: "cpu=arm64,irq=on".
function parseOptions(str) {
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

// ns formats a virtual time in nanoseconds.
function ns(t) {
  if (t == null) return "";
  if (t < 10000) return t + " ns";
  if (t < 10000000) return (t / 1000).toFixed(t < 100000 ? 2 : 1) + " µs";
  return (t / 1e6).toFixed(2) + " ms";
}

function debounce(fn, ms) {
  let timer = 0;
  const d = (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
  d.cancel = () => clearTimeout(timer);
  return d;
}

function reducedMotion() {
  return !!(window.matchMedia && window.matchMedia("(prefers-reduced-motion: reduce)").matches);
}

// parseDump reads monitor output of "xp /Nxw ADDR": lines "ADDR: 0x… 0x… …".
// It returns the rows (address as BigInt, 32-bit words as Numbers) in order.
function parseDump(text) {
  const rows = [];
  for (const line of (text || "").split("\n")) {
    const m = /^\s*(?:0x)?([0-9a-fA-F]+):\s*((?:0x[0-9a-fA-F]+\s*)+)/.exec(line);
    if (!m) continue;
    const words = m[2].trim().split(/\s+/).map((w) => parseInt(w, 16) >>> 0);
    rows.push({ addr: BigInt("0x" + m[1]), words, line });
  }
  return rows;
}

// decodeDescriptor reads the 32-byte submission descriptor at addr from dumped
// rows (SPEC §6.1, little-endian): null if the dump does not cover all of it.
function decodeDescriptor(rows, addr) {
  const words = new Map();
  for (const r of rows) r.words.forEach((w, i) => words.set(r.addr + BigInt(4 * i), w));
  const w = [];
  for (let i = 0; i < 8; i++) {
    const v = words.get(addr + BigInt(4 * i));
    if (v == null) return null;
    w.push(v);
  }
  const q = (lo, hi) => (BigInt(hi) << 32n) | BigInt(lo);
  return {
    addr, src: q(w[0], w[1]), dst: q(w[2], w[3]), len: w[4],
    opcode: w[5] & 0xffff, flags: w[5] >>> 16, req_id: w[6], reserved: w[7],
  };
}

const OPCODES = { 0: "NOP", 1: "MEMCPY", 2: "XFORM" };
const SHORT = { NOP: "NOP", MEMCPY: "MCPY", XFORM: "XFRM" };
function opName(op) {
  if (typeof op === "string" && isNaN(Number(op))) return op;
  return OPCODES[Number(op)] || hex(Number(op));
}

// opShort is a descriptor's opcode in at most five characters, for slots.
function opShort(d) {
  const name = d.opName || opName(d.opcode != null ? d.opcode : 0);
  if (SHORT[name]) return SHORT[name];
  return name.length <= 5 ? name : hex(Number(d.opcode));
}

export function install(L) {
  Object.assign(L, { h, s, hex, textArgs, big, parseOptions, ns, debounce, reducedMotion,
    parseDump, decodeDescriptor, opName, opShort });
}
