// dom.js: the one place that builds elements. render() turns a vnode.js tree into
// HTML or SVG elements without innerHTML (the page's CSP forbids inline style,
// and text from the server must never become markup); h() and s() build elements
// directly for the widget's own controls.

import { el, isNode } from "./vnode.js";

const SVGNS = "http://www.w3.org/2000/svg";

function setAttrs(node, attrs) {
  for (const [k, v] of Object.entries(attrs)) {
    if (v == null || v === false) continue;
    if (k === "class") node.setAttribute("class", Array.isArray(v) ? v.filter(Boolean).join(" ") : v);
    else if (k === "text") node.textContent = v;
    else if (k.startsWith("on") && typeof v === "function") node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  return node;
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
// children replaced by v's kids. The element itself stays, with its listeners.
export function renderInto(node, v) {
  setAttrs(node, v.attrs);
  const svg = node.namespaceURI === SVGNS;
  node.replaceChildren(...v.kids.map((k) => render(k, svg)));
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
