package sacc

import (
	"bytes"
	"encoding/binary"
	"slices"
	"testing"
)

// ones is a value of n bytes with every bit set.
func ones(n int) uint64 {
	if n >= 8 {
		return ^uint64(0)
	}
	return 1<<(8*n) - 1
}

// le reads n little-endian bytes.
func le(b []byte) uint64 {
	var buf [8]byte
	copy(buf[:], b)
	return binary.LittleEndian.Uint64(buf[:])
}

// codec ties a layout to its encoder and decoder through the decoded struct's
// fields, one accessor per layout field, so the test can set one field at a time.
type codec struct {
	layout Layout
	// encode writes a structure whose field name holds v (truncated to the field),
	// every other field zero.
	encode func(b []byte, name string, v uint64) bool
	// decode reads b and returns the value of each named field.
	decode func(b []byte) map[string]uint64
}

func codecs() []codec {
	return []codec{
		{DescriptorLayout,
			func(b []byte, name string, v uint64) bool {
				var d Descriptor
				switch name {
				case "src_addr":
					d.Src = v
				case "dst_addr":
					d.Dst = v
				case "length":
					d.Length = uint32(v)
				case "opcode":
					d.Opcode = uint16(v)
				case "flags":
					d.Flags = uint16(v)
				case "req_id":
					d.ReqID = uint32(v)
				default:
					return false
				}
				d.Encode(b)
				return true
			},
			func(b []byte) map[string]uint64 {
				d := DecodeDescriptor(b)
				return map[string]uint64{"src_addr": d.Src, "dst_addr": d.Dst, "length": uint64(d.Length),
					"opcode": uint64(d.Opcode), "flags": uint64(d.Flags), "req_id": uint64(d.ReqID)}
			}},
		{CompletionLayout,
			func(b []byte, name string, v uint64) bool {
				var c Completion
				switch name {
				case "req_id":
					c.ReqID = uint32(v)
				case "result_len":
					c.ResultLen = uint32(v)
				case "status":
					c.Status = Status(v)
				case "phase":
					c.Phase = uint8(v)
				default:
					return false
				}
				c.Encode(b)
				return true
			},
			func(b []byte) map[string]uint64 {
				c := DecodeCompletion(b)
				return map[string]uint64{"req_id": uint64(c.ReqID), "result_len": uint64(c.ResultLen),
					"status": uint64(c.Status), "phase": uint64(c.Phase)}
			}},
		{MSIXEntryLayout,
			func(b []byte, name string, v uint64) bool {
				var e MSIXEntry
				switch name {
				case "addr_lo":
					e.Addr = v & 0xFFFF_FFFF
				case "addr_hi":
					e.Addr = v << 32
				case "data":
					e.Data = uint32(v)
				case "vector_control":
					e.Control = uint32(v)
				default:
					return false
				}
				e.Encode(b)
				return true
			},
			func(b []byte) map[string]uint64 {
				e := DecodeMSIXEntry(b)
				return map[string]uint64{"addr_lo": e.Addr & 0xFFFF_FFFF, "addr_hi": e.Addr >> 32,
					"data": uint64(e.Data), "vector_control": uint64(e.Control)}
			}},
		{FaultRecordLayout,
			func(b []byte, name string, v uint64) bool {
				var r FaultRecord
				switch name {
				case "iova":
					r.IOVA = v
				case "source_id":
					r.SourceID = uint16(v)
				case "reason":
					r.Reason = FaultReason(v)
				case "access":
					r.Access = uint8(v)
				default:
					return false
				}
				r.Encode(b)
				return true
			},
			func(b []byte) map[string]uint64 {
				r := DecodeFaultRecord(b)
				return map[string]uint64{"iova": r.IOVA, "source_id": uint64(r.SourceID),
					"reason": uint64(r.Reason), "access": uint64(r.Access)}
			}},
	}
}

