package monitor

import (
	"errors"
	"strings"
	"testing"
)

func TestParseValid(t *testing.T) {
	for _, tc := range []struct {
		line string
		want Command
	}{
		{"", Command{}},
		{"   \t ", Command{}},
		{"xp /4xw 0x1000", Command{Name: "xp", Count: 4, Format: 'x', Size: 4, Addr: 0x1000, HasAddr: true}},
		{"xp/4xw 0x1000", Command{Name: "xp", Count: 4, Format: 'x', Size: 4, Addr: 0x1000, HasAddr: true}},
		{"  xp/4xw   0x1000  ", Command{Name: "xp", Count: 4, Format: 'x', Size: 4, Addr: 0x1000, HasAddr: true}},
		{"xp 0x1000", Command{Name: "xp", Count: 1, Addr: 0x1000, HasAddr: true}},
		{"xp /wx 4096", Command{Name: "xp", Count: 1, Format: 'x', Size: 4, Addr: 4096, HasAddr: true}},
		{"xp /16b 010", Command{Name: "xp", Count: 16, Size: 1, Addr: 8, HasAddr: true}},
		{"xp /0x 0", Command{Name: "xp", Count: 0, Format: 'x', HasAddr: true}},
		{"xp / 0x10", Command{Name: "xp", Count: 1, Addr: 0x10, HasAddr: true}},
		{"xp /2Lo 0", Command{Name: "xp", Count: 2, Format: 'o', Size: 8, HasAddr: true}},
		{"xp /3dh 0", Command{Name: "xp", Count: 3, Format: 'd', Size: 2, HasAddr: true}},
		{"xp /c 0", Command{Name: "xp", Count: 1, Format: 'c', HasAddr: true}},
		{"xp /xu 0", Command{Name: "xp", Count: 1, Format: 'u', HasAddr: true}}, // the last letter wins, as in QEMU
		{"x /2g 0x10+0x20*2", Command{Name: "x", Count: 2, Size: 8, Addr: 0x50, HasAddr: true}},
		{"x (0x100 + 4) & ~3", Command{Name: "x", Count: 1, Addr: 0x104, HasAddr: true}},
		{"xp -1", Command{Name: "xp", Count: 1, Addr: ^uint64(0), HasAddr: true}},
		{"xp 0xffffffffffffffff", Command{Name: "xp", Count: 1, Addr: ^uint64(0), HasAddr: true}},
		{"xp 18446744073709551615", Command{Name: "xp", Count: 1, Addr: ^uint64(0), HasAddr: true}},
		{"xp 'A'", Command{Name: "xp", Count: 1, Addr: 'A', HasAddr: true}},
		{"xp 7 % 4 | 8 ^ 1", Command{Name: "xp", Count: 1, Addr: 3 | 8 ^ 1, HasAddr: true}},
		{"c", Command{Name: "cont"}},
		{"cont", Command{Name: "cont"}},
		{"q", Command{Name: "quit"}},
		{"quit", Command{Name: "quit"}},
		{"stop", Command{Name: "stop"}},
		{"step", Command{Name: "step", N: 1}},
		{"step 5", Command{Name: "step", N: 5, HasN: true}},
		{"step 0x10", Command{Name: "step", N: 16, HasN: true}},
		{"back", Command{Name: "back", N: 1}},
		{"back 3", Command{Name: "back", N: 3, HasN: true}},
		{"info", Command{Name: "info"}},
		{"info pci", Command{Name: "info", Sub: "pci"}},
		{"info   rings  ", Command{Name: "info", Sub: "rings"}},
		{"info iommu", Command{Name: "info", Sub: "iommu"}},
		{"info iommu 0x210000", Command{Name: "info", Sub: "iommu", Addr: 0x210000, HasAddr: true}},
		{"trace on", Command{Name: "trace", On: true, HasOn: true}},
		{"trace off", Command{Name: "trace", HasOn: true}},
		{"trace", Command{Name: "trace"}},
		{"help", Command{Name: "help"}},
		{"?  xp", Command{Name: "help", Args: "xp"}},
		{"help info   pci", Command{Name: "help", Args: "info pci"}},
	} {
		got, err := Parse(tc.line)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.line, err)
			continue
		}
		if got != tc.want {
			t.Errorf("Parse(%q) = %+v, want %+v", tc.line, got, tc.want)
		}
	}
}

