package rollback

import "github.com/cowfs/cowfs/journal"

// rec is what planning needs of a record: where it moved things in the
// namespace, never its content, attributes or caller. A plan holds every
// record it undoes at once (three passes, newest first: conflicts,
// steps, report), so a rollback of 150,000 records holds 150,000 of
// these — a third of the records' own size. The executor reads a
// step's whole record from the journal when it needs its content.
type rec struct {
	Seq, Turn, Group   uint64
	Ino, Ino2          uint64
	Path, Path2, Aside string
	Type, Flags        uint32
	Mode               uint32 // Attr.Mode: the type of what a rename replaced
	Kind               journal.Kind
	Cause              journal.Cause
	NotAgent           bool // made during a turn, not by its agent
}

func slim(r *journal.Record) rec {
	return rec{Seq: r.Seq, Turn: r.Turn, Group: r.Group, Ino: r.Ino, Ino2: r.Ino2,
		Path: r.Path, Path2: r.Path2, Aside: r.Aside, Type: r.Type, Flags: r.Flags, Mode: r.Attr.Mode,
		Kind: r.Kind, Cause: r.Cause, NotAgent: r.NotAgent}
}

// scanBack returns the records from <= seq < to, newest first, slim.
func scanBack(j *journal.Journal, from, to uint64) ([]rec, error) {
	// A record a sequence number, bar the few a pruned window left out:
	// sized once, the slice is not grown and copied (17 MB, twice over,
	// for 150,000 records).
	recs := make([]rec, 0, min(to-from, 1<<22))
	err := j.Scan(from, to, true, func(r *journal.Record) error {
		recs = append(recs, slim(r))
		return nil
	})
	return recs, err
}
