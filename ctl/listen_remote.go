package ctl

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
)

// ErrRemoteURL: a --listen or --remote address that is not
// https://HOST:PORT.
var ErrRemoteURL = errors.New("not an https://HOST:PORT address")

// ParseRemoteURL checks an address of the remote API, https://HOST:PORT
// and nothing more, and returns HOST:PORT. Plain http:// is refused:
// the API is offered over mutual TLS or not at all.
func ParseRemoteURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("%w: %q: %w", ErrRemoteURL, raw, err)
	}
	switch {
	case u.Scheme == "http":
		return "", fmt.Errorf("%w: %q: the API is served over mutual TLS only; use https:// (with a TLS directory)", ErrRemoteURL, raw)
	case u.Scheme != "https":
		return "", fmt.Errorf("%w: %q", ErrRemoteURL, raw)
	case u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "":
		return "", fmt.Errorf("%w: %q has more than a host and a port", ErrRemoteURL, raw)
	case u.Hostname() == "" || u.Port() == "":
		return "", fmt.Errorf("%w: %q needs a host and a port", ErrRemoteURL, raw)
	}
	return u.Host, nil
}

// ListenRemote listens on TCP at the address of an https://HOST:PORT
// URL; port 0 picks a free port (RemoteURL says which).
func ListenRemote(raw string) (net.Listener, error) {
	hostport, err := ParseRemoteURL(raw)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", hostport)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", raw, err)
	}
	return ln, nil
}

// RemoteURL is the https:// URL a listener is reached at.
func RemoteURL(ln net.Listener) string { return "https://" + ln.Addr().String() }

// ServeRemote serves the same API on ln over mutual TLS (see
// ServerTLS), beside the Unix socket, until Close. Connections are
// capped as on the socket but apart from it (conncap.go): peers that
// connect and never finish a handshake, which anybody who can reach the
// port can be, take no slot the socket's clients need.
func (s *Server) ServeRemote(ln net.Listener, t *ServerTLS) error {
	// The cap wraps the TCP connection and TLS wraps the capped one:
	// the HTTP server must see the *tls.Conn to run its handshake under
	// the header timeout and to fill in Request.TLS.
	err := s.http.Serve(tls.NewListener(newCapListener(ln, connCap()), t.config()))
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
