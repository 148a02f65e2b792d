package ctl

import (
	"bufio"
	"encoding/json"
	"io"
)

// WriteJSON writes d as reply's encoder would (indented by two spaces,
// a newline after), a file at a time: the diff of a large turn holds
// its files' text once, not again as one JSON document and again
// indented.
func (d Diff) WriteJSON(w io.Writer) error {
	bw := bufio.NewWriter(w)
	str := func(s string) []byte {
		b, _ := json.Marshal(s)
		return b
	}
	bw.WriteString("{\n  \"from\": ")
	bw.Write(str(d.From))
	bw.WriteString(",\n  \"to\": ")
	bw.Write(str(d.To))
	bw.WriteString(",\n  \"files\": ")
	switch {
	case d.Files == nil:
		bw.WriteString("null")
	case len(d.Files) == 0:
		bw.WriteString("[]")
	default:
		bw.WriteString("[")
		for i, f := range d.Files {
			if i > 0 {
				bw.WriteString(",")
			}
			b, err := json.MarshalIndent(f, "    ", "  ")
			if err != nil {
				return err
			}
			bw.WriteString("\n    ")
			bw.Write(b)
		}
		bw.WriteString("\n  ]")
	}
	bw.WriteString("\n}\n")
	return bw.Flush()
}