// TestLayoutsTileTheirStructures: fields in offset order, no gaps, no overlaps,
// ending at the structure's size; bit runs contiguous and inside their field.
func TestLayoutsTileTheirStructures(t *testing.T) {
	seen := map[string]bool{}
	for _, l := range Layouts() {
		if seen[l.Name] {
			t.Errorf("two layouts named %s", l.Name)
		}
		seen[l.Name] = true
		at := 0
		for _, f := range l.Fields {
			if f.Offset != at {
				t.Errorf("%s.%s at %d, want %d (gap or overlap)", l.Name, f.Name, f.Offset, at)
			}
			if _, ok := l.Field(f.Name); !ok || f.Size <= 0 || f.Size > 8 {
				t.Errorf("%s.%s: size %d", l.Name, f.Name, f.Size)
			}
			at = f.Offset + f.Size
			for _, b := range f.Bits {
				run := (uint64(1)<<b.Width() - 1) << b.Shift()
				if b.Mask == 0 || b.Mask != run || b.Mask&^ones(f.Size) != 0 {
					t.Errorf("%s.%s bits %s: mask %#x is not a run inside the field", l.Name, f.Name, b.Name, b.Mask)
				}
			}
		}
		if at != l.Size {
			t.Errorf("%s: fields end at %d, structure is %d bytes", l.Name, at, l.Size)
		}
	}
}

// TestLayoutsAgreeWithEncodeAndDecode sets one field at a time: encoding puts it
// exactly at the table's offset and size, and decoding finds it there and nowhere
// else. Reserved fields are written as 0 and read by nobody.
func TestLayoutsAgreeWithEncodeAndDecode(t *testing.T) {
	for _, c := range codecs() {
		l := c.layout
		for _, f := range l.Fields {
			b := bytes.Repeat([]byte{0xEE}, l.Size)
			if f.Name == "reserved" {
				if !c.encode(b, l.Fields[0].Name, 0) || le(b[f.Offset:f.Offset+f.Size]) != 0 {
					t.Errorf("%s: the reserved field at %d is not written as 0", l.Name, f.Offset)
				}
				b = make([]byte, l.Size)
				for i := range f.Size {
					b[f.Offset+i] = 0xFF
				}
				for name, v := range c.decode(b) {
					if v != 0 {
						t.Errorf("%s: %s decodes %#x from the reserved bytes", l.Name, name, v)
					}
				}
				continue
			}
			// The widest value the field holds; a field whose bits are named holds
			// only those (the phase field's other bits are not the phase).
			want := ones(f.Size)
			if f.Bits != nil {
				want = 0
				for _, bit := range f.Bits {
					want |= bit.Mask
				}
			}
			if !c.encode(b, f.Name, want) {
				t.Errorf("%s.%s: the test does not know this field", l.Name, f.Name)
				continue
			}
			for i := range b {
				inside := i >= f.Offset && i < f.Offset+f.Size
				if !inside && b[i] != 0 {
					t.Errorf("%s.%s = %#x writes byte %d, outside [%d, %d)", l.Name, f.Name, want, i, f.Offset, f.Offset+f.Size)
				}
			}
			if got := le(b[f.Offset : f.Offset+f.Size]); got != want {
				t.Errorf("%s.%s: encoded %#x at offset %d, want %#x", l.Name, f.Name, got, f.Offset, want)
			}
			got := c.decode(b)
			for name, v := range got {
				if name == f.Name && v != want {
					t.Errorf("%s.%s decodes as %#x, want %#x", l.Name, f.Name, v, want)
				}
				if name != f.Name && v != 0 {
					t.Errorf("%s.%s set, but %s decodes as %#x", l.Name, f.Name, name, v)
				}
			}
			if _, ok := got[f.Name]; !ok {
				t.Errorf("%s.%s: the decoder does not read it", l.Name, f.Name)
			}
		}
	}
}

// TestNamedBitsAgreeWithTheAccessors: the bits the tables name are the bits the
// datasheet's own accessors read.
func TestNamedBitsAgreeWithTheAccessors(t *testing.T) {
	bitsOf := func(l Layout, field, name string) uint64 {
		f, _ := l.Field(field)
		for _, b := range f.Bits {
			if b.Name == name {
				return b.Mask
			}
		}
		t.Fatalf("%s.%s has no bits %s", l.Name, field, name)
		return 0
	}
	if m := bitsOf(MSIXEntryLayout, "vector_control", "mask"); !(MSIXEntry{Control: uint32(m)}).Masked() || (MSIXEntry{Control: ^uint32(m)}).Masked() {
		t.Error("MSI-X mask bit disagrees with Masked")
	}
	read, write, addr := bitsOf(PTELayout, "entry", "read"), bitsOf(PTELayout, "entry", "write"), bitsOf(PTELayout, "entry", "addr")
	e := MakePTE(^uint64(0), ^uint64(0))
	if e.Perm() != read|write || e.Addr() != addr || uint64(e) != read|write|addr {
		t.Errorf("PTE bits: perm %#x addr %#x, table %#x %#x %#x", e.Perm(), e.Addr(), read, write, addr)
	}
	var b [CompletionSize]byte
	Completion{Phase: 1}.Encode(b[:])
	f, _ := CompletionLayout.Field("phase")
	if le(b[f.Offset:f.Offset+f.Size]) != bitsOf(CompletionLayout, "phase", "phase") {
		t.Error("the phase bit disagrees with Encode")
	}
}

