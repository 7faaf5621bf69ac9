package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/envsieve/envsieve/cmd/internal/cli"
	"github.com/envsieve/envsieve/internal/doctor"
	"github.com/envsieve/envsieve/internal/envknob"
	"github.com/envsieve/envsieve/launch"
	"github.com/envsieve/envsieve/seal"
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
		Long: `doctor checks the shim (found, and loading into a real program), user
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
	needShim, needSeal := false, false
	quiet := cli.NewUI(u.Out, u.Err, false)
	if p, err := cli.LoadPolicy(quiet, o.policy); err != nil {
		add(doctor.Check{Name: "policy", Status: "fail", Required: true, Detail: firstLine(err.Error()), Fix: "envsieve check shows every error with its file, line and column"})
	} else {
		detail := p.File
		if p.Local != "" {
			detail += ", narrowed by " + p.Local
		}
		add(doctor.Check{Name: "policy", Status: "ok", Detail: detail})
		for _, pr := range p.Profiles() {
			needShim = needShim || pr.Plan != nil && pr.Plan.BlockIteration
			needSeal = needSeal || pr.Plan != nil && pr.Plan.Seal == "required"
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

	// User namespaces, for --isolate and the seal: the kernel's switches,
	// then a real isolated start.
	ns := doctor.Check{Name: "namespaces", Status: "ok", Required: needSeal, Detail: "user, pid and mount namespaces work: --isolate and the seal are available"}
	if err := seal.Available(); err != nil {
		ns.Status, ns.Detail = "fail", err.Error()
	} else if c, err := launch.Isolate(&launch.Cmd{Path: "/bin/true", Args: []string{"true"}, Env: []string{}}); err != nil {
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

	if o.json {
		enc := json.NewEncoder(u.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return err
		}
	} else {
		for _, c := range r.Checks {
			fmt.Fprintf(u.Out, "%-6s %-12s %s\n", c.Status, c.Name, c.Detail)
			if c.Fix != "" {
				fmt.Fprintf(u.Out, "       %-12s fix: %s\n", "", c.Fix)
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
	cmd.Env = []string{"PATH=/usr/bin:/bin", shim.EnvPreload + "=" + lib, shim.EnvHide + "=ENVSIEVE_DOCTOR_PROBE", "ENVSIEVE_DOCTOR_PROBE=seen"}
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
