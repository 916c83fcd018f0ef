// saccbook.js: the entry point of the book's live widgets, loaded by every page
// as a module. It fetches the manifest, loads the module of every view the
// manifest's views registry names (relative to this script, so a page always
// gets the modules of its own asset version), and mounts one independent widget
// on every .sacc-widget element; on an adversary page it mounts the game.

import { mountAdversary } from "./adversary.js";
import { Datasheet } from "./datasheet.js";
import { fetchManifest } from "./proto.js";
import { mountWidget } from "./widget.js";

function fail(err) {
  for (const w of document.querySelectorAll(".sacc-widget")) {
    const p = document.createElement("p");
    p.className = "sacc-error";
    p.setAttribute("role", "alert");
    p.textContent = "This live widget could not start: " + (err && err.message ? err.message : err);
    w.appendChild(p);
  }
  console.warn("saccbook:", err);
}

// The pages name no icon, so browsers ask for /favicon.ico and log a 404; a data:
// icon (the CSP allows data: images) answers that locally.
function icon() {
  if (document.querySelector("link[rel~='icon']") || !document.head) return;
  const l = document.createElement("link");
  l.rel = "icon";
  l.href = "data:image/svg+xml," + encodeURIComponent('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16">' +
    '<rect width="16" height="16" rx="3" fill="#1d2a44"/><path d="M4 4h8v2H6v1h6v5H4v-2h6V9H4z" fill="#fff"/></svg>');
  document.head.appendChild(l);
}

// loadViews imports every view's module, in the registry's order.
async function loadViews(views) {
  const modules = await Promise.all(views.map((v) => import(new URL(v.module, import.meta.url).href)));
  return views.map((v, i) => ({ ...v, module: modules[i] }));
}

async function start() {
  const widgets = document.querySelectorAll(".sacc-widget");
  if (!widgets.length) return;
  const manifest = await fetchManifest();
  const env = { ds: new Datasheet(manifest), views: await loadViews(manifest.views) };
  for (const w of widgets) {
    if (!w.saccWidget) w.saccWidget = mountWidget(w, env);
  }
}

icon();
// Adversary mode's game needs no manifest: its state comes from its own API.
for (const g of document.querySelectorAll(".adversary-game")) {
  if (!g.dataset.live) mountAdversary(g);
}
// A module runs once the document is parsed: the widgets are all there.
start().catch(fail);
