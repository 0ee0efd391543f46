package attempt

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
