package profile

import (
	"fmt"

	"github.com/saccbook/saccbook/sacc/trace"
)

// upstreamEvents are upstream's trace points, as its qemu/trace-events file writes
// them under "# sacc.c", each bound to the kind the upstream engine emits where
// upstream's device calls it. Kinds not listed (the platform's, the CPU's, the
// IOMMU's) print as the kinds table has them: upstream's QEMU traces those with
// trace points of its own, or not at all.
var upstreamEvents = []trace.Spelling{
	{Kind: trace.RegRead, Name: "sacc_mmio_reg_read",
		Format: "addr=0x%x val=0x%x size=%u", Args: []string{"reg", "val", "size"}},
	{Kind: trace.RegWrite, Name: "sacc_mmio_reg_write",
		Format: "addr=0x%x val=0x%x size=%u", Args: []string{"reg", "val", "size"}},
	{Kind: trace.Doorbell, Name: "sacc_doorbell",
		Format: "sq_tail=%u", Args: []string{"sq_tail"}},
	{Kind: trace.SQFetch, Name: "sacc_sq_fetch",
		Format: "idx=%u src=0x%x dst=0x%x len=%u op=0x%x flags=0x%x req_id=0x%x",
		Args:   []string{"idx", "src", "dst", "len", "op", "flags", "req_id"}},
	{Kind: trace.SQFetchError, Name: "sacc_sq_fetch_err",
		Format: "idx=%u dma read failed at 0x%x", Args: []string{"idx", "addr"}},
	{Kind: trace.CQFull, Name: "sacc_cq_full",
		Format: "cq_tail=%u cq_head=%u", Args: []string{"cq_tail", "cq_head"}},
	{Kind: trace.CQPostError, Name: "sacc_cq_post_err",
		Format: "cq_tail=%u dma write failed at 0x%x", Args: []string{"cq_tail", "addr"}},
	{Kind: trace.CQPostUpstream, Name: "sacc_cq_post",
		Format: "cq_tail=%u req_id=0x%x status 0x%x result_len %u phase 0x%x",
		Args:   []string{"cq_tail", "req_id", "status", "result_len", "phase"}},
	{Kind: trace.Descriptor, Name: "sacc_exec",
		Format: "req_id=0x%x op 0x%x len %u", Args: []string{"req_id", "opcode", "len"}},
	{Kind: trace.CommandError, Name: "sacc_exec_err",
		Format: "req_id=0x%x status 0x%x", Args: []string{"req_id", "status"}},
}

// upstreamDialect is compiled once; a spelling that does not fit its kind is a
// mistake in the table above, found by the first test that builds a profile.
var upstreamDialect = func() trace.Dialect {
	d, err := trace.NewDialect(UpstreamV01Name, upstreamEvents)
	if err != nil {
		panic(fmt.Sprintf("profile: %v", err))
	}
	return d
}()
