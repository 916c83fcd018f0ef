import test from "node:test";
import assert from "node:assert/strict";
import { ds, manifest } from "./fixtures.js";

test("register names come from the manifest's tables, high halves included", () => {
  for (const r of manifest.datasheet.registers) {
    assert.equal(ds.regName(r.offset), r.name);
    if (r.width === 64) assert.equal(ds.regName(r.offset + 4), r.name + "_HI");
  }
  assert.equal(ds.regName(0x14), "SQ_BASE_HI");
  assert.equal(ds.regName(0x1000), "SQ_TAIL");
  assert.equal(ds.regName(0x44), null, "reserved");
  assert.equal(ds.iommuRegName(0x08), "CTRL");
  assert.equal(ds.iommuRegName(0x14), "PT_ROOT_HI");
  assert.equal(ds.registerBit("iommu", "CTRL", "TRANSLATE_ENABLE"), 1);
  assert.throws(() => ds.registerBit("iommu", "CTRL", "NOSUCH"));
});

test("opcode names and short names, reserved blocks and invalid opcodes", () => {
  assert.equal(ds.opName(1), "MEMCPY");
  assert.equal(ds.opName(2n), "XFORM");
  assert.equal(ds.opName(0x150), "reserved-inference");
  assert.equal(ds.opName(0x250), "reserved-kv");
  assert.equal(ds.opName(3), "invalid");
  assert.equal(ds.opName("MEMCPY"), "MEMCPY", "a name passes through");
  assert.equal(ds.opShort({ opcode: 1 }), "MCPY");
  assert.equal(ds.opShort({ opcode: null }), "NOP");
  assert.equal(ds.opShort({ opcode: 3, opName: null }), "0x3", "a long name gives way to the number");
});

// The bytes of the Go datasheet's own layout test (§6.1, little-endian).
const DESCRIPTOR = [0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 0x00, 0xFF, 0xEE, 0xDD, 0xCC, 0xBB, 0xAA, 0x99,
  0x00, 0x00, 0x10, 0x00, 0x02, 0x00, 0x01, 0x00, 0x0D, 0xF0, 0xFE, 0xCA, 0, 0, 0, 0];

test("a descriptor decodes through the manifest's layout", () => {
  const d = ds.descriptor.decode(Uint8Array.from(DESCRIPTOR));
  assert.deepEqual(d, { src_addr: 0x1122334455667788n, dst_addr: 0x99AABBCCDDEEFF00n, length: 0x100000n,
    opcode: 2n, flags: 1n, req_id: 0xCAFEF00Dn, reserved: 0n });
  assert.equal(ds.descriptor.size, 32);
  assert.equal(ds.descriptor.bits("flags", "interrupt").mask, 1);
});

test("a completion decodes, its phase in the last field", () => {
  const c = ds.completion.decode(Uint8Array.from([0x40, 0, 0, 0, 0x00, 0x10, 0, 0, 0, 0, 0, 0, 0x02, 0x00, 0x01, 0x00]));
  assert.deepEqual(c, { req_id: 0x40n, result_len: 0x1000n, reserved: 0n, status: 2n, phase: 1n });
  const last = ds.completion.fields[ds.completion.fields.length - 1];
  assert.equal(last.name, "phase");
  assert.equal(last.offset + last.size, ds.completion.size);
});

test("store merges a CPU store into the fields it covers", () => {
  const v = { length: null, opcode: 7n, flags: null };
  // 8 bytes at offset 16: length, opcode and flags at once.
  assert.deepEqual(ds.descriptor.store(v, 16, 8, 0x0001000200000052n), ["length", "opcode", "flags"]);
  assert.deepEqual(v, { length: 0x52n, opcode: 2n, flags: 1n });
  // One byte of the opcode keeps the other.
  ds.descriptor.store(v, 21, 1, 0xabn);
  assert.equal(v.opcode, 0xab02n);
});

test("slot finds a ring entry by address", () => {
  assert.equal(ds.descriptor.slot(0x1000, 4, 0x1000 + 32 * 3 + 5), 3);
  assert.equal(ds.descriptor.slot(0x1000, 4, 0x1000 + 32 * 4), -1);
  assert.equal(ds.completion.slot(null, 4, 0x1000), -1);
  assert.equal(ds.completion.slot(0x1000, 0, 0x1000), -1);
});

test("the catalogue: scenarios, their options and quirks", () => {
  const driver = ds.scenario("driver");
  assert.deepEqual(driver.options.map((o) => o.name), ["cpu", "irq", "iommu"]);
  assert.ok(ds.scenario("phases").quirks.includes("no-phase-flip"));
  assert.equal(ds.scenario("nosuch"), null);
  const quirks = new Set(manifest.quirks.map((q) => q.name));
  for (const s of manifest.scenarios) for (const q of s.quirks) assert.ok(quirks.has(q), s.name + ": " + q);
});
