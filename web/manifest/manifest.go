// Package manifest is what the browser knows about the machine, in one JSON
// document: the datasheet (registers, opcodes, status codes, layouts), the trace's
// sides and event kinds, the widget's views, the scenario catalogue with each
// scenario's options and the quirks it accepts, and the profiles a machine can be
// built to. Everything in it comes from the Go registries (packages sacc, trace,
// quirk, scenario, profile and this package's views), so
// the browser's code never re-types a fact of the machine. The server offers it
// at GET /api/v1/manifest (docs/PROTOCOL.md, "The manifest").
package manifest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/profile"
	"github.com/saccbook/saccbook/sacc/quirk"
	"github.com/saccbook/saccbook/sacc/scenario"
	"github.com/saccbook/saccbook/sacc/trace"
)

// Version is the manifest's schema version: the /api/v1/ in its path and its "v".
const Version = 1

// Path is where the server offers the manifest.
const Path = "/api/v1/manifest"

// Manifest is the document.
type Manifest struct {
	V         int             `json:"v"`
	Datasheet Datasheet       `json:"datasheet"`
	Sides     []string        `json:"sides"`
	Kinds     map[string]Kind `json:"kinds"`
	Views     []View          `json:"views"`
	Scenarios []Scenario      `json:"scenarios"`
	Quirks    []Quirk         `json:"quirks"`
	Timeline  Timeline        `json:"timeline"` // the scrubber's jumps and folds (timeline.go)
	Profiles  []Profile       `json:"profiles"`
}

// Datasheet is package sacc's tables.
type Datasheet struct {
	PageSize        int               `json:"page_size"`
	RingSizeMin     int               `json:"ring_size_min"`
	RingSizeMax     int               `json:"ring_size_max"`
	Registers       []Register        `json:"registers"`       // BAR0, page 0 and the doorbell page
	IOMMURegisters  []Register        `json:"iommu_registers"` // at iommu_base
	IOMMUBase       uint64            `json:"iommu_base"`
	Opcodes         []Opcode          `json:"opcodes"`
	ReservedOpcodes []OpcodeRange     `json:"reserved_opcodes"`
	InvalidOpcode   string            `json:"invalid_opcode"` // the name of any other opcode
	Statuses        []Status          `json:"statuses"`
	Layouts         map[string]Layout `json:"layouts"`
}

// Register is a row of a register table.
type Register struct {
	Offset uint32 `json:"offset"`
	Name   string `json:"name"`
	HiName string `json:"hi_name,omitempty"` // a 64-bit register's high half, at offset + 4
	Access string `json:"access"`            // RO, RW, WO
	Width  int    `json:"width"`             // bits
	Doc    string `json:"doc"`
	Bits   []Bits `json:"bits"`
}

// Bits is a named run of bits.
type Bits struct {
	Name  string `json:"name"`
	Mask  uint64 `json:"mask"`
	Shift int    `json:"shift"`
	Width int    `json:"width"`
	Doc   string `json:"doc"`
}

// Opcode is a row of the opcode table.
type Opcode struct {
	Value uint16 `json:"value"`
	Name  string `json:"name"`
	Short string `json:"short"`
	Doc   string `json:"doc"`
}

// OpcodeRange is a reserved block of opcodes.
type OpcodeRange struct {
	First uint16 `json:"first"`
	Last  uint16 `json:"last"`
	Name  string `json:"name"`
	Doc   string `json:"doc"`
}

// Status is a row of the error-code table.
type Status struct {
	Code        uint16 `json:"code"`
	Name        string `json:"name"`
	Doc         string `json:"doc"`
	Completion  bool   `json:"completion"`   // a command can complete with it
	DeviceError bool   `json:"device_error"` // a device error can halt the device with it
}

// Layout is a structure's byte layout.
type Layout struct {
	Name    string  `json:"name"`
	Section string  `json:"section"`
	Size    int     `json:"size"`
	Fields  []Field `json:"fields"`
}

// Field is a row of a layout.
type Field struct {
	Name   string `json:"name"`
	Offset int    `json:"offset"`
	Size   int    `json:"size"`
	Doc    string `json:"doc"`
	Bits   []Bits `json:"bits"`
}

// Kind describes a kind of trace event, as the welcome message's kinds do.
type Kind struct {
	Side string   `json:"side"`
	Args []string `json:"args"`
	Doc  string   `json:"doc"`
	// Detail marks the fine-grained kinds the text trace leaves out by default
	// (trace.Kind.Detail): a trace view may too.
	Detail bool `json:"detail,omitempty"`
}

// Scenario is one runnable story of the catalogue.
type Scenario struct {
	Name    string   `json:"name"`
	Summary string   `json:"summary"`
	Chapter int      `json:"chapter"`
	Primary bool     `json:"primary"`
	Options []Option `json:"options"`
	Quirks  []string `json:"quirks"` // names, in the order of the chapter's Break-it box
}

// Option is a scenario setting.
type Option struct {
	Name    string  `json:"name"`
	Doc     string  `json:"doc"`
	Default string  `json:"default"`
	Values  []Value `json:"values"`
}

// Value is one value of an option.
type Value struct {
	Name string `json:"name"`
	Doc  string `json:"doc"`
}

