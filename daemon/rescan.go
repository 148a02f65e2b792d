package daemon

import (
	"github.com/cowfs/cowfs/journal"
	"github.com/cowfs/cowfs/rescan"
)

// rescan looks for changes made outside the mount (package rescan),
// under the journal's exclusive gate, and journals them — as part of
// the open turn if inTurn, else outside any turn. The kernel is told to
// forget what it cached of them once the gate is released.
func (d *Daemon) rescan(inTurn bool) ([]rescan.Found, error) {
	g := d.j.Exclusive()
	found, err := d.scanUnder(g, inTurn)
	g.Leave()
	d.flush()
	return found, err
}

// scanUnder scans with the exclusive gate g already held.
func (d *Daemon) scanUnder(g journal.Gate, inTurn bool) ([]rescan.Found, error) {
	if inTurn {
		g = g.InTurn()
	}
	var obs rescan.Observer
	if d.mount != nil {
		obs = d.mount
	}
	return d.scanner.Scan(g, obs)
}
