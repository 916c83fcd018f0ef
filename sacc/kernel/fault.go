package kernel

import "fmt"

// Fault injection, after Linux's fail_function (Documentation/fault-injection):
// a caller arms a failure of one kernel function by its Linux name, and that
// function returns the given error instead of doing its work. It lets a test walk
// every error path of a driver's probe on a machine that is not broken. Nothing is
// armed unless a caller asks, so an ordinary run never meets it.

// injectable reports whether fn can be made to fail (Linux's
// ALLOW_ERROR_INJECTION): the functions a PCI driver's probe calls and must
// unwind.
func injectable(fn string) bool {
	switch fn {
	case "pci_enable_device", "pci_request_regions", "pci_iomap", "dma_set_mask_and_coherent",
		"dma_alloc_coherent", "pci_alloc_irq_vectors", "request_irq":
		return true
	}
	return false
}

type faultPoint struct {
	fn   string
	skip int // calls that still succeed before the failure
	err  error
}

// InjectFault makes the call of fn that follows skip successful calls fail with
// err, once; it replaces whatever was armed for fn before. fn is a Linux name from the injectable list (pci_enable_device,
// pci_request_regions, pci_iomap, dma_set_mask_and_coherent, dma_alloc_coherent,
// pci_alloc_irq_vectors, request_irq).
func (k *Kernel) InjectFault(fn string, skip int, err error) error {
	if !injectable(fn) {
		return fmt.Errorf("fail_function: %s cannot be made to fail: %w", fn, EINVAL)
	}
	if err == nil || skip < 0 {
		return fmt.Errorf("fail_function %s: need an error and skip >= 0: %w", fn, EINVAL)
	}
	for i := range k.faults {
		if k.faults[i].fn == fn {
			k.faults[i] = faultPoint{fn: fn, skip: skip, err: err}
			return nil
		}
	}
	k.faults = append(k.faults, faultPoint{fn: fn, skip: skip, err: err})
	return nil
}

// shouldFail is the injection point at the top of an injectable function: the
// armed error for this call, or nil.
func (k *Kernel) shouldFail(fn string) error {
	for i := range k.faults {
		f := &k.faults[i]
		if f.fn != fn {
			continue
		}
		if f.skip > 0 {
			f.skip--
			return nil
		}
		k.faults = append(k.faults[:i], k.faults[i+1:]...)
		k.Printk("FAULT_INJECTION: forcing a failure in %s", fn)
		return fmt.Errorf("%s: %w", fn, f.err)
	}
	return nil
}
