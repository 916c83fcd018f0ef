package manifest_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/profile"
	"github.com/saccbook/saccbook/sacc/quirk"
	"github.com/saccbook/saccbook/sacc/scenario"
	"github.com/saccbook/saccbook/sacc/trace"
	"github.com/saccbook/saccbook/static"
	"github.com/saccbook/saccbook/web/manifest"
)

// doc is the manifest as a browser reads it: plain JSON, no Go types.
func doc(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(manifest.JSON()))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("the manifest is not JSON: %v", err)
	}
	return m
}

// at walks into a JSON value: keys for objects, ints for arrays.
func at(t *testing.T, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			o, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("%v: not an object at %q", path, k)
			}
			if v, ok = o[k]; !ok {
				t.Fatalf("%v: no %q", path, k)
			}
		case int:
			a, ok := v.([]any)
			if !ok || k >= len(a) {
				t.Fatalf("%v: no element %d", path, k)
			}
			v = a[k]
		}
	}
	return v
}

func str(v any) string { return fmt.Sprint(v) }

func length(t *testing.T, v any, path ...any) int {
	t.Helper()
	a, ok := at(t, v, path...).([]any)
	if !ok {
		t.Fatalf("%v is not an array", path)
	}
	return len(a)
}

func TestVersion(t *testing.T) {
	m := doc(t)
	if str(m["v"]) != fmt.Sprint(manifest.Version) || manifest.Path != fmt.Sprintf("/api/v%d/manifest", manifest.Version) {
		t.Errorf("v %v, path %s", m["v"], manifest.Path)
	}
}

func TestRegistersAreTheDatasheets(t *testing.T) {
	m := doc(t)
	for key, table := range map[string][]sacc.Register{"registers": sacc.Registers, "iommu_registers": sacc.IOMMURegisters} {
		if n := length(t, m, "datasheet", key); n != len(table) {
			t.Fatalf("%s: %d rows, the datasheet has %d", key, n, len(table))
		}
		for i, r := range table {
			row := at(t, m, "datasheet", key, i)
			got := fmt.Sprintf("%v %v %v %v", at(t, row, "offset"), at(t, row, "name"), at(t, row, "access"), at(t, row, "width"))
			if want := fmt.Sprintf("%d %s %s %d", r.Offset, r.Name, r.Access, r.Width); got != want {
				t.Errorf("%s[%d] = %s, want %s", key, i, got, want)
			}
			hi, _ := row.(map[string]any)["hi_name"].(string)
			if hi != r.HiName() {
				t.Errorf("%s %s: hi_name %q, want %q", key, r.Name, hi, r.HiName())
			}
			if n := length(t, row, "bits"); n != len(r.Bits) {
				t.Errorf("%s %s: %d bits, want %d", key, r.Name, n, len(r.Bits))
			}
			for j, b := range r.Bits {
				if got := str(at(t, row, "bits", j, "mask")); got != fmt.Sprint(b.Mask) {
					t.Errorf("%s %s.%s mask %s, want %#x", key, r.Name, b.Name, got, b.Mask)
				}
			}
		}
	}
	if str(at(t, m, "datasheet", "page_size")) != fmt.Sprint(sacc.PageSize) ||
		str(at(t, m, "datasheet", "ring_size_max")) != fmt.Sprint(sacc.MaxRingSize) {
		t.Error("page size or ring size")
	}
}

