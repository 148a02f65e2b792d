package pack

import (
	"errors"
	"fmt"
)

var (
	// ErrDamaged: something kept is lost or garbled — a pack file
	// deleted, bytes that do not decode (ErrCorrupt) — so what it held
	// cannot be given back. Package journal uses these very errors
	// (journal.ErrDamaged, journal.ErrCorrupt) for its own values too,
	// so a caller asks one question whichever part found the damage.
	ErrDamaged = errors.New("the journal is damaged")
	// ErrCorrupt is returned for bytes that do not decode: damage to
	// what is kept, not a missing thing.
	ErrCorrupt = fmt.Errorf("%w: corrupt value", ErrDamaged)
)