func TestParseInvalid(t *testing.T) {
	for _, tc := range []struct {
		line, want string
		cmd        string // the command the error points at ("" for none)
		unknown    bool
	}{
		{"xp /s 0", "invalid char in format: 's'", "xp", false},
		{"xp /4q 0x1000", "invalid char in format: 'q'", "xp", false},  // bad unit
		{"xp /4xz 0x1000", "invalid char in format: 'z'", "xp", false}, // bad unit after a format
		{"xp /x4 0x1000", "invalid char in format: '4'", "xp", false},
		{"xp /4xw0x1000", "invalid char in format: '0'", "xp", false},
		{"xp /99999999999999999999999x 0", "count too large", "xp", false}, // bad count
		{"xp /65537x 0", "count too large", "xp", false},
		{"xp /i 0", "no CPU", "xp", false},
		{"xp /4xw", "unexpected end of expression", "xp", false}, // missing address
		{"xp", "unexpected end of expression", "xp", false},
		{"x/2g", "unexpected end of expression", "x", false},
		{"xp 0x10000000000000000", "number too large", "xp", false}, // more than 64 bits
		{"xp 18446744073709551616", "number too large", "xp", false},
		{"xp 0x1000 junk", "xp: extraneous characters at the end of line", "xp", false},
		{"xp 0x", "xp: extraneous characters at the end of line", "xp", false},
		{"xp (1", "')' expected", "xp", false},
		{"xp 1/0", "division by zero", "xp", false},
		{"xp 1%(2-2)", "division by zero", "xp", false},
		{"xp $pc", "unknown register 'pc'", "xp", false},
		{"xp 'A", "missing terminating ' character", "xp", false},
		{"xp '", "character constant expected", "xp", false},
		{"xp zz", "invalid char 'z' in expression", "xp", false},
		{"xp " + strings.Repeat("(", 200) + "1" + strings.Repeat(")", 200), "too deeply nested", "xp", false},
		{"xp " + strings.Repeat("-", 200) + "1", "too deeply nested", "xp", false},
		{"frobnicate", "unknown command: 'frobnicate'", "", true},
		{"/4x 0", "unknown command: ''", "", true},
		{"info frob", "unknown command: 'info frob'", "info", true},
		{"info pci extra", "info pci: extraneous characters at the end of line", "info pci", false},
		{"info iommu 0x1 0x2", "info iommu: extraneous characters at the end of line", "info iommu", false},
		{"step 0", "at least 1", "step", false},
		{"step two", "invalid char 't' in expression", "step", false},
		{"back 1 2", "back: extraneous characters at the end of line", "back", false},
		{"trace maybe", "Expected 'on' or 'off'", "trace", false},
		{"trace on off", "trace: extraneous characters at the end of line", "trace", false},
		{"cont now", "cont: extraneous characters at the end of line", "cont", false},
		{"q!", "unknown command: 'q!'", "", true},
	} {
		_, err := Parse(tc.line)
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("Parse(%q): err %v, want a *ParseError", tc.line, err)
			continue
		}
		if !strings.Contains(pe.Msg, tc.want) || pe.Cmd != tc.cmd || pe.Unknown != tc.unknown {
			t.Errorf("Parse(%q) = %+v, want message containing %q, cmd %q, unknown %v", tc.line, pe, tc.want, tc.cmd, tc.unknown)
		}
	}
}

// FuzzParse: any line parses to a known command or to a ParseError, never a panic,
// and what parses stays inside the limits the monitor relies on.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"", "xp /4xw 0x1000", "xp/4xw 0x1000", "xp 0x1000", "xp /s 0", "x /16c 0x200000",
		"info iommu 0x210000", "info rings", "step 3", "back", "trace on", "help xp", "q",
		"xp ((1+2)*3)/4%5&6|7^~8", "xp 'a'", "xp $x", "xp 0x10000000000000000", "xp /65536g 0",
		"info", "c", "xp -0x8000000000000000/-1", "xp /99999999999999999999x 0",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		c, err := Parse(line)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Msg == "" {
				t.Fatalf("Parse(%q): error %v is not a ParseError with a message", line, err)
			}
			return
		}
		if c.Name == "" {
			if strings.TrimSpace(line) != "" && strings.Trim(line, " \t\n\v\f\r") != "" {
				t.Fatalf("Parse(%q): no command from a non-blank line", line)
			}
			return
		}
		if _, ok := lookup(cmdTable, c.Name); !ok {
			t.Fatalf("Parse(%q): unknown command %q parsed", line, c.Name)
		}
		if c.Count < 0 || c.Count > maxCount {
			t.Fatalf("Parse(%q): count %d out of range", line, c.Count)
		}
		switch c.Size {
		case 0, 1, 2, 4, 8:
		default:
			t.Fatalf("Parse(%q): size %d", line, c.Size)
		}
		if (c.Name == "x" || c.Name == "xp") && !c.HasAddr {
			t.Fatalf("Parse(%q): %s without an address", line, c.Name)
		}
		if (c.Name == "step" || c.Name == "back") && c.N == 0 {
			t.Fatalf("Parse(%q): %s of 0 events", line, c.Name)
		}
	})
}
