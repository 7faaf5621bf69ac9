//go:build linux

package launch

import (
	"fmt"
	"runtime"

	"github.com/envsieve/envsieve/internal/proc"
	"github.com/envsieve/envsieve/seal"
)

// granter starts the programs of exec-time grants from one OS thread of
// the launcher that holds the launch's seal: a Landlock domain with the
// tree's own rules (proc.Restrict of the same spec), made once. The
// programs it starts inherit the domain, so each sees what the tree sees
// and can change only what the tree can (docs/design.md, "Exec-time
// grants": a grant changes the environment, never the boundary). The
// domain is a sibling of the tree's, not nested under it: the tree still
// cannot trace a granted program or read its environment, and under the
// namespace seal it cannot even see it (another pid namespace).
//
// Only that thread is restricted: the launcher's others keep what they
// need (the store, the real credential files the broker reads). Go starts
// a new thread from a thread locked with LockOSThread through its template
// thread, so no other thread of the runtime inherits the domain.
type granter struct {
	jobs chan func()
}

// newGranter starts the granter's thread and seals it with spec; an
// error means no thread holds the seal and nothing may be started.
func newGranter(spec seal.Spec) (*granter, error) {
	g := &granter{jobs: make(chan func())}
	errc := make(chan error, 1)
	go func() {
		// Never unlocked: when this goroutine ends, the thread ends with
		// it, and a half-restricted thread is never reused.
		runtime.LockOSThread()
		if err := proc.Restrict(spec); err != nil {
			errc <- fmt.Errorf("seal the programs started for rules: %w", err)
			return
		}
		errc <- nil
		for job := range g.jobs {
			job()
		}
	}()
	if err := <-errc; err != nil {
		return nil, err
	}
	return g, nil
}

// do runs f on the sealed thread and waits for it.
func (g *granter) do(f func()) {
	done := make(chan struct{})
	g.jobs <- func() { f(); close(done) }
	<-done
}
