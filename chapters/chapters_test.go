package chapters

import (
	"bytes"
	"flag"
	"fmt"
	"github.com/saccbook/saccbook/sacc/cpu"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/kernel"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/monitor"
	"github.com/saccbook/saccbook/sacc/quirk"
	"github.com/saccbook/saccbook/sacc/runner"
	"github.com/saccbook/saccbook/sacc/scenario"
	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

// A quote is a phrase a chapter must contain, built from the code's own values:
// if a cost or a constant changes, the phrase no longer matches and the chapter's
// test says which sentence to update. Whitespace (line breaks included) is
// compared loosely.
type quote struct {
	format string
	args   []any
}

func q(format string, args ...any) quote { return quote{format, args} }

// chapterText reads a chapter with every run of white space made one space.
func chapterText(t *testing.T, file string) string {
	t.Helper()
	b, err := fs.ReadFile(FS, file)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(strings.Fields(string(b)), " ")
}

func checkQuotes(t *testing.T, file string, quotes []quote) {
	t.Helper()
	text := chapterText(t, file)
	for _, qt := range quotes {
		want := strings.Join(strings.Fields(fmt.Sprintf(qt.format, qt.args...)), " ")
		if !strings.Contains(text, want) {
			t.Errorf("%s does not say %q: the number in the text no longer matches the code", file, want)
		}
	}
}

var cost = sim.DefaultCost()

func TestChapter01Numbers(t *testing.T) {
	checkQuotes(t, "01-finding-the-device.md", []quote{
		q("Every PCI function has %d KiB of **configuration space**", sacc.ConfigSpaceSize/1024),
		q("starts at `0x%X` on this machine", sacc.ECAMBase),
		q("register `r` of our device, `00:03.0`, is at `%#x + r`", sacc.ECAMAddress(sacc.SACCBus, sacc.SACCDevice, sacc.SACCFunction, 0)),
		q("reaches only the first %d bytes", sacc.LegacyConfigSpaceSize),
		q("the cost model charges %d ns for each one (`config_access`)", cost.ConfigAccess),
		q("`%04x:%04x`, class `%#06x`", sacc.VendorID, sacc.DeviceID, sacc.ClassCode),
		q("BAR0 reads back `%#x`", sacc.BAR0Mask),
		q("`%#x`, so BAR0 is %d KiB", sacc.BAR0Size, sacc.BAR0Size/1024),
		q("BAR1 reads back `%#x`, so it is %d KiB", sacc.BAR1Mask, sacc.BAR1Size/1024),
		q("the MMIO window, `0x%X`–`0x%X`", sacc.MMIOWindowBase, sacc.MMIOWindowEnd),
		q("PCI Express (ID `%#x`) at `%#x`", sacc.CapIDPCIe, sacc.CfgPCIeCapOffset),
		q("a link of %d GT/s x%d", sacc.PCIeLinkSpeedMbps/1000, sacc.PCIeLinkWidth),
		q("MSI-X (ID `%#x`) at `%#x`, with %d vectors", sacc.CapIDMSIX, sacc.CfgMSIXCapOffset, sacc.MSIXVectors),
		q("its pending bits at `%#x`", sacc.MSIXPBAOffset),
	})
}

func TestChapter02Numbers(t *testing.T) {
	checkQuotes(t, "02-mmio.md", []quote{
		q("BAR0 is %d KiB: page 0 is the register file", sacc.BAR0Size/1024),
		q("MAGIC is at `+0x%02X`, STATUS at `+0x%02X`, SCRATCH at `+0x%02X`", sacc.RegMAGIC, sacc.RegSTATUS, sacc.RegSCRATCH),
		q("MAGIC, always `0x%X`", sacc.MagicValue),
		q("a 64-bit access at `%#x` and `%#x`, the two ring bases", sacc.RegSQBaseLo, sacc.RegCQBaseLo),
		q("The cost model charges %d ns for one read (`mmio_read`)", cost.MMIORead),
		q("It is busy for %d ns (`mmio_write_issue`)", cost.MMIOWriteIssue),
		q("reaches the device about %d ns later (`mmio_write`)", cost.MMIOWrite),
		q("ten writes cost the CPU %d ns, and ten reads cost %d ns", 10*cost.MMIOWriteIssue, 10*cost.MMIORead),
	})
}

func TestChapter03Numbers(t *testing.T) {
	checkQuotes(t, "03-the-doorbell-page.md", []quote{
		q("BAR0 is two pages of %d KiB", sacc.PageSize/1024),
		q("Page 1, at `%#x`, is the **doorbell page**", uint64(sacc.MMIOWindowBase)+sacc.DoorbellPage),
		q("SQ_TAIL at offset `%#x`", sacc.RegSQTail),
		q("CQ_HEAD_DB at `%#x`", sacc.RegCQHeadDB),
		q("device error (code %d)", sacc.StatusDoorbell),
		q("is device error %d", sacc.StatusNotEnabled),
		q("the CPU spends %d ns on it (`mmio_write_issue`)", cost.MMIOWriteIssue),
		q("about %d ns later (`mmio_write`)", cost.MMIOWrite),
		q("with a register read, would cost %d ns", cost.MMIORead),
		q("in pages of %d KiB, and no less", sacc.PageSize/1024),
		q("`%d`, %d ns after the write", 76946+cost.MMIOWrite, cost.MMIOWrite),
	})
}

func TestChapter04Numbers(t *testing.T) {
	desc := cost.DMAReadLatency + cost.Transfer(sacc.DescriptorSize)
	n := uint64(len("the device copied this line by itself; the CPU only asked."))
	data := cost.DeviceCommand + cost.DMAReadLatency + cost.Transfer(n)
	post := cost.Transfer(n) + cost.DMAWriteLatency
	checkQuotes(t, "04-dma.md", []quote{
		q("for a MEMCPY of %d bytes", n),
		q("The device reads %d bytes at SQ_BASE + %d × slot", sacc.DescriptorSize, sacc.DescriptorSize),
		q("A DMA read waits %d ns for its first data (`dma_read_latency`)", cost.DMAReadLatency),
		q("at %d bytes per µs (`link_bytes_per_us`), which adds %d ns for %d bytes", cost.LinkBytesPerUs, cost.Transfer(sacc.DescriptorSize), sacc.DescriptorSize),
		q("the descriptor arrives %d ns after the fetch began", desc),
		q("The device decodes it (%d ns, `device_command`)", cost.DeviceCommand),
		q("another %d ns of latency, plus %d ns on the link. With the decode, that is %d ns", cost.DMAReadLatency, cost.Transfer(n), data),
		q("It writes the %d-byte completion", sacc.CompletionSize),
		q("%d ns on the link plus %d ns until a posted write is visible in memory (`dma_write_latency`), %d ns in all", cost.Transfer(n), cost.DMAWriteLatency, post),
		q("the gaps: %d, then %d, then %d ns", desc, data, post),
		q("The descriptor now takes %d ns longer", cost.IOTLBMiss),
		q("Every DMA address is now `0x%Xxxxx`", kernel.IOVABase>>16),
		q("fails with status %d, bad address", sacc.StatusBadAddress),
		q("the device reports error %d and halts", sacc.StatusBadAddress),
	})
}

// TestChapterLinksAndExercises: in chapters 01 to 04, every link to another
// chapter names a chapter file that exists, and every exercise a chapter lists
// exists in ../exercises.
func TestChapterLinksAndExercises(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)#]*\.md)(#[^)]*)?\)`)
	exercise := regexp.MustCompile("`exercises/([0-9]{2}-[a-z0-9-]+)`")
	for _, file := range []string{"01-finding-the-device.md", "02-mmio.md", "03-the-doorbell-page.md", "04-dma.md"} {
		b, err := fs.ReadFile(FS, file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			if _, err := fs.Stat(FS, m[1]); err != nil {
				t.Errorf("%s links to %s, which is not a chapter file", file, m[1])
			}
		}
		ids := exercise.FindAllStringSubmatch(string(b), -1)
		if len(ids) < 2 {
			t.Errorf("%s lists %d exercises, want at least 2", file, len(ids))
		}
		for _, m := range ids {
			if m[1][:2] != file[:2] {
				t.Errorf("%s lists exercise %s of another chapter", file, m[1])
			}
			if _, err := os.Stat(filepath.Join("..", "exercises", m[1], "meta.json")); err != nil {
				t.Errorf("%s lists exercise %s, which does not exist: %v", file, m[1], err)
			}
		}
	}
}

