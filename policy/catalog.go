package policy

import (
	"fmt"
	"sync"

	"github.com/goccy/go-yaml/ast"

	"github.com/envsieve/envsieve/profiles"
)

// catalog returns the built-in catalog. It is generated from groups.yaml
// into embedded_gen.go, so that a launch does not parse YAML for it; should
// the embedded file differ from the one it was generated from, the file is
// parsed instead.
var catalog = sync.OnceValues(func() (*Catalog, error) {
	if string(profiles.Groups) == generatedGroupsYAML {
		return generatedCatalog(), nil
	}
	return parseCatalog("embedded:groups.yaml", profiles.Groups)
})

func parseCatalog(name string, src []byte) (*Catalog, error) {
	d := &decoder{file: name, src: src}
	c := &Catalog{Bases: map[Base]*Group{}, Groups: map[string]*Group{}}
	root := d.parseYAML()
	group := func(kind string, key str, v ast.Node, withGroups bool) *Group {
		g := &Group{Name: key.V}
		what := kind + " " + key.V
		h := map[string]func(str, ast.Node){
			"description": func(_ str, v ast.Node) {
				if s, ok := d.str(what+": description", v); ok {
					g.Description = s.V
				}
			},
			"keys": func(_ str, v ast.Node) {
				for _, k := range d.strList(what+": keys", v) {
					if !ValidName(k.V) {
						d.errorAt(k.Pos, "%s: %q is not a variable name", what, k.V)
					}
					g.Keys = append(g.Keys, k.V)
				}
			},
		}
		if withGroups {
			h["groups"] = func(_ str, v ast.Node) {
				for _, s := range d.strList(what+": groups", v) {
					g.Groups = append(g.Groups, s.V)
				}
			}
		}
		d.fields(v, what, h)
		return g
	}
	if root != nil {
		d.fields(root, "catalog", map[string]func(str, ast.Node){
			"bases": func(_ str, v ast.Node) {
				d.eachPair(v, "bases", func(k str, v ast.Node) {
					if _, ok := baseRank[Base(k.V)]; !ok {
						d.errorAt(k.Pos, "bases: unknown base %q", k.V)
					}
					c.Bases[Base(k.V)] = group("base", k, v, true)
				})
			},
			"groups": func(_ str, v ast.Node) {
				d.eachPair(v, "groups", func(k str, v ast.Node) {
					c.Groups[k.V] = group("group", k, v, false)
				})
			},
		})
	}
	for b := range baseRank {
		if c.Bases[b] == nil {
			d.errorAt(Pos{File: name}, "bases: missing base %q", b)
		}
	}
	for _, b := range c.Bases {
		for _, g := range b.Groups {
			if c.Groups[g] == nil {
				d.errorAt(Pos{File: name}, "base %s: unknown group %q", b.Name, g)
			}
		}
	}
	if len(d.errs) > 0 {
		return nil, fmt.Errorf("built-in catalog: %w", d.errs)
	}
	return c, nil
}

// embeddedRaw returns the decoded form of an embedded policy file, from
// embedded_gen.go, when name and src are one of them as it was generated;
// nil otherwise, and the caller parses src. It returns a new value on each
// call.
func embeddedRaw(name string, src []byte) *rawFile {
	switch {
	case name == "embedded:default.yaml" && string(src) == generatedDefaultYAML:
		return generatedDefaultRaw()
	case name == "embedded:builtin.yaml" && string(src) == generatedBuiltinYAML:
		return generatedBuiltinRaw()
	}
	return nil
}
