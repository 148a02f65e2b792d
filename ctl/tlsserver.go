package ctl

import (
	"crypto/tls"
	"sync"
	"sync/atomic"
)

// ServerTLS is the TLS side of a daemon's remote listener: mutual TLS
// 1.3 with the certificates of a TLS directory (tlsdir.go), which
// Reload reads again.
//
// Every handshake takes the configuration current when it starts
// (GetConfigForClient), so a reload applies to the next connection and
// leaves those open as they are. A set that fails to load leaves the
// last good one in use.
type ServerTLS struct {
	dir string
	mu  sync.Mutex // one reload at a time
	cur atomic.Pointer[tls.Config]
}

// LoadServerTLS reads dir: ca.pem, the CA a client's certificate must
// be signed by; cert.pem and key.pem, the server's.
func LoadServerTLS(dir string) (*ServerTLS, error) {
	s := &ServerTLS{dir: dir}
	if err := s.Reload(); err != nil {
		return nil, err
	}
	return s, nil
}

// Dir is the TLS directory.
func (s *ServerTLS) Dir() string { return s.dir }

// Reload reads the directory again; on error the set in use stays.
func (s *ServerTLS) Reload() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := loadTLSDir(s.dir)
	if err != nil {
		return err
	}
	s.cur.Store(&tls.Config{
		MinVersion: tls.VersionTLS13,
		// No certificate signed by ca.pem, no connection: the
		// certificate is the only credential a remote client has.
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    f.cas,
		Certificates: []tls.Certificate{f.cert},
		// HTTP/1.1 only, as on the socket: the event stream is one
		// response per connection, and clients need nothing more.
		NextProtos: []string{"http/1.1"},
	})
	return nil
}

// config is the listener's configuration: each handshake takes the
// set current at its start.
func (s *ServerTLS) config() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		ClientAuth: tls.RequireAndVerifyClientCert,
		NextProtos: []string{"http/1.1"},
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return s.cur.Load(), nil
		},
	}
}
