package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/profile"
	"github.com/saccbook/saccbook/sacc/quirk"
	"github.com/saccbook/saccbook/sacc/sim"
)

// machineFlags are the flags every command that builds a machine shares.
type machineFlags struct {
	ram     byteSize
	seed    uint64
	costs   costList
	quirks  string
	profile profileFlag
}

func (f *machineFlags) register(fs *flag.FlagSet) {
	f.ram = sacc.DefaultRAMSize
	fs.Var(&f.ram, "ram", "guest RAM size (bytes, or with a K, M or G suffix)")
	fs.Uint64Var(&f.seed, "seed", 1, "seed for every random choice in the run")
	fs.Var(&f.costs, "cost", "override one cost-model parameter, name=value (repeatable; see 'saccbook costs')")
	fs.StringVar(&f.quirks, "quirks", "", "comma-separated quirks to switch on (see 'saccbook quirks')")
	f.profile.p = profile.V1()
	fs.Var(&f.profile, "profile", "the version of the contract the device is built to: "+strings.Join(profile.Names(), " or "))
}

func (f *machineFlags) config() (machine.Config, error) {
	cost := sim.DefaultCost()
	for _, a := range f.costs {
		if err := cost.ParseAssignment(a); err != nil {
			return machine.Config{}, err
		}
	}
	qs, err := quirk.Parse(f.quirks)
	if err != nil {
		return machine.Config{}, err
	}
	return machine.Config{RAMSize: uint64(f.ram), Seed: f.seed, Cost: &cost, Quirks: qs, Profile: f.profile.p}, nil
}

// profileFlag is a flag value naming a profile; an unknown name is refused while
// the flags are parsed.
type profileFlag struct{ p profile.Profile }

func (f *profileFlag) String() string { return f.p.Name }

func (f *profileFlag) Set(s string) error {
	p, err := profile.Parse(s)
	if err != nil {
		return err
	}
	f.p = p
	return nil
}

// byteSize is a flag value such as 128M.
type byteSize uint64

func (b *byteSize) String() string { return strconv.FormatUint(uint64(*b), 10) }

func (b *byteSize) Set(s string) error {
	v, err := parseSize(s)
	if err != nil {
		return err
	}
	if v == 0 {
		// Zero would mean "the default" to the machine: say no instead.
		return fmt.Errorf("size %q: RAM must be a non-zero multiple of 4 KiB", s)
	}
	*b = byteSize(v)
	return nil
}

func parseSize(s string) (uint64, error) {
	t := strings.TrimSuffix(strings.TrimSuffix(strings.ToUpper(strings.TrimSpace(s)), "IB"), "B")
	mult := uint64(1)
	switch {
	case strings.HasSuffix(t, "K"):
		mult, t = 1<<10, t[:len(t)-1]
	case strings.HasSuffix(t, "M"):
		mult, t = 1<<20, t[:len(t)-1]
	case strings.HasSuffix(t, "G"):
		mult, t = 1<<30, t[:len(t)-1]
	}
	v, err := strconv.ParseUint(t, 0, 64)
	if err != nil || v > ^uint64(0)/mult {
		return 0, fmt.Errorf("size %q: want a number of bytes, optionally with K, M or G", s)
	}
	return v * mult, nil
}

// costList collects repeated --cost flags.
type costList []string

func (c *costList) String() string { return strings.Join(*c, ",") }

func (c *costList) Set(s string) error {
	probe := sim.DefaultCost()
	if err := probe.ParseAssignment(s); err != nil {
		return err
	}
	*c = append(*c, s)
	return nil
}