// ---------------------------------------------------------------------------
// Transcripts

// transcriptChapters are the chapters whose pasted terminal sessions are checked
// against a real run. A transcript is a ```text block whose first line is
// "$ saccbook run ..." or "$ saccbook monitor ...". Lines that are "..." mark
// left-out output; the lines between two of them must appear together, in order.
// In a monitor transcript, "(saccbook) CMD" lines are commands, and the lines
// after each are checked against what the monitor answered. Every chapter from
// 01 to 14 must have at least one.
var transcriptChapters = []string{
	"01-finding-the-device.md", "02-mmio.md", "03-the-doorbell-page.md", "04-dma.md",
	"05-rings.md", "06-phase-bits.md", "07-ordering-and-coherency.md", "08-interrupts.md",
	"09-the-iommu.md", "10-kernel-bypass.md", "11-when-things-go-wrong.md",
	"12-describing-memory.md", "13-capstone.md", "14-the-same-path-on-a-real-gpu.md",
}

var updateNote = flag.Bool("transcripts", false, "print every transcript's real output")

// TestTranscripts re-runs every "$ saccbook …" block of every chapter and checks
// the pasted lines against the real output ("..." marks a cut).
func TestTranscripts(t *testing.T) {
	files, err := fs.Glob(FS, "*.md")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, file := range files {
		b, err := fs.ReadFile(FS, file)
		if err != nil {
			t.Fatal(err)
		}
		for _, blk := range transcripts(string(b)) {
			checked++
			t.Run(file+"/"+blk.command, func(t *testing.T) { checkTranscript(t, blk) })
		}
	}
	for _, file := range transcriptChapters {
		if b, _ := fs.ReadFile(FS, file); len(transcripts(string(b))) == 0 {
			t.Errorf("%s has no transcript", file)
		}
	}
	if checked == 0 {
		t.Fatal("no transcripts found")
	}
}

type transcript struct {
	command string   // "saccbook run 01 --set iommu=on"
	lines   []string // the rest of the block
}

// transcripts finds the ```text blocks that start with "$ saccbook ".
func transcripts(md string) []transcript {
	var out []transcript
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "```text" || i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "$ saccbook ") {
			continue
		}
		blk := transcript{command: strings.TrimPrefix(lines[i+1], "$ ")}
		for i += 2; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			blk.lines = append(blk.lines, lines[i])
		}
		out = append(out, blk)
	}
	return out
}

// parseCommand reads "saccbook run|monitor SCENARIO [--set ...] [--quirks ...] [--seed N]".
func parseCommand(cmd string) (verb string, s scenario.Scenario, opts map[string]string, cfg machine.Config, err error) {
	f := strings.Fields(cmd)
	if len(f) < 3 || f[0] != "saccbook" || (f[1] != "run" && f[1] != "monitor") {
		return "", s, nil, cfg, fmt.Errorf("not a saccbook run or monitor command: %q", cmd)
	}
	verb = f[1]
	var ok bool
	if s, ok = scenario.Find(f[2]); !ok {
		return "", s, nil, cfg, fmt.Errorf("no scenario %q", f[2])
	}
	cfg.Seed = 1
	opts = map[string]string{}
	for i := 3; i < len(f); i += 2 {
		if i+1 >= len(f) {
			return "", s, nil, cfg, fmt.Errorf("flag %s has no value", f[i])
		}
		switch f[i] {
		case "--set":
			if opts, err = scenario.ParseOptions(f[i+1]); err != nil {
				return "", s, nil, cfg, err
			}
		case "--quirks":
			if cfg.Quirks, err = quirk.Parse(f[i+1]); err != nil {
				return "", s, nil, cfg, err
			}
		case "--seed":
			if _, err := fmt.Sscan(f[i+1], &cfg.Seed); err != nil {
				return "", s, nil, cfg, err
			}
		default:
			return "", s, nil, cfg, fmt.Errorf("flag %s is not understood by this test", f[i])
		}
	}
	return verb, s, opts, cfg, nil
}

