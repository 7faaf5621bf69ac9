package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/envsieve/envsieve/cmd/internal/cli"
	"github.com/envsieve/envsieve/internal/envknob"
	"github.com/envsieve/envsieve/policy"
)

type profilesJSON struct {
	Bases    []groupJSON   `json:"bases"`
	Groups   []groupJSON   `json:"groups"`
	Profiles []profileJSON `json:"profiles"`
	// Brokers are the bindings a brokered key can use: the policy's own
	// (secrets.NAME.broker), then the built-in catalog's.
	Brokers []brokerJSON `json:"brokers"`
}

type brokerJSON struct {
	Name     string   `json:"name"`
	Builtin  bool     `json:"builtin"`
	Hosts    []string `json:"hosts"`
	In       []string `json:"in,omitempty"` // absent: the broker's default, the authorization headers
	Methods  []string `json:"methods,omitempty"`
	Paths    []string `json:"paths,omitempty"`
	BaseURL  string   `json:"base_url,omitempty"`
	Upstream string   `json:"upstream,omitempty"`
}

type groupJSON struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Keys        []string `json:"keys"`
	Groups      []string `json:"groups,omitempty"`
}

type profileJSON struct {
	Name        string   `json:"name"`
	Builtin     bool     `json:"builtin"`
	Description string   `json:"description"`
	Extends     []string `json:"extends,omitempty"`
	Parent      string   `json:"parent,omitempty"`
	Allow       []string `json:"allow"`
	Deny        []string `json:"deny"`
	Groups      []string `json:"groups"`
	Brokered    []string `json:"brokered"`
}

func profilesCmd(u *cli.UI) *cobra.Command {
	var f policyFlags
	var asJSON bool
	c := &cobra.Command{
		Use:   "profiles [--json]",
		Short: "List the bases, groups, and the built-in and user profiles with their keys",
		Args:  cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			p, err := cli.LoadPolicy(u, f.policy)
			if err != nil {
				return err
			}
			doc, err := profilesDoc(p)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(u.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(doc)
			}
			w := u.Out
			fmt.Fprintln(w, "bases:")
			for _, g := range doc.Bases {
				fmt.Fprintf(w, "  %-10s %s\n", g.Name, g.Description)
				fmt.Fprintf(w, "             keys: %s\n", strings.Join(g.Keys, " "))
			}
			fmt.Fprintln(w, "\ngroups:")
			for _, g := range doc.Groups {
				fmt.Fprintf(w, "  %-13s %s\n", g.Name, strings.Join(g.Keys, " "))
			}
			fmt.Fprintln(w, "\nprofiles:")
			for _, pr := range doc.Profiles {
				fmt.Fprintf(w, "  %s: %s\n", pr.Name, pr.Description)
				if len(pr.Extends) > 0 {
					fmt.Fprintf(w, "      extends: %s\n", strings.Join(pr.Extends, " "))
				}
				if pr.Parent != "" {
					fmt.Fprintf(w, "      parent:  %s (may only narrow it)\n", pr.Parent)
				}
				for _, l := range []struct {
					name string
					keys []string
				}{{"allow", pr.Allow}, {"groups", pr.Groups}, {"deny", pr.Deny}, {"brokered", pr.Brokered}} {
					if len(l.keys) > 0 {
						fmt.Fprintf(w, "      %-9s %s\n", l.name+":", strings.Join(l.keys, " "))
					}
				}
			}
			fmt.Fprintln(w, "\nbrokers (the key reaches the child as a fake; the real value goes only to these hosts):")
			for _, b := range doc.Brokers {
				from := "policy"
				if b.Builtin {
					from = "built-in"
				}
				fmt.Fprintf(w, "  %s (%s)\n", b.Name, from)
				if len(b.Hosts) > 0 {
					fmt.Fprintf(w, "      hosts:    %s\n", strings.Join(b.Hosts, " "))
				}
				if b.BaseURL != "" {
					fmt.Fprintf(w, "      base_url: %s -> %s\n", b.BaseURL, b.Upstream)
				}
				in := strings.Join(b.In, " ")
				if in == "" {
					in = "the authorization headers (default)"
				}
				fmt.Fprintf(w, "      in:       %s\n", in)
				if len(b.Methods) > 0 {
					fmt.Fprintf(w, "      methods:  %s\n", strings.Join(b.Methods, " "))
				}
				if len(b.Paths) > 0 {
					fmt.Fprintf(w, "      paths:    %s\n", strings.Join(b.Paths, " "))
				}
			}
			return nil
		},
	}
	f.register(c.Flags(), 0)
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func profilesDoc(p *policy.Policy) (*profilesJSON, error) {
	c := p.Catalog()
	doc := &profilesJSON{}
	for _, b := range []policy.Base{"safe", "minimal", "none"} {
		g := c.Bases[b]
		doc.Bases = append(doc.Bases, groupJSON{Name: g.Name, Description: g.Description, Keys: nonNil(c.AllKeys(g)), Groups: g.Groups})
	}
	for _, name := range c.GroupNames() {
		g := c.Groups[name]
		doc.Groups = append(doc.Groups, groupJSON{Name: g.Name, Description: g.Description, Keys: nonNil(g.Keys)})
	}
	for _, pr := range p.Profiles() {
		pj := profileJSON{Name: pr.Name, Builtin: strings.HasPrefix(pr.Name, "builtin:"), Description: pr.Description,
			Extends: pr.Extends, Parent: pr.Parent, Allow: []string{}, Deny: []string{}, Groups: []string{},
			Brokered: []string{}}
		for _, e := range pr.Level.Allow {
			pj.Allow = append(pj.Allow, e.Source.Entry)
		}
		for _, e := range pr.Level.Deny {
			pj.Deny = append(pj.Deny, e.Source.Entry)
		}
		for _, g := range pr.Level.Groups {
			pj.Groups = append(pj.Groups, g.Entry)
		}
		for _, b := range pr.Level.Brokered {
			pj.Brokered = append(pj.Brokered, b.Entry)
		}
		doc.Profiles = append(doc.Profiles, pj)
	}
	catalog, err := policy.CatalogBindings()
	if err != nil {
		return nil, err
	}
	var own []*policy.Binding
	for _, name := range slices.Sorted(maps.Keys(p.Secrets)) {
		if b := p.Secrets[name].Broker; b != nil {
			own = append(own, b)
		}
	}
	doc.Brokers = []brokerJSON{}
	for _, b := range append(own, catalog...) {
		bj := brokerJSON{Name: b.Name, Builtin: b.Builtin, Hosts: nonNil(b.Hosts), In: b.In,
			Methods: b.Methods, Paths: b.Paths, BaseURL: b.BaseURL, Upstream: b.Upstream}
		doc.Brokers = append(doc.Brokers, bj)
	}
	return doc, nil
}

func manifestCmd(u *cli.UI) *cobra.Command {
	return &cobra.Command{
		Use:   "manifest",
		Short: "Print, as JSON, every environment variable envsieve itself reads",
		Args:  cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			enc := json.NewEncoder(u.Out)
			enc.SetIndent("", "  ")
			return enc.Encode(struct {
				Name        string         `json:"name"`
				Environment []envknob.Knob `json:"environment"`
			}{"envsieve", envknob.Knobs})
		},
	}
}
