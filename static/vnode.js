// vnode.js: pictures as plain data. The views build their HTML and SVG as trees
// of {tag, attrs, kids} with el(), in pure functions of the state at a position;
// dom.js turns a tree into elements. So what a view draws can be tested without
// a browser, and the DOM is touched in one place.

// el builds one node: el("rect", {x: 1, class: ["a", on && "b"]}, kid, [kids]).
// Kids may be nodes, strings, numbers, arrays of them, or null/false (skipped).
export function el(tag, attrs, ...kids) {
  return { tag, attrs: attrs || {}, kids: flatten(kids, []) };
}

function flatten(kids, out) {
  for (const k of kids) {
    if (k == null || k === false) continue;
    if (Array.isArray(k)) flatten(k, out);
    else out.push(typeof k === "object" ? k : String(k));
  }
  return out;
}

// isNode tells a tree node from a string (or from a DOM node handed to the DOM
// layer among a tree's kids).
export function isNode(v) {
  return v != null && typeof v === "object" && typeof v.tag === "string" && Array.isArray(v.kids);
}

// classList is a node's classes.
export function classList(v) {
  const c = v.attrs.class;
  if (!c) return [];
  return (Array.isArray(c) ? c.filter(Boolean).join(" ") : String(c)).split(/\s+/).filter(Boolean);
}

// hasClass reports whether a node has a class.
export function hasClass(v, cls) { return classList(v).includes(cls); }

// textOf is the text of a tree, as textContent would give it.
export function textOf(v) {
  if (typeof v === "string") return v;
  if (!isNode(v)) return "";
  if (v.attrs.text != null) return String(v.attrs.text);
  return v.kids.map(textOf).join("");
}

// findAll lists the nodes of a tree, in document order, that satisfy pred.
export function findAll(v, pred, out = []) {
  if (!isNode(v)) return out;
  if (pred(v)) out.push(v);
  for (const k of v.kids) findAll(k, pred, out);
  return out;
}

// byClass lists the nodes that have a class.
export function byClass(v, cls) { return findAll(v, (n) => hasClass(n, cls)); }
