package manifest

// View is one picture of the live widget: a tab, and the module that draws it.
type View struct {
	Name  string `json:"name"`  // what a sacc-run block's views= names
	Label string `json:"label"` // the tab's text
	// Module is the view's ES module, relative to the static assets: it exports
	// mount(widget, panel, env) and, if the view tells events its own way,
	// caption(ev, st, datasheet).
	Module string `json:"module"`
	// Named views are tabs only in the widgets whose block names them: each
	// pictures one mechanism, and would be an empty tab elsewhere.
	Named bool `json:"named,omitempty"`
}

// Views lists the widget's views in tab order; a widget opens at the first one
// unless its block names others. A new view is a line here and its module.
func Views() []View {
	return []View{
		{Name: "ring", Label: "Rings", Module: "views/ring.js"},
		{Name: "garage", Label: "Garage", Module: "views/garage.js"},
		{Name: "registers", Label: "Registers", Module: "views/registers.js"},
		{Name: "memory", Label: "Memory", Module: "views/memory.js"},
		{Name: "trace", Label: "Trace", Module: "views/trace.js"},
		{Name: "source", Label: "Source", Module: "views/source.js"},
		{Name: "monitor", Label: "Monitor", Module: "views/monitor.js"},
		// The pictures of one mechanism each, which the chapters about it name.
		{Name: "cpu", Label: "Store buffer", Module: "views/cpu.js", Named: true},
		{Name: "iommu", Label: "IOMMU", Module: "views/iommu.js", Named: true},
		{Name: "bypass", Label: "Bypass", Module: "views/bypass.js", Named: true},
		{Name: "config", Label: "Config space", Module: "views/config.js", Named: true},
		{Name: "results", Label: "Results", Module: "views/results.js", Named: true},
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
