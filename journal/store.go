package journal

import (
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"

	"github.com/cowfs/cowfs/journal/wal"
)

// store is Badger as the journal's own methods use it: each read and
// each direct write first applies the record log, so that Badger is
// never behind a logged record when it is read, and a direct write is
// never followed, at a replay, by an older logged one. Only the hot
// path — Append, Discard — logs instead, reading Badger raw (index
// lookups, which also ask the log).
type store struct {
	*badger.DB
	log  *wal.Log
	fail func(error)
}

// caughtUp applies the log; if that fails, the journal cannot be
// trusted to order what follows and is marked unusable.
func (s *store) caughtUp() error {
	if s.log == nil {
		return nil
	}
	err := s.log.Apply()
	if err != nil && !errors.Is(err, ErrClosed) {
		s.fail(fmt.Errorf("%w: %v", ErrUnusable, err))
	}
	return err
}

func (s *store) View(fn func(*badger.Txn) error) error {
	if err := s.caughtUp(); err != nil {
		return err
	}
	return s.DB.View(fn)
}

func (s *store) Update(fn func(*badger.Txn) error) error {
	if err := s.caughtUp(); err != nil {
		return err
	}
	return s.DB.Update(fn)
}

func (s *store) NewTransaction(update bool) *badger.Txn {
	s.caughtUp() // a failure marks the journal unusable; the transaction's commit then fails on its own or is moot
	return s.DB.NewTransaction(update)
}

func (s *store) NewWriteBatch() *badger.WriteBatch {
	s.caughtUp()
	return s.DB.NewWriteBatch()
}
