package daemon

import (
	"errors"
	"fmt"
	"net"

	"github.com/cowfs/cowfs/ctl"
)

// ErrListen: the remote listener (Options.Listen) cannot be set up: an
// address that is not https://HOST:PORT, no TLS directory, one that is
// refused (ctl.ErrTLSDir), or an address that cannot be bound.
var ErrListen = errors.New("cannot serve the API over TLS")

// remote is the daemon's TCP listener with mutual TLS, beside the
// control socket, when Options.Listen asks for one.
type remote struct {
	ln  net.Listener
	tls *ctl.ServerTLS
	url string // where it listens, its port resolved
}

// openRemote reads the TLS directory and binds the address. Start does
// this before anything else: a bad certificate or a port in use fails
// the start with nothing mounted or opened. Connections that arrive
// before the server serves wait in the listen backlog.
func openRemote(opts Options) (*remote, error) {
	if opts.TLSDir == "" {
		return nil, fmt.Errorf("%w: --listen %s needs --tls-dir DIR (ca.pem, cert.pem, key.pem): the API is served over mutual TLS only", ErrListen, opts.Listen)
	}
	t, err := ctl.LoadServerTLS(opts.TLSDir)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrListen, err)
	}
	ln, err := ctl.ListenRemote(opts.Listen)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrListen, err)
	}
	return &remote{ln: ln, tls: t, url: ctl.RemoteURL(ln)}, nil
}

// serveRemote serves the API on the remote listener, if there is one.
func (d *Daemon) serveRemote() {
	if d.remote == nil {
		return
	}
	go func() {
		if err := d.srv.ServeRemote(d.remote.ln, d.remote.tls); err != nil {
			d.log.Error("TLS listener stopped", "url", d.remote.url, "err", err)
		}
	}()
	d.log.Info("serving the API over mutual TLS", "url", d.remote.url, "tls_dir", d.remote.tls.Dir())
}

// ReloadTLS reads the TLS directory again (on SIGHUP): connections
// made from now on use its certificates; those open keep theirs. If
// the new set is bad the last good one stays in use, and the error,
// also logged, says why. Without a remote listener it does nothing.
func (d *Daemon) ReloadTLS() error {
	if d.remote == nil {
		return nil
	}
	if err := d.remote.tls.Reload(); err != nil {
		d.log.Error("TLS certificates not reloaded; the previous ones stay in use", "tls_dir", d.remote.tls.Dir(), "err", err)
		return err
	}
	d.log.Info("TLS certificates reloaded", "tls_dir", d.remote.tls.Dir())
	return nil
}

// ListenURL is the https:// URL the API is served at over TLS, or "".
func (d *Daemon) ListenURL() string {
	if d.remote == nil {
		return ""
	}
	return d.remote.url
}

// closeRemote closes the listener (the server closes it too once it
// serves it; a second close does nothing).
func (d *Daemon) closeRemote() {
	if d.remote != nil {
		d.remote.ln.Close()
	}
}