func TestOpcodesStatusesAndLayouts(t *testing.T) {
	m := doc(t)
	if n := length(t, m, "datasheet", "opcodes"); n != len(sacc.Opcodes) {
		t.Fatalf("%d opcodes, want %d", n, len(sacc.Opcodes))
	}
	for i, o := range sacc.Opcodes {
		row := at(t, m, "datasheet", "opcodes", i)
		if str(at(t, row, "value")) != fmt.Sprint(o.Value) || at(t, row, "name") != sacc.OpName(o.Value) || at(t, row, "short") != o.Short {
			t.Errorf("opcode %d: %v", i, row)
		}
	}
	for i, r := range sacc.ReservedOpcodes {
		row := at(t, m, "datasheet", "reserved_opcodes", i)
		if str(at(t, row, "first")) != fmt.Sprint(r.First) || str(at(t, row, "last")) != fmt.Sprint(r.Last) || at(t, row, "name") != sacc.OpName(r.First) {
			t.Errorf("reserved opcodes %d: %v", i, row)
		}
	}
	if at(t, m, "datasheet", "invalid_opcode") != sacc.OpName(0xFFFF) {
		t.Error("invalid_opcode")
	}
	if n := length(t, m, "datasheet", "statuses"); n != len(sacc.Statuses) {
		t.Fatalf("%d statuses, want %d", n, len(sacc.Statuses))
	}
	for i, s := range sacc.Statuses {
		row := at(t, m, "datasheet", "statuses", i)
		if str(at(t, row, "code")) != fmt.Sprint(uint16(s.Code)) || at(t, row, "name") != s.Code.String() ||
			at(t, row, "completion") != s.Completion || at(t, row, "device_error") != s.DeviceError {
			t.Errorf("status %d: %v", i, row)
		}
	}
	layouts := at(t, m, "datasheet", "layouts").(map[string]any)
	if len(layouts) != len(sacc.Layouts()) {
		t.Errorf("%d layouts, want %d", len(layouts), len(sacc.Layouts()))
	}
	for _, l := range sacc.Layouts() {
		if str(at(t, layouts, l.Name, "size")) != fmt.Sprint(l.Size) || length(t, layouts, l.Name, "fields") != len(l.Fields) {
			t.Errorf("layout %s: %v", l.Name, layouts[l.Name])
			continue
		}
		for i, f := range l.Fields {
			row := at(t, layouts, l.Name, "fields", i)
			got := fmt.Sprintf("%v@%v+%v", at(t, row, "name"), at(t, row, "offset"), at(t, row, "size"))
			if want := fmt.Sprintf("%s@%d+%d", f.Name, f.Offset, f.Size); got != want {
				t.Errorf("layout %s field %d: %s, want %s", l.Name, i, got, want)
			}
			for j, b := range f.Bits {
				if str(at(t, row, "bits", j, "shift")) != fmt.Sprint(b.Shift()) || str(at(t, row, "bits", j, "width")) != fmt.Sprint(b.Width()) {
					t.Errorf("layout %s.%s bits %s", l.Name, f.Name, b.Name)
				}
			}
		}
	}
}

func TestKindsAndSidesAreTheTraces(t *testing.T) {
	m := doc(t)
	kinds := at(t, m, "kinds").(map[string]any)
	if len(kinds) != len(trace.Kinds()) {
		t.Errorf("%d kinds, trace has %d", len(kinds), len(trace.Kinds()))
	}
	sides := map[string]bool{}
	for i := range length(t, m, "sides") {
		sides[str(at(t, m, "sides", i))] = true
	}
	for _, k := range trace.Kinds() {
		info := k.Info()
		if at(t, kinds, info.Name, "side") != info.Side.String() || !sides[info.Side.String()] {
			t.Errorf("kind %s: side %v", info.Name, at(t, kinds, info.Name, "side"))
		}
		var args []string
		for i := range length(t, kinds, info.Name, "args") {
			args = append(args, str(at(t, kinds, info.Name, "args", i)))
		}
		var want []string
		for _, a := range info.Args {
			want = append(want, a.Name)
		}
		if !slices.Equal(args, want) {
			t.Errorf("kind %s: args %v, want %v", info.Name, args, want)
		}
	}
	for i, s := range []trace.Side{trace.SideCPU, trace.SideBus, trace.SideDevice, trace.SideIOMMU, trace.SideKernel} {
		if str(at(t, m, "sides", i)) != s.String() {
			t.Errorf("sides[%d] = %v, want %s", i, at(t, m, "sides", i), s)
		}
	}
}

