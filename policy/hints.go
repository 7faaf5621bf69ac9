package policy

import (
	"fmt"
	"strings"
)

// BrokerHint is a rule that grants the real value of a credential the
// broker could bind instead: the program it grants to can be told to print
// it (an alias, a hook, `gh auth token`), where a fake would be worth
// nothing.
type BrokerHint struct {
	Rule  string // the rule's name
	Key   string // the key it grants
	Pos   Pos    // where the rule allows it
	Hosts []string
}

// String says what to do, for check and explain.
func (h BrokerHint) String() string {
	hosts := "its base URL"
	if len(h.Hosts) > 0 {
		hosts = strings.Join(h.Hosts, ", ")
	}
	return fmt.Sprintf("rule %s grants the real %s (%s): broker it (brokered: [%s]) so the tree holds a fake the broker swaps on its way to %s",
		h.Rule, h.Key, h.Pos, h.Key, hosts)
}

// BrokerHints lists, for each rule, the keys it allows by exact name that
// the policy or the catalog binds for the broker and that the rule does
// not broker itself.
func (p *Policy) BrokerHints() []BrokerHint {
	var out []BrokerHint
	for _, r := range p.Rules {
		if r.Level == nil {
			continue
		}
		brokered := map[string]bool{}
		for _, s := range r.Level.Brokered {
			brokered[s.Entry] = true
		}
		for _, e := range r.Level.Allow {
			key, ok := e.Glob.Literal()
			if !ok || brokered[key] {
				continue
			}
			if b := p.Binding(key); b != nil {
				h := BrokerHint{Rule: r.Name, Key: key, Hosts: b.Hosts}
				if e.Source != nil {
					h.Pos = e.Source.Pos
				}
				out = append(out, h)
			}
		}
	}
	return out
}
