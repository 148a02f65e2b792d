package daemon

import "github.com/cowfs/cowfs/journal"

// CheckTurnRef refuses a turn reference that reads as a number but
// names no turn number ("-1", "0x10", "1e3", one past 64 bits): the
// journal's rule (journal.ParseTurnRef), for callers that may not
// import the journal.
func CheckTurnRef(ref string) error {
	_, _, err := journal.ParseTurnRef(ref)
	return err
}

// CheckTurnID refuses a turn id that reads as a number (journal.CheckTurnID).
func CheckTurnID(id string) error { return journal.CheckTurnID(id) }
