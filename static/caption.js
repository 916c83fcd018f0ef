// caption.js: one line of plain words for the current event, and the garage
// metaphor's version of it (WORKBOOK.md: your garage is host memory, the
// neighbour is the device, the keypad is the IOMMU, the house is the kernel).

function where(st, addr) {
  if (addr == null) return "";
  const inRing = (base, size, n) => base != null && addr >= base && addr < base + size * n;
  if (inRing(st.sqBase, 32, st.sqSize)) return " (SQ slot " + Math.floor((addr - st.sqBase) / 32) + ")";
  if (inRing(st.cqBase, 16, st.cqSize)) return " (CQ slot " + Math.floor((addr - st.cqBase) / 16) + ")";
  return "";
}

function physWhere(st, addr) {
  if (addr == null) return "";
  const inRing = (base, size, n) => base != null && addr >= base && addr < base + size * n;
  if (inRing(st.sqPhys, 32, st.sqSize)) return " in SQ slot " + Math.floor((addr - st.sqPhys) / 32);
  if (inRing(st.cqPhys, 16, st.cqSize)) return " in CQ slot " + Math.floor((addr - st.cqPhys) / 16);
  return "";
}

// caption says what ev did, given the state just after it.
function caption(ev, st, L) {
  if (!ev) return "Nothing has happened yet: press play or step.";
  const a = ev.args || {};
  const ta = L.textArgs(ev.text);
  const hx = L.hex;
  switch (ev.kind) {
    case "cpu_write": return "the CPU stores " + (ta.val || hx(a.val)) + " (" + a.size + " bytes) at " + (ta.addr || hx(a.addr)) + physWhere(st, a.addr);
    case "cpu_read": return "the CPU loads " + (ta.val || hx(a.val)) + " from " + (ta.addr || hx(a.addr)) + physWhere(st, a.addr) +
      (physWhere(st, a.addr).includes("CQ") ? ": is the phase new?" : "");
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
    case "sacc_dma_read": return "the device reads " + a.len + " bytes of host memory at " + (ta.iova || hx(a.iova)) + where(st, a.iova);
    case "sacc_dma_write": return "the device writes " + a.len + " bytes of host memory at " + (ta.iova || hx(a.iova)) + where(st, a.iova);
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

// garageCaption retells ev in the workbook's metaphor.
function garageCaption(ev, st, L) {
  if (!ev) return "Your garage is quiet. Press play or step.";
  const a = ev.args || {};
  const w = physWhere(st, a.addr);
  switch (ev.kind) {
    case "cpu_write":
      if (w.includes("SQ")) return "You write a job on the SQ board," + w.replace(" in SQ", "") + ".";
      if (w.includes("CQ")) return "You wipe a row of the CQ board," + w.replace(" in CQ", "") + ".";
      return "You put something on a shelf in your garage.";
    case "cpu_read": return w.includes("CQ") ? "You glance at the CQ board: is this row's mark this lap's colour?" : "You look at a shelf in your garage.";
    case "cpu_barrier": return "You make sure everything you wrote is really on the board before you go on.";
    case "sacc_doorbell": return "You ring the neighbour's doorbell (jobs up to row " + a.sq_tail + ") and walk away.";
    case "sacc_reg_write": return "You leave a note in the neighbour's letterbox.";
    case "sacc_reg_read": return "You knock and wait at the neighbour's door for an answer.";
    case "sacc_fetch": return "The neighbour walks into your garage and reads row " + a.sq_head + " of the SQ board.";
    case "sacc_desc": return "The job on the board says: " + (L.textArgs(ev.text).opcode || "") + ", " + a.len + " bytes.";
    case "sacc_dma_read": {
      const at = where(st, a.iova);
      return at ? "The neighbour reads the SQ board," + at.replace(/[()]/g, "").replace(" SQ slot", " row") + "."
        : "The neighbour takes " + a.len + " bytes off a shelf in your garage.";
    }
    case "sacc_dma_write": {
      const at = where(st, a.iova);
      return at ? "The neighbour writes on the CQ board," + at.replace(/[()]/g, "").replace(" CQ slot", " row") + "."
        : "The neighbour puts " + a.len + " bytes on a shelf in your garage.";
    }
    case "sacc_cq_post": return "The neighbour writes the result on row " + a.cq_tail + " of the CQ board, mark colour " +
      (a.phase ? "● (lap colour 1)" : "○ (lap colour 0)") + " last.";
    case "sacc_phase_flip": return "The neighbour starts a new lap of the CQ board: the mark colour changes.";
    case "sacc_cq_full": return "The CQ board is full: the neighbour waits until you free a row.";
    case "sacc_cq_head": return "You tell the neighbour which CQ rows you have read (up to " + a.cq_head + ").";
    case "sacc_idle": return "No new jobs on the SQ board: the neighbour goes home.";
    case "sacc_msix_send": case "msi_deliver": return "The neighbour rings your house's bell: an interrupt.";
    case "irq_entry": return "The lights go on in the house: the kernel handles the interrupt.";
    case "irq_exit": return "The house goes quiet again.";
    case "syscall": return "You ask the house (the kernel) for something: a system call.";
    case "iommu_translate": return "The keypad at the garage door checks the neighbour's code: allowed.";
    case "iommu_fault": return "The keypad refuses the neighbour: that shelf is off limits.";
    case "sacc_enable": case "sacc_ready": return "The neighbour learns where your two boards hang and gets ready.";
    case "sacc_device_error": return "Something went badly wrong: the neighbour stops until reset.";
    case "pci_cfg_read": case "pci_cfg_write": return "The house looks up and down the street to see who lives there (PCI configuration).";
  }
  return caption(ev, st, L);
}

export function install(L) {
  L.caption = caption;
  L.garageCaption = garageCaption;
}
