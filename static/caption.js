// caption.js: one line of plain words for the current event, given the state
// just after it. A view may tell events its own way (the garage view does, in
// the workbook's metaphor); this is everyone else's.

import { hex as hx, textArgs } from "./format.js";

// where names the ring slot a DMA address is in: " (SQ slot 3)", or "".
export function where(st, addr, ds) {
  const i = ds.descriptor.slot(st.sqBase, st.sqSize, addr);
  if (i >= 0) return " (SQ slot " + i + ")";
  const j = ds.completion.slot(st.cqBase, st.cqSize, addr);
  if (j >= 0) return " (CQ slot " + j + ")";
  return "";
}

// physWhere names the ring slot a physical address is in: " in SQ slot 3", or "".
export function physWhere(st, addr, ds) {
  const i = ds.descriptor.slot(st.sqPhys, st.sqSize, addr);
  if (i >= 0) return " in SQ slot " + i;
  const j = ds.completion.slot(st.cqPhys, st.cqSize, addr);
  if (j >= 0) return " in CQ slot " + j;
  return "";
}

// caption says what ev did, given the state just after it.
export function caption(ev, st, ds) {
  if (!ev) return "Nothing has happened yet: press play or step.";
  const a = ev.args || {};
  const ta = textArgs(ev.text);
  switch (ev.kind) {
    case "cpu_write": return "the CPU's store of " + (ta.val || hx(a.val)) + " (" + a.size + " bytes) at " + (ta.addr || hx(a.addr)) + physWhere(st, a.addr, ds) +
      " reaches memory";
    case "cpu_store": return "the CPU stores " + (ta.val || hx(a.val)) + " (" + a.size + " bytes) at " + (ta.addr || hx(a.addr)) + physWhere(st, a.addr, ds) +
      ": it waits in the store buffer (" + a.pending + " waiting), not yet visible to the device";
    case "cpu_mmio_write": return "the CPU issues a write of " + (ta.val || hx(a.val)) + " to " +
      (a.bar === 0 && ds.regName(a.off) ? "device register " + ds.regName(a.off) : "BAR" + a.bar + " offset " + (ta.off || hx(a.off))) +
      ": posted, it lands at the device later; stores still in the store buffer now were not ordered before it";
    case "cpu_store_cached": return "a buffered store to " + (ta.addr || hx(a.addr)) + " drains into a dirty cache line: the device still cannot see it";
    case "driver_cq": return "the driver will look at CQ slot " + a.head + " next and take it as new only if its phase is " + a.phase;
    case "proc_map": return "the kernel maps " + (a.mmio ? "device memory " : "page ") + (ta.phys || hx(a.phys)) + " into process " + a.pid + " at " + (ta.va || hx(a.va));
    case "iommu_walk": return "page walk, level " + a.level + ": entry " + a.index + " of the table at " + (ta.table || hx(a.table)) + " reads " + (ta.entry || hx(a.entry)) +
      ((a.entry & 3) === 0 ? " (not present)" : "");
    case "cpu_read": return "the CPU loads " + (ta.val || hx(a.val)) + " from " + (ta.addr || hx(a.addr)) + physWhere(st, a.addr, ds) +
      (physWhere(st, a.addr, ds).includes("CQ") ? ": is the phase new?" : "");
    case "pio_read": return "the CPU reads I/O port " + hx(a.port);
    case "pio_write": return "the CPU writes I/O port " + hx(a.port);
    case "cpu_barrier": return "the CPU runs " + (ta.op || "a barrier") + ": earlier stores (" + a.drained + " buffered) reach memory first";
    case "cpu_cache": return "cache maintenance (" + (ta.op || "") + ") of " + a.lines + " lines at " + (ta.addr || hx(a.addr));
    case "guest_error": return "refused access at " + (ta.addr || hx(a.addr)) + ": " + (ta.reason || a.reason);
    case "pci_cfg_read": return "configuration read of " + (ta.dev || "") + " register " + (ta.reg || hx(a.reg)) + " gives " + (ta.val || hx(a.val)) +
      (ta.val === "0xffffffff" || ta.val === "0xffff" ? " (all ones: nobody there)" : "");
    case "pci_cfg_write": return "configuration write to " + (ta.dev || "") + " register " + (ta.reg || hx(a.reg)) + " = " + (ta.val || hx(a.val));
    case "pci_bar_map": return "BAR" + a.bar + " now answers at " + (ta.addr || hx(a.addr)) + " (" + (ta.size || hx(a.size)) + " bytes)";
    case "pci_bar_unmap": return "BAR" + a.bar + " stops answering";
    case "msi_deliver": return "the interrupt write arrives: vector " + a.vector + " is raised at the CPU";
    case "sacc_reg_read": return "the CPU reads device register " + ta.reg + " = " + (ta.val || hx(a.val)) + " (a round trip across the link)";
    case "sacc_reg_write": return "the CPU writes device register " + ta.reg + " = " + (ta.val || hx(a.val)) + " (posted: it does not wait)";
    case "sacc_doorbell": {
      const n = st.sqSize ? (a.sq_tail - a.sq_head + st.sqSize) % st.sqSize : a.sq_tail - a.sq_head;
      return "doorbell! the CPU writes SQ_TAIL = " + a.sq_tail + ": the device now owns " + n +
        (n === 1 ? " descriptor, in SQ slot " : " descriptors, from SQ slot ") + a.sq_head;
    }
    case "sacc_cq_head": return "the driver hands CQ slots back: CQ_HEAD = " + a.cq_head;
    case "sacc_enable": return "the device is enabled with a " + a.sq_size + "-slot SQ and a " + a.cq_size + "-slot CQ";
    case "sacc_enable_refused": return "the device refuses to enable: the ring configuration is bad";
    case "sacc_ready": return "the device is ready (STATUS.READY = 1)";
    case "sacc_disable": return "the device is disabled: its ring state is dropped";
    case "sacc_reset": return "the device resets: every register returns to its power-on value";
    case "sacc_fetch": return "the device fetches the descriptor in SQ slot " + a.sq_head + " by DMA from " + (ta.addr || hx(a.addr));
    case "sacc_desc": return "the descriptor says: req_id " + ta.req_id + ", " + ta.opcode + ", " + a.len + " bytes";
    case "sacc_dma_read": return "the device reads " + a.len + " bytes of host memory at " + (ta.iova || hx(a.iova)) + where(st, a.iova, ds);
    case "sacc_dma_write": return "the device writes " + a.len + " bytes of host memory at " + (ta.iova || hx(a.iova)) + where(st, a.iova, ds);
    case "sacc_cq_post": return "the device posts completion req_id " + (ta.req_id || hx(a.req_id)) + " in CQ slot " + a.cq_tail +
      " with phase " + a.phase + (a.status ? " and error status " + (ta.status || a.status) : "");
    case "sacc_phase_flip": return "the CQ tail wrapped: the device's phase is now " + a.phase;
    case "sacc_cq_full": return "the CQ is full (tail " + a.cq_tail + ", head " + a.cq_head + "): the device stalls";
    case "sacc_cq_resume": return "a CQ slot came free (head " + a.cq_head + "): the device carries on";
    case "sacc_cmd_error": return "command req_id " + (ta.req_id || hx(a.req_id)) + " fails with status " + (ta.status || hx(a.status));
    case "sacc_device_error": return "device error " + (ta.code || hx(a.code)) + ": the device halts until reset";
    case "sacc_idle": return "the SQ is empty (head " + a.sq_head + " = tail): the device waits for the doorbell";
    case "sacc_irq_ack": return "the driver acknowledges the interrupt (IRQ_STATUS cleared)";
    case "sacc_msix_send": return "the device sends MSI-X vector " + a.vector + ": a memory write to " + (ta.addr || hx(a.addr));
    case "sacc_msix_pending": return "vector " + a.vector + " is masked: the interrupt waits in the PBA";
    case "sacc_msix_suppressed": return "no interrupt for vector " + a.vector + ": " + (ta.why || a.why);
    case "iommu_reg_read": return "the CPU reads IOMMU register " + ta.reg;
    case "iommu_reg_write": return "the CPU writes IOMMU register " + ta.reg + " = " + (ta.val || hx(a.val));
    case "iommu_translate": return "the IOMMU translates IOVA " + (ta.iova || hx(a.iova)) + " to " + (ta.phys || hx(a.phys));
    case "iommu_iotlb_hit": return "the IOTLB already knows IOVA page " + (ta.iova || hx(a.iova));
    case "iommu_iotlb_miss": return "IOTLB miss for " + (ta.iova || hx(a.iova)) + ": the IOMMU walks the page table";
    case "iommu_iotlb_evict": return "the IOTLB drops its oldest entry, " + (ta.iova || hx(a.iova));
    case "iommu_fault": return "the IOMMU blocks a " + (ta.access || "") + " of " + (ta.iova || hx(a.iova)) + ": " + (ta.reason || a.reason);
    case "iommu_fault_overflow": return "the IOMMU fault log is full: a fault record is lost";
    case "iommu_invalidate": return "IOTLB invalidation: " + a.dropped + " entries dropped";
    case "irq_entry": return "the CPU takes interrupt vector " + a.vector + ": the kernel's handler runs";
    case "irq_exit": return "the interrupt handler returns" + (a.handled ? " having handled " + a.handled : "");
    case "syscall": return "a system call, " + (ta.nr || a.nr) + ": into the kernel and back";
  }
  return ev.kind.replace(/_/g, " ") + " " + (ev.text || "");
}
