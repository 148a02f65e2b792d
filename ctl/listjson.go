package ctl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// Replies that can hold one entry per path of a large turn (a diff's
// files, a rollback's paths) are written as reply's encoder would write
// them (indented by two spaces, a newline after), but an entry at a
// time: the encoder holds the whole document, then an indented copy of
// it, which for a rollback of 100,000 paths was 32 MB of the daemon's
// heap on top of the result itself.

// WriteJSON writes d a file at a time.
func (d Diff) WriteJSON(w io.Writer) error {
	rest := d
	rest.Files = nil
	return writeWithList(w, rest, "files", d.Files)
}

// WriteJSON writes r a path at a time.
func (r RollbackResult) WriteJSON(w io.Writer) error {
	rest := r
	rest.Paths = nil
	return writeWithList(w, rest, "paths", r.Paths)
}

// writeWithList writes rest, whose field key (at the top level) is nil,
// with list in that field's place, an element at a time.
func writeWithList[T any](w io.Writer, rest any, key string, list []T) error {
	doc, err := json.MarshalIndent(rest, "", "  ")
	if err != nil {
		return err
	}
	// A top-level field is the only place this can be: a string holds
	// no raw newline.
	field := []byte("\n  \"" + key + "\": null")
	head, tail, ok := bytes.Cut(doc, field)
	if !ok {
		return fmt.Errorf("ctl: reply has no top-level %q to stream", key)
	}
	bw := bufio.NewWriter(w)
	bw.Write(head)
	bw.Write(field[:len(field)-len("null")])
	switch {
	case list == nil:
		bw.WriteString("null")
	case len(list) == 0:
		bw.WriteString("[]")
	default:
		bw.WriteString("[")
		for i := range list {
			if i > 0 {
				bw.WriteString(",")
			}
			b, err := json.MarshalIndent(list[i], "    ", "  ")
			if err != nil {
				return err
			}
			bw.WriteString("\n    ")
			bw.Write(b)
		}
		bw.WriteString("\n  ]")
	}
	bw.Write(tail)
	bw.WriteString("\n")
	return bw.Flush()
}
