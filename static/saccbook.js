// saccbook.js: the entry point of the book's live widgets.
//
// This file works both as a classic script (<script src defer>, which is how the
// page template loads it) and as a module: it has no import or export statements.
// It loads the other modules with dynamic import(), passing on this script's
// ?v= version so that a new release never mixes with cached old modules, and
// mounts one independent widget on every .sacc-widget element.
"use strict";
(function () {
  var MODULES = ["util", "proto", "state", "caption", "controls", "widget",
    "ring", "garage", "panels", "trace"];

  function scriptURL() {
    var s = document.currentScript;
    if (!s || !s.src) {
      var all = document.querySelectorAll("script[src]");
      for (var i = 0; i < all.length; i++) {
        if (/(^|\/)saccbook\.js(\?|$)/.test(all[i].getAttribute("src"))) { s = all[i]; break; }
      }
    }
    return new URL(s && s.src ? s.src : "/static/saccbook.js", document.baseURI);
  }

  var url = scriptURL();
  var base = new URL(".", url).href;
  var query = url.search;

  function fail(err) {
    var widgets = document.querySelectorAll(".sacc-widget");
    for (var i = 0; i < widgets.length; i++) {
      var p = document.createElement("p");
      p.className = "sacc-error";
      p.setAttribute("role", "alert");
      p.textContent = "This live widget could not start: " + (err && err.message ? err.message : err);
      widgets[i].appendChild(p);
    }
    if (window.console) console.warn("saccbook:", err);
  }

  // The pages name no icon, so browsers ask for /favicon.ico and log a 404;
  // a data: icon (the CSP allows data: images) answers that locally.
  function icon() {
    if (document.querySelector("link[rel~='icon']") || !document.head) return;
    var l = document.createElement("link");
    l.rel = "icon";
    l.href = "data:image/svg+xml," + encodeURIComponent('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16">' +
      '<rect width="16" height="16" rx="3" fill="#1d2a44"/><path d="M4 4h8v2H6v1h6v5H4v-2h6V9H4z" fill="#fff"/></svg>');
    document.head.appendChild(l);
  }
  icon();

  function start() {
    var widgets = document.querySelectorAll(".sacc-widget");
    if (!widgets.length) return;
    Promise.all(MODULES.map(function (name) { return import(base + name + ".js" + query); }))
      .then(function (mods) {
        // Every module exports install(L): it adds its functions to the shared
        // library L, which the others use at call time (never at load time).
        var L = {};
        mods.forEach(function (m) { m.install(L); });
        for (var i = 0; i < widgets.length; i++) {
          if (!widgets[i].saccWidget) widgets[i].saccWidget = L.mountWidget(widgets[i]);
        }
      })
      .catch(fail);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
