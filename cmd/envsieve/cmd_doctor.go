package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/envsieve/envsieve/cmd/internal/cli"
	"github.com/envsieve/envsieve/internal/doctor"
	"github.com/envsieve/envsieve/internal/envknob"
	"github.com/envsieve/envsieve/internal/proc"
	"github.com/envsieve/envsieve/internal/shimwire"
	"github.com/envsieve/envsieve/policy"
	"github.com/envsieve/envsieve/seal"
	"github.com/envsieve/envsieve/secret"
	"github.com/envsieve/envsieve/shim"
)

func init() {
	verbs = append(verbs, struct {
		name string
		cmd  func(*cli.UI) *cobra.Command
	}{"doctor", doctorCmd})
}

type doctorOptions struct {
	policy string
	json   bool
}

func doctorCmd(u *cli.UI) *cobra.Command {
	var o doctorOptions
	c := &cobra.Command{
		Use:   "doctor [--policy FILE] [--json]",
		Short: "Say what of envsieve works on this machine, and how to fix what does not",
		Long: `doctor checks the shim (found, and loading into a real program) and the
programs installed beside it (envsieve-start, envsieve-init), user
namespaces (for --isolate and the seal), Landlock, the install key and the
secret store (their permissions), the policy (valid, and where it came from),
and the agents it knows (claude, codex, gemini, aider) with their own settings
that would bypass envsieve. It changes nothing and prints no value. Exit
status 1 when something the policy needs is broken, else 0.`,
		Args: cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error { return runDoctor(u, &o) },
	}
	c.Flags().StringVar(&o.policy, "policy", "", "policy `file` (default: as every verb finds it)")
	c.Flags().BoolVar(&o.json, "json", false, "print a JSON document (schema envsieve.doctor/v1)")
	return c
}