func checkTranscript(t *testing.T, blk transcript) {
	verb, s, opts, cfg, err := parseCommand(blk.command)
	if err != nil {
		t.Fatal(err)
	}
	if verb == "run" {
		matchLines(t, blk.command, blk.lines, runOutput(t, s, opts, cfg))
		return
	}
	factory := func() (*machine.Machine, error) { return machine.New(cfg) }
	r, err := runner.New(factory, func(m *machine.Machine) error {
		return s.Run(m, &scenario.Env{Log: discard{}, Options: opts})
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out bytes.Buffer
	mo := monitor.New(r, &out)
	const prompt = "(saccbook) "
	for i := 0; i < len(blk.lines); {
		if !strings.HasPrefix(blk.lines[i], prompt) {
			t.Fatalf("line %q of a monitor transcript comes before any command", blk.lines[i])
		}
		cmd := strings.TrimPrefix(blk.lines[i], prompt)
		var want []string
		for i++; i < len(blk.lines) && !strings.HasPrefix(blk.lines[i], prompt); i++ {
			want = append(want, blk.lines[i])
		}
		out.Reset()
		mo.Exec(cmd)
		matchLines(t, prompt+cmd, want, out.String())
	}
}

// runOutput is what `saccbook run` prints: the trace, the narrative as "# " lines,
// and the error, if the scenario fails.
func runOutput(t *testing.T, s scenario.Scenario, opts map[string]string, cfg machine.Config) string {
	t.Helper()
	var out bytes.Buffer
	m, err := machine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m.Tracer().Attach(trace.NewTextWriter(&out))
	if err := s.Run(m, &scenario.Env{Log: prefixWriter{&out}, Options: opts}); err != nil {
		fmt.Fprintf(&out, "saccbook run: scenario %s: %v\n", s.Name, err)
	}
	return out.String()
}

// A breakIt is one "Break it" box: the command it has the learner run, and what
// the box says they will see (has) or no longer see (hasNot) in that command's
// output — the trace and the "# " narrative, as `saccbook run` prints them.
type breakIt struct {
	file, command string
	has, hasNot   []string
}

// breakIts are the "Break it" boxes of every chapter.
var breakIts = []breakIt{
	{"01-finding-the-device.md", "saccbook run 01 --quirks skip-memory-enable",
		[]string{"# pci_enable_device: COMMAND 0x0000 (memory space off); MAGIC reads 0xffffffff", "reason=unmapped", "BAR0 does not decode"},
		[]string{"pci_bar_map"}},
	{"01-finding-the-device.md", "saccbook run 01 --quirks bar-sizing-no-mask",
		[]string{"BAR0 holds 0xffffe000", "COMMAND 0x0002 (memory space on); MAGIC reads 0xffffffff"}, nil},
	{"02-mmio.md", "saccbook run 02 --quirks wrong-width",
		[]string{"# ioread32(MAGIC) = 0x4a4e524f", "size=2 reason=bad-width", "bad MAGIC 0xffff"}, nil},
	{"03-the-doorbell-page.md", "saccbook run 03 --quirks map-register-page",
		[]string{"the process reads MAGIC 0x4a4e524f there"}, []string{"refused, EPERM"}},
	{"03-the-doorbell-page.md", "saccbook run 03 --quirks doorbell-out-of-range",
		[]string{"sacc_reg_write reg=SQ_TAIL size=4 val=0x9", "sacc_device_error code=0x5"}, []string{"the device fetched slots 5, 6, 7, 0"}},
	{"04-dma.md", "saccbook run 04 --quirks skip-bus-master",
		[]string{"sacc_device_error code=0x2", "COMMAND = 0x0002, bus master off"}, nil},

	// 05: a full ring taken for an empty one; CQ_HEAD never returned.
	{"05-rings.md", "saccbook run 05 --quirks full-is-tail-eq-head",
		[]string{"SQ_TAIL 0 -> 0, 8 descriptors", "never completed", "SQ head 0 tail 0"}, nil},
	{"05-rings.md", "saccbook run 05 --quirks no-cq-head",
		[]string{"never completed", "CQ tail 7 head 0", "stalled true"}, nil},
	// 06: the expected phase wrong in each of the ways the box lists.
	{"06-phase-bits.md", "saccbook run 06 --quirks no-phase-flip",
		[]string{"job 4 (req_id 0x0) was reported done before the device had posted it"}, []string{"lap 2:"}},
	{"06-phase-bits.md", "saccbook run 06 --quirks expected-phase-zero",
		[]string{"job 0 (req_id 0x0) was reported done before the device had posted it"}, nil},
	{"06-phase-bits.md", "saccbook run 06 --quirks phase-first",
		[]string{"never completed", "completion for unknown req_id 0x0"}, nil},
	// 07: the missing barrier breaks arm64 only.
	{"07-ordering-and-coherency.md", "saccbook run 07 --quirks missing-wmb",
		[]string{"arm64, wmb on: 0 of 8 copies arrived", "overtook"}, nil},
	{"07-ordering-and-coherency.md", "saccbook run 07 --set cpu=x86 --quirks missing-wmb",
		[]string{"x86, wmb on: 8 of 8 copies arrived"}, []string{"overtook"}},
	// 08: a masked vector, and the handler that drains before it acknowledges.
	{"08-interrupts.md", "saccbook run 08 --quirks vector-left-masked",
		[]string{"control 0x1", "never completed", "IRQ_STATUS 0x1, PBA 0x1"}, nil},
	{"08-interrupts.md", "saccbook run 08 --quirks drain-then-ack",
		[]string{"req_id 0x4 never completed", "IRQ_STATUS 0x0"}, nil},
	{"08-interrupts.md", "saccbook run 08 --quirks ack-without-readback",
		[]string{"req_id 0x4 never completed", "IRQ_STATUS 0x0"}, nil},

	{"09-the-iommu.md", "saccbook run 09 --quirks no-iotlb-invalidate",
		[]string{"iommu_iotlb_hit iova=0x80003000", "iommu_translate iova=0x80003000 phys=0x108000",
			"remap copy: the new buffer holds 0x0 but the OLD one at phys 0x108000 now holds 0x22"},
		[]string{"iommu_invalidate iova=0x80003000"}},
	{"09-the-iommu.md", "saccbook run 09 --quirks iotlb-ignores-invalidate",
		[]string{"iommu_invalidate iova=0x80003000 dropped=0", "now holds 0x22"}, nil},
	{"10-kernel-bypass.md", "saccbook run 10 --quirks map-register-page",
		[]string{"mmap(/dev/sacc0, offset 0x0) succeeded at 0x7f0000000000", "SQ_BASE 0x80000000", "sacc_device_error code=0x4",
			"the next ioctl for anyone: sacc: device error; device was reset (ERR_CODE 0x4: device not enabled)"}, nil},
	{"11-when-things-go-wrong.md", "saccbook run 11 --quirks doorbell-out-of-range",
		[]string{"10 NOPs: 9 OK; resets in total: 2", "sacc_reg_write reg=SQ_TAIL size=4 val=0x8\n"}, nil},
	{"11-when-things-go-wrong.md", "saccbook run 11 --quirks skip-bus-master",
		[]string{"ERR_CODE 0x2", "sacc_msix_suppressed vector=1 why=bus-master-off"}, []string{": OK in"}},
	{"12-describing-memory.md", "saccbook run 12 --quirks first-page-only",
		[]string{"kernel buffer phys 0x112800-0x113fff (two pages) mapped at dma 0x80002800: MEMCPY of 6144 bytes, status bad address",
			"fault record 0: iova 0x80003000 reason 1 (not-present) access Read source 0x0018", "status OK, result_len 12288; data arrived"}, nil},
	{"12-describing-memory.md", "saccbook run 12 --quirks wrong-dma-direction",
		[]string{"status bad address, result_len 0; data did NOT arrive", "fault record 0: iova 0x80006800 reason 2 (write-denied) access Write"}, nil},
	{"13-capstone.md", "saccbook run 13 --quirks no-cq-head",
		[]string{"sacc_cq_full cq_tail=31 cq_head=0", "saccbook run: scenario capstone: sacc: request timed out"}, nil},
	{"13-capstone.md", "saccbook run 13 --quirks drain-then-ack",
		[]string{"64 doorbells, 64 interrupts", "8 doorbells,  8 interrupts"}, []string{"saccbook run: scenario"}},
	// 14: one process copies from IOVAs it was never given, and the one domain lets it.
	{"14-the-same-path-on-a-real-gpu.md", "saccbook run gpu-contexts --set peek=on",
		[]string{"iommu_fault iova=0x80002000 reason=read-denied",
			"peek: chat copied from the 12 pages from dma 0x80000000 on: 5 failed with status 2 (bad address), 7 copied",
			`peek: at dma 0x80006000 chat read "weights of train, layer 0: 0.12 -0.57 0.33 0.98"`}, nil},
	// 14, beside the box: one slot shared by every fence.
	{"14-the-same-path-on-a-real-gpu.md", "saccbook run 14 --set slots=shared",
		[]string{"wait(1): the fence page says 4", "but job 2 is not in place: the fence ran ahead of the work"},
		[]string{"jobs 1 to 4 are in place"}},
}

// TestBreakItBoxes runs the command of every chapter's "Break it" box and checks
// that what the box tells the learner to look for is really there, and that the
// chapter still names what the command switches on.
func TestBreakItBoxes(t *testing.T) {
	covered := map[string]bool{}
	for _, b := range breakIts {
		covered[b.file] = true
		t.Run(b.file+"/"+b.command, func(t *testing.T) { checkBreakIt(t, b) })
	}
	files, err := fs.Glob(FS, "[01][0-9]-*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		if strings.Contains(chapterText(t, file), "Break it") && !covered[file] {
			t.Errorf("%s has a Break-it box that no case here checks", file)
		}
	}
}

// checkBreakIt is the one check behind every Break-it case.
func checkBreakIt(t *testing.T, b breakIt) {
	t.Helper()
	_, s, opts, cfg, err := parseCommand(b.command)
	if err != nil {
		t.Fatal(err)
	}
	text := chapterText(t, b.file)
	for _, name := range cfg.Quirks.Names() {
		if !strings.Contains(text, name) {
			t.Errorf("%s does not name the quirk %s any more: update this case", b.file, name)
		}
	}
	for k, v := range opts {
		if !strings.Contains(text, k+"="+v) {
			t.Errorf("%s does not suggest %s=%s any more: update this case", b.file, k, v)
		}
	}
	out := runOutput(t, s, opts, cfg)
	for _, want := range b.has {
		if !strings.Contains(out, want) {
			t.Errorf("the output has no %q", want)
		}
	}
	for _, bad := range b.hasNot {
		if strings.Contains(out, bad) {
			t.Errorf("the output has %q", bad)
		}
	}
	if t.Failed() {
		t.Logf("output:\n%s", out)
	}
}

// matchLines checks that want, cut at "..." lines into runs, appears in got: each
// run as consecutive lines, the runs in order.
func matchLines(t *testing.T, what string, want []string, got string) {
	t.Helper()
	if *updateNote {
		t.Logf("%s:\n%s", what, got)
	}
	norm := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	var have []string
	for _, l := range strings.Split(got, "\n") {
		have = append(have, norm(l))
	}
	var runs [][]string
	cur := []string{}
	for _, l := range want {
		if norm(l) == "..." {
			runs = append(runs, cur)
			cur = []string{}
			continue
		}
		cur = append(cur, norm(l))
	}
	runs = append(runs, cur)
	at := 0
	for _, run := range runs {
		if len(run) == 0 {
			continue
		}
		found := -1
		for i := at; i+len(run) <= len(have); i++ {
			if equal(have[i:i+len(run)], run) {
				found = i
				break
			}
		}
		if found < 0 {
			t.Errorf("%s: these lines are not in the real output (after line %d), in this order:\n%s\n(run the test with -transcripts to see the output)",
				what, at, strings.Join(run, "\n"))
			return
		}
		at = found + len(run)
	}
}

func equal(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// prefixWriter starts each line with "# ", as `saccbook run` prints a scenario's
// narrative.
type prefixWriter struct{ w *bytes.Buffer }

func (p prefixWriter) Write(b []byte) (int, error) {
	for _, line := range bytes.SplitAfter(b, []byte("\n")) {
		if len(line) > 0 {
			p.w.WriteString("# ")
			p.w.Write(line)
		}
	}
	return len(b), nil
}

type discard struct{}

func (discard) Write(b []byte) (int, error) { return len(b), nil }

// ---------------------------------------------------------------------------
// Chapters 05–08: rings, phase bits, ordering and coherency, interrupts.

func TestChapter05Numbers(t *testing.T) {
	checkQuotes(t, "05-rings.md", []quote{
		q("%d bytes, slot `i` at `SQ_BASE + %d × i`", sacc.DescriptorSize, sacc.DescriptorSize),
		q("%d bytes, slot `i` at `CQ_BASE + %d × i`", sacc.CompletionSize, sacc.CompletionSize),
		q("a power of two from %d to %d; otherwise it refuses, with error code %d", sacc.MinRingSize, sacc.MaxRingSize, sacc.StatusRingConfig),
		q("`CQ_HEAD` (offset `%#x`, or `CQ_HEAD_DB` at `%#x` on the doorbell page)", sacc.RegCQHead, sacc.RegCQHeadDB),
	})
	// "an 8-slot ring holds 7": full after 7, not after 6.
	if !sacc.RingFull(7, 0, 8) || sacc.RingFull(6, 0, 8) || !sacc.RingEmpty(0, 0) {
		t.Error("the chapter says an 8-slot ring is full with 7 entries and empty when head equals tail")
	}
}

func TestChapter06Numbers(t *testing.T) {
	checkQuotes(t, "06-phase-bits.md", []quote{
		q("about %d ns in this machine's cost model (`mmio_read`)", cost.MMIORead),
		q("costs %d ns (`memory_poll`)", cost.MemoryPoll),
		q("bit 0 of its last two bytes (bytes %d–%d)", sacc.CplPhaseOff, sacc.CplPhaseOff+1),
		q("at CQ base + %d", sacc.CplPhaseOff),
		q("%d ns for the load and %d ns of `cpu_relax` before the next", cost.MemoryPoll, cost.CPURelax),
		q("the phase lands %d ns before the body", cost.DMAWriteLatency),
	})
	if sacc.CplPhaseBit != 1 || sacc.CompletionSize != sacc.CplPhaseOff+2 {
		t.Error("the chapter says the phase is bit 0 of the entry's last two bytes")
	}
}

func TestChapter07Numbers(t *testing.T) {
	checkQuotes(t, "07-ordering-and-coherency.md", []quote{
		q("may be performed up to %d ns", cpu.DefaultMaxHoist),
		q("reaches the device %d ns after it leaves the CPU (`mmio_write`)", cost.MMIOWrite),
		q("a barrier drains the whole store buffer and costs %d ns (`barrier`)", cost.Barrier),
	})
}

func TestChapter08Numbers(t *testing.T) {
	checkQuotes(t, "08-interrupts.md", []quote{
		q("the addresses `0x%X`–`0x%X` belong to the interrupt controller", sacc.IntWindowBase, sacc.IntWindowBase+sacc.IntWindowSize-1),
		q("arrives %d ns later (`msi_delivery`)", cost.MSIDelivery),
		q("in BAR%d at offset %d. SACC has two entries of %d bytes", sacc.MSIXTableBAR, sacc.MSIXTableOffset, sacc.MSIXEntrySize),
		q("MSI-X enable bit (%d) and a mask for the whole function (bit %d)", 15, 14),
		q("(PBA, BAR%d offset `%#x`)", sacc.MSIXPBABAR, sacc.MSIXPBAOffset),
		q("**IRQ_STATUS** (offset `%#x`)", sacc.RegIRQStatus),
		q("**IRQ_ACK** (offset `%#x`)", sacc.RegIRQAck),
		q("adds %d ns for the message to travel (`msi_delivery`) and %d ns for the CPU to take it and enter the handler (`interrupt_entry`): %s µs before",
			cost.MSIDelivery, cost.InterruptEntry, fmt.Sprintf("%.1f", float64(cost.MSIDelivery+cost.InterruptEntry)/1000)),
		q("costs %d ns (`memory_poll`), and a polling loop rests %d ns between looks (`cpu_relax`)", cost.MemoryPoll, cost.CPURelax),
		q("the write reaches the device about %d ns later (`mmio_write`)", cost.MMIOWrite),
		q("the read-back after the acknowledgement costs it another %.1f µs", float64(cost.MMIOWrite+cost.MMIORead)/1000),
	})
	if sacc.MSIXVectors != 2 || sacc.MSIXCtrlEnable != 1<<15 || sacc.MSIXCtrlFunctionMask != 1<<14 || sacc.MSIXEntryMasked != 1 {
		t.Error("the chapter says two vectors, enable bit 15, function mask bit 14, and a mask bit 0 per entry")
	}
}

// ---------------------------------------------------------------------------
// Chapters 09–13: the IOMMU, kernel bypass, errors, describing memory, the
// capstone. Their transcripts follow the rules of TestTranscripts; numbers in
// their prose come either from the cost model and the datasheet (checkQuotes)
// or from what a scenario measured (checkMeasured).

// output09to13 is what `saccbook run` prints for command.
func output09to13(t *testing.T, command string) string {
	t.Helper()
	_, s, opts, cfg, err := parseCommand(command)
	if err != nil {
		t.Fatal(err)
	}
	return runOutput(t, s, opts, cfg)
}

// measured09to13 finds the numbers pattern captures in out, as integers.
func measured09to13(t *testing.T, out, pattern string) []int64 {
	t.Helper()
	m := regexp.MustCompile(pattern).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("the run printed nothing like %q", pattern)
	}
	var n []int64
	for _, s := range m[1:] {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("%q in %q is not a number", s, m[0])
		}
		n = append(n, v)
	}
	return n
}