// TestRegisterTables: offsets in order and aligned to their width, names unique,
// and RegName and IOMMURegName name every offset the tables give, high halves
// included, and nothing else.
func TestRegisterTables(t *testing.T) {
	for _, tc := range []struct {
		name  string
		table []Register
		of    func(uint32) string
		end   uint32
	}{
		{"BAR0", Registers, RegName, DoorbellEnd},
		{"IOMMU", IOMMURegisters, IOMMURegName, IOMMUSize},
	} {
		named := map[uint32]string{}
		var names []string
		for i, r := range tc.table {
			if i > 0 && r.Offset <= tc.table[i-1].Offset {
				t.Errorf("%s: %s out of order", tc.name, r.Name)
			}
			if r.Offset%uint32(r.Width/8) != 0 || (r.Width != 32 && r.Width != 64) {
				t.Errorf("%s: %s at %#x, %d bits", tc.name, r.Name, r.Offset, r.Width)
			}
			named[r.Offset] = r.Name
			names = append(names, r.Name)
			if r.Width == 64 {
				named[r.Offset+4] = r.HiName()
				names = append(names, r.HiName())
			} else if r.HiName() != "" {
				t.Errorf("%s: 32-bit %s has a high half", tc.name, r.Name)
			}
			for _, b := range r.Bits {
				if b.Mask == 0 || b.Mask>>r.Width != 0 {
					t.Errorf("%s: %s bits %s mask %#x", tc.name, r.Name, b.Name, b.Mask)
				}
			}
		}
		if len(slices.Compact(slices.Sorted(slices.Values(names)))) != len(names) {
			t.Errorf("%s: names repeat: %v", tc.name, names)
		}
		for off := uint32(0); off < tc.end; off += 4 {
			want, ok := named[off]
			if !ok {
				want = "reserved"
			}
			if got := tc.of(off); got != want {
				t.Errorf("%s name of %#x = %q, want %q", tc.name, off, got, want)
			}
		}
	}
	if RegName(RegSQBaseHi) != "SQ_BASE_HI" || RegName(RegCQBaseHi) != "CQ_BASE_HI" || IOMMURegName(IOMMURegPTRoot+4) != "PT_ROOT_HI" {
		t.Error("high halves are named NAME_HI")
	}
}

// TestOpcodeAndStatusTables: OpName and Status.String come from the tables, and the
// tables have no holes or repeats.
func TestOpcodeAndStatusTables(t *testing.T) {
	seen := map[string]bool{}
	for _, o := range Opcodes {
		if OpName(o.Value) != o.Name || seen[o.Name] || len(o.Short) == 0 || len(o.Short) > 5 {
			t.Errorf("opcode %#x %q short %q", o.Value, o.Name, o.Short)
		}
		seen[o.Name] = true
		for _, r := range ReservedOpcodes {
			if o.Value >= r.First && o.Value <= r.Last {
				t.Errorf("opcode %s is in the reserved block %s", o.Name, r.Name)
			}
		}
	}
	for _, r := range ReservedOpcodes {
		if OpName(r.First) != r.Name || OpName(r.Last) != r.Name || OpName(r.Last+1) == r.Name {
			t.Errorf("reserved block %s", r.Name)
		}
	}
	for i, s := range Statuses {
		if s.Code != Status(i) || s.Code.String() != s.Name || !(s.Completion || s.DeviceError) || s.Doc == "" {
			t.Errorf("status row %d: %+v", i, s)
		}
	}
	// §7.6: the per-command codes complete a command; the others halt the device.
	for _, tc := range []struct {
		s                 Status
		completion, halts bool
	}{
		{StatusBadOpcode, true, false}, {StatusBadLength, true, false}, {StatusBadAddress, true, true},
		{StatusNotEnabled, false, true}, {StatusDoorbell, false, true}, {StatusRingConfig, false, true},
	} {
		if s := Statuses[tc.s]; s.Completion != tc.completion || s.DeviceError != tc.halts {
			t.Errorf("%s: completion %v, device error %v", s.Name, s.Completion, s.DeviceError)
		}
	}
}
