// The ring view's state against the monitor: at every position of five runs,
// the SQ and CQ ownership (§7.1, §7.3), the indices, the device's phase and
// every descriptor field the view knows equal what `info rings` answers at the
// same position (the answers are written by go test ./static from real runs).

import test from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { ds } from "./fixtures.js";
import { cqOwner, sqOwner, Timeline } from "../state.js";

function read(name) {
  return JSON.parse(readFileSync(new URL("./testdata/" + name, import.meta.url), "utf8"));
}

// parseRings reads `info rings` (sacc/monitor/info.go's infoRings).
export function parseRings(text) {
  const out = { sq: null, cq: null };
  let cur = null;
  for (const line of text.split("\n")) {
    let m = /^SQ at \S+ .*, (\d+) slots, sq_head=(\d+) sq_tail=(\d+):/.exec(line);
    if (m) { cur = out.sq = { size: +m[1], head: +m[2], tail: +m[3], slots: [] }; continue; }
    m = /^CQ at \S+ .*, (\d+) slots, cq_head=(\d+) cq_tail=(\d+), device phase (\d)/.exec(line);
    if (m) { cur = out.cq = { size: +m[1], head: +m[2], tail: +m[3], phase: +m[4], slots: [] }; continue; }
    if (!cur) continue;
    m = /^\s+(\d+) (driver|device) (.*)$/.exec(line);
    if (!m) continue;
    const f = m[3].trim().split(/\s+/);
    const slot = { owner: m[2], readable: !m[3].startsWith("<") };
    if (slot.readable && cur === out.sq) {
      Object.assign(slot, { src: BigInt(f[0]), dst: BigInt(f[1]), len: Number(f[2]), opcode: Number(f[3]), flags: Number(f[5]), req_id: Number(f[6]) });
    } else if (slot.readable) {
      // req_id result_len status name... phase this-lap
      const phaseAt = f.findIndex((x, k) => k > 3 && /^[01]$/.test(x));
      Object.assign(slot, { req_id: Number(f[0]), status: Number(f[2]), phase: Number(f[phaseAt]) });
    }
    cur.slots[+m[1]] = slot;
  }
  return out;
}

for (const name of ["job", "phases", "overtake", "stall", "dma-iommu"]) {
  test(name + ": the ring view's ownership and contents equal info rings at every position", () => {
    const log = read(name + ".events.json");
    const rings = read(name + ".rings.json");
    assert.equal(rings.at.length, log.length + 1, "an answer for every position");
    const tl = new Timeline(ds);
    tl.append(log, 1);
    let compared = 0, fields = 0, device = 0, written = 0;
    for (let pos = 0; pos <= log.length; pos++) {
      const st = tl.stateAt(pos);
      const info = parseRings(rings.texts[rings.at[pos]]);
      const where = name + " at event " + pos + (pos ? " (" + log[pos - 1].kind + ")" : "");
      if (!info.sq) { assert.equal(st.sqSize, 0, where + ": SQ not configured"); continue; }
      assert.equal(st.sqSize, info.sq.size, where + ": SQ size");
      assert.equal(st.sqHead, info.sq.head, where + ": sq_head");
      assert.equal(st.sqTail, info.sq.tail, where + ": sq_tail");
      for (let i = 0; i < info.sq.size; i++) {
        const want = info.sq.slots[i];
        const own = sqOwner(st, i);
        assert.equal(own === "device" ? "device" : "driver", want.owner, where + ": SQ slot " + i + " is " + own);
        if (own === "device") device++;
        if (own === "written") written++;
        const d = st.sq[i];
        if (!want.readable || d.unknown) continue;
        // Every field the view knows (from the CPU's stores or the device's
        // read) is what memory holds, unless a store to it is still waiting
        // in the store buffer.
        if (st.sb.pending.some((p) => p.ring === "sq" && p.slot === i)) continue;
        const known = { src: d.src != null ? BigInt(d.src) : null, dst: d.dst != null ? BigInt(d.dst) : null,
          len: d.len, opcode: d.opcode, flags: d.flags, req_id: d.req_id };
        for (const [k, v] of Object.entries(known)) {
          if (v == null) continue;
          assert.equal(v, want[k], where + ": SQ slot " + i + " " + k);
          fields++;
        }
      }
      if (!info.cq) { assert.equal(st.cqSize, 0, where + ": CQ not configured"); continue; }
      assert.equal(st.cqSize, info.cq.size, where + ": CQ size");
      assert.equal(st.cqTail, info.cq.tail, where + ": cq_tail");
      assert.equal(st.cqHead, info.cq.head, where + ": cq_head");
      assert.equal(st.phase, info.cq.phase, where + ": the device's phase");
      for (let i = 0; i < info.cq.size; i++) {
        const want = info.cq.slots[i];
        assert.equal(cqOwner(st, i), want.owner, where + ": CQ slot " + i);
        // The completion's bytes land with sacc_dma_write; what they are is
        // the next event's, sacc_cq_post.
        if (!want.readable || pos && log[pos - 1].kind === "sacc_dma_write") continue;
        assert.equal(st.cq[i].phase, want.phase, where + ": CQ slot " + i + " phase");
        assert.equal(st.cq[i].req_id, want.req_id, where + ": CQ slot " + i + " req_id");
      }
      compared++;
    }
    assert.ok(compared > 10, "compared " + compared + " positions");
    assert.ok(device > 0 && fields > 0, "device-owned slots " + device + ", fields " + fields);
    if (name !== "job") assert.ok(written > 0, "a slot written and not yet published was seen");
  });
}
