// views/results.js: what a measuring run reported, as a chart. A scenario that
// measures (chapter 13's capstone and its sweep) ends with result lines in its
// narrative, the lines the protocol's `end` message carries in `log`, each in
// the one shape that sacc/scenario's ch13Result prints and that
// TestResultLinesHaveTheChartedShape holds it to:
//
//   MODE: N ns total, X MB/s, latency mean M ns max K ns, D doorbells, I interrupts[, S system calls]
//
// parseResults reads them; picture draws throughput and latency (mean, with the
// maximum as a whisker) per mode in SVG. The numbers are the run's own: the chart
// appears when the run has ended, and says so until then.

import { render, renderInto } from "../dom.js";
import { el } from "../vnode.js";

const LINE = /^\s*(.+?)\s*:\s*(\d+) ns total,\s*(\d+) MB\/s, latency mean\s*(\d+) ns max\s*(\d+) ns,\s*(\d+) doorbells,\s*(\d+) interrupts(?:,\s*(\d+) system calls)?\s*$/;

// parseResults reads the result lines of a run's narrative (other lines are
// skipped): [{mode, totalNs, mbps, meanNs, maxNs, doorbells, interrupts, syscalls}].
export function parseResults(lines) {
  const out = [];
  for (const raw of lines || []) {
    const m = LINE.exec(raw.replace(/^#\s*/, ""));
    if (!m) continue;
    out.push({ mode: m[1].replace(/\s*,\s*/g, ", ").replace(/\s+/g, " "), totalNs: +m[2], mbps: +m[3], meanNs: +m[4], maxNs: +m[5],
      doorbells: +m[6], interrupts: +m[7], syscalls: m[8] == null ? null : +m[8] });
  }
  return out;
}

// niceStep rounds a step between grid lines up to 1, 2, 2.5 or 5 times a power
// of ten.
export function niceStep(v) {
  if (v <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const k of [1, 2, 2.5, 5, 10]) if (k * p >= v) return k * p;
  return 10 * p;
}

// axis is a chart's grid for values up to max: about four steps, the top a
// whole number of them.
export function axis(max) {
  const step = niceStep(max / 4);
  const top = Math.max(step, Math.ceil(max / step) * step);
  const ticks = [];
  for (let t = 0; t <= top + step / 2; t += step) ticks.push(t);
  return { top, ticks };
}

// chart draws one horizontal bar chart: a row per result, value(r) as the bar,
// whisker(r) (optional) as a thin line to the maximum.
function chart(results, x, y, w, title, unit, value, whisker, cls) {
  // Narrow: each mode's name above its bar, so that long names are not cut.
  const above = w < 500;
  const labelW = above ? 0 : Math.min(180, w * 0.42), barW = w - labelW - 56, rowH = above ? 34 : 24;
  const ax = axis(Math.max(...results.map((r) => Math.max(value(r), whisker ? whisker(r) : 0))));
  const max = ax.top;
  const X = (v) => x + labelW + (v / max) * barW;
  const kids = [el("text", { x, y: y + 12, class: "sw-box-label" }, title)];
  const top = y + 22, bottom = top + results.length * rowH;
  for (const t of ax.ticks) {
    kids.push(el("line", { x1: X(t), x2: X(t), y1: top - 2, y2: bottom, class: "sw-chart-grid" }),
      el("text", { x: X(t), y: bottom + 12 + (above ? 12 : 0), class: "sw-chart-tick" }, fmt(t)));
  }
  kids.push(el("text", { x: x + labelW + barW, y: bottom + 25 + (above ? 12 : 0), class: "sw-chart-unit" }, unit));
  results.forEach((r, i) => {
    const yy = top + i * rowH + (above ? 12 : 0);
    const v = value(r);
    const end = whisker ? Math.max(v, whisker(r)) : v;
    kids.push(el("g", { class: ["sw-chart-row", cls], "data-mode": r.mode, "data-value": v },
      el("title", null, r.mode + ": " + v + " " + unit + (whisker ? ", max " + whisker(r) + " " + unit : "")),
      above ? el("text", { x: X(0), y: yy - 1, class: "sw-chart-label is-above" }, r.mode)
        : el("text", { x: x + labelW - 6, y: yy + 15, class: "sw-chart-label" }, r.mode),
      el("rect", { x: X(0), y: yy + 4, width: Math.max(1, X(v) - X(0)), height: 15, rx: 2, class: "sw-chart-bar" }),
      whisker ? el("line", { x1: X(v), x2: X(whisker(r)), y1: yy + 11.5, y2: yy + 11.5, class: "sw-chart-whisker" }) : null,
      whisker ? el("line", { x1: X(whisker(r)), x2: X(whisker(r)), y1: yy + 6, y2: yy + 17, class: "sw-chart-whisker" }) : null,
      el("text", { x: X(end) + 4, y: yy + 15, class: "sw-chart-value" }, String(v))));
  });
  return { kids, h: bottom + 30 + (above ? 12 : 0) - y };
}

function fmt(v) { return v >= 10000 ? v / 1000 + "k" : String(v); }

// picture draws the results of a run; results is parseResults' answer, ended
// whether the run's end has arrived.
export function picture(results, ended, opts) {
  const wide = opts.wide;
  const W = wide ? 760 : 360;
  if (!ended || !results.length) {
    const t = !ended ? "The results come when the run ends" + (opts.total ? " (event " + opts.total + ")" : "") + ": play it to the end, or jump there."
      : "This run reports no measurements.";
    return el("svg", { class: "sw-chart", role: "img", viewBox: `0 0 ${W} 40`, "data-results": 0 },
      el("title", null, t), el("text", { x: 8, y: 24, class: "sw-muted-text" }, t));
  }
  const cw = wide ? (W - 24) / 2 : W - 8;
  const a = chart(results, 4, 4, cw, "Throughput (higher is better)", "MB/s", (r) => r.mbps, null, "is-throughput");
  const b = chart(results, wide ? cw + 20 : 4, wide ? 4 : a.h + 14, cw, "Latency per job: mean, and max (lower is better)", "ns", (r) => r.meanNs, (r) => r.maxNs, "is-latency");
  const H = wide ? Math.max(a.h, b.h) + 8 : a.h + b.h + 22;
  return el("svg", { class: "sw-chart", role: "img", viewBox: `0 0 ${W} ${H}`, "aria-labelledby": opts.id + "chart-title", "data-results": results.length },
    el("title", { id: opts.id + "chart-title" }, "Throughput and latency per mode, as the run measured them"), a.kids, b.kids);
}

export function mount(w, panel) {
  const pre = "sw" + w.n + "-";
  const svg = render(el("svg", { class: "sw-chart" }));
  const note = render(el("p", { class: "sw-muted" }, "Measured in virtual time by the run itself; the same run gives the same numbers."));
  panel.append(svg, note);
  return {
    update({ wide, pos, tl }) {
      // The numbers are the outcome: they show once the learner's position has
      // reached the run's end, not as soon as the server has finished it.
      const run = w.shown();
      const m = run.ended ? run.end : null;
      const atEnd = !!m && pos >= tl.length;
      renderInto(svg, picture(parseResults(atEnd ? m.log : []), atEnd, { id: pre, wide, total: tl.length }));
    },
  };
}
