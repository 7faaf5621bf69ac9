//go:build !linux && !windows

package shimwire

// DoorName is the door's name in the socket's directory (Linux only).
const DoorName = "d"

// openDoor is Linux-only: elsewhere there is no door.
func (s *Server) openDoor() error { return nil }

func (s *Server) closeDoor() {}
