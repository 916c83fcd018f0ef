// Package sacc is the datasheet of the SACC platform: every address, offset, bit,
// code and in-memory layout of the SACC v1 specification, with encoders and decoders
// for the structures that live in host memory.
//
// Nothing else in saccbook re-types a constant of the specification: the device
// model, the IOMMU, the driver, user-space code, tests and the web views all import
// this package. Section numbers in comments refer to the specification
// (docs/SPEC.md in this repository).
package sacc
