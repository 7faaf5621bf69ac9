package policy

import (
	"fmt"
	"sort"
)

// LocalName is the project-local policy file looked up in the working
// directory.
const LocalName = ".envsieve.yaml"

// Narrow returns a copy of p with a project-local policy merged in. An agent
// can edit files in its repository, so a local file may only narrow: it may
// say version, description, deny, hide, brokered, limits no higher than the policy's, a
// base no wider than the policy's, mode enforce and block_iteration true. Anything that widens is an
// escalation error naming the key and the line.
func (p *Policy) Narrow(name string, src []byte) (*Policy, error) {
	if p.raw == nil {
		return nil, fmt.Errorf("narrow %s: the policy has no source to rebuild from", name)
	}
	d := &decoder{file: name, src: src}
	root := d.parseYAML()
	if root == nil {
		return nil, d.errs
	}
	raw := d.decodeFile(root)
	esc := func(pos Pos, format string, args ...any) {
		d.errorAt(pos, "escalation: %s (a project-local policy may only narrow the user's policy)", fmt.Sprintf(format, args...))
	}
	g := &raw.Global
	for _, s := range g.Allow {
		esc(s.Pos, "allow %q widens the policy", s.V)
	}
	for _, s := range g.Groups {
		esc(s.Pos, "group %q widens the policy", s.V)
	}
	for _, s := range g.Set {
		esc(s.Key.Pos, "set %s adds a variable", s.Key.V)
	}
	for _, pr := range raw.Profiles {
		esc(pr.Name.Pos, "profile %q: profiles belong in the user's policy", pr.Name.V)
	}
	for _, r := range raw.Rules {
		esc(r.Pos, "rules belong in the user's policy")
	}
	for _, sec := range raw.Secrets {
		esc(sec.Name.Pos, "secret %q: secret sources belong in the user's policy", sec.Name.V)
	}
	for _, t := range raw.Tools {
		esc(t.Name.Pos, "tool %q injects secrets", t.Name.V)
	}
	if raw.AuditPos.IsValid() {
		esc(raw.AuditPos, "audit belongs in the user's policy")
	}
	if raw.Redact != nil {
		esc(raw.Redact.Pos, "redact belongs in the user's policy")
	}
	if raw.Shell != nil {
		esc(raw.Shell.Pos, "shell chooses the program that runs")
	}
	if raw.Broker != nil {
		esc(raw.Broker.Pos, "broker belongs in the user's policy (its upstream roots and egress)")
	}
	if raw.SSH != nil {
		esc(raw.SSH.Pos, "ssh belongs in the user's policy (the keys and hosts of the user's agent)")
	}
	if g.Mode != nil && g.Mode.V != string(Enforce) {
		esc(g.Mode.Pos, "mode %q widens enforce", g.Mode.V)
	}
	if g.BlockIter != nil && !g.BlockIter.V && p.noneProf.BlockIteration {
		esc(g.BlockIter.Pos, "block_iteration false widens the policy's true")
	}
	for _, s := range g.SealWrite {
		esc(s.Pos, "seal: write %q lets the sealed tree write more", s.V)
	}
	if g.Seal != nil && sealRank[SealMode(g.Seal.V)] < sealRank[p.noneProf.Seal] {
		esc(g.Seal.Pos, "seal %s widens the policy's %s", g.Seal.V, p.noneProf.Seal)
	}
	userBase := p.noneProf.Base
	if g.Base != nil {
		if r, ok := baseRank[Base(g.Base.V)]; ok && r > baseRank[userBase] {
			esc(g.Base.Pos, "base %s is wider than the policy's %s", g.Base.V, userBase)
		}
	}
	lim := p.noneProf.Limits
	check := func(key string, n *num, max int) {
		if n != nil && n.V > max {
			esc(n.Pos, "limits: %s %d is above the policy's %d", key, n.V, max)
		}
	}
	check("max_keys", g.Limits.MaxKeys, lim.MaxKeys)
	check("max_bytes", g.Limits.MaxBytes, lim.MaxBytes)
	check("max_value_bytes", g.Limits.MaxValueBytes, lim.MaxValueBytes)
	if len(d.errs) > 0 {
		sortErrors(d.errs)
		return nil, d.errs
	}
	c, err := catalog()
	if err != nil {
		return nil, err
	}
	lb := &builder{d: d, c: c}
	local := lb.level("local", g)
	if len(d.errs) > 0 {
		sortErrors(d.errs)
		return nil, d.errs
	}
	ud := &decoder{file: p.File, src: p.src}
	b := &builder{d: ud, c: c, local: local}
	np, err := b.build(p.raw)
	if err != nil {
		return nil, err
	}
	if len(ud.errs) > 0 {
		return nil, fmt.Errorf("rebuild %s: %w", p.File, ud.errs)
	}
	np.File, np.Local = p.File, name
	return np, nil
}

func sortErrors(errs ErrorList) {
	sort.SliceStable(errs, func(i, j int) bool {
		a, b := errs[i].Pos, errs[j].Pos
		return a.Line < b.Line || a.Line == b.Line && a.Col < b.Col
	})
}
