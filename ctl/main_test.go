package ctl

import (
	"os"
	"testing"

	"github.com/cowfs/cowfs/test/testenv"
)

func TestMain(m *testing.M) {
	testenv.HelperMain() // the foreign server of client_test.go
	os.Exit(m.Run())
}
