//go:build !unix

package mcpserver_test

import "time"

// processCPU is not measured here: the benchmark reports rates only.
func processCPU() time.Duration { return 0 }
