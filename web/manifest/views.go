package manifest

// View is one picture of the live widget: a tab, and the module that draws it.
type View struct {
	Name  string `json:"name"`  // what a sacc-run block's views= names
	Label string `json:"label"` // the tab's text
	// Module is the view's ES module, relative to the static assets: it exports
	// mount(widget, panel, env) and, if the view tells events its own way,
	// caption(ev, st, datasheet).
	Module string `json:"module"`
}

// Views lists the widget's views in tab order; a widget opens at the first one
// unless its block names others. A new view is a line here and its module.
func Views() []View {
	return []View{
		{"ring", "Rings", "views/ring.js"},
		{"garage", "Garage", "views/garage.js"},
		{"registers", "Registers", "views/registers.js"},
		{"memory", "Memory", "views/memory.js"},
		{"trace", "Trace", "views/trace.js"},
		{"source", "Source", "views/source.js"},
		{"monitor", "Monitor", "views/monitor.js"},
		// The pictures of one mechanism each, which the chapters about it name.
		{"cpu", "Store buffer", "views/cpu.js"},
		{"iommu", "IOMMU", "views/iommu.js"},
		{"bypass", "Bypass", "views/bypass.js"},
		{"config", "Config space", "views/config.js"},
		{"results", "Results", "views/results.js"},
	}
}

// ViewNames lists the views' names, in tab order.
func ViewNames() []string {
	var out []string
	for _, v := range Views() {
		out = append(out, v.Name)
	}
	return out
}
