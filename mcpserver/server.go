package mcpserver

import (
	"context"
	"crypto/rand"
	"errors"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cowfs/cowfs/ctl"
)

// Dial returns a client for the workspace's daemon, and what to call
// once the tool call that asked for it is done (it may be a no-op).
type Dial func(ctx context.Context) (c *ctl.Client, release func(), err error)

// Options configure a Server.
type Options struct {
	// Dial reaches the workspace's daemon; it is called once per tool
	// call.
	Dial Dial
	// Workspace is the workspace's path, as messages name it (in the
	// commands they suggest).
	Workspace string
	// Version is cowfs's, announced to clients.
	Version string
	// Logger receives the SDK's log; nil: none.
	Logger *slog.Logger
}

// Server is an MCP server for one workspace.
type Server struct {
	opts Options
	// key signs preview tokens (token.go). Drawn anew by every server,
	// so a token verifies only in the process that issued it.
	key []byte
	mcp *mcp.Server
}

// New returns a server with every tool registered.
func New(opts Options) (*Server, error) {
	if opts.Dial == nil {
		return nil, errors.New("mcpserver: no Dial")
	}
	s := &Server{opts: opts, key: make([]byte, 32)}
	if _, err := rand.Read(s.key); err != nil {
		return nil, err
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "cowfs", Title: "cowfs: a rewindable workspace", Version: opts.Version},
		&mcp.ServerOptions{Instructions: instructions, Logger: opts.Logger})
	if err := s.addTools(); err != nil {
		return nil, err
	}
	return s, nil
}

// instructions tell the client, and through it the model, how the tools
// fit together.
const instructions = `cowfs journals every change to this workspace per turn (one user prompt and the agent run that answers it) and can put the workspace back as it was when any recent turn began.
See: log (the turns), show (what a turn changed, by step/tool call), diff, cat (a file as it was when a turn began), markers.
Roll back: call rollback_preview first, read the plan, then rollback (or undo) with the preview's token; unrevert_preview then unrevert puts back what the last rollback undid. Rollbacks are refused while a turn is open.`

// ServeStdio serves one client on standard input and output until it
// disconnects or ctx is done. Nothing else may write to standard
// output meanwhile.
func (s *Server) ServeStdio(ctx context.Context) error {
	return s.mcp.Run(ctx, &mcp.StdioTransport{})
}

// Serve serves one client on t (tests use an in-memory transport).
func (s *Server) Serve(ctx context.Context, t mcp.Transport) error {
	return s.mcp.Run(ctx, t)
}
