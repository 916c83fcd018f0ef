// state.js: the machine as the pictures see it, folded from the event log.
//
// Every view is a pure function of (log, position): fold events 1..position
// into a fresh state. A Timeline keeps the log, a checkpoint every 256 events
// and the last state it computed, so stepping forward costs one event and
// scrubbing anywhere costs at most 255.

import { exact, hex, textArgs } from "./format.js";

const CHECKPOINT = 256;

function emptySlot() {
  return { req_id: null, opcode: null, opName: null, len: null, flags: null, src: null, dst: null, seq: 0, fetched: false };
}
function emptyEntry() {
  return { req_id: 0, status: 0, phase: 0, posted: false, seq: 0 };
}

export function initialState() {
  return {
    seq: 0, t: 0,
    sqBase: null, cqBase: null, sqSize: 0, cqSize: 0,
    sqPhys: null, cqPhys: null,            // where the rings are in host physical memory
    sqHead: 0, sqTail: 0, cqHead: 0, cqTail: 0, phase: 1,
    sq: [], cq: [],
    enabled: false, ready: false, error: false, errCode: 0, stalled: false,
    busy: null,                            // {slot, req_id, opcode}: the command in the device
    changed: null,                         // {ring: "sq"|"cq", slot}: last slot touched
    iommu: { on: false, faults: 0, lastFault: null, lastTranslate: null },
    pages: {},                             // IOVA page -> phys page, as translated
    irqs: 0, msis: 0, pending: false, inIrq: false, syscalls: 0,
    doorbells: 0, completions: 0, cmdErrors: 0,
    lastSrc: null,                         // src of the last event that had one
  };
}

function resize(arr, n, make, max) {
  n = Math.max(0, Math.min(n | 0, max));
  while (arr.length < n) arr.push(make());
  arr.length = n;
}

function clone(st) {
  return typeof structuredClone === "function" ? structuredClone(st) : JSON.parse(JSON.stringify(st));
}

// toPhys gives the host physical address for a DMA address, when known.
function toPhys(st, addr, ds) {
  if (addr == null) return null;
  if (!st.iommu.on) return addr;
  const page = Math.floor(addr / ds.pageSize) * ds.pageSize;
  const p = st.pages[page];
  return p == null ? null : p + (addr - page);
}

function ringPhys(st, ds) {
  st.sqPhys = toPhys(st, st.sqBase, ds);
  st.cqPhys = toPhys(st, st.cqBase, ds);
}

// moved clears a ring's picture when its base register changes: the ring now
// lives in other memory, whose contents the log has not shown yet.
function moved(st, which, before) {
  const after = which === "sq" ? st.sqBase : st.cqBase;
  if (after === before) return;
  if (which === "sq") st.sq = st.sq.map(emptySlot);
  else st.cq = st.cq.map(emptyEntry);
}

function regWrite(st, ev, ds) {
  const sqBefore = st.sqBase, cqBefore = st.cqBase;
  const ta = textArgs(ev.text);
  const name = ta.reg && !/^\+?0x/.test(ta.reg) ? ta.reg : ds.regName(ev.args.reg);
  const val = ev.args.val;
  const size = ev.args.size;
  switch (name) {
    case "SQ_BASE": st.sqBase = size === 8 ? val : (st.sqBase || 0) - ((st.sqBase || 0) % 2 ** 32) + val; break;
    case "SQ_BASE_HI": st.sqBase = ((st.sqBase || 0) % 2 ** 32) + val * 2 ** 32; break;
    case "CQ_BASE": st.cqBase = size === 8 ? val : (st.cqBase || 0) - ((st.cqBase || 0) % 2 ** 32) + val; break;
    case "CQ_BASE_HI": st.cqBase = ((st.cqBase || 0) % 2 ** 32) + val * 2 ** 32; break;
    case "SQ_SIZE": st.sqSize = val; resize(st.sq, val, emptySlot, ds.maxRing); break;
    case "CQ_SIZE": st.cqSize = val; resize(st.cq, val, emptyEntry, ds.maxRing); break;
  }
  moved(st, "sq", sqBefore);
  moved(st, "cq", cqBefore);
  ringPhys(st, ds);
}

function resetRings(st) {
  st.sqHead = 0; st.sqTail = 0; st.cqHead = 0; st.cqTail = 0; st.phase = 1;
  st.busy = null; st.stalled = false;
}

// The slot's picture of each descriptor field, by layout field name: addresses
// as exact hex text, the rest as numbers.
const SLOT_FIELDS = {
  src_addr: (d, v) => { d.src = hex(v); },
  dst_addr: (d, v) => { d.dst = hex(v); },
  length: (d, v) => { d.len = Number(v); },
  opcode: (d, v) => { d.opcode = Number(v); d.opName = null; },
  flags: (d, v) => { d.flags = Number(v); },
  req_id: (d, v) => { d.req_id = Number(v); },
};