func runDoctor(u *cli.UI, o *doctorOptions) error {
	r := &doctor.Report{Schema: doctor.Schema}
	add := func(c doctor.Check) { r.Checks = append(r.Checks, c) }

	// The policy, and what it needs of the rest.
	needShim, needSeal, needStart := false, false, false
	var helpers []doctor.Check
	quiet := cli.NewUI(u.Out, u.Err, false)
	if p, err := cli.LoadPolicy(quiet, o.policy); err != nil {
		add(doctor.Check{Name: "policy", Status: "fail", Required: true, Detail: firstLine(err.Error()), Fix: "envsieve check shows every error with its file, line and column"})
	} else {
		detail := p.File
		if p.Local != "" {
			detail += ", narrowed by " + p.Local
		}
		add(doctor.Check{Name: "policy", Status: "ok", Detail: detail})
		needStart = len(p.Rules) > 0
		helpers = helperChecks(p)
		for _, pr := range p.Profiles() {
			needShim = needShim || pr.Effective != nil && pr.Effective.BlockIteration
			needSeal = needSeal || pr.Effective != nil && pr.Effective.Seal == "required"
		}
	}

	// The shim: found, and loading into a real dynamic program.
	exe, _ := os.Executable()
	if lib, err := shim.Locate(envknob.Shim(), exe); err != nil {
		status := "warn"
		if needShim {
			status = "fail"
		}
		add(doctor.Check{Name: "shim", Status: status, Required: needShim, Detail: err.Error(),
			Fix: "make install (or make build) puts libenvsieve.so where envsieve looks; ENVSIEVE_SHIM names it"})
	} else {
		add(shimProbe(lib, needShim))
	}
	// The shim's companions: envsieve-start starts what the rules grant at
	// exec; envsieve-init makes an isolated launch's namespaces and reaps
	// a Landlock launch's tree (without it, envsieve does, a slower start).
	add(companion(shim.LocateStart, exe, shim.StartName, needStart,
		"starts the programs the rules grant at exec", "the rules grant nothing at exec"))
	add(companion(shim.LocateInit, exe, shim.InitName, false,
		"makes an isolated launch's namespaces and reaps a Landlock launch's tree",
		"envsieve makes the namespaces and reaps the tree itself, a slower start"))

	// User namespaces, for --isolate and the seal: the kernel's switches,
	// then a real isolated start.
	ns := doctor.Check{Name: "namespaces", Status: "ok", Required: needSeal, Detail: "user, pid and mount namespaces work: --isolate and the seal are available"}
	if err := seal.Available(); err != nil {
		ns.Status, ns.Detail = "fail", err.Error()
	} else if c, err := proc.Isolate(&proc.Cmd{Path: "/bin/true", Args: []string{"true"}, Env: []string{}}); err != nil {
		ns.Status, ns.Detail = "fail", err.Error()
	} else if err := c.Run(); err != nil {
		ns.Status, ns.Detail = "fail", "an isolated start failed: "+firstLine(err.Error())
	}
	if ns.Status == "fail" {
		ns.Fix = "allow unprivileged user namespaces: sysctl user.max_user_namespaces=15000 (and kernel.unprivileged_userns_clone=1 on Debian); on Ubuntu 24.04, an AppArmor profile for envsieve that allows userns, or kernel.apparmor_restrict_unprivileged_userns=0"
	}
	add(ns)

	// Landlock: the seal where user namespaces are refused, and the
	// domain that keeps the tree out of the programs grants start.
	ll := doctor.Check{Name: "landlock", Status: "ok", Required: needSeal && ns.Status == "fail"}
	if abi, err := seal.LandlockABI(); err != nil {
		ll.Status, ll.Detail = "warn", err.Error()+": exec-time grants start nothing, and the seal needs namespaces"
	} else if err := seal.LandlockAvailable(); err != nil {
		ll.Status, ll.Detail = "warn", err.Error()+": the seal needs namespaces"
	} else {
		ll.Detail = fmt.Sprintf("ABI %d: the seal works where user namespaces are refused; granted programs are out of the tree's reach", abi)
	}
	if ll.Status != "ok" {
		ll.Fix = "a kernel with Landlock enabled (CONFIG_SECURITY_LANDLOCK, and landlock in the lsm= boot list), Linux 6.2 or later"
	}
	add(ll)

	add(sealCheck(needSeal, ll.Status == "ok"))

	// The install key and the store: private files in private directories.
	data, cfg := envknob.DataDir(), envknob.ConfigDir()
	add(privateFile("install-key", data, "redact.key", true, "the key is made at the first launch that masks output"))
	store := privateFile("store", cfg, "secrets.age", false, "no secret stored yet (envsieve secrets set NAME)")
	if store.Status == "ok" {
		if key := privateFile("store", data, "store.key", false, ""); key.Status != "ok" && key.Status != "absent" {
			store = key
		}
	}
	add(store)

	for _, c := range doctor.Agents(envknob.Home(), doctor.LookPath) {
		add(c)
	}
	// The helpers the policy's secrets are read with.
	for _, c := range helpers {
		add(c)
	}

	if o.json {
		enc := json.NewEncoder(u.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return err
		}
	} else {
		for _, c := range r.Checks {
			fmt.Fprintf(u.Out, "%-6s %-14s %s\n", c.Status, c.Name, c.Detail)
			if c.Fix != "" {
				fmt.Fprintf(u.Out, "       %-14s fix: %s\n", "", c.Fix)
			}
		}
	}
	if r.Failed() {
		return cli.ExitStatus(1)
	}
	return nil
}

// shimProbe loads the shim into /bin/sh, asking it to hide a probe key: a
// shell that does not see the key had the shim loaded.
func shimProbe(lib string, required bool) doctor.Check {
	c := doctor.Check{Name: "shim", Status: "ok", Required: required, Detail: lib + ", loads into /bin/sh"}
	cmd := exec.Command("/bin/sh", "-c", `echo "${ENVSIEVE_DOCTOR_PROBE:-hidden}"`)
	cmd.Env = []string{"PATH=/usr/bin:/bin", shimwire.EnvPreload + "=" + lib, shimwire.EnvHide + "=ENVSIEVE_DOCTOR_PROBE", "ENVSIEVE_DOCTOR_PROBE=seen"}
	out, err := cmd.Output()
	if err != nil || strings.TrimSpace(string(out)) != "hidden" {
		c.Status, c.Detail = "fail", lib+": found, but did not load into /bin/sh"
		c.Fix = "rebuild it for this machine (make build); a 32-bit or foreign-architecture library cannot load"
		if !required {
			c.Status = "warn"
		}
	}
	return c
}

// companion checks a program installed beside the shim (envsieve-start,
// envsieve-init): found with locate, what it does; else what is lost, and
// the fix. required: the policy needs it.
func companion(locate func(lib string) (string, error), exe, name string, required bool, does, lost string) doctor.Check {
	c := doctor.Check{Name: name, Status: "ok", Required: required}
	path := ""
	lib, err := shim.Locate(envknob.Shim(), exe)
	if err != nil {
		c.Detail = "not installed (it goes beside the shim, which is missing): " + lost
	} else if path, err = locate(lib); err != nil {
		c.Detail = firstLine(err.Error()) + ": " + lost
	} else {
		c.Detail = path + ": " + does
		return c
	}
	c.Status = "warn"
	if required {
		c.Status = "fail"
	}
	c.Fix = "make install (or make build) puts " + name + " beside libenvsieve.so, where envsieve looks; 'go install' builds neither"
	return c
}

