package shim

// The limits and names the external tests check against the C source and
// the socket's directory; unexported, because only the two ends of the
// shim's protocol need them.
const (
	MaxHide     = maxHide
	MaxHideName = maxHideName
	DoorName    = doorName
	KnownName   = knownName
)
