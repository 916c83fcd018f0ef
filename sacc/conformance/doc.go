// Package conformance is saccbook's independent conformance suite for the SACC
// platform and device (specification §§1–10) and for the qtest protocol.
//
// The suite is written from the specification alone. It drives the machine only
// through qtest request lines, exactly as a third-party test program would: it
// enumerates PCI through ECAM and through ports 0xCF8/0xCFC, sizes and assigns the
// BARs, programs rings in RAM, rings doorbells, steps the virtual clock and reads
// completions, interrupts (MSI-X messages aimed at RAM) and IOMMU fault records back
// out of guest memory. Every test is named after the rule it checks and carries a
// comment naming the specification section that states the rule.
//
// By default each test builds a machine in-process and talks to a qtest session.
// With SACC_QTEST_BIN set, each test instead starts "$SACC_QTEST_BIN qtest" and
// speaks the protocol over the process's stdin and stdout. With
// SACC_QTEST_TRANSCRIPT set, every test logs its full request/reply transcript;
// otherwise a failing test logs the tail of its transcript.
//
// The package has no non-test code; run it with
//
//	go test ./sacc/conformance/
package conformance
