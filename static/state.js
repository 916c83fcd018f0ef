// state.js: the machine as the pictures see it, folded from the event log.
//
// Every view is a pure function of (log, position): fold events 1..position
// into a fresh state. A Timeline keeps the log, a checkpoint every 256 events
// and the last state it computed, so stepping forward costs one event and
// scrubbing anywhere costs at most 255.

const CHECKPOINT = 256;
const MAX_RING = 4096;

// Register offsets in BAR0 (SPEC §5), for writes whose text has no name.
const REG_BY_OFFSET = {
  0x08: "CTRL", 0x10: "SQ_BASE", 0x14: "SQ_BASE_HI", 0x18: "SQ_SIZE", 0x20: "CQ_BASE",
  0x24: "CQ_BASE_HI", 0x28: "CQ_SIZE", 0x30: "CQ_HEAD", 0x38: "IRQ_ACK", 0x1000: "SQ_TAIL",
  0x1004: "CQ_HEAD_DB",
};

function emptySlot() {
  return { req_id: null, opcode: null, opName: null, len: null, flags: null, src: null, dst: null, seq: 0, fetched: false };
}
function emptyEntry() {
  return { req_id: 0, status: 0, phase: 0, posted: false, seq: 0 };
}

function initialState() {
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
    pages: {},                             // IOVA page -> phys page (hex strings), as translated
    irqs: 0, msis: 0, pending: false, inIrq: false, syscalls: 0,
    doorbells: 0, completions: 0, cmdErrors: 0,
    lastSrc: null,                         // src of the last event that had one
  };
}

function resize(arr, n, make) {
  n = Math.max(0, Math.min(n | 0, MAX_RING));
  while (arr.length < n) arr.push(make());
  arr.length = n;
}

function clone(st) {
  return typeof structuredClone === "function" ? structuredClone(st) : JSON.parse(JSON.stringify(st));
}

const PAGE = 4096;

// phys gives the host physical address for a DMA address, when known.
function toPhys(st, addr) {
  if (addr == null) return null;
  if (!st.iommu.on) return addr;
  const page = Math.floor(addr / PAGE) * PAGE;
  const p = st.pages[page];
  return p == null ? null : p + (addr - page);
}

function ringPhys(st) {
  st.sqPhys = toPhys(st, st.sqBase);
  st.cqPhys = toPhys(st, st.cqBase);
}

// moved clears a ring's picture when its base register changes: the ring now
// lives in other memory, whose contents the log has not shown yet.
function moved(st, which, before) {
  const after = which === "sq" ? st.sqBase : st.cqBase;
  if (after === before) return;
  if (which === "sq") st.sq = st.sq.map(emptySlot);
  else st.cq = st.cq.map(emptyEntry);
}

function regWrite(st, ev, L) {
  const sqBefore = st.sqBase, cqBefore = st.cqBase;
  const ta = L.textArgs(ev.text);
  const name = ta.reg && !/^\+?0x/.test(ta.reg) ? ta.reg : REG_BY_OFFSET[ev.args.reg];
  const val = ev.args.val;
  const size = ev.args.size;
  switch (name) {
    case "SQ_BASE": st.sqBase = size === 8 ? val : (st.sqBase || 0) - ((st.sqBase || 0) % 2 ** 32) + val; break;
    case "SQ_BASE_HI": st.sqBase = ((st.sqBase || 0) % 2 ** 32) + val * 2 ** 32; break;
    case "CQ_BASE": st.cqBase = size === 8 ? val : (st.cqBase || 0) - ((st.cqBase || 0) % 2 ** 32) + val; break;
    case "CQ_BASE_HI": st.cqBase = ((st.cqBase || 0) % 2 ** 32) + val * 2 ** 32; break;
    case "SQ_SIZE": st.sqSize = val; resize(st.sq, val, emptySlot); break;
    case "CQ_SIZE": st.cqSize = val; resize(st.cq, val, emptyEntry); break;
  }
  moved(st, "sq", sqBefore);
  moved(st, "cq", cqBefore);
  ringPhys(st);
}

function resetRings(st) {
  st.sqHead = 0; st.sqTail = 0; st.cqHead = 0; st.cqTail = 0; st.phase = 1;
  st.busy = null; st.stalled = false;
}

// slotOf finds which slot of a ring (at phys base, entry size, n entries) addr is in.
function slotOf(base, size, n, addr) {
  if (base == null || addr == null || addr < base || addr >= base + size * n) return -1;
  return Math.floor((addr - base) / size);
}