// between09to13 is the part of out from the first line containing from up to
// the first line after it containing to.
func between09to13(out, from, to string) string {
	i := strings.Index(out, from)
	if i < 0 {
		return ""
	}
	j := strings.Index(out[i:], to)
	if j < 0 {
		return out[i:]
	}
	return out[i : i+j]
}

// luck09 is what polling added to (or took from) the cold copy beyond its three
// page walks.
func luck09(d int64) quote {
	if d < 0 {
		return q("less %d ns of polling luck", -d)
	}
	return q("and %d ns of polling luck", d)
}

func TestChapter09Numbers(t *testing.T) {
	const file = "09-the-iommu.md"
	checkQuotes(t, file, []quote{
		q("There are %d levels. Each table is one 4 KiB page of %d entries, %d bytes each", sacc.IOPTLevels, sacc.IOPTEntries, sacc.IOPTEntrySize),
		q("So an IOVA has %d bits", sacc.IOVAWidth),
		q("`%#04x` for `00:03.0`", sacc.SourceID(sacc.SACCBus, sacc.SACCDevice, sacc.SACCFunction)),
		q("The reasons are %d (not present), %d (write not allowed), %d (read not allowed) and %d (beyond %d bits)",
			sacc.FaultNotPresent, sacc.FaultWriteDenied, sacc.FaultReadDenied, sacc.FaultAddressWidth, sacc.IOVAWidth),
		q("from `%#x` up", kernel.IOVABase),
		q("%d ns for it (`iotlb_miss`)", cost.IOTLBMiss),
		q("keeps the last %d translations", sacc.IOTLBEntries),
		q("flushes the whole IOTLB once %d pages are waiting", lazyBatch09(t)),
		q("three page walks of %d ns", cost.IOTLBMiss),
	})
	out := output09to13(t, "saccbook run 09")
	cold := measured09to13(t, out, `first copy \(IOTLB cold\): (\d+) ns`)[0]
	warm := measured09to13(t, out, `second copy \(IOTLB warm\): (\d+) ns`)[0]
	checkQuotes(t, file, []quote{
		q("the cold copy takes %d ns and the warm one %d ns", cold, warm),
		luck09(cold - warm - 3*int64(cost.IOTLBMiss)),
	})
	out = output09to13(t, "saccbook run iommu-flush")
	s := measured09to13(t, out, `strict: (\d+) jobs in \d+ ns \((\d+) ns per job\); writes to INVALIDATE: (\d+)`)
	l := measured09to13(t, out, `lazy: \d+ jobs in \d+ ns \((\d+) ns per job\); writes to INVALIDATE: (\d+)`)
	checkQuotes(t, file, []quote{
		q("runs %d jobs twice", s[0]),
		q("Lazy mode wrote INVALIDATE once instead of %d times, and saved %d ns per job", s[2], s[1]-l[0]),
	})
	if l[1] != 1 {
		t.Errorf("the chapter says lazy mode wrote INVALIDATE once; the run says %d", l[1])
	}
}

