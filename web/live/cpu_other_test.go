//go:build !unix

package live

import "time"

// processCPU is not measured here.
func processCPU() time.Duration { return 0 }