func TestScenariosAndQuirksAreTheCatalogues(t *testing.T) {
	m := doc(t)
	all := scenario.All()
	if n := length(t, m, "scenarios"); n != len(all) {
		t.Fatalf("%d scenarios, the catalogue has %d", n, len(all))
	}
	for i, s := range all {
		row := at(t, m, "scenarios", i)
		if at(t, row, "name") != s.Name || str(at(t, row, "chapter")) != fmt.Sprint(s.Chapter) || at(t, row, "primary") != s.Primary {
			t.Errorf("scenario %d: %v", i, row)
		}
		var doc []string
		for j := range length(t, row, "options") {
			o := at(t, row, "options", j)
			var vals []string
			for k := range length(t, o, "values") {
				vals = append(vals, str(at(t, o, "values", k, "name")))
			}
			doc = append(doc, fmt.Sprintf("%v=%s", at(t, o, "name"), strings.Join(vals, "|")))
			decl, ok := s.Option(str(at(t, o, "name")))
			if !ok || at(t, o, "default") != decl.Default {
				t.Errorf("%s option %v: default %v", s.Name, at(t, o, "name"), at(t, o, "default"))
			}
		}
		if got := strings.Join(doc, ", "); got != s.OptionsDoc() {
			t.Errorf("%s options %q, declared %q", s.Name, got, s.OptionsDoc())
		}
		var qs []string
		for j := range length(t, row, "quirks") {
			q, ok := quirk.Lookup(str(at(t, row, "quirks", j)))
			if !ok || !slices.Contains(s.Quirks, q) {
				t.Errorf("%s: quirk %v", s.Name, at(t, row, "quirks", j))
			}
			qs = append(qs, q.String())
		}
		if len(qs) != len(s.Quirks) {
			t.Errorf("%s: quirks %v, declared %v", s.Name, qs, s.Quirks)
		}
	}
	for i, q := range quirk.All() {
		row := at(t, m, "quirks", i)
		if at(t, row, "name") != q.Name || at(t, row, "side") != q.Side || str(at(t, row, "hunt")) != fmt.Sprint(q.Hunt) {
			t.Errorf("quirk %d: %v", i, row)
		}
	}
}

// TestViewsAreTheRegistry: the manifest's views are the registry's, in order.
func TestViewsAreTheRegistry(t *testing.T) {
	m := doc(t)
	if n := length(t, m, "views"); n != len(manifest.Views()) {
		t.Fatalf("%d views, the registry has %d", n, len(manifest.Views()))
	}
	for i, v := range manifest.Views() {
		row := at(t, m, "views", i)
		if at(t, row, "name") != v.Name || at(t, row, "label") != v.Label || at(t, row, "module") != v.Module {
			t.Errorf("views[%d] = %v", i, row)
		}
		if named, _ := row.(map[string]any)["named"].(bool); named != v.Named {
			t.Errorf("views[%d] named = %v, want %v", i, named, v.Named)
		}
	}
	if !slices.Equal(manifest.ViewNames(), []string{"ring", "garage", "registers", "memory", "trace", "source", "monitor", "cpu", "iommu", "bypass", "config", "results"}) {
		t.Errorf("ViewNames %v", manifest.ViewNames())
	}
}

func TestETagFollowsTheDocument(t *testing.T) {
	if tag := manifest.ETag(); len(tag) != 18 || tag[0] != '"' || manifest.ETag() != tag {
		t.Errorf("ETag %s", tag)
	}
}

