package launch

import (
	"io"
	"os"
	"sync/atomic"
	"time"
)

// pump copies a command's output pipe to its filter chain.
type pump struct {
	r *os.File
	w io.Writer
	// reading is when the pump began waiting in Read, in Unix
	// nanoseconds; 0 while it writes downstream.
	reading atomic.Int64
	done    chan struct{}
}

func newPump(r *os.File, w io.Writer) *pump {
	p := &pump{r: r, w: w, done: make(chan struct{})}
	go p.run()
	return p
}

func (p *pump) run() {
	defer close(p.done)
	buf := make([]byte, 32<<10)
	for {
		p.reading.Store(time.Now().UnixNano())
		n, err := p.r.Read(buf)
		p.reading.Store(0)
		if n > 0 {
			if _, werr := p.w.Write(buf[:n]); werr != nil {
				return // the client is gone; closing the pipe ends the writers
			}
		}
		if err != nil {
			return
		}
	}
}

// finish waits for the pump to reach the end of its pipe, once the command
// has exited. A pump that has waited in vain for more than idle since the
// exit (a background process holds the pipe and writes nothing) is stopped;
// one that is busy delivering output is not.
func (p *pump) finish(exited time.Time, idle time.Duration) {
	tick := time.NewTicker(idle / 20)
	defer tick.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-tick.C:
			since := p.reading.Load()
			if since != 0 && time.Since(time.Unix(0, max(since, exited.UnixNano()))) > idle {
				_ = p.r.SetReadDeadline(time.Now())
				<-p.done
				return
			}
		}
	}
}
