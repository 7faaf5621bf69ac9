package shim_test

import (
	"os"
	"testing"

	"github.com/envsieve/envsieve/internal/shimtest"
)

// TestMain removes what shimtest.Lib built once the tests are done.
func TestMain(m *testing.M) { os.Exit(shimtest.Main(m)) }
