import test from "node:test";
import assert from "node:assert/strict";
import { bytesAt, exact, hex, ns, optionsText, parseDump, parseOptions, textArgs } from "../format.js";

test("hex formats numbers, BigInts and widths, and passes strings through", () => {
  assert.equal(hex(255), "0xff");
  assert.equal(hex(0xffffffffffffffffn), "0xffffffffffffffff");
  assert.equal(hex(1, 8), "0x00000001");
  assert.equal(hex("0xabc"), "0xabc");
  assert.equal(hex(null), "?");
});

test("ns picks the unit", () => {
  assert.equal(ns(9999), "9999 ns");
  assert.equal(ns(86250), "86.25 µs");
  assert.equal(ns(104100), "104.1 µs");
  assert.equal(ns(12345678), "12.35 ms");
  assert.equal(ns(null), "");
});

test("textArgs and exact read the exact values of an event's text", () => {
  const ev = { args: { val: 18446744073709552000 }, text: "addr=0x102018 size=8 val=0xffffffffffffffff" };
  assert.deepEqual(textArgs(ev.text), { addr: "0x102018", size: "8", val: "0xffffffffffffffff" });
  assert.equal(exact(ev, "val"), 0xffffffffffffffffn);
  assert.equal(exact({ args: { n: 5 }, text: "" }, "n"), 5n);
  assert.equal(exact({ args: {}, text: "" }, "n"), null);
});

test("options: parsed from data-options, shown in the title", () => {
  assert.deepEqual(parseOptions(" cpu=arm64 , irq=on,,wmb"), { cpu: "arm64", irq: "on", wmb: "on" });
  assert.equal(optionsText({ cpu: "arm64", irq: "on" }), " (cpu=arm64, irq=on)");
  assert.equal(optionsText({}), "");
});

test("parseDump and bytesAt read xp output, little-endian", () => {
  const rows = parseDump("0000000000100000: 0x00200000 0x00000000 0x00201000 0x00000000\n" +
    "(not a dump line)\n0000000000100010: 0x00000052 0x00010001\n");
  assert.equal(rows.length, 2);
  assert.equal(rows[1].addr, 0x100010n);
  assert.deepEqual(rows[1].words, [0x52, 0x10001]);
  assert.deepEqual([...bytesAt(rows, 0x100012n, 4)], [0, 0, 1, 0]);
  assert.equal(bytesAt(rows, 0x100014n, 8), null, "past the dump");
});
