// Command saccbook is the SACC workbook: an emulated machine with a synthetic PCIe
// accelerator, and the ways to run, poke and watch it.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	// Ctrl-C, or a SIGTERM from a service manager or kill: every command stops
	// through its context, so serve closes its listener and a qtest
	// listener closes its connections.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := dispatch(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
