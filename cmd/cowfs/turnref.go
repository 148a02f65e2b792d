package main

import "github.com/cowfs/cowfs/daemon"

// checkTurnRefs refuses turn references that read as numbers but name
// no turn number ("-1", "0x10", "1e3", one past 64 bits; see
// daemon.CheckTurnRef): the daemon refuses them too, but this way the
// answer does not depend on one running.
func checkTurnRefs(refs ...string) error {
	for _, r := range refs {
		if err := daemon.CheckTurnRef(r); err != nil {
			return usageError{err}
		}
	}
	return nil
}

// checkTurnID refuses a turn id the daemon would: one that reads as a
// number.
func checkTurnID(id string) error {
	if err := daemon.CheckTurnID(id); err != nil {
		return usageError{err}
	}
	return nil
}
