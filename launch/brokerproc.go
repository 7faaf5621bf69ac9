package launch

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/envsieve/envsieve/internal/proc"
)

// BrokerArg is the hidden verb of envsieve-daemon that serves one launch
// as its credential broker (see [BrokerProcess]).
const BrokerArg = "__broker"

// The pipe between a launcher and its broker process carries, one JSON
// value a line: the launcher's BrokerRequest; the broker's brokerReply;
// then a BrokerEvent per thing the broker does, until the launcher closes
// its end. Both ends are in this file: BrokerProcess is the launcher's,
// ServeBroker the broker's.

// brokerReply is the broker process's first line: the child's variables,
// or why the broker did not start.
type brokerReply struct {
	Env   map[string]string `json:"env"`
	Error string            `json:"error,omitempty"`
}

// brokerProc is a broker running in a process of its own.
type brokerProc struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	env  map[string]string
	done chan struct{}
	once sync.Once
}

func (b *brokerProc) ChildEnv() map[string]string { return b.env }

// Close ends the broker: its standard input closes, and it exits.
func (b *brokerProc) Close() error {
	b.once.Do(func() {
		b.in.Close()
		select {
		case <-b.done:
		case <-time.After(3 * time.Second):
			_ = b.cmd.Process.Kill()
			<-b.done
		}
	})
	return nil
}

// BrokerProcess returns a [Host.Broker] that runs the broker as `program
// __broker` (envsieve-daemon): the request, real values included, goes
// over a pipe (never argv or an environment: the broker starts with an
// empty one); its first line of output is the child's variables, and each
// later line an event. The broker makes itself non-dumpable, and exits
// when the launcher closes the pipe, or dies.
func BrokerProcess(program string) func(BrokerRequest, func(BrokerEvent)) (BrokerRun, error) {
	return func(req BrokerRequest, events func(BrokerEvent)) (BrokerRun, error) {
		cmd := exec.Command(program, BrokerArg)
		cmd.Env = []string{}
		cmd.Stderr = os.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			return nil, err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("%w: start %s: %v", errNoBroker, program, err)
		}
		b := &brokerProc{cmd: cmd, in: in, done: make(chan struct{})}
		fail := func(err error) (BrokerRun, error) {
			in.Close()
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return nil, err
		}
		if err := json.NewEncoder(in).Encode(req); err != nil {
			return fail(fmt.Errorf("%w: send the request: %v", errNoBroker, err))
		}
		r := bufio.NewReader(out)
		line := make(chan []byte, 1)
		go func() {
			l, _ := r.ReadBytes('\n')
			line <- l
		}()
		var first []byte
		select {
		case first = <-line:
		case <-time.After(10 * time.Second):
			return fail(fmt.Errorf("%w: %s did not answer in 10s", errNoBroker, program))
		}
		var rep brokerReply
		if err := json.Unmarshal(first, &rep); err != nil {
			return fail(fmt.Errorf("%w: %s answered %d bytes that are not its reply", errNoBroker, program, len(first)))
		}
		if rep.Error != "" {
			return fail(errors.New(rep.Error))
		}
		b.env = rep.Env
		go func() {
			defer close(b.done)
			for {
				l, err := r.ReadBytes('\n')
				if len(l) > 0 && events != nil {
					var e BrokerEvent
					if json.Unmarshal(l, &e) == nil {
						events(e)
					}
				}
				if err != nil {
					break
				}
			}
			_ = cmd.Wait()
		}()
		return b, nil
	}
}

// testOnlyKeepDumpable keeps a test's own process dumpable when it serves
// a broker in process.
var testOnlyKeepDumpable bool

// ServeBroker is the broker's end of the pipe (the hidden verb
// `envsieve-daemon __broker`): it makes the process non-dumpable (the
// real values live in it), reads the request from in, starts the broker
// with start, answers the child's variables on out, then writes one line
// per event until in closes (the launcher is done, or died). A broker
// that cannot start is answered as an error line, for the launcher to
// report; ServeBroker itself fails only when the process cannot be made
// non-dumpable.
func ServeBroker(in io.Reader, out io.Writer, start func(BrokerRequest, func(BrokerEvent)) (BrokerRun, error)) error {
	if !testOnlyKeepDumpable {
		if err := proc.MakeNonDumpable(); err != nil && !errors.Is(err, errors.ErrUnsupported) {
			return err
		}
	}
	r := bufio.NewReader(in)
	dec := json.NewDecoder(r)
	var mu sync.Mutex
	enc := json.NewEncoder(out)
	send := func(v any) {
		mu.Lock()
		defer mu.Unlock()
		_ = enc.Encode(v)
	}
	var req BrokerRequest
	if err := dec.Decode(&req); err != nil {
		send(brokerReply{Error: "broker: read the request: " + err.Error()})
		return nil
	}
	b, err := start(req, func(e BrokerEvent) { send(e) })
	if err != nil {
		send(brokerReply{Error: err.Error()})
		return nil
	}
	defer b.Close()
	send(brokerReply{Env: b.ChildEnv()})
	// Until the launcher closes its end (or dies).
	_, _ = io.Copy(io.Discard, io.MultiReader(dec.Buffered(), r))
	return nil
}
