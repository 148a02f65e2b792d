package journal

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

var bindingKey = []byte{prefixBinding}

// Binding returns the journal's workspace token: a random id made at
// its first use and kept for its life. The daemon writes it into the
// private area it makes in the workspace, and refuses an area that does
// not carry it, so a private directory that came with the workspace's
// contents (a tarball, a clone) is never taken for cowfs's own.
//
// The token is committed before Binding returns: an area that holds it
// can never be older than the journal's record of it.
func (j *Journal) Binding() (string, error) {
	var token string
	err := j.db.Update(func(txn *badger.Txn) error {
		if ok, err := getJSON(txn, bindingKey, &token); err != nil || ok {
			return err
		}
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return err
		}
		token = hex.EncodeToString(b)
		return setJSON(txn, bindingKey, token)
	})
	if err != nil {
		return "", fmt.Errorf("journal: workspace token: %w", err)
	}
	return token, nil
}
