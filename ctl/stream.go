package ctl

import (
	"encoding/json"
	"net/http"
	"time"
)

// events streams events as JSON lines, flushing after each, so a client
// sees changes as they happen. The write deadline is lifted: a follower
// may wait for hours.
func (s *Server) events(w http.ResponseWriter, r *http.Request, since uint64, follow bool) error {
	rc := http.NewResponseController(w)
	rc.SetWriteDeadline(time.Time{})
	rc.SetReadDeadline(time.Time{})
	w.Header().Set("Content-Type", "application/x-ndjson")
	started := false
	enc := json.NewEncoder(w)
	err := s.svc.Events(r.Context(), since, follow, func(e Event) error {
		if !started {
			w.WriteHeader(http.StatusOK)
			started = true
		}
		if err := enc.Encode(e); err != nil {
			return err
		}
		return rc.Flush()
	})
	if err != nil && !started {
		return err
	}
	if !started {
		w.WriteHeader(http.StatusOK)
	}
	return nil
}