// lazyBatch09 finds, by running the kernel, after how many lazy unmaps it
// flushes the IOTLB.
func lazyBatch09(t *testing.T) int {
	t.Helper()
	h, err := host.Boot(host.Config{Kernel: kernel.Config{IOMMU: true, LazyUnmap: true}})
	if err != nil {
		t.Fatal(err)
	}
	pd := h.Dev.PCI()
	before := h.K.Stats.IOTLBFlushes
	for i := 1; i <= 1000; i++ {
		p, err := h.K.AllocPages(sacc.PageSize)
		if err != nil {
			t.Fatal(err)
		}
		d, err := pd.DMAMapSingle(p, sacc.PageSize, kernel.DMAFromDevice)
		if err != nil {
			t.Fatal(err)
		}
		pd.DMAUnmapSingle(d, sacc.PageSize, kernel.DMAFromDevice)
		if h.K.Stats.IOTLBFlushes != before {
			return i
		}
	}
	t.Fatal("lazy mode never flushed")
	return 0
}

func TestChapter10Numbers(t *testing.T) {
	const file = "10-kernel-bypass.md"
	checkQuotes(t, file, []quote{
		q("calls `mmap` at offset `%#x` of the device file", sacc.DoorbellPage),
		q("with SQ_TAIL at `%#x` and CQ_HEAD_DB at `%#x`", sacc.RegSQTail, sacc.RegCQHeadDB),
		q("CQ_HEAD exists only on the register page, at `%#x`", sacc.RegCQHead),
		q("SACC v1 adds CQ_HEAD_DB at `%#x`", sacc.RegCQHeadDB),
		q("which the cost model prices at %d ns (`syscall`, round trip)", cost.Syscall),
		q("%d ns of DMA read latency (`dma_read_latency`)", cost.DMAReadLatency),
		q("(two `iommu_iotlb_miss` of %d ns each)", cost.IOTLBMiss),
	})
	out := output09to13(t, "saccbook run 10")
	n := measured09to13(t, out, `bypass: (\d+) ns per NOP, 0 system calls`)
	k := measured09to13(t, out, `kernel path: (\d+) ns per NOP, 8 system calls`)
	calls := measured09to13(t, out, `16 entries each; (\d+) system calls so far`)
	stall := measured09to13(t, out, `v0.1 rules: (\d+) NOPs submitted and (\d+) completions seen`)
	checkQuotes(t, file, []quote{
		q("A NOP through bypass takes %d ns; through `ioctl` it takes %d ns", n[0], k[0]),
		q("The %d system calls are the whole setup", calls[0]),
		q("With 16-entry rings, it can consume %d completions", stall[1]),
	})
	out = output09to13(t, "saccbook run bypass")
	b := measured09to13(t, out, `bypass: (\d+) ns per 4 KiB job`)
	kp := measured09to13(t, out, `kernel path: (\d+) ns per 4 KiB job`)
	checkQuotes(t, file, []quote{q("That is %d ns more per job on the kernel path", kp[0]-b[0])})
	// "the IOMMU has to walk its tables twice more per job": after the first, every
	// ioctl of the kernel path makes two IOTLB misses.
	var misses []int
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.Contains(line, "iommu_iotlb_miss"):
			if len(misses) > 0 {
				misses[len(misses)-1]++
			}
		case strings.Contains(line, "syscall nr=ioctl a0=0xc0205301"):
			misses = append(misses, 0)
		}
	}
	if len(misses) < 3 {
		t.Fatalf("the bypass run made %d SUBMIT ioctls", len(misses))
	}
	for i, m := range misses[1 : len(misses)-1] {
		if m != 2 {
			t.Errorf("between ioctl %d and %d the IOMMU missed %d times, the chapter says 2", i+1, i+2, m)
		}
	}
}