// slotValues is what a slot knows of its descriptor, as BigInts by field name.
function slotValues(d) {
  const b = (v) => (v == null ? null : BigInt(v));
  return { src_addr: b(d.src), dst_addr: b(d.dst), length: b(d.len), opcode: b(d.opcode), flags: b(d.flags), req_id: b(d.req_id) };
}

// ringRange is the slots [lo, hi] of a ring at base (n entries of layout) that a
// store of size bytes at addr covers, or null.
function ringRange(layout, base, n, addr, size) {
  const first = layout.slot(base, n, addr);
  const last = layout.slot(base, n, addr + size - 1);
  const lo = first >= 0 ? first : addr < base && last >= 0 ? 0 : -1;
  if (lo < 0) return null;
  return [lo, last >= 0 ? last : n - 1];
}

// cpuWrite keeps descriptor and completion contents as the CPU stores them.
// A store of more than 8 bytes (a bulk write from a test harness) is known only
// by its first 8 bytes: the slots it covers become "written, contents unknown"
// until the device fetches them.
function cpuWrite(st, ev, ds) {
  const addr = ev.args.addr;
  const size = ev.args.size || 1;
  const value = exact(ev, "val") ?? 0n;
  const D = ds.descriptor, C = ds.completion;
  const sq = st.sqPhys != null && st.sqSize ? ringRange(D, st.sqPhys, st.sqSize, addr, size) : null;
  if (sq) {
    for (let i = sq[0]; i <= sq[1]; i++) {
      const off = addr - (st.sqPhys + D.size * i);
      let d = st.sq[i];
      if (size > 8) {
        d = st.sq[i] = emptySlot();
        d.written = true;
        if (off === 0) d.src = hex(value);
      } else {
        const values = slotValues(d);
        for (const name of D.store(values, off, size, value)) {
          if (SLOT_FIELDS[name]) SLOT_FIELDS[name](d, values[name]);
        }
      }
      d.seq = ev.seq;
      d.fetched = false;
    }
    st.changed = { ring: "sq", slot: sq[0], by: "cpu" };
    return;
  }
  const cq = st.cqPhys != null && st.cqSize ? ringRange(C, st.cqPhys, st.cqSize, addr, size) : null;
  if (!cq) return;
  // The byte that holds the phase bit, and the req_id field.
  const phaseByte = C.field("phase").offset + (C.bits("phase", "phase").shift >> 3);
  const req = C.field("req_id");
  // The driver clearing its completion ring: entries are no longer posted.
  for (let i = cq[0]; i <= cq[1]; i++) {
    const e = st.cq[i];
    const off = addr - (st.cqPhys + C.size * i);
    if (size > 8 || (off <= phaseByte && off + size > phaseByte)) e.phase = 0;
    if (size > 8) e.req_id = 0;
    else if (off === req.offset) e.req_id = Number(value & ((1n << BigInt(8 * req.size)) - 1n));
    e.posted = false;
    e.seq = ev.seq;
  }
  st.changed = { ring: "cq", slot: cq[0], by: "cpu" };
}

