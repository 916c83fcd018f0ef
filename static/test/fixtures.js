// fixtures.js: what the server would send, as the Go side writes it into
// testdata/ (go test ./static fails when a fixture is stale; -update rewrites
// them): the manifest, and the event logs of two runs (seed 1).

import { readFileSync } from "node:fs";
import { Datasheet } from "../datasheet.js";

function read(name) {
  return JSON.parse(readFileSync(new URL("./testdata/" + name, import.meta.url), "utf8"));
}

export const manifest = read("manifest.json");
export const ds = new Datasheet(manifest);

// job is one MEMCPY's whole path, bare metal; phases is three laps of a
// 4-entry CQ.
export const job = read("job.events.json");
export const phases = read("phases.events.json");

// first finds the first event of a kind in a log (after seq `after`).
export function first(log, kind, after = 0) {
  const ev = log.find((e) => e.kind === kind && e.seq > after);
  if (!ev) throw new Error("no " + kind + " in the log after " + after);
  return ev;
}
