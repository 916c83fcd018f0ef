// dom.js: the one place that builds elements. render() turns a vnode.js tree into
// HTML or SVG elements without innerHTML (the page's CSP forbids inline style,
// and text from the server must never become markup); h() and s() build elements
// directly for the widget's own controls.

import { el, isNode } from "./vnode.js";

const SVGNS = "http://www.w3.org/2000/svg";

// className is a class attribute's value: a string, or an array of names with
// false and null left out.
function className(v) { return Array.isArray(v) ? v.filter(Boolean).join(" ") : v; }

// listen keeps one handler per event on a node, so that a node drawn again
// with a new handler does not keep the old one too.
function listen(node, type, fn) {
  const on = node.swOn || (node.swOn = {});
  if (on[type] === fn) return;
  if (on[type]) node.removeEventListener(type, on[type]);
  on[type] = fn;
  node.addEventListener(type, fn);
}

function setAttrs(node, attrs) {
  for (const [k, v] of Object.entries(attrs)) {
    if (v == null || v === false) continue;
    if (k === "class") node.setAttribute("class", className(v));
    else if (k === "text") node.textContent = v;
    else if (k.startsWith("on") && typeof v === "function") listen(node, k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  return node;
}

// patchAttrs makes node's attributes exactly attrs: changed ones set, missing
// ones removed, equal ones left alone (so the browser has nothing to restyle).
function patchAttrs(node, attrs) {
  const want = new Map();
  for (const [k, v] of Object.entries(attrs)) {
    if (v == null || v === false || k === "text") continue;
    if (k.startsWith("on") && typeof v === "function") { listen(node, k.slice(2), v); continue; }
    want.set(k, k === "class" ? className(v) : v === true ? "" : String(v));
  }
  for (let i = node.attributes.length - 1; i >= 0; i--) {
    const name = node.attributes[i].name;
    if (!want.has(name)) node.removeAttribute(name);
  }
  for (const [k, v] of want) if (node.getAttribute(k) !== v) node.setAttribute(k, v);
}

// patchKids makes node's children look like kids, reusing the nodes that are
// already there where the tag (or text) lines up, in order.
function patchKids(node, kids, svg) {
  let cur = node.firstChild;
  for (const k of kids) {
    if (typeof k === "string") {
      if (cur && cur.nodeType === 3) {
        if (cur.data !== k) cur.data = k;
        cur = cur.nextSibling;
      } else node.insertBefore(document.createTextNode(k), cur);
    } else if (!isNode(k)) {
      if (cur === k) cur = cur.nextSibling;
      else node.insertBefore(k, cur);
    } else {
      const inSvg = svg || k.tag === "svg";
      if (cur && cur.nodeType === 1 && cur.localName === k.tag && (cur.namespaceURI === SVGNS) === inSvg) {
        patch(cur, k, inSvg);
        cur = cur.nextSibling;
      } else node.insertBefore(render(k, inSvg), cur);
    }
  }
  while (cur) {
    const next = cur.nextSibling;
    node.removeChild(cur);
    cur = next;
  }
}

function patch(node, v, svg) {
  patchAttrs(node, v.attrs);
  if (v.attrs.text != null) {
    if (node.textContent !== String(v.attrs.text)) node.textContent = v.attrs.text;
    return;
  }
  patchKids(node, v.kids, svg);
}

// render makes the element for a tree (in the SVG namespace from an <svg> down,
// or everywhere when svg is true); DOM nodes among the kids are used as they are.
export function render(v, svg = false) {
  if (typeof v === "string") return document.createTextNode(v);
  if (!isNode(v)) return v;
  const inSvg = svg || v.tag === "svg";
  const node = setAttrs(inSvg ? document.createElementNS(SVGNS, v.tag) : document.createElement(v.tag), v.attrs);
  for (const k of v.kids) node.appendChild(render(k, inSvg));
  return node;
}

// renderInto makes node look like the tree v: v's attributes set on it, its
// children made v's kids. The element itself stays, with its listeners, and so
// do the children that are still there in the new tree: a picture drawn again
// every frame changes only what changed, which keeps playback at the display's
// frame rate.
export function renderInto(node, v) {
  for (const [k, val] of Object.entries(v.attrs)) {
    if (val == null || val === false) continue;
    if (k.startsWith("on") && typeof val === "function") { listen(node, k.slice(2), val); continue; }
    const str = k === "class" ? className(val) : val === true ? "" : String(val);
    if (k === "text") { if (node.textContent !== str) node.textContent = str; continue; }
    if (node.getAttribute(k) !== str) node.setAttribute(k, str); // an equal viewBox set again lays the picture out again
  }
  patchKids(node, v.kids, node.namespaceURI === SVGNS);
  return node;
}

// h builds an HTML element: h("button", {class: "x", onclick: f}, "label").
export function h(tag, attrs, ...kids) { return render(el(tag, attrs, ...kids)); }

// s builds an SVG element.
export function s(tag, attrs, ...kids) { return render(el(tag, attrs, ...kids), true); }

export function debounce(fn, ms) {
  let timer = 0;
  const d = (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
  d.cancel = () => clearTimeout(timer);
  return d;
}

export function reducedMotion() {
  return !!(window.matchMedia && window.matchMedia("(prefers-reduced-motion: reduce)").matches);
}