// fold applies one event to st (in place) and returns it.
export function fold(st, ev, ds) {
  const a = ev.args || {};
  st.seq = ev.seq;
  st.t = ev.t;
  if (ev.src) st.lastSrc = { src: ev.src, seq: ev.seq };
  st.changed = null;
  switch (ev.kind) {
    case "sacc_reg_write": regWrite(st, ev, ds); break;
    case "sacc_enable":
      st.sqSize = a.sq_size; st.cqSize = a.cq_size;
      resize(st.sq, a.sq_size, emptySlot, ds.maxRing); resize(st.cq, a.cq_size, emptyEntry, ds.maxRing);
      resetRings(st); st.enabled = true; break;
    case "sacc_ready": st.ready = true; break;
    case "sacc_disable": st.enabled = false; st.ready = false; resetRings(st); break;
    case "sacc_reset":
      st.enabled = false; st.ready = false; st.error = false; st.errCode = 0; st.pending = false;
      resetRings(st); break;
    case "sacc_doorbell":
      st.sqTail = a.sq_tail; st.doorbells++;
      if (st.sqSize) st.changed = { ring: "sq", slot: (a.sq_tail + st.sqSize - 1) % st.sqSize, by: "doorbell" };
      break;
    case "sacc_cq_head": st.cqHead = a.cq_head; break;
    case "sacc_fetch":
      if (st.sqSize) {
        const slot = a.sq_head % st.sqSize;
        st.sqHead = (slot + 1) % st.sqSize;
        st.busy = { slot, req_id: null, opcode: null };
        st.changed = { ring: "sq", slot, by: "fetch" };
      }
      break;
    case "sacc_desc":
      if (st.busy && st.sq[st.busy.slot]) {
        const d = st.sq[st.busy.slot];
        const op = textArgs(ev.text).opcode;
        Object.assign(d, { req_id: a.req_id, len: a.len, flags: a.flags, opcode: a.opcode, opName: op || null, fetched: true });
        st.busy.req_id = a.req_id; st.busy.opcode = op || a.opcode;
        st.changed = { ring: "sq", slot: st.busy.slot, by: "desc" };
      }
      break;
    case "sacc_cq_post":
      if (st.cqSize) {
        const slot = a.cq_tail % st.cqSize;
        st.cq[slot] = { req_id: a.req_id, status: a.status, phase: a.phase, posted: true, seq: ev.seq };
        st.cqTail = (slot + 1) % st.cqSize;
        st.changed = { ring: "cq", slot, by: "post" };
        st.completions++;
        st.busy = null;
      }
      break;
    case "sacc_phase_flip": st.phase = a.phase; break;
    case "sacc_cq_full": st.stalled = true; break;
    case "sacc_cq_resume": st.stalled = false; break;
    case "sacc_cmd_error": st.cmdErrors++; break;
    case "sacc_device_error": st.error = true; st.ready = false; st.errCode = a.code; st.busy = null; break;
    case "sacc_idle": st.busy = null; if (st.sqSize) st.sqHead = a.sq_head % st.sqSize; break;
    case "sacc_msix_send": st.msis++; st.pending = false; break;
    case "sacc_msix_pending": st.pending = true; break;
    case "msi_deliver": st.irqs++; break;
    case "irq_entry": st.inIrq = true; break;
    case "irq_exit": st.inIrq = false; break;
    case "syscall": st.syscalls++; break;
    case "iommu_reg_write": {
      if (ds.iommuRegName(a.reg) === "CTRL") {
        st.iommu.on = (a.val & ds.registerBit("iommu", "CTRL", "TRANSLATE_ENABLE")) !== 0;
        ringPhys(st, ds);
      }
      break;
    }
    case "iommu_translate": {
      const page = Math.floor(a.iova / ds.pageSize) * ds.pageSize;
      st.pages[page] = Math.floor(a.phys / ds.pageSize) * ds.pageSize;
      st.iommu.lastTranslate = { iova: a.iova, phys: a.phys, perm: a.perm, seq: ev.seq };
      ringPhys(st, ds);
      break;
    }
    case "iommu_fault":
      st.iommu.faults++;
      st.iommu.lastFault = { iova: a.iova, text: ev.text, seq: ev.seq };
      break;
    case "cpu_write": cpuWrite(st, ev, ds); break;
    case "cpu_read": {
      const i = ds.completion.slot(st.cqPhys, st.cqSize, a.addr);
      if (i >= 0) st.changed = { ring: "cq", slot: i, by: "poll" };
      break;
    }
  }
  return st;
}

// stateAt folds events 1..pos of log into a fresh state: the definition that a
// Timeline computes faster.
export function stateAt(log, pos, ds) {
  const st = initialState();
  for (let i = 0; i < Math.min(pos, log.length); i++) fold(st, log[i], ds);
  return st;
}

// Timeline is a widget's event log and the states derived from it.
export class Timeline {
  constructor(ds) {
    this.ds = ds;
    this.clear();
  }

  clear() {
    this.log = [];
    this.checkpoints = [initialState()]; // checkpoints[k] = state after event k*256
    this.cur = initialState();
  }

  get length() { return this.log.length; }

  // append adds events (already in order, contiguous); it returns false on a gap.
  append(events, from) {
    if (from != null && from !== this.log.length + 1) {
      const skip = this.log.length + 1 - from;
      if (skip < 0) return false;
      events = events.slice(skip);
    }
    for (const ev of events) this.log.push(ev);
    return true;
  }

  event(pos) { return pos > 0 ? this.log[pos - 1] : null; }

  // stateAt returns the state after event pos (0: before the first). The result
  // is shared: callers must not change it.
  stateAt(pos) {
    pos = Math.max(0, Math.min(pos, this.log.length));
    let st = this.cur;
    const k = Math.min(Math.floor(pos / CHECKPOINT), this.checkpoints.length - 1);
    if (pos < st.seq || this.checkpoints[k].seq > st.seq) st = clone(this.checkpoints[k]);
    while (st.seq < pos) {
      fold(st, this.log[st.seq], this.ds);
      if (st.seq % CHECKPOINT === 0 && this.checkpoints.length === st.seq / CHECKPOINT) {
        this.checkpoints.push(clone(st));
      }
    }
    this.cur = st;
    return st;
  }

  // lastWith finds the last event at or before pos that satisfies pred.
  lastWith(pos, pred) {
    for (let i = Math.min(pos, this.log.length); i > 0; i--) {
      if (pred(this.log[i - 1])) return this.log[i - 1];
    }
    return null;
  }
}