// cpuWrite keeps descriptor and completion contents as the CPU stores them.
// A store of more than 8 bytes (a bulk write from a test harness) is known only
// by its first 8 bytes: the slots it covers become "written, contents unknown"
// until the device fetches them.
function cpuWrite(st, ev, L) {
  const addr = ev.args.addr;
  const size = ev.args.size || 1;
  const ta = L.textArgs(ev.text);
  const val = ev.args.val;
  if (st.sqPhys != null && st.sqSize) {
    const first = slotOf(st.sqPhys, 32, st.sqSize, addr);
    const last = slotOf(st.sqPhys, 32, st.sqSize, addr + size - 1);
    const lo = first >= 0 ? first : addr < st.sqPhys && last >= 0 ? 0 : -1;
    if (lo >= 0) {
      const hi = last >= 0 ? last : st.sqSize - 1;
      for (let i = lo; i <= hi; i++) {
        const off = addr - (st.sqPhys + 32 * i);
        let d = st.sq[i];
        if (size > 8) {
          d = st.sq[i] = emptySlot();
          d.written = true;
          if (off === 0) d.src = ta.val || L.hex(val);
        } else if (off === 0 && size === 8) d.src = ta.val || L.hex(val);
        else if (off === 8 && size === 8) d.dst = ta.val || L.hex(val);
        else if (off === 16) d.len = size >= 4 ? val % 2 ** 32 : val;
        else if (off === 20) { d.opcode = val & 0xffff; d.opName = null; if (size >= 4) d.flags = Math.floor(val / 65536) & 0xffff; }
        else if (off === 22) d.flags = val;
        else if (off === 24) d.req_id = size > 4 ? val % 2 ** 32 : val;
        d.seq = ev.seq;
        d.fetched = false;
      }
      st.changed = { ring: "sq", slot: lo, by: "cpu" };
      return;
    }
  }
  if (st.cqPhys != null && st.cqSize) {
    const first = slotOf(st.cqPhys, 16, st.cqSize, addr);
    const last = slotOf(st.cqPhys, 16, st.cqSize, addr + size - 1);
    const lo = first >= 0 ? first : addr < st.cqPhys && last >= 0 ? 0 : -1;
    if (lo < 0) return;
    const hi = last >= 0 ? last : st.cqSize - 1;
    // The driver clearing its completion ring: entries are no longer posted.
    for (let i = lo; i <= hi; i++) {
      const e = st.cq[i];
      const off = addr - (st.cqPhys + 16 * i);
      if (size > 8 || (off <= 14 && off + size > 14)) e.phase = 0;
      if (size > 8 || off === 0) e.req_id = size > 8 ? 0 : val % 2 ** 32;
      e.posted = false;
      e.seq = ev.seq;
    }
    st.changed = { ring: "cq", slot: lo, by: "cpu" };
  }
}

// fold applies one event to st (in place) and returns it.
function fold(st, ev, L) {
  const a = ev.args || {};
  st.seq = ev.seq;
  st.t = ev.t;
  if (ev.src) st.lastSrc = { src: ev.src, seq: ev.seq };
  st.changed = null;
  switch (ev.kind) {
    case "sacc_reg_write": regWrite(st, ev, L); break;
    case "sacc_enable":
      st.sqSize = a.sq_size; st.cqSize = a.cq_size;
      resize(st.sq, a.sq_size, emptySlot); resize(st.cq, a.cq_size, emptyEntry);
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
        const op = L.textArgs(ev.text).opcode;
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
      const ta = L.textArgs(ev.text);
      if (ta.reg === "CTRL" || a.reg === 8) { st.iommu.on = (a.val & 1) === 1; ringPhys(st); }
      break;
    }
    case "iommu_translate": {
      const page = Math.floor(a.iova / PAGE) * PAGE;
      st.pages[page] = Math.floor(a.phys / PAGE) * PAGE;
      st.iommu.lastTranslate = { iova: a.iova, phys: a.phys, perm: a.perm, seq: ev.seq };
      ringPhys(st);
      break;
    }
    case "iommu_fault":
      st.iommu.faults++;
      st.iommu.lastFault = { iova: a.iova, text: ev.text, seq: ev.seq };
      break;
    case "cpu_write": cpuWrite(st, ev, L); break;
    case "cpu_read": {
      const i = slotOf(st.cqPhys, 16, st.cqSize, a.addr);
      if (i >= 0) st.changed = { ring: "cq", slot: i, by: "poll" };
      break;
    }
  }
  return st;
}

// Timeline is a widget's event log and the states derived from it.
class Timeline {
  constructor(L) {
    this.L = L;
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
      fold(st, this.log[st.seq], this.L);
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

export function install(L) {
  L.Timeline = Timeline;
  L.foldEvent = fold;
  L.initialState = initialState;
}
