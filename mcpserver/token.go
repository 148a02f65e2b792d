package mcpserver

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/cowfs/cowfs/ctl"
)

// A token says "this is what the preview showed": an HMAC under the
// server's key of the preview's facts, after a readable prefix that
// names what it is for (rollback-7, rollback-7-force, unrevert), so a
// refusal can say which preview a wrong token came from. The facts are
// encoded as JSON with a fixed field order, so the same plan always
// gives the same token.

// rollbackToken is the token of a rollback preview.
func (s *Server) rollbackToken(plan ctl.RollbackResult, force bool) string {
	facts := struct {
		Kind   string             `json:"kind"`
		Target uint64             `json:"target"`
		Force  bool               `json:"force"`
		Paths  []ctl.PathAction   `json:"paths"`
		Counts ctl.RollbackCounts `json:"counts"`
	}{"rollback", plan.Target, force, plan.Paths, plan.Counts}
	return s.sign(rollbackPrefix(plan.Target, force), facts)
}

func rollbackPrefix(target uint64, force bool) string {
	p := fmt.Sprintf("rollback-%d", target)
	if force {
		p += "-force"
	}
	return p
}

// unrevertState is what an unrevert would undo, as far as the control
// socket tells it: how many rollbacks stand, every turn's state, and the
// markers. Another rollback or unrevert, or a turn beginning, changes it.
type unrevertState struct {
	Unrevertable int          `json:"unrevertable"`
	Turns        []turnState  `json:"turns"`
	Markers      []ctl.Marker `json:"markers"`
}

type turnState struct {
	Num   uint64 `json:"num"`
	State string `json:"state"`
}

const unrevertPrefix = "unrevert"

func (s *Server) unrevertToken(st unrevertState) string {
	return s.sign(unrevertPrefix, st)
}

func (s *Server) sign(prefix string, facts any) string {
	mac := hmac.New(sha256.New, s.key)
	mac.Write([]byte(prefix + "\n"))
	if err := json.NewEncoder(mac).Encode(facts); err != nil {
		// The facts are plain data; an encoding failure is a bug. A
		// token nothing can match refuses the action, as it should.
		return prefix + "-invalid"
	}
	return prefix + "-" + hex.EncodeToString(mac.Sum(nil)[:16])
}

// checkToken compares the token the model passed with the one the
// preview would give now. what names the action for the message
// ("a rollback to before turn 7"); preview says how to get a new token.
func checkToken(got, want, what, preview string) error {
	if hmac.Equal([]byte(got), []byte(want)) {
		return nil
	}
	gotFor, _ := splitToken(got)
	wantFor, _ := splitToken(want)
	if gotFor != wantFor {
		return refusef("refused: this token is not from a preview of %s (it is for %q): call %s and pass the token it returns", what, gotFor, preview)
	}
	return refusef("refused: what %s would do is not what the preview that gave this token showed (the workspace or the turns changed since, or the token is from an earlier cowfs mcp process): preview again (%s), read the new plan, and pass its token", what, preview)
}

// splitToken splits a token into the prefix naming what it is for and
// its MAC.
func splitToken(t string) (prefix, mac string) {
	i := strings.LastIndexByte(t, '-')
	if i < 0 {
		return t, ""
	}
	return t[:i], t[i+1:]
}
