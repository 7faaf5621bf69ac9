package shimwire

import "errors"

// Server is the launcher's end of the shim's socket; there is none on
// Windows, where the shim cannot load.
type Server struct {
	Path string
}

var errWindows = errors.New("the shim's socket is for Linux")

// Listen fails on Windows.
func Listen(dir string, h Handler) (*Server, error) { return nil, errWindows }

// Close does nothing.
func (s *Server) Close() error { return nil }
