package broker

import "github.com/envsieve/envsieve/internal/fake"

// Fake returns the stand-in for the real value of the secret name (see
// fake.Of): the same known prefix, length and alphabet, derived from the
// install key and the name, never the real value.
func Fake(key []byte, name, real string) string { return fake.Of(key, name, real) }