func TestChapter11Numbers(t *testing.T) {
	const file = "11-when-things-go-wrong.md"
	checkQuotes(t, file, []quote{
		q("a bad opcode (status %d), a bad address (status %d", sacc.StatusBadOpcode, sacc.StatusBadAddress),
		q("a bad length (status %d: zero, or more than %d MiB for a copy)", sacc.StatusBadLength, sacc.MaxLength>>20),
		q("| a doorbell while the device is not READY | %d |", sacc.StatusNotEnabled),
		q("| an SQ_TAIL or CQ_HEAD value at or beyond the ring size | %d |", sacc.StatusDoorbell),
		q("| any DMA while bus mastering is off | %d |", sacc.StatusBadAddress),
		q("(code %d) leaves it in the same halted state", sacc.StatusRingConfig),
		q("wait for READY (%d µs by default, `enable_latency`)", cost.EnableLatency/1000),
		q("sees READY %d ns later", cost.EnableLatency),
		q("include %d ns of MSI delivery (`msi_delivery`), %d ns of interrupt entry (`interrupt_entry`), the register reads and the %d ns enable latency",
			cost.MSIDelivery, cost.InterruptEntry, cost.EnableLatency),
	})
	out := output09to13(t, "saccbook run 11")
	on := measured09to13(t, out, `reset the device (\d+) ns after the bad write`)
	out = output09to13(t, "saccbook run 11 --set errvec=masked")
	off := measured09to13(t, out, `reset the device (\d+) ns after the bad write`)
	deadline := measured09to13(t, out, `a (\d+) µs deadline on every wait`)
	checkQuotes(t, file, []quote{
		q("The %d ns from the bad write to a working device", on[0]),
		q("The driver waited out its %d µs deadline", deadline[0]),
	})
	if d := off[0] - on[0]; d < deadline[0]*1000-5000 || d > deadline[0]*1000 {
		t.Errorf("masked, the recovery came %d ns later than with the vector; the chapter explains that by the %d µs deadline", d, deadline[0])
	}
}