// Quirk is a row of the quirk registry.
type Quirk struct {
	Name string `json:"name"`
	Side string `json:"side"`
	Hunt int    `json:"hunt"` // bug-hunt catalogue number, 0 if none
	Doc  string `json:"doc"`
}

// Profile is a version of the contract a hello may ask for (its "profile").
type Profile struct {
	Name    string `json:"name"`
	Doc     string `json:"doc"`
	Default bool   `json:"default"`
	// Names are the kinds this profile's trace calls otherwise, by their name in
	// kinds: what a trace view would show for them.
	Names map[string]string `json:"names"`
}

// Build assembles the manifest from the registries.
func Build() Manifest {
	m := Manifest{V: Version, Datasheet: datasheet(), Kinds: Kinds(), Views: Views(), Timeline: TimelineRules()}
	for s := trace.Side(0); s.String() != "unknown"; s++ {
		m.Sides = append(m.Sides, s.String())
	}
	for _, s := range scenario.All() {
		sc := Scenario{Name: s.Name, Summary: s.Summary, Chapter: s.Chapter, Primary: s.Primary,
			Options: []Option{}, Quirks: []string{}}
		for _, o := range s.Options {
			opt := Option{Name: o.Name, Doc: o.Doc, Default: o.Default, Values: []Value{}}
			for _, v := range o.Values {
				opt.Values = append(opt.Values, Value(v))
			}
			sc.Options = append(sc.Options, opt)
		}
		for _, q := range s.Quirks {
			sc.Quirks = append(sc.Quirks, q.Info().Name)
		}
		m.Scenarios = append(m.Scenarios, sc)
	}
	for _, q := range quirk.All() {
		m.Quirks = append(m.Quirks, Quirk{Name: q.Name, Side: q.Side, Hunt: q.Hunt, Doc: q.Doc})
	}
	for _, p := range profile.All() {
		row := Profile{Name: p.Name, Doc: p.Doc, Default: p.IsDefault(), Names: map[string]string{}}
		for _, k := range trace.Kinds() {
			if p.Trace.Spells(k) {
				row.Names[k.String()] = p.Trace.KindName(k)
			}
		}
		m.Profiles = append(m.Profiles, row)
	}
	return m
}

// Kinds describes every trace event kind, by name.
func Kinds() map[string]Kind {
	out := map[string]Kind{}
	for _, k := range trace.Kinds() {
		info := k.Info()
		d := Kind{Side: info.Side.String(), Args: []string{}, Doc: info.Doc, Detail: k.Detail()}
		for _, a := range info.Args {
			d.Args = append(d.Args, a.Name)
		}
		out[info.Name] = d
	}
	return out
}

func datasheet() Datasheet {
	d := Datasheet{
		PageSize: sacc.PageSize, RingSizeMin: sacc.MinRingSize, RingSizeMax: sacc.MaxRingSize,
		Registers: registers(sacc.Registers), IOMMURegisters: registers(sacc.IOMMURegisters), IOMMUBase: sacc.IOMMUBase,
		InvalidOpcode: sacc.InvalidOpcode, Layouts: map[string]Layout{},
	}
	for _, o := range sacc.Opcodes {
		d.Opcodes = append(d.Opcodes, Opcode(o))
	}
	for _, r := range sacc.ReservedOpcodes {
		d.ReservedOpcodes = append(d.ReservedOpcodes, OpcodeRange(r))
	}
	for _, s := range sacc.Statuses {
		d.Statuses = append(d.Statuses, Status{Code: uint16(s.Code), Name: s.Name, Doc: s.Doc,
			Completion: s.Completion, DeviceError: s.DeviceError})
	}
	for _, l := range sacc.Layouts() {
		out := Layout{Name: l.Name, Section: l.Section, Size: l.Size}
		for _, f := range l.Fields {
			out.Fields = append(out.Fields, Field{Name: f.Name, Offset: f.Offset, Size: f.Size, Doc: f.Doc, Bits: bitsOf(f.Bits)})
		}
		d.Layouts[l.Name] = out
	}
	return d
}

func registers(table []sacc.Register) []Register {
	var out []Register
	for _, r := range table {
		out = append(out, Register{Offset: r.Offset, Name: r.Name, HiName: r.HiName(), Access: r.Access.String(),
			Width: r.Width, Doc: r.Doc, Bits: bitsOf(r.Bits)})
	}
	return out
}

func bitsOf(bs []sacc.Bits) []Bits {
	out := []Bits{}
	for _, b := range bs {
		out = append(out, Bits{Name: b.Name, Mask: b.Mask, Shift: b.Shift(), Width: b.Width(), Doc: b.Doc})
	}
	return out
}

// document is the manifest's JSON and its entity tag, built once: the registries
// are fixed when the program starts.
var document = sync.OnceValues(func() ([]byte, string) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(Build()); err != nil {
		panic(fmt.Sprintf("manifest: %v", err))
	}
	sum := sha256.Sum256(b.Bytes())
	return b.Bytes(), `"` + hex.EncodeToString(sum[:8]) + `"`
})

// JSON is the manifest as the server sends it.
func JSON() []byte {
	b, _ := document()
	return b
}

// ETag is the manifest's entity tag: it changes exactly when the document does.
func ETag() string {
	_, tag := document()
	return tag
}
