package journal

import (
	"errors"

	"github.com/cowfs/cowfs/journal/pack"
)

var (
	// ErrBusy: a turn is open and the request needs none (begin, rollback).
	ErrBusy = errors.New("a turn is open")
	// ErrNoTurn: the request needs an open turn and none is.
	ErrNoTurn = errors.New("no turn is open")
	// ErrTurnNotFound: no turn in the window has that number or id.
	ErrTurnNotFound = errors.New("turn not found")
	// ErrDuplicateID: a turn in the window already has that id.
	ErrDuplicateID = errors.New("turn id already used")
	// ErrInvalid: the request itself is malformed.
	ErrInvalid = errors.New("invalid request")
	// ErrClosed: the journal was closed; nothing more can be recorded.
	ErrClosed = errors.New("journal is closed")
	// ErrLocked: another process has the journal open.
	ErrLocked = errors.New("journal is locked by another process")
	// ErrNoSpace: the journal's filesystem is too full to record a
	// change; the change must not happen. Errors with it also match
	// syscall.ENOSPC.
	ErrNoSpace = errors.New("journal: not enough free space to record the change")
	// ErrDamaged: something the journal keeps is lost or garbled — a
	// pack file deleted, a value that does not decode (ErrCorrupt) — so
	// what it held cannot be given back. Not "not found": the turn or
	// path asked for exists; retrying will not help; cowfs fsck lists
	// the damage and its --export saves what can still be read.
	// It is package pack's, which finds a pack missing.
	ErrDamaged = pack.ErrDamaged
	// ErrUnreadable: the journal's database cannot be opened: corrupted,
	// or written by something else.
	ErrUnreadable = errors.New("unreadable journal")
	// ErrFormat: the journal was written in a format this build does not read.
	ErrFormat = errors.New("unsupported journal format")
)
