package cmd

import (
	"encoding/json"
	"io"
)

// writeJSON prints v as indented JSON followed by a newline: the stable `-o json` form.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// writeJSONLine prints v as one line of JSON (streams such as `events -o json`).
func writeJSONLine(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