// privateFile checks that dir/name is a file of the user's that nobody else
// can read, in a directory nobody else can enter.
func privateFile(check, dir, name string, required bool, absent string) doctor.Check {
	c := doctor.Check{Name: check, Status: "ok", Required: required}
	if dir == "" {
		c.Status, c.Detail = "warn", "no HOME or XDG directory: a key for each launch only"
		return c
	}
	path := filepath.Join(dir, name)
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		c.Status, c.Detail = "absent", absent
		return c
	case err != nil:
		c.Status, c.Detail = "fail", err.Error()
		return c
	}
	c.Detail = path
	if fi.Mode().Perm()&0o077 != 0 {
		c.Status, c.Detail = "fail", fmt.Sprintf("%s: mode %04o, others can read it", path, fi.Mode().Perm())
		c.Fix = "chmod 600 " + path
	} else if di, err := os.Stat(dir); err == nil && di.Mode().Perm()&0o077 != 0 {
		c.Status, c.Detail = "fail", fmt.Sprintf("%s: mode %04o, others can enter it", dir, di.Mode().Perm())
		c.Fix = "chmod 700 " + dir
	}
	return c
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// sealCheck says what a sealed launch (a built-in agent profile, run
// --seal, envsieve sh) would do here: by which mechanism, whether the
// programs started for rules share the seal (they need Landlock), and
// what a HOME envsieve cannot write means.
func sealCheck(required, landlock bool) doctor.Check {
	c := doctor.Check{Name: "seal", Status: "ok", Required: required}
	mech, err := seal.Choose()
	if err != nil {
		c.Status = "warn"
		if required {
			c.Status = "fail"
		}
		c.Detail = "a sealed launch here cannot be sealed (" + err.Error() + "): seal: on runs unsealed with a warning, seal: required refuses to start"
		c.Fix = "allow unprivileged user namespaces, or use a kernel with Landlock (Linux 6.2 or later)"
		return c
	}
	c.Detail = "a sealed launch here is sealed by " + string(mech) + ": credential files, envsieve's store and keys masked, the policy read-only"
	if landlock {
		c.Detail += "; programs started for rules share the seal (Landlock)"
	} else {
		c.Status = "warn"
		c.Detail += "; with no Landlock, a sealed launch's rules grant nothing (a program started for a rule must share the seal)"
		c.Fix = "a kernel with Landlock (Linux 6.2 or later) for exec-time grants in a sealed launch"
	}
	if h := envknob.Home(); h != "" && !writable(h) {
		c.Detail += "; HOME is not writable: what exists is sealed, and nothing needs to be created"
	}
	return c
}

// helperChecks returns one check per helper program the policy's secrets
// name (from: command, keychain or op), "helper:NAME": found where the
// agent's tree cannot write, or why it would not run. Not required: the
// helper runs only when its secret is asked for. Inside a tree no helper
// runs, and none is checked.
func helperChecks(p *policy.Policy) []doctor.Check {
	if cli.Nested() != "" {
		return nil
	}
	users := map[string][]string{} // helper -> the secrets it gives
	var order []string
	for _, s := range p.Secrets {
		if !s.From.Helper() || len(s.Command) == 0 {
			continue
		}
		h := s.Command[0]
		if _, ok := users[h]; !ok {
			order = append(order, h)
		}
		users[h] = append(users[h], s.Name)
	}
	slices.Sort(order)
	var out []doctor.Check
	for _, h := range order {
		names := users[h]
		slices.Sort(names)
		c := doctor.Check{Name: "helper:" + filepath.Base(h), Status: "ok"}
		if path, err := secret.ResolveHelper(h, os.Environ()); err != nil {
			c.Status, c.Detail = "warn", fmt.Sprintf("%v: %s cannot be fetched", err, strings.Join(names, ", "))
			c.Fix = "install " + filepath.Base(h) + " where only an administrator can write (a system package), or name such a copy by its absolute path"
		} else {
			c.Detail = fmt.Sprintf("%s: gives %s", path, strings.Join(names, ", "))
		}
		out = append(out, c)
	}
	return out
}
