// Package profile names the versions of the SACC contract a machine can be built
// to. v1, the default, is this project's contract (docs/SPEC.md). upstream-v0.1 is
// the device as upstream's own QEMU model (github.com/jnros/sacc, qemu/sacc.c)
// behaves today: doorbells taken without ENABLE, the whole ring run inside the
// doorbell write, only NOP executed, no MSI-X, QEMU's default identity and link,
// and upstream's trace points in its trace.
//
// A profile is data: the identity the function shows in configuration space, which
// engine runs BAR0 and the rings, and how the trace spells events. The device reads
// its behaviour from it; text sinks take its dialect from the machine's tracer.
package profile

import (
	"fmt"
	"strings"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/trace"
)

// Engine is what runs BAR0 and the rings.
type Engine uint8

const (
	// EngineV1 is the device of docs/SPEC.md §§5–9: the enable gate, the pipeline
	// of timed events (doorbell, fetch, execute, post), every opcode, MSI-X, device
	// errors that halt until RESET.
	EngineV1 Engine = iota
	// EngineUpstreamV01 is upstream's qemu/sacc.c: registers stored as written, no
	// gate, the ring run to its tail inside the doorbell write, NOP only.
	EngineUpstreamV01
)

// Profile is one version of the contract.
type Profile struct {
	Name string
	Doc  string

	// The identity the function shows (§2, §3).
	SubsystemVendorID, SubsystemID uint16
	DevCapabilities                uint32 // PCIe Device Capabilities
	DevCapabilities2               uint32 // PCIe Device Capabilities 2
	LinkCapabilities               uint32 // PCIe Link Capabilities
	LinkStatus                     uint16 // PCIe Link Status
	LinkCapabilities2              uint32 // PCIe Link Capabilities 2
	// MSIX: an MSI-X capability and BAR1 holding its table and PBA (§4, §9).
	MSIX bool

	Engine Engine

	// Trace is how the machine's events are spelled in text.
	Trace trace.Dialect
}

// The profiles' names.
const (
	V1Name          = "v1"
	UpstreamV01Name = "upstream-v0.1"
)

// V1 is the contract of docs/SPEC.md, the default.
func V1() Profile {
	return Profile{
		Name: V1Name,
		Doc:  "the SACC v1 contract this book teaches (docs/SPEC.md): the default",

		SubsystemVendorID: sacc.SubsystemVendorID, SubsystemID: sacc.SubsystemID,
		LinkCapabilities: sacc.PCIeLinkCapabilities, LinkStatus: sacc.PCIeLinkStatus,
		LinkCapabilities2: sacc.PCIeLinkCapabilities2,
		MSIX:              true,
		Engine:            EngineV1,
	}
}

// UpstreamV01 is the device as upstream's QEMU model behaves today.
func UpstreamV01() Profile {
	return Profile{
		Name: UpstreamV01Name,
		Doc: "the device as upstream's QEMU model (github.com/jnros/sacc) behaves: no ENABLE needed, " +
			"the ring run inside the doorbell write, NOP only, no MSI-X, upstream's trace points",

		SubsystemVendorID: sacc.UpstreamSubsystemVendorID, SubsystemID: sacc.UpstreamSubsystemID,
		DevCapabilities: sacc.UpstreamDevCapabilities, DevCapabilities2: sacc.UpstreamDevCapabilities2,
		LinkCapabilities: sacc.UpstreamLinkCapabilities, LinkStatus: sacc.UpstreamLinkStatus,
		LinkCapabilities2: sacc.UpstreamLinkCapabilities2,
		MSIX:              false,
		Engine:            EngineUpstreamV01,
		Trace:             upstreamDialect,
	}
}

// All lists the profiles, the default first.
func All() []Profile { return []Profile{V1(), UpstreamV01()} }

// Names lists the profiles' names, the default first.
func Names() []string {
	var out []string
	for _, p := range All() {
		out = append(out, p.Name)
	}
	return out
}

// Find looks a profile up by name; "" is the default.
func Find(name string) (Profile, bool) {
	if name == "" {
		return V1(), true
	}
	for _, p := range All() {
		if p.Name == name {
			return p, true
		}
	}
	return Profile{}, false
}

// Parse is Find with the sentence every front door gives for an unknown name.
func Parse(name string) (Profile, error) {
	p, ok := Find(name)
	if !ok {
		return Profile{}, fmt.Errorf("unknown profile %q (have: %s)", name, strings.Join(Names(), ", "))
	}
	return p, nil
}

// IsDefault reports whether p is the default profile.
func (p Profile) IsDefault() bool { return p.Name == V1Name }
