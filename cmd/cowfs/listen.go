package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sync/atomic"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/cowfs/cowfs/ctl"
	"github.com/cowfs/cowfs/daemon"
)

// listenFlags are the daemon's remote listener, for mount and run.
type listenFlags struct {
	listen string // https://HOST:PORT
	tlsDir string // ca.pem, cert.pem, key.pem
}

const listenHelp = `With --listen https://HOST:PORT the daemon also serves the control API there,
over TCP with mutual TLS, for harnesses on other machines ('cowfs --remote'):
--tls-dir DIR holds ca.pem (a client's certificate must be signed by it),
cert.pem and key.pem (the daemon's). TLS 1.3 only, a client certificate
required; nothing is served in plain HTTP. Whoever holds a certificate
signed by ca.pem can do all that the socket's owner can. The files must be
root's (or the daemon user's), writable by nobody else, the key readable by
nobody but its owner and group; a symlink in DIR is followed only within DIR.
SIGHUP to the daemon (the pid 'cowfs status' shows) reads them again: new
connections use the new certificates; if they are bad, the old stay and the
log says why.`

func (l *listenFlags) add(f *pflag.FlagSet) {
	f.StringVar(&l.listen, "listen", "", "also serve the control API at `https://HOST:PORT` over mutual TLS (needs --tls-dir)")
	f.StringVar(&l.tlsDir, "tls-dir", "", "the daemon's TLS certificates for --listen: `DIR` with ca.pem (clients' CA), cert.pem and key.pem")
}

// options checks the flags and puts them in the daemon's options:
// --listen and --tls-dir go together, and the address is https://.
func (l listenFlags) options(dopts *daemon.Options) error {
	switch {
	case l.listen == "" && l.tlsDir == "":
		return nil
	case l.listen == "":
		return usageError{errors.New("--tls-dir is the certificates of --listen https://HOST:PORT; give both")}
	case l.tlsDir == "":
		return usageError{fmt.Errorf("--listen %s needs --tls-dir DIR (ca.pem, cert.pem, key.pem): the API is served over mutual TLS only", l.listen)}
	}
	if _, err := ctl.ParseRemoteURL(l.listen); err != nil {
		return usageError{fmt.Errorf("--listen: %w", err)}
	}
	dir, err := filepath.Abs(l.tlsDir) // read again on SIGHUP, whatever the directory then
	if err != nil {
		return err
	}
	dopts.Listen, dopts.TLSDir = l.listen, dir
	return nil
}

// reloadOnHangup makes SIGHUP reload the TLS certificates of a daemon
// that listens. (Without --listen SIGHUP keeps its usual meaning.)
func reloadOnHangup(d *daemon.Daemon) {
	if d.ListenURL() == "" {
		return
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		for range hup {
			d.ReloadTLS() // logs why if the new set is bad
		}
	}()
}

// sandboxHangup is what cowfs run's sandbox does with a SIGHUP sent to
// it directly: cowfs run relays the signals meant for the command
// through a pipe (run_sandbox.go), so one sent to the sandbox's own pid,
// the daemon's, is for the daemon: it reloads the TLS certificates.
var sandboxHangup atomic.Pointer[daemon.Daemon]

// hangupSandbox handles a SIGHUP the sandbox received itself.
func hangupSandbox() {
	if d := sandboxHangup.Load(); d != nil {
		d.ReloadTLS()
	}
}
