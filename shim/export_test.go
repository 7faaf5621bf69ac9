package shim

// The limits the external tests check against the C source; unexported,
// because only the two ends of the shim's protocol need them.
const (
	MaxHide     = maxHide
	MaxHideName = maxHideName
)
