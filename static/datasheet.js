// datasheet.js: the machine as the manifest describes it (docs/PROTOCOL.md, "The
// manifest"). A Datasheet answers the questions the views ask — which register is
// at this offset, what is this opcode called, where is this field of a
// descriptor — from the server's own tables, so nothing here knows an offset.

import { hex } from "./format.js";

// Layout is a structure in memory: its size and little-endian fields.
export class Layout {
  constructor(l) {
    this.name = l.name;
    this.size = l.size;
    this.fields = l.fields;
    this.byName = new Map(l.fields.map((f) => [f.name, f]));
  }

  field(name) {
    const f = this.byName.get(name);
    if (!f) throw new Error("the " + this.name + " layout has no field " + name);
    return f;
  }

  // bits is a field's named run of bits: {name, mask, shift, width}.
  bits(fieldName, bitName) {
    const b = (this.field(fieldName).bits || []).find((x) => x.name === bitName);
    if (!b) throw new Error("the " + this.name + " field " + fieldName + " has no bits " + bitName);
    return b;
  }

  // decode reads every field from bytes (a Uint8Array of at least size bytes),
  // as BigInts by field name.
  decode(bytes) {
    const out = {};
    for (const f of this.fields) out[f.name] = readLE(bytes, f.offset, f.size);
    return out;
  }

  // store merges a CPU store (value, a BigInt, of size bytes at offset off into the
  // structure) into known field values (BigInts or null by name), and returns the
  // names of the fields it touched. Bytes of a field the store misses keep their
  // old value (0 if unknown).
  store(values, off, size, value) {
    const touched = [];
    for (const f of this.fields) {
      const lo = Math.max(off, f.offset), hi = Math.min(off + size, f.offset + f.size);
      if (lo >= hi) continue;
      const width = BigInt(8 * (hi - lo));
      const part = (value >> BigInt(8 * (lo - off))) & ((1n << width) - 1n);
      const shift = BigInt(8 * (lo - f.offset));
      const old = values[f.name] == null ? 0n : values[f.name];
      values[f.name] = (old & ~(((1n << width) - 1n) << shift)) | (part << shift);
      touched.push(f.name);
    }
    return touched;
  }

  // slot finds which of n entries of this structure, laid out from base, holds
  // addr: -1 if none (or the ring is not known).
  slot(base, n, addr) {
    if (base == null || addr == null || !n || addr < base || addr >= base + this.size * n) return -1;
    return Math.floor((addr - base) / this.size);
  }
}

function readLE(bytes, off, size) {
  let v = 0n;
  for (let i = size - 1; i >= 0; i--) v = (v << 8n) | BigInt(bytes[off + i]);
  return v;
}

// registerNames maps every offset of a register table to its name, the high
// halves of 64-bit registers included.
function registerNames(table) {
  const names = new Map();
  for (const r of table) {
    names.set(r.offset, r.name);
    if (r.hi_name) names.set(r.offset + 4, r.hi_name);
  }
  return names;
}

export class Datasheet {
  // manifest is the document of GET /api/v1/manifest.
  constructor(manifest) {
    const d = manifest.datasheet;
    this.manifest = manifest;
    this.pageSize = d.page_size;
    this.maxRing = d.ring_size_max;
    this.registers = d.registers;
    this.iommuRegisters = d.iommu_registers;
    this.regNames = registerNames(d.registers);
    this.iommuRegNames = registerNames(d.iommu_registers);
    this.opcodes = new Map(d.opcodes.map((o) => [o.value, o]));
    this.reservedOpcodes = d.reserved_opcodes;
    this.invalidOpcode = d.invalid_opcode;
    this.statuses = d.statuses;
    this.layouts = {};
    for (const [name, l] of Object.entries(d.layouts)) this.layouts[name] = new Layout(l);
    this.descriptor = this.layout("descriptor");
    this.completion = this.layout("completion");
    this.sides = manifest.sides;
    this.kinds = manifest.kinds;
    this.views = manifest.views;
    this.scenarios = new Map(manifest.scenarios.map((s) => [s.name, s]));
  }

  layout(name) {
    const l = this.layouts[name];
    if (!l) throw new Error("the manifest has no " + name + " layout");
    return l;
  }

  // regName names a BAR0 offset; null for a reserved one.
  regName(off) { return this.regNames.get(off) || null; }

  // iommuRegName names an offset in the IOMMU's register block; null if reserved.
  iommuRegName(off) { return this.iommuRegNames.get(off) || null; }

  // registerBit is the mask of a named bit of a register ("iommu" or "bar0").
  registerBit(block, reg, bit) {
    const table = block === "iommu" ? this.iommuRegisters : this.registers;
    const r = table.find((x) => x.name === reg);
    const b = r && (r.bits || []).find((x) => x.name === bit);
    if (!b) throw new Error("no bit " + bit + " in " + block + " register " + reg);
    return b.mask;
  }

  // opName names an opcode (a number, a BigInt, or a name that passes through).
  opName(op) {
    if (typeof op === "string" && isNaN(Number(op))) return op;
    const v = Number(op);
    const o = this.opcodes.get(v);
    if (o) return o.name;
    const r = this.reservedOpcodes.find((x) => v >= x.first && v <= x.last);
    return r ? r.name : this.invalidOpcode;
  }

  // opShort is a slot's opcode in at most five characters.
  opShort(slot) {
    const op = slot.opcode != null ? slot.opcode : 0;
    const name = slot.opName || this.opName(op);
    for (const o of this.opcodes.values()) if (o.name === name) return o.short;
    return name.length <= 5 ? name : hex(Number(op));
  }

  // scenario is a scenario of the catalogue, or null.
  scenario(name) { return this.scenarios.get(name) || null; }
}
