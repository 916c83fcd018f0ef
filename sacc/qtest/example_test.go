package qtest

import (
	"context"
	"fmt"
	"os"
	"strings"
)

func ExampleSession_Exec() {
	s := NewSession(newFake(100), nil) // a machine with one event queued at 100 ns
	for _, req := range []string{
		"writel 0x1000 0xdeadbeef",
		"readl 0x1000",
		"read 0x1000 4",
		"b64read 0x1000 4",
		"inb 0x10000",
		"clock_step",
		"clock_step",
	} {
		fmt.Println(s.Exec(req))
	}
	// Output:
	// OK
	// OK 0x00000000deadbeef
	// OK 0xefbeadde
	// OK 776t3g==
	// FAIL inb: port 0x10000 is above 0xffff
	// OK 100
	// FAIL no pending events
}

func ExampleServe() {
	requests := "writeb 0 0x42\nreadb 0\nendianness\n"
	Serve(context.Background(), strings.NewReader(requests), os.Stdout, newFake(), nil)
	// Output:
	// OK
	// OK 0x0000000000000042
	// OK little
}