func TestChapter12Numbers(t *testing.T) {
	const file = "12-describing-memory.md"
	checkQuotes(t, file, []quote{
		q("%d ns of DMA read latency each time (`dma_read_latency`)", cost.DMAReadLatency),
		q("nine page walks of %d ns instead (`iotlb_miss`)", cost.IOTLBMiss),
	})
	on := output09to13(t, "saccbook run 12")
	off := output09to13(t, "saccbook run 12 --set iommu=off")
	a := measured09to13(t, on, `MEMCPY of 12288 bytes: 1 descriptor\(s\), 1 doorbell\(s\), (\d+) ns`)
	b := measured09to13(t, off, `MEMCPY of 12288 bytes: 4 descriptor\(s\), 1 doorbell\(s\), (\d+) ns`)
	checkQuotes(t, file, []quote{q("The copy took %d ns instead of %d ns", b[0], a[0])})
	// Nine walks on the device's path: the SQ page and eight data pages (the
	// walk for the completion write costs no time in the device model).
	copyTrace := between09to13(on, "sacc_desc req_id=0x0 opcode=MEMCPY len=12288", "sacc_dma_write")
	walks := strings.Count(copyTrace, "iommu_iotlb_miss")
	fetch := strings.Count(between09to13(on, "sacc_fetch sq_head=0", "sacc_desc req_id=0x0"), "iommu_iotlb_miss")
	if walks+fetch != 9 {
		t.Errorf("the 12 KiB copy made %d + %d page walks before its completion, the chapter says nine", fetch, walks)
	}
}

