package rollback

import "github.com/cowfs/cowfs/journal"

// refresh runs env's Refresh, if it has one, once a rollback's steps
// have run: what they changed is fingerprinted as it is now, so that
// the paths stay watched — a later change behind the mount is a
// conflict for the next rollback, not explained by this one's records.
func refresh(env *Env, g journal.Gate) {
	if env.Refresh == nil {
		return
	}
	if err := env.Refresh(g); err != nil && env.Log != nil {
		env.Log.Warn("refreshing the fingerprints of what the rollback changed", "err", err)
	}
}
