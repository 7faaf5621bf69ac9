package daemon

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/creachadair/jrpc2"

	"github.com/envsieve/envsieve/launch"
	"github.com/envsieve/envsieve/policy"
	"github.com/envsieve/envsieve/sieve"
)

// Causes of a command's cancellation.
var (
	errShutdown  = errors.New("the daemon is shutting down")
	errCancelled = errors.New("cancelled")
	errTimeout   = errors.New("timed out")
)

func rpcError(code Code, msg string) *jrpc2.Error {
	return &jrpc2.Error{Code: jrpc2.Code(code), Message: msg}
}

func limitError(code Code, what, limit string, actual, maxv int) *jrpc2.Error {
	e := rpcError(code, fmt.Sprintf("%s: limit %s exceeded: %d > %d", what, limit, actual, maxv))
	return e.WithData(LimitData{Limit: limit, Actual: actual, Max: maxv})
}

// toRPC maps an error to a JSON-RPC error with a stable code. The messages
// of the engine, the policy and launch never hold a value.
func toRPC(err error) error {
	var je *jrpc2.Error
	var le *sieve.LimitError
	var se *sieve.SecretError
	var fe *launch.FetchError
	var nf *launch.NotFoundError
	var pe policy.ErrorList
	switch {
	case errors.As(err, &je):
		return je
	case errors.As(err, &le):
		e := rpcError(CodeEnvLimit, err.Error())
		data, _ := json.Marshal(struct {
			LimitData
			Top []sieve.Contributor `json:"largest,omitempty"`
		}{LimitData{Limit: le.Limit, Actual: le.Actual, Max: le.Max}, le.Top})
		e.Data = data
		return e
	case errors.As(err, &se), errors.As(err, &fe):
		return rpcError(CodeSecret, err.Error())
	case errors.Is(err, sieve.ErrUnknownTool):
		return rpcError(CodeUnknownTool, err.Error())
	case errors.Is(err, policy.ErrUnknownProfile):
		return rpcError(CodeUnknownProfile, err.Error())
	case errors.As(err, &nf):
		return rpcError(CodeNotFound, err.Error())
	case errors.Is(err, launch.ErrNotExecutable):
		return rpcError(CodeNotExecutable, err.Error())
	case errors.As(err, &pe):
		return rpcError(CodePolicy, err.Error())
	case errors.Is(err, errShutdown):
		return rpcError(CodeShuttingDown, err.Error())
	}
	return rpcError(CodeExecFailed, err.Error())
}