func TestChapter13Numbers(t *testing.T) {
	const file = "13-capstone.md"
	perJob := cost.DMAReadLatency + cost.Transfer(sacc.DescriptorSize) + cost.DeviceCommand +
		cost.DMAReadLatency + cost.Transfer(4096) + cost.IOTLBMiss + cost.Transfer(4096) + cost.DMAWriteLatency
	checkQuotes(t, file, []quote{
		q("%d ns until the first byte returns (`dma_read_latency`), plus %d ns for 32 bytes on the link", cost.DMAReadLatency, cost.Transfer(sacc.DescriptorSize)),
		q("decodes it: %d ns (`device_command`)", cost.DeviceCommand),
		q("another %d ns of read latency, plus %d ns for 4096 bytes at %d bytes per µs (`link_bytes_per_us`)", cost.DMAReadLatency, cost.Transfer(4096), cost.LinkBytesPerUs),
		q("a destination page it has not seen: %d ns (`iotlb_miss`)", cost.IOTLBMiss),
		q("%d ns on the link, and %d ns until it lands (`dma_write_latency`)", cost.Transfer(4096), cost.DMAWriteLatency),
		q("That is %d ns per job, or %d MB/s", perJob, 4096*1000/uint64(perJob)),
		q("The link could carry %d MB/s", cost.LinkBytesPerUs),
		q("%d ns of MSI delivery (`msi_delivery`) and %d ns to enter the handler (`interrupt_entry`)", cost.MSIDelivery, cost.InterruptEntry),
		q("costs %.1f µs of host time per job", float64(cost.MSIDelivery+cost.InterruptEntry)/1000),
		q("one `sacc_cq_post` follows another every %d ns", perJob),
		q("64 jobs at %d ns are %d ns", perJob, 64*perJob),
		q("close to the device's %d", perJob),
		q("The interrupts still cost %.1f µs per job", float64(cost.MSIDelivery+cost.InterruptEntry)/1000),
	})
	row := func(out, name string) []int64 {
		return measured09to13(t, out, regexp.QuoteMeta(name)+` *: *(\d+) ns total, *(\d+) MB/s, latency mean *(\d+) ns max *(\d+) ns`)
	}
	out := output09to13(t, "saccbook run 13")
	p1, p8 := row(out, "polling, one doorbell per job"), row(out, "polling, one doorbell per 8")
	i1, i8 := row(out, "irq,     one doorbell per job"), row(out, "irq,     8 per doorbell, 1 irq")
	by := row(out, "bypass,  one doorbell per 8")
	checkQuotes(t, file, []quote{
		q("the best runs take %d and %d ns", p8[0], by[0]),
		q("one job at a time costs only %d%% of throughput here (%d against %d MB/s)", (p8[1]-p1[1])*100/p8[1], p1[1], p8[1]),
		q("But its latency is the best: %d ns", p1[2]),
		q("the mean latency jumps to %d ns and the worst to %d ns", p8[2], p8[3]),
		q("an interrupt per job costs %d − %d = %d ns over 64 jobs", i1[0], p1[0], i1[0]-p1[0]),
		q("about %.1f µs each: `msi_delivery` plus `interrupt_entry`, and the handler's read-back", float64(i1[0]-p1[0])/64/1000),
		q("brings the total back to %d ns", i8[0]),
		q("so the mean latency is the batch's: %d ns", i8[2]),
	})
	// The handler's read-back after IRQ_ACK waits for the posted ack (up to
	// mmio_write) and then makes its round trip (mmio_read).
	if per, base := (i1[0]-p1[0])/64, int64(cost.MSIDelivery+cost.InterruptEntry+cost.MMIORead); per < base || per > base+int64(cost.MMIOWrite)+50 {
		t.Errorf("an interrupt per job costs %d ns per job, the chapter says msi_delivery plus interrupt_entry plus the read-back", per)
	}
	// The batched polling run: completions every perJob ns.
	batched := between09to13(out, "polling, one doorbell per job :", "polling, one doorbell per 8   :")
	var posts []int64
	for _, line := range strings.Split(batched, "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[1] == "sacc_cq_post" {
			v, _ := strconv.ParseInt(f[0], 10, 64)
			posts = append(posts, v)
		}
	}
	gaps := map[int64]int{}
	for i := 1; i < len(posts); i++ {
		gaps[posts[i]-posts[i-1]]++
	}
	if gaps[int64(perJob)] < 48 {
		t.Errorf("in the batched polling run, completions %d ns apart: %d times of %d (gaps %v)", perJob, gaps[int64(perJob)], len(posts)-1, gaps)
	}
	small := output09to13(t, "saccbook run 13 --set size=256")
	s1, si := row(small, "polling, one doorbell per job"), row(small, "irq,     one doorbell per job")
	checkQuotes(t, file, []quote{q("(%d − %d = %d ns for 64 jobs)", si[0], s1[0], si[0]-s1[0])})
}

func TestChapter14Numbers(t *testing.T) {
	const file = "14-the-same-path-on-a-real-gpu.md"
	checkQuotes(t, file, []quote{
		q("SACC writes a %d-byte completion for every command", sacc.CompletionSize),
		q("two enables of the device, each %d µs", cost.EnableLatency/1000),
	})
	if len(sacc.Opcodes) != 3 || !strings.Contains(chapterText(t, file), "SACC has three opcodes") {
		t.Errorf("the chapter says SACC has three opcodes; the datasheet lists %d", len(sacc.Opcodes))
	}
	out := output09to13(t, "saccbook run 14")
	all := measured09to13(t, out, `wait\(4\): the fence page says 4, (\d+) ns after the doorbell`)[0]
	one := measured09to13(t, out, `wait\(5\): the fence page says 5, (\d+) ns after the doorbell`)[0]
	each := measured09to13(t, out, `a command like any other: (\d+) ns each`)[0]
	head := measured09to13(t, out, `CQ_HEAD_DB = (\d+): the CQ slots of the (\d+) commands before fence 4`)
	reads := measured09to13(t, out, `the CPU read (\d+) completions, only to look for errors`)[0]
	checkQuotes(t, file, []quote{
		q("one fence for four jobs arrives %d ns sooner than four fences", all-one),
		q("a descriptor fetch, a read and a write, about %.1f µs", float64(each)/1000),
		q("hands back %d slots, not %d", head[1], head[1]+1),
	})
	if reads != 3 || !strings.Contains(chapterText(t, file), "reads the three completions it retires") {
		t.Errorf("the chapter says the process reads three completions; the run read %d", reads)
	}
	// Fence 4 in the trace: the device's write into the fence page, the process's
	// load that sees 4, and the fence command's own completion.
	wrote := measured09to13(t, out, `(\d+) sacc_dma_write iova=0x80002000 phys=0x[0-9a-f]+ len=8\n\s+\d+ cpu_read addr=0x[0-9a-f]+ size=8 val=0x4\n`)[0]
	seen := measured09to13(t, out, `(\d+) cpu_read addr=0x[0-9a-f]+ size=8 val=0x4\n\s+\d+ cpu_barrier op=rmb`)[0]
	posted := measured09to13(t, out, `(\d+) sacc_cq_post cq_tail=7 req_id=0xf0000004`)[0]
	checkQuotes(t, file, []quote{
		q("the process sees the fence %d ns after the device wrote it", seen-wrote),
		q("comes %d ns after the process has already seen the fence", posted-seen),
	})
	ctx := output09to13(t, "saccbook run gpu-contexts")
	checkQuotes(t, file, []quote{
		q("The switch took %d ns", measured09to13(t, ctx, `from train to chat in (\d+) ns`)[0]),
	})
	peek := output09to13(t, "saccbook run gpu-contexts --set peek=on")
	checkQuotes(t, file, []quote{
		q("%d pages from `%#x` on", measured09to13(t, peek, `copied from the (\d+) pages`)[0], kernel.IOVABase),
	})
}
