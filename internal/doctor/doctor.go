// Package doctor checks what of envsieve works on this machine, and says
// for each thing that does not how to fix it: the shim, user namespaces
// (for --isolate and the seal), Landlock, the install key and the secret
// store, the policy, and the agents it knows with their own settings that
// would bypass envsieve. It only looks: it changes nothing, and prints no
// value.
package doctor

// Check is one finding. The JSON form is schema envsieve.doctor/v1
// (docs/doctor.md).
type Check struct {
	// Name is stable: shim, namespaces, landlock, install-key, store,
	// policy, agent:NAME.
	Name string `json:"name"`
	// Status is ok, warn (works, with a gap worth knowing), fail (does not
	// work) or absent (not there, which is fine: an agent not installed).
	Status string `json:"status"`
	// Required is true when envsieve cannot do what the policy asks
	// without it: a fail of a required check makes doctor exit 1.
	Required bool `json:"required"`
	// Detail says what was found; Fix, when not ok, what to do.
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// Report is doctor's whole answer.
type Report struct {
	Schema string  `json:"schema"`
	Checks []Check `json:"checks"`
}

// Schema is the JSON schema name of a Report.
const Schema = "envsieve.doctor/v1"

// Failed reports whether a required check failed.
func (r *Report) Failed() bool {
	for _, c := range r.Checks {
		if c.Required && c.Status == "fail" {
			return true
		}
	}
	return false
}
