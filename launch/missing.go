package launch

import (
	"fmt"
	"sync"

	"github.com/envsieve/envsieve/internal/audit"
)

// installFix says how to put the parts of envsieve that are not Go where
// envsieve looks for them.
const installFix = "fix: 'make install' puts libenvsieve.so, envsieve-start and envsieve-init in PREFIX/lib/envsieve/, " +
	"where envsieve looks (a release archive carries them in lib/envsieve/; 'go install' builds none of them), " +
	"and ENVSIEVE_SHIM names a shim elsewhere"

// warnedMissing holds the warnings warnMissing has said on stderr.
var warnedMissing sync.Map

// warnMissing says that a part of the install is missing (err names it),
// what the launch loses for it, and the fix: on stderr once per process
// (a daemon serves many launches), in each launch's audit log.
func (h *Host) warnMissing(alog *audit.Log, err error, loss string) {
	msg := fmt.Sprintf("%v: %s; %s", err, loss, installFix)
	if _, said := warnedMissing.LoadOrStore(msg, true); !said {
		h.warnf("%s", msg)
	}
	alog.Warn(msg)
}