// TestEveryViewHasItsModule: the views registry and the view modules among the
// static assets are the same set.
func TestEveryViewHasItsModule(t *testing.T) {
	want := map[string]bool{}
	for _, v := range manifest.Views() {
		if _, err := fs.Stat(static.FS, v.Module); err != nil {
			t.Errorf("view %s: %v", v.Name, err)
		}
		want[v.Module] = true
	}
	mods, err := fs.Glob(static.FS, "views/*.js")
	if err != nil || len(mods) == 0 {
		t.Fatalf("no view modules in the static assets: %v", err)
	}
	for _, mod := range mods {
		if !want[mod] {
			t.Errorf("%s is in the static assets but no view names it", mod)
		}
	}
}

// TestTimelineRules: the "next …" controls are the four the DOM contract names,
// and every jump and fold names trace kinds that exist; a fold that asks for
// addresses or values names kinds that have them.
func TestTimelineRules(t *testing.T) {
	m := doc(t)
	kinds := manifest.Kinds()
	tl := manifest.TimelineRules()
	var jumps []string
	for i, j := range tl.Jumps {
		jumps = append(jumps, j.Kind)
		if len(j.Events) == 0 || j.Label == "" || j.Doc == "" {
			t.Errorf("jump %s: %+v", j.Kind, j)
		}
		for _, e := range j.Events {
			if _, ok := kinds[e]; !ok {
				t.Errorf("jump %s: no trace kind %q", j.Kind, e)
			}
		}
		if str(at(t, m, "timeline", "jumps", i, "kind")) != j.Kind {
			t.Errorf("the manifest's jump %d is not %s", i, j.Kind)
		}
	}
	if want := []string{"doorbell", "completion", "interrupt", "fault"}; !slices.Equal(jumps, want) {
		t.Errorf("jumps %v, want %v", jumps, want)
	}
	for i, f := range tl.Folds {
		if f.Min < 2 || len(f.Events) == 0 || f.Label == "" || f.Doc == "" {
			t.Errorf("fold %s: %+v", f.Name, f)
		}
		for _, e := range f.Events {
			k, ok := kinds[e]
			if !ok {
				t.Errorf("fold %s: no trace kind %q", f.Name, e)
				continue
			}
			if f.Contiguous && !(slices.Contains(k.Args, "addr") && slices.Contains(k.Args, "size")) {
				t.Errorf("fold %s: %s has no addr and size to be contiguous by", f.Name, e)
			}
			if f.SameValue && !slices.Contains(k.Args, "val") {
				t.Errorf("fold %s: %s has no val", f.Name, e)
			}
		}
		if str(at(t, m, "timeline", "folds", i, "name")) != f.Name {
			t.Errorf("the manifest's fold %d is not %s", i, f.Name)
		}
	}
}

// TestProfilesAreTheRegistry: the profiles a hello may name, the default first,
// with the kinds each one's trace calls otherwise.
func TestProfilesAreTheRegistry(t *testing.T) {
	m := doc(t)
	all := profile.All()
	if n := length(t, m, "profiles"); n != len(all) {
		t.Fatalf("%d profiles, the registry has %d", n, len(all))
	}
	for i, p := range all {
		row := at(t, m, "profiles", i)
		if at(t, row, "name") != p.Name || at(t, row, "doc") != p.Doc || at(t, row, "default") != (i == 0) {
			t.Errorf("profiles[%d] = %v", i, row)
		}
	}
	if names, _ := at(t, m, "profiles", 0, "names").(map[string]any); at(t, m, "profiles", 0, "name") != "v1" || names == nil || len(names) != 0 {
		t.Errorf("the default profile: %v", at(t, m, "profiles", 0))
	}
	up := at(t, m, "profiles", 1, "names")
	for kind, name := range map[string]string{
		"sacc_reg_write": "sacc_mmio_reg_write", "sacc_cq_post_upstream": "sacc_cq_post", "sacc_desc": "sacc_exec",
	} {
		if at(t, up, kind) != name {
			t.Errorf("upstream-v0.1 calls %s %v, want %s", kind, at(t, up, kind), name)
		}
	}
}
