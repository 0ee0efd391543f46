package cmd

import (
	"bytes"
	"encoding/json"
	"io"

	"github.com/mulligan-dev/mulligan/scrub"
)

// writeJSON prints v as indented JSON followed by a newline: the stable `-o json` form. Through
// the scrubbing stream its strings are scrubbed value by value, so the document stays valid.
func writeJSON(w io.Writer, v any) error {
	return writeJSONIndent(w, v, "  ")
}

// writeJSONLine prints v as one line of JSON (streams such as `events -o json`).
func writeJSONLine(w io.Writer, v any) error {
	return writeJSONIndent(w, v, "")
}

func writeJSONIndent(w io.Writer, v any, indent string) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", indent)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	if sw, ok := w.(*scrub.Writer); ok {
		return sw.WriteJSON(buf.Bytes(), indent)
	}
	_, err := w.Write(buf.Bytes())
	return err
}
