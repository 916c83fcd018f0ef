package iommu

// Saved is the IOMMU's state at one moment: its registers and the IOTLB (the page
// tables and the fault log are in RAM). It is for looking at a past moment.
type Saved struct{ core core }

// Save returns the IOMMU's state now, or prev itself (which may be nil) when
// nothing has changed since it was saved.
func (u *IOMMU) Save(prev *Saved) *Saved {
	if prev != nil && prev.core == u.core {
		return prev
	}
	return &Saved{core: u.core}
}

// Load puts the IOMMU in state s.
func (u *IOMMU) Load(s *Saved) { u.core = s.core }
