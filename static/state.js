// state.js: the machine as the pictures see it, folded from the event log.
//
// Every view is a pure function of (log, position): fold events 1..position
// into a fresh state. A Timeline keeps the log, a checkpoint every 256 events
// and the last state it computed, so stepping forward costs one event and
// scrubbing anywhere costs at most 255.

import { exact, hex, textArgs } from "./format.js";

const CHECKPOINT = 256;

function emptySlot() {
  return { req_id: null, opcode: null, opName: null, len: null, flags: null, src: null, dst: null, seq: 0, fetched: false,
    written: false, done: false, overtaken: false };
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
    // The driver's side of the CQ (driver_cq): the slot it looks at next and the
    // phase it expects there; known once the driver's queue has started.
    drv: { known: false, head: 0, phase: 1, seq: 0 },
    // The CPU's store buffer: stores that entered it (cpu_store) and have not
    // landed yet, in program order; the last landings, in the order they
    // drained; the last barrier; doorbells that overtook a descriptor.
    sb: { pending: [], landed: [], drainSeq: 0, barrier: null, overtakes: [], max: 0, issued: [], landing: null },
    // The IOMMU's insides: IOTLB entries (most recently used first), the walk
    // under way or last done, recent faults.
    tlb: [], walk: null, faultLog: [],
    // Configuration space as the CPU saw it: per function (BDF number) the
    // registers read and written, and each BAR's sizing steps.
    cfg: { devs: {}, bars: {} },
    // Processes' address spaces (proc_map) and system calls.
    procs: {}, sys: { last: null, byName: {} },
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
  // v1 (§5): ring registers are frozen while CTRL.ENABLE = 1 (the write is a
  // guest error, and changes nothing).
  if (st.enabled && /^(SQ|CQ)_(BASE|SIZE)/.test(name || "")) return;
  switch (name) {
    case "SQ_BASE": st.sqBase = size === 8 ? val : (st.sqBase || 0) - ((st.sqBase || 0) % 2 ** 32) + val; break;
    case "SQ_BASE_HI": st.sqBase = ((st.sqBase || 0) % 2 ** 32) + val * 2 ** 32; break;
    case "CQ_BASE": st.cqBase = size === 8 ? val : (st.cqBase || 0) - ((st.cqBase || 0) % 2 ** 32) + val; break;
    case "CQ_BASE_HI": st.cqBase = ((st.cqBase || 0) % 2 ** 32) + val * 2 ** 32; break;
    case "SQ_SIZE": st.sqSize = val; resize(st.sq, val, emptySlot, ds.maxRing); break;
    case "CQ_SIZE": st.cqSize = val; resize(st.cq, val, emptyEntry, ds.maxRing); break;
    case "SQ_TAIL": st.sb.landing = st.sb.issued.shift() || null; break;
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
      const mine = !ownedByDevice(st, i);
      if (size > 8) {
        const late = d && d.overtaken;
        d = st.sq[i] = emptySlot();
        d.written = mine;
        d.overtaken = !mine && late;
        d.unknown = true;
        if (off === 0) d.src = hex(value);
      } else {
        if (mine) { d.written = true; d.done = false; }
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

// ---- the driver's publication of slots, and the store buffer

// doorbell publishes slots [old tail, new tail) to the device (§7.1). A slot
// whose stores are still in the store buffer is published before its contents
// reached memory: the doorbell overtook the descriptor.
function doorbell(st, ev, ds) {
  const a = ev.args;
  const n = st.sqSize;
  const before = st.sqTail;
  st.sqTail = a.sq_tail; st.doorbells++;
  if (a.sq_head != null && n) st.sqHead = a.sq_head % n;
  if (!n) return;
  st.changed = { ring: "sq", slot: (a.sq_tail + n - 1) % n, by: "doorbell" };
  const published = [];
  for (let i = before % n; i !== a.sq_tail % n && published.length < n; i = (i + 1) % n) published.push(i);
  const late = [];
  // The stores that were waiting when the CPU issued this doorbell count too:
  // whatever drained them before it landed (a barrier after the doorbell) did
  // so by luck, not by order (§7.4).
  const issued = st.sb.landing ? st.sb.landing.slots : {};
  st.sb.landing = null;
  for (const i of published) {
    const d = st.sq[i];
    if (!d) continue;
    d.written = false;
    const waiting = Math.max(st.sb.pending.filter((p) => p.ring === "sq" && p.slot === i).length, issued[i] || 0);
    if (waiting) { d.overtaken = true; late.push({ slot: i, stores: waiting }); }
  }
  if (late.length) {
    st.sb.overtakes.push({ seq: ev.seq, slots: late });
    if (st.sb.overtakes.length > OVERTAKES_KEPT) st.sb.overtakes.shift();
  }
}

// bellIssued notes, when the CPU issues an SQ_TAIL write (cpu_mmio_write), how
// many stores into each SQ slot are still in the store buffer. The write is
// posted: it lands, as sacc_reg_write, after every write issued before it, so
// the k-th SQ_TAIL landing is the k-th issue.
function bellIssued(st, ev) {
  const slots = {};
  for (const p of st.sb.pending) if (p.ring === "sq") slots[p.slot] = (slots[p.slot] || 0) + 1;
  st.sb.issued.push({ seq: ev.seq, slots });
  if (st.sb.issued.length > ISSUED_KEPT) st.sb.issued.shift();
}

const ISSUED_KEPT = 16;
const LANDED_KEPT = 12, OVERTAKES_KEPT = 8, FAULTS_KEPT = 8, TLB_MAX = 64;

// target says what a store's address is in the picture: an SQ slot, a CQ slot,
// or other memory.
function target(st, addr, ds) {
  const i = ds.descriptor.slot(st.sqPhys, st.sqSize, addr);
  if (i >= 0) return { ring: "sq", slot: i };
  const j = ds.completion.slot(st.cqPhys, st.cqSize, addr);
  if (j >= 0) return { ring: "cq", slot: j };
  return { ring: null, slot: -1 };
}

function bufferStore(st, ev, ds) {
  const a = ev.args;
  const t = target(st, a.addr, ds);
  st.sb.pending.push({ addr: a.addr, size: a.size, val: exact(ev, "val"), seq: ev.seq, ring: t.ring, slot: t.slot });
  st.sb.max = Math.max(st.sb.max, st.sb.pending.length);
  if (t.ring === "sq") {
    // The driver is writing this slot: it is not free, and not yet published.
    const d = st.sq[t.slot];
    if (d && !ownedByDevice(st, t.slot)) { d.written = true; d.done = false; }
    st.changed = { ring: "sq", slot: t.slot, by: "store" };
  }
}

// landed removes the store that just became visible (cpu_write) or went into a
// dirty cache line (cpu_store_cached) from the pending list. Stores to the same
// bytes land in program order, so the oldest match is the one.
function landed(st, ev, cached) {
  const a = ev.args;
  const sb = st.sb;
  const i = sb.pending.findIndex((p) => p.addr === a.addr && p.size === a.size);
  if (i < 0) return;
  const [p] = sb.pending.splice(i, 1);
  sb.drainSeq++;
  sb.landed.push({ ...p, landedSeq: ev.seq, order: sb.drainSeq, outOfOrder: i > 0, cached });
  if (sb.landed.length > LANDED_KEPT) sb.landed.shift();
}

// ---- the IOTLB and the walk

function tlbUse(st, iova, seq) {
  const i = st.tlb.findIndex((e) => e.iova === iova);
  if (i < 0) return;
  const [e] = st.tlb.splice(i, 1);
  e.used = seq;
  st.tlb.unshift(e);
}

// translated records a translation: after a walk it fills the IOTLB (the walk's
// leaf entry remembered, so that a later store to it can be seen to make the
// entry stale); after a hit it only finishes the picture of the access.
function translated(st, ev) {
  const a = ev.args;
  const w = st.walk;
  if (w && w.iova === a.iova && !w.result && w.levels.length) {
    w.result = { phys: a.phys, perm: a.perm, seq: ev.seq };
    const leaf = w.levels[w.levels.length - 1];
    st.tlb = st.tlb.filter((e) => e.iova !== a.iova);
    st.tlb.unshift({ iova: a.iova, phys: a.phys, perm: a.perm, seq: ev.seq, used: ev.seq,
      pte: leaf.table + 8 * leaf.index, pteVal: leaf.entry, stale: false });
    if (st.tlb.length > TLB_MAX) st.tlb.length = TLB_MAX;
  }
}

// staleCheck marks IOTLB entries whose page-table entry the CPU has just
// rewritten: the IOMMU does not watch the tables (§10), so the cached
// translation lives on until it is invalidated.
function staleCheck(st, ev) {
  if (!st.tlb.length) return;
  const a = ev.args;
  for (const e of st.tlb) {
    if (a.addr <= e.pte && e.pte < a.addr + (a.size || 1)) {
      const v = exact(ev, "val");
      const same = a.size === 8 && a.addr === e.pte && v === e.pteVal;
      if (!same) { e.stale = true; e.staleSeq = ev.seq; e.nowVal = a.size === 8 ? v : null; }
    }
  }
}

// invalidate drops what the IOMMU says it dropped: the event counts them, so a
// quirk that acknowledges and keeps them shows as entries that stay.
function invalidate(st, ev) {
  const a = ev.args;
  const iova = exact(ev, "iova");
  if (!a.dropped) return;
  if (iova === (1n << 64n) - 1n) { st.tlb = []; return; }
  st.tlb = st.tlb.filter((e) => BigInt(e.iova) !== iova);
}

// ---- configuration space

function cfgAccess(st, ev) {
  const a = ev.args;
  const ta = textArgs(ev.text);
  const dev = st.cfg.devs[a.dev] || (st.cfg.devs[a.dev] = { bdf: ta.dev || String(a.dev), regs: {}, present: null });
  const write = ev.kind === "pci_cfg_write";
  const val = exact(ev, "val");
  dev.regs[a.reg] = { val, size: a.size, seq: ev.seq, write };
  if (!write && a.reg === 0) dev.present = val !== (1n << BigInt(8 * a.size)) - 1n;
  // BAR sizing (§4): all ones written, the size mask read back, the address
  // written. Each BAR register's steps are kept in order.
  if (a.reg >= 0x10 && a.reg < 0x28 && a.size === 4) {
    const key = a.dev + ":" + a.reg;
    const bar = st.cfg.bars[key] || (st.cfg.bars[key] = { dev: a.dev, reg: a.reg, steps: [], size: null, addr: null });
    const allOnes = val === 0xffffffffn;
    if (write && allOnes) bar.steps = [];
    bar.steps.push({ write, val, seq: ev.seq });
    if (!write && bar.steps.length >= 2 && bar.steps[bar.steps.length - 2].write && bar.steps[bar.steps.length - 2].val === 0xffffffffn) {
      const mask = val & ~0xfn;
      bar.size = mask ? Number((~mask + 1n) & 0xffffffffn) : 0;
    }
    if (write && !allOnes) bar.addr = val & ~0xfn;
  }
}

function barMap(st, ev) {
  const a = ev.args;
  st.cfg.mapped = st.cfg.mapped || {};
  st.cfg.mapped[a.bar] = { addr: exact(ev, "addr"), size: a.size, seq: ev.seq };
}

// ---- ownership, as §7.1 and §7.3 define it

// ownedByDevice says whether SQ slot i lies in [sq_head, sq_tail): published by
// a doorbell and not yet completed.
export function ownedByDevice(st, i) {
  const n = st.sqSize;
  if (!n) return false;
  return (i - st.sqHead + n) % n < (st.sqTail - st.sqHead + n) % n;
}

// sqOwner is an SQ slot's state: "device" (published, not completed),
// "written" (the driver has stored to it since it was last free, and not yet
// rung the doorbell for it) or "free".
export function sqOwner(st, i) {
  if (ownedByDevice(st, i)) return "device";
  return st.sq[i] && st.sq[i].written ? "written" : "free";
}

// cqOwner is a CQ slot's owner as §7.3 sees it: the driver's from CQ_HEAD up to
// the device's tail (posted, not yet returned), the device's otherwise.
export function cqOwner(st, i) {
  const n = st.cqSize;
  if (!n) return null;
  return (i - st.cqHead + n) % n < (st.cqTail - st.cqHead + n) % n ? "driver" : "device";
}

// expectedPhase is the phase the driver will take as new in CQ slot i: its
// expected phase from its head to the end of the ring, the other one before
// its head (those slots come round on the next lap). null while the driver's
// side is not known.
export function expectedPhase(st, i) {
  if (!st.drv.known) return null;
  return i >= st.drv.head ? st.drv.phase : st.drv.phase ^ 1;
}

// cqEntryState is how the driver will take CQ slot i: "new" (its phase is the
// one the driver expects there: a completion still to consume), "stale" (a
// phase from an earlier lap: consumed, or never this lap's) or "empty" (never
// written by the device since the ring was set up).
export function cqEntryState(st, i) {
  const e = st.cq[i];
  if (!e) return null;
  const want = expectedPhase(st, i);
  if (want == null) return e.posted ? "posted" : "empty";
  if (e.phase === want) return "new";
  return e.posted ? "stale" : "empty";
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
    case "cpu_mmio_write": if (a.bar === 0 && ds.regName(a.off) === "SQ_TAIL") bellIssued(st, ev); break;
    case "sacc_enable":
      st.sqSize = a.sq_size; st.cqSize = a.cq_size;
      resize(st.sq, a.sq_size, emptySlot, ds.maxRing); resize(st.cq, a.cq_size, emptyEntry, ds.maxRing);
      resetRings(st); st.enabled = true; break;
    case "sacc_ready": st.ready = true; break;
    case "sacc_disable": st.enabled = false; st.ready = false; resetRings(st); break;
    case "sacc_reset":
      st.enabled = false; st.ready = false; st.error = false; st.errCode = 0; st.pending = false;
      resetRings(st); break;
    case "sacc_doorbell": doorbell(st, ev, ds); break;
    case "sacc_cq_head": st.cqHead = a.cq_head; break;
    case "sacc_fetch":
      // §7.1: the slot stays the device's until its completion is posted; the
      // device's sq_head moves on only then (sacc_cq_post).
      if (st.sqSize) {
        const slot = a.sq_head % st.sqSize;
        st.sqHead = slot;
        st.busy = { slot, req_id: null, opcode: null };
        st.changed = { ring: "sq", slot, by: "fetch" };
      }
      break;
    case "sacc_desc":
      if (st.busy && st.sq[st.busy.slot]) {
        const d = st.sq[st.busy.slot];
        const op = textArgs(ev.text).opcode;
        // What the device read. The slot keeps what memory holds: the CPU's
        // stores as they landed, and the device's read for what no store has
        // shown. They differ when a store landed after the fetch: the doorbell
        // overtook the descriptor and the device ran a stale one.
        const read = { req_id: a.req_id, len: a.len, flags: a.flags, opcode: a.opcode };
        const known = !d.unknown;
        for (const k of Object.keys(read)) if (!known || d[k] == null) d[k] = read[k];
        d.opName = d.opcode === a.opcode ? op || null : null;
        d.read = read;
        d.fetched = true; d.unknown = false;
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
      if (st.sqSize) {
        // §7.1: the descriptor's completion is posted, so its slot is the
        // driver's again; what memory holds there is last lap's descriptor.
        const d = st.sq[st.sqHead];
        if (d) { d.written = false; d.done = true; d.overtaken = false; }
        st.sqHead = (st.sqHead + 1) % st.sqSize;
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
    case "syscall": {
      st.syscalls++;
      const nr = textArgs(ev.text).nr || String(a.nr);
      st.sys.last = { nr, seq: ev.seq, doorbellsBefore: st.doorbells, completionsBefore: st.completions };
      st.sys.byName[nr] = (st.sys.byName[nr] || 0) + 1;
      break;
    }
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
      translated(st, ev);
      ringPhys(st, ds);
      break;
    }
    case "iommu_fault": {
      st.iommu.faults++;
      st.iommu.lastFault = { iova: a.iova, text: ev.text, seq: ev.seq };
      const ta = textArgs(ev.text);
      st.faultLog.push({ iova: a.iova, reason: ta.reason || String(a.reason), access: ta.access || String(a.access), seq: ev.seq });
      if (st.faultLog.length > FAULTS_KEPT) st.faultLog.shift();
      if (st.walk && st.walk.iova === a.iova - (a.iova % ds.pageSize) && !st.walk.result) st.walk.result = { fault: ta.reason || "fault", seq: ev.seq };
      break;
    }
    case "cpu_write": landed(st, ev, false); cpuWrite(st, ev, ds); staleCheck(st, ev); break;
    case "cpu_store": bufferStore(st, ev, ds); break;
    case "cpu_store_cached": landed(st, ev, true); break;
    case "cpu_barrier": st.sb.barrier = { op: textArgs(ev.text).op || "barrier", drained: a.drained, seq: ev.seq }; break;
    case "driver_cq": st.drv = { known: true, head: a.head, phase: a.phase, seq: ev.seq }; break;
    case "iommu_iotlb_miss": st.walk = { iova: a.iova, levels: [], seq: ev.seq, result: null }; break;
    case "iommu_walk": if (st.walk) st.walk.levels.push({ level: a.level, table: a.table, index: a.index, entry: exact(ev, "entry"), seq: ev.seq }); break;
    case "iommu_iotlb_hit": tlbUse(st, a.iova, ev.seq); break;
    case "iommu_iotlb_evict": st.tlb = st.tlb.filter((e) => e.iova !== a.iova); break;
    case "iommu_invalidate": invalidate(st, ev); break;
    case "pci_cfg_read": case "pci_cfg_write": cfgAccess(st, ev); break;
    case "pci_bar_map": barMap(st, ev); break;
    case "proc_map": {
      const p = st.procs[a.pid] || (st.procs[a.pid] = { pid: a.pid, maps: [] });
      p.maps.push({ va: a.va, phys: a.phys, mmio: a.mmio === 1, seq: ev.seq });
      break;
    }
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
