package agentcli

import "sort"

// PresetNames lists the presets mulligan knows, sorted, generic included.
func PresetNames() []string {
	out := make([]string, 0, len(presets))
	for name := range presets {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// LookupPreset returns the preset of that name; false for a name mulligan does not know.
func LookupPreset(name string) (*Preset, bool) {
	p, ok := presets[name]
	return p, ok
}
