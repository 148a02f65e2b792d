package wal

// Pause stops the background applier: entries then reach the store
// only through Apply and Close. For tests that need entries pending.
func (l *Log) Pause() { l.stopApplier() }

// Abandon leaves the log as a kill -9 of the process would: the
// applier stopped, the file closed, nothing more applied. For crash
// tests; the Log is not used again.
func (l *Log) Abandon() {
	l.Pause()
	l.f.Close()
}
